"""The simulator's headline with its noise: ratios to round-robin and to the best baseline.

The headline figure of a strategy is the first checkpoint at which its metric,
averaged over repetitions, meets the target (``needed_mean_curve``). The
ratio of two strategies' figures is noisy: with 10 repetitions, a 0.8× can be
luck. The band is a paired, seeded bootstrap over repetitions: draw the
repetitions with replacement (the same draw for both strategies, since a
repetition shares its truth and judge noise across strategies), recompute both
mean curves and their crossings, and take the 2.5% and 97.5% points of the
ratio (observed values, no interpolation). A resample in which the numerator
never meets the target gives a ratio of +inf, one in which only the denominator
never does gives 0; one in which neither does is left out.

Beside the crossing, which hangs on one target and one checkpoint, each
strategy's curve is averaged over the whole budget (the area under its
learning curve divided by the budget: :func:`budget_mean`) and compared with
round-robin's as a paired difference with the same kind of bootstrap band —
under common random numbers (:mod:`planner.simulation.streams`) the
repetitions are paired in earnest, so this difference is the steadiest
evidence of a saving.

Baselines are every strategy but ``oracle`` (it knows the truth) and the
active candidates (``active`` with the ranking or top-k objective); the
adaptive objectives ``entropy``/``variance``/``anchor`` count as baselines.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import numpy as np

N_BOOT = 2000
BAND = (0.025, 0.975)


def is_baseline(s) -> bool:
    """Whether a strategy result is a baseline (see the module docstring)."""
    return s.strategy != "oracle" and not (s.strategy == "active" and s.objective in ("ranking", "top-k"))


def crossing(curve: np.ndarray, checkpoints: np.ndarray, metric: str, target: float) -> float:
    """First checkpoint at which ``curve`` meets the target; +inf if never."""
    from planner.simulation.metrics import meets

    hit = np.flatnonzero(meets(metric, curve, target))
    return float(checkpoints[hit[0]]) if hit.size else np.inf


def ratio_band(a, b, metric: str, target: float, rng: np.random.Generator,
               n_boot: int = N_BOOT) -> tuple[float, float] | None:
    """Paired bootstrap band of ``a.needed_mean_curve / b.needed_mean_curve`` (None if undefined)."""
    if a.needed_mean_curve is None or b.needed_mean_curve is None:
        return None
    common = sorted(set(a.reps_used) & set(b.reps_used))
    if not common:
        return None
    ia = np.array([a.reps_used.index(r) for r in common])
    ib = np.array([b.reps_used.index(r) for r in common])
    draws = rng.integers(0, len(common), size=(n_boot, len(common)))
    ratios = np.empty(n_boot)
    for k, d in enumerate(draws):
        ca = crossing(a.curves[ia[d]].mean(axis=0), a.checkpoints, metric, target)
        cb = crossing(b.curves[ib[d]].mean(axis=0), b.checkpoints, metric, target)
        ratios[k] = np.nan if np.isinf(ca) and np.isinf(cb) else (np.inf if np.isinf(ca) else ca / cb)
    ratios = ratios[~np.isnan(ratios)]
    if ratios.size == 0:
        return None
    lo, hi = np.quantile(ratios, BAND, method="inverted_cdf")
    return float(lo), float(hi)


def budget_mean(curves: np.ndarray | None) -> np.ndarray:
    """Per repetition (row of ``curves``, reps x checkpoints), the metric averaged over the checkpoints
    (non-finite values left out; a row with none left is NaN)."""
    if curves is None or curves.size == 0:
        return np.zeros(0)
    with np.errstate(invalid="ignore"):
        return np.nanmean(np.where(np.isfinite(curves), curves, np.nan), axis=1)


def mean_difference(a, b, rng: np.random.Generator, n_boot: int = N_BOOT):
    """``(difference, low, high)``: mean over common reps of the difference of their :func:`budget_mean` rows
    and its 95% paired bootstrap band; None without common reps or checkpoints."""
    n = min(a.checkpoints.size, b.checkpoints.size)     # a replay run cut short by the pool: common prefix
    common = sorted(set(a.reps_used) & set(b.reps_used))
    if not common or n == 0 or not np.array_equal(a.checkpoints[:n], b.checkpoints[:n]):
        return None
    da = budget_mean(a.curves[:, :n])[[a.reps_used.index(r) for r in common]]
    db = budget_mean(b.curves[:, :n])[[b.reps_used.index(r) for r in common]]
    d = da - db
    d = d[np.isfinite(d)]
    if d.size == 0:
        return None
    boots = d[rng.integers(0, d.size, size=(n_boot, d.size))].mean(axis=1)
    lo, hi = np.quantile(boots, BAND, method="inverted_cdf")
    return float(d.mean()), float(lo), float(hi)


def add_ratios(strategies: list, metric: str, target: float, seed: int) -> tuple[list, list[str]]:
    """Fill each strategy's ratio to round-robin and to the best other baseline, with bands, and its
    budget-averaged metric against round-robin's."""
    notes = []
    rng_root = np.random.SeedSequence([seed, 14])
    rr_any = next((s for s in strategies if s.strategy == "round-robin"), None)
    rr = rr_any if rr_any is not None and rr_any.needed_mean_curve is not None else None
    if rr is None and any(s.strategy == "round-robin" for s in strategies):
        notes.append("round-robin's mean curve did not reach the target within the budget; ratios are not defined")
    out = []
    for i, s in enumerate(strategies):
        rng = np.random.default_rng(rng_root.spawn(i + 1)[i])
        fields: dict[str, Any] = {}
        means = budget_mean(s.curves)
        if means.size and np.isfinite(means).any():
            fields["budget_mean"] = float(np.nanmean(means))
        if rr_any is not None and s is not rr_any:
            # its own stream: the ratio bands' draws stay what they were
            fields["vs_round_robin"] = mean_difference(s, rr_any, np.random.default_rng([seed, 15, i]))
        if rr is not None and s.needed_mean_curve is not None:
            fields["ratio_to_round_robin"] = s.needed_mean_curve / rr.needed_mean_curve
            fields["rr_band"] = None if s is rr else ratio_band(s, rr, metric, target, rng)
        others = [b for b in strategies if b is not s and is_baseline(b) and b.needed_mean_curve is not None]
        if others and s.needed_mean_curve is not None:
            best = min(others, key=lambda b: b.needed_mean_curve)
            fields.update(best_baseline=best.name, ratio_to_best=s.needed_mean_curve / best.needed_mean_curve,
                          best_band=ratio_band(s, best, metric, target, rng))
        out.append(replace(s, **fields))
    return out, notes


