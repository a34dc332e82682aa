"""A forecast of what the rest of a study costs: one simulated continuation per repetition.

Per repetition ``r`` (:class:`ForecastSource`, called by the simulator's loop):

1. the parameters ``(beta, gamma, log_nu)`` are drawn jointly from the pilot's
   posterior (:class:`ParameterDraws`: the Laplace Gaussian, or one of the NUTS
   draws), unless the user fixed the tie rate or the position effect; the
   invalid rate is drawn from its Jeffreys posterior Beta(invalid + ½, usable + ½);
2. the rest of the study — every verdict its design can still collect — is drawn
   under those parameters with the clustered judge
   (:func:`planner.simulation.study_pool.draw_pool`);
3. the truth the targets are scored against is the fit of the end of the study
   (the pilot plus that pool): its mean, and the pairs it credibly separates
   (P(order) > 0.95) — the same definition as a replay's (``simulate --replay``:
   the fit of the whole file);
4. the loop continues from the pilot's own counts, batch by batch with the
   chosen strategy, drawing from the pool without replacement, until every
   target is met or the budget is spent (:func:`planner.simulation.loop.run_one`).

The comparisons a repetition needed for a target are those spent when the
target was first met (0 when the pilot already meets it); a repetition that
never met it needed more than the budget. Over the repetitions these make the
predictive distribution; :func:`summarise_target` reports its median and the
central interval at the stated level (observed quantiles, "more than the
budget" counted as +inf).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from planner.counts import Counts
from planner.equality import array_eq
from planner.simulation.cluster import canonical_probs, copula_rho
from planner.simulation.metrics import meets
from planner.simulation.replay import ReplayPool
from planner.simulation.study_pool import Layout, PilotVerdicts, PoolDesign, draw_pool, pair_index
from planner.simulation.truth import Truth, truth_from_counts

__all__ = ["ForecastSource", "ParameterDraws", "TargetForecast", "design_rho", "interval", "needed",
           "summarise_target"]

#: pairs the ICC calibration averages over (a larger study: an evenly spaced subset of its pairs)
CALIBRATION_PAIRS = 400


@array_eq
@dataclass(frozen=True)
class ParameterDraws:
    """The repetitions' parameters ``(beta (M), gamma, log_nu)``: a Gaussian (``cov``), draws, or fixed.

    ``mean`` (M + 2,); ``cov`` (M + 2, M + 2) or None; ``draws`` (S, M + 2) or None (NUTS: one draw
    picked at random per repetition). With neither, every repetition uses ``mean``.
    """

    mean: np.ndarray
    cov: np.ndarray | None = None
    draws: np.ndarray | None = None

    def draw(self, rng: np.random.Generator) -> np.ndarray:
        if self.draws is not None:
            return self.draws[int(rng.integers(self.draws.shape[0]))]
        if self.cov is None:
            return self.mean
        # eigh, not cholesky: the strengths' block is singular along the sum-to-zero direction
        val, vec = np.linalg.eigh(self.cov)
        x = self.mean + vec @ (np.sqrt(np.clip(val, 0.0, None)) * rng.standard_normal(val.size))
        m = self.mean.size - 2
        x[:m] -= x[:m].mean()
        return x


@array_eq
@dataclass(frozen=True)
class ForecastSource:
    """Draws one repetition's truth and pool (see the module docstring).

    ``tie_nu``/``position`` fix ν and γ when given (else each repetition's draw); ``invalid`` is
    ``(invalid, usable)`` counts for the Jeffreys draw, or a fixed rate; ``rho`` the copula correlation
    of the clustered judge; ``budget`` the most comparisons a continuation may draw.
    """

    params: ParameterDraws
    layout: Layout
    pilot: PilotVerdicts
    start: Counts
    budget: int
    rho: float = 0.0
    invalid: tuple | float = 0.0
    tie_nu: float | None = None
    position: float | None = None

    def parameters(self, rng: np.random.Generator) -> tuple[np.ndarray, float, float, float]:
        """``(strengths, gamma, nu, invalid rate)`` of one repetition."""
        theta = self.params.draw(rng)
        m = theta.size - 2
        gamma = float(theta[m]) if self.position is None else float(self.position)
        nu = float(math.exp(theta[m + 1])) if self.tie_nu is None else float(self.tie_nu)
        if isinstance(self.invalid, tuple):
            bad, good = self.invalid
            rate = float(rng.beta(bad + 0.5, good + 0.5))
        else:
            rate = float(self.invalid)
        return theta[:m], gamma, nu, rate

    def draw(self, rng: np.random.Generator) -> tuple[Truth, ReplayPool]:
        strengths, gamma, nu, rate = self.parameters(rng)
        drawn = draw_pool(self.layout, self.pilot, self.start, strengths, gamma, nu, self.rho, rate,
                          self.budget, rng)
        return truth_from_counts(drawn.end), drawn.pool


def design_rho(icc: float, strengths: np.ndarray, gamma: float, nu: float, design: PoolDesign) -> float:
    """The copula correlation whose verdict-score ICC is ``icc`` in this design, at these parameters.

    A cluster of the design holds ``votes × reuse`` verdicts in each order it is shown in (both orders,
    or one); the ICC is pooled over every pair of verdicts sharing a cluster, over the study's pairs
    (:func:`planner.simulation.cluster.score_icc`). A design whose clusters hold one verdict has no
    within-cluster pairs: the correlation is then calibrated on a cluster of both orders (it shapes no
    verdict, but the same judge gives the same figure whatever the design).
    """
    if icc <= 0:
        return 0.0
    i, j = pair_index(strengths.size)
    if i.size > CALIBRATION_PAIRS:
        pick = np.linspace(0, i.size - 1, CALIBRATION_PAIRS).round().astype(np.int64)
        i, j = i[pick], j[pick]
    k = design.per_cluster
    both = design.orders == "both" or k == 1
    # within one pair: kinds (first system left, right); weights of the verdict pairs sharing a cluster
    within = (np.array([[k * (k - 1) / 2, k * k], [k * k, k * (k - 1) / 2]]) if both
              else np.array([[k * (k - 1) / 4, 0.0], [0.0, k * (k - 1) / 4]]))
    lefts = np.tile([True, False], i.size)
    p_lose, p_tie = canonical_probs(strengths[np.repeat(i, 2)], strengths[np.repeat(j, 2)], lefts, gamma, nu)
    same = np.kron(np.eye(i.size), within)
    return copula_rho(icc, p_lose, p_tie, same)


def needed(trace, metric: str, value: float) -> float:
    """Comparisons a run spent when ``metric`` first met ``value`` (0: at the start); +inf if never."""
    v = trace.values.get(metric)
    if v is None or trace.spent.size == 0:
        return math.inf
    hit = np.flatnonzero(meets(metric, v, value))
    return float(trace.spent[hit[0]]) if hit.size else math.inf


def interval(values, confidence_level: float) -> tuple[float, float, float]:
    """``(median, lo, hi)``: observed quantiles 0.5 and (1 ∓ confidence_level)/2 (inverted CDF; +inf stays
    +inf). The interval is a predictive one: it holds a future study's count, not a parameter."""
    v = np.sort(np.asarray(values, dtype=float))
    q = lambda p: float(np.quantile(v, p, method="inverted_cdf"))  # noqa: E731
    return q(0.5), q((1 - confidence_level) / 2), q((1 + confidence_level) / 2)


@dataclass(frozen=True)
class TargetForecast:
    """The predictive distribution of the comparisons (and rounds) still needed for one target.

    ``per_rep`` comparisons per repetition (+inf: not within ``budget``); ``median``/``lo``/``hi`` at
    ``level`` (``inf`` when that quantile is beyond the budget); ``reached`` the share of repetitions
    that met the target within the budget; ``rounds_*`` the same for rounds of ``batch``.
    """

    metric: str
    value: float
    text: str
    level: float
    budget: int
    batch: int
    per_rep: tuple
    median: float
    lo: float
    hi: float
    reached: float
    already: float              # share of repetitions in which the pilot alone meets the target
    rounds_median: float
    rounds_lo: float
    rounds_hi: float


def summarise_target(traces, metric: str, value: float, text: str, confidence_level: float, budget: int,
                     batch: int) -> TargetForecast:
    """One target's :class:`TargetForecast` from the runs (failed runs left out by the caller)."""
    per = np.array([needed(t, metric, value) for t in traces], dtype=float)
    med, lo, hi = interval(per, confidence_level)
    rounds = np.ceil(per / batch)
    r_med, r_lo, r_hi = interval(rounds, confidence_level)
    return TargetForecast(metric, value, text, confidence_level, budget, batch, tuple(float(x) for x in per), med,
                          lo, hi, float(np.mean(np.isfinite(per))), float(np.mean(per == 0)), r_med, r_lo, r_hi)
