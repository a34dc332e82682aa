"""The remaining forecast between two ``planner plan`` runs: the saved forecast updated with the data since.

A forecast (:mod:`planner.simulation.forecast`) is a set of repetitions, each a
truth ``θ_r`` drawn from the posterior then and the comparisons ``n_r`` its
simulated continuation needed. When ``n`` more judgments have come in, the
saved repetitions are updated as weighted particles (sequential importance
sampling; e.g. Doucet, de Freitas & Gordon, *Sequential Monte Carlo Methods in
Practice*, 2001, ch. 1) — nothing is simulated again:

* weight ``w_r ∝ p(new judgments | θ_r)^κ``: the Bradley–Terry–Davidson
  likelihood of the judgments since (cell counts), tempered by ``κ = 1/deff``,
  the design effect of clustered verdicts (a likelihood that treats correlated
  verdicts as independent is too sharp by that factor);
* a repetition whose continuation met the target within the ``n`` comparisons
  the study has since spent is ruled out when the live study has not met it
  (``resolved`` is measurable on the live posterior; credible-τ is not, so its
  repetitions are kept);
* what remains of repetition ``r`` is ``n_r − n``; the median and interval are
  the weighted quantiles.

The effective number of repetitions ``(Σw)² / Σw²`` says how much of the
forecast is left; below :data:`MIN_ESS` (half the repetitions for a forecast of
fewer than 40), when judgments were retracted, or when every repetition is ruled
out, the update says so and ``planner plan`` should run again.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import partial

import numpy as np

from planner.counts import Counts
from planner.equality import array_eq
from planner.model import bt

__all__ = ["MIN_ESS", "Remaining", "SavedForecast", "cell_table", "update"]

#: fewer effective repetitions than this: the saved forecast is too far behind the data to be updated
MIN_ESS = 20.0


def cell_table(counts: Counts) -> np.ndarray:
    """(M, M, 4): per (left, right) the A / B / tie / invalid counts, strata pooled."""
    m = len(counts.systems)
    t = np.zeros((m, m, 4), dtype=np.int64)
    for k, field in enumerate(("a_wins", "b_wins", "ties", "invalid")):
        np.add.at(t[:, :, k], (counts.a, counts.b), getattr(counts, field))
    return t


@array_eq
@dataclass(frozen=True)
class SavedForecast:
    """What ``planner plan`` keeps of its first target: per repetition ``theta`` (R, M + 2) = strengths,
    γ, log ν and ``needed`` (R,) (+inf: beyond ``budget``); the pooled ``table`` (M, M, 4) it started
    from; ``temper`` = 1/design effect."""

    metric: str
    value: float
    text: str
    level: float
    batch: int
    budget: int
    table: np.ndarray
    theta: np.ndarray
    needed: np.ndarray
    temper: float = 1.0

    @property
    def judgments(self) -> int:
        return int(self.table.sum())


@dataclass(frozen=True)
class Remaining:
    """The updated forecast: ``median``/``lo``/``hi`` more comparisons at ``level`` (inf: beyond the budget),
    ``new`` judgments since the forecast, ``ess`` effective repetitions of ``reps``; ``met`` when the live
    study meets the target; ``stale`` (with ``why``) when the forecast cannot be updated."""

    text: str
    level: float
    median: float
    lo: float
    hi: float
    new: int
    ess: float
    reps: int
    met: bool = False
    stale: bool = False
    why: str = ""
    progress: str = ""          # the live study's standing, e.g. "22 of 28 pairs resolved now"

    def sentence(self) -> str:
        """``about 420 [300–610] more comparisons to resolved at 50 Elo (80%; …)``, or why not."""
        now = f"; {self.progress}" if self.progress else ""
        if self.met:
            return f"{self.text}: met now{now}"
        if self.stale:
            return f"the forecast to {self.text} is out of date ({self.why}): run planner plan again{now}"
        f = lambda x: "more than the budget" if math.isinf(x) else f"{x:,.0f}"  # noqa: E731
        since = f"updated with {self.new:,} judgments since, {self.ess:.0f} of {self.reps} repetitions effective"
        basis = since if self.new else "as forecast"
        if math.isinf(self.median):
            low = "" if math.isinf(self.lo) else f"; the {self.level:.0%} interval starts at {f(self.lo)}"
            return (f"{self.text} is out of reach within the budget in most repetitions{low} "
                    f"({basis}){now}")
        return (f"about {f(self.median)} [{f(self.lo)}–{f(self.hi)}] more comparisons to {self.text} "
                f"({self.level:.0%} interval; {basis}){now}")

    def to_dict(self) -> dict:
        fin = lambda x: None if math.isinf(x) else float(x)  # noqa: E731
        return {"target": self.text, "level": self.level, "median": fin(self.median), "lo": fin(self.lo),
                "hi": fin(self.hi), "new_judgments": self.new, "effective_reps": self.ess, "reps": self.reps,
                "met": self.met, "stale": self.stale, "why": self.why, "progress": self.progress,
                "sentence": self.sentence()}


def _loglik(theta: np.ndarray, delta: np.ndarray) -> np.ndarray:
    """Log-likelihood of the cell counts ``delta`` (M, M, 4) under each repetition's parameters."""
    m = delta.shape[0]
    a, b = np.nonzero(delta[:, :, :3].sum(axis=2))
    if a.size == 0:
        return np.zeros(theta.shape[0])
    gap = theta[:, a] - theta[:, b] + theta[:, [m]]
    pa, pb, pt = bt.outcome_probs(gap, np.exp(theta[:, [m + 1]]))
    n = delta[a, b, :3].astype(float)
    with np.errstate(divide="ignore"):
        return (n[:, 0] * np.log(pa) + n[:, 1] * np.log(pb) + n[:, 2] * np.log(pt)).sum(axis=1)


