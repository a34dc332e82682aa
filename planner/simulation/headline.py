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

Baselines are every strategy but ``oracle`` (it knows the truth) and the
active candidates (``active`` with the ranking or top-k objective); the
adaptive objectives ``entropy``/``variance``/``anchor`` count as baselines.
"""

from __future__ import annotations

from dataclasses import replace

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


def add_ratios(strategies: list, metric: str, target: float, seed: int) -> tuple[list, list[str]]:
    """Fill each strategy's ratio to round-robin and to the best other baseline, with bands."""
    notes = []
    rng_root = np.random.SeedSequence([seed, 14])
    rr = next((s for s in strategies if s.strategy == "round-robin" and s.needed_mean_curve is not None), None)
    if rr is None and any(s.strategy == "round-robin" for s in strategies):
        notes.append("round-robin's mean curve did not reach the target within the budget; ratios are not defined")
    out = []
    for i, s in enumerate(strategies):
        rng = np.random.default_rng(rng_root.spawn(i + 1)[i])
        fields = {}
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
                         part(s.ratio_to_best, s.best_band, f"the best baseline ({s.best_baseline})")) if p]
    return f"{s.name}: " + "; ".join(parts) if parts else ""