def verdict(s) -> str:
    """One line: is the strategy's saving over round-robin and the best baseline real?"""
    def part(ratio, band, name):
        if ratio is None:
            return None
        text = f"{ratio:.2f}× {name}"
        if band is None:
            return text + " (no band)"
        lo, hi = band
        fmt = lambda v: "never" if np.isinf(v) else f"{v:.2f}"  # noqa: E731
        call = ("a real saving" if hi < 1 else "really worse" if lo > 1 else "within noise of 1")
        return f"{text} [95% {fmt(lo)}–{fmt(hi)}: {call}]"
    parts = [p for p in (part(s.ratio_to_round_robin, s.rr_band, "round-robin"),
                         part(s.ratio_to_best, s.best_band, f"the best baseline ({s.best_baseline})"),
                         _over_budget(s)) if p]
    return f"{s.name}: " + "; ".join(parts) if parts else ""


def _over_budget(s) -> str | None:
    """The budget-averaged metric against round-robin's, in words (see :func:`mean_difference`)."""
    if s.vs_round_robin is None or s.budget_mean is None:
        return None
    from planner.simulation.metrics import SMALLER_IS_BETTER

    d, lo, hi = s.vs_round_robin
    label = s.metric.replace("_", "-")
    good, bad = (hi < 0, lo > 0) if s.metric in SMALLER_IS_BETTER else (lo > 0, hi < 0)
    call = "better" if good else "worse" if bad else "within noise"
    return (f"mean {label} over the budget {s.budget_mean:.3f}, {d:+.3f} against round-robin "
            f"[95% {lo:+.3f} to {hi:+.3f}: {call}]")