def _weighted_quantile(x: np.ndarray, w: np.ndarray, p: float) -> float:
    """The inverted-CDF quantile of ``x`` under weights ``w`` (the smallest x with weight share >= p)."""
    order = np.argsort(x, kind="stable")
    cum = np.cumsum(w[order]) / w.sum()
    return float(x[order][min(int(np.searchsorted(cum, p - 1e-12)), x.size - 1)])


def update(saved: SavedForecast, now: Counts, *, met_now: bool | None = None) -> Remaining:
    """The saved forecast updated with the judgments in ``now`` since (see the module docstring).

    ``met_now``: whether the live study meets the target (``resolved``), or None when not measurable.
    """
    reps = int(saved.needed.size)
    remaining = partial(Remaining, text=saved.text, level=saved.level, reps=reps)
    delta = cell_table(now) - saved.table
    if delta.shape != saved.table.shape or np.any(delta < 0):
        return remaining(median=math.inf, lo=math.inf, hi=math.inf, new=0, ess=0.0, stale=True,
                         why="judgments were retracted or the systems changed since")
    new = int(delta.sum())
    if met_now:
        return remaining(median=0.0, lo=0.0, hi=0.0, new=new, ess=float(reps), met=True)
    logw = saved.temper * _loglik(saved.theta, delta)
    if met_now is False:
        logw = np.where(saved.needed <= new, -np.inf, logw)
    if not np.isfinite(logw).any():
        return remaining(median=math.inf, lo=math.inf, hi=math.inf, new=new, ess=0.0, stale=True,
                         why=f"every repetition met the target within the {new:,} judgments since")
    w = np.exp(logw - logw[np.isfinite(logw)].max())
    ess = float(w.sum() ** 2 / (w ** 2).sum())
    rest = np.maximum(saved.needed - new, 0.0)
    q = (1 - saved.level) / 2
    med, lo, hi = (_weighted_quantile(rest, w, p) for p in (0.5, q, 1 - q))
    if new and ess < min(MIN_ESS, reps / 2):
        return remaining(median=med, lo=lo, hi=hi, new=new, ess=ess, stale=True,
                         why=f"only {ess:.0f} of {reps} repetitions still fit the {new:,} judgments since")
    return remaining(median=med, lo=lo, hi=hi, new=new, ess=ess)
