"""Money spent on humans only or on the planned humans + judge split, by simulation.

Validates :mod:`planner.hybrid.budget` by simulation: for each money budget, draw studies, fit them
with the real estimators of :mod:`planner.hybrid.ppi` (PPI++ with tuned λ, and the human-only fit) and
compare the achieved interval half-width, coverage and power with the planned (predicted) ones.

* **Synthetic** (:func:`simulate_money`): one pair with a known human win rate p (among decisive
  votes) and tie rate t; each item gets one human vote y ∈ {1, ½, 0}. The judge sees the item in both
  presentation orders; in each order it copies the human verdict with probability ``agreement`` and
  otherwise answers at random, the first-shown response winning with probability σ(``position``)
  (its position bias). Its prediction ŷ is the mean of its two scores (the bias cancels in
  expectation, as in :mod:`planner.workflows.hybrid_report`). ρ = corr(y, ŷ) is known in closed form
  (:func:`judge_rho`), so the plan uses the true ρ.
* **Replay** (:func:`replay_money`): real items (e.g. Vicuna80: 2,240 items, GPT-4 both orders and
  three crowd votes each). The truth is the human-only fit on every item; each replicate buys
  ⌊B/c_h⌋ random human items (human-only) or the planned n human + N judge-only items (hybrid,
  with ρ̂ from all items and the pool as the cap) and fits both. The items come in as arrays
  (a study is read by :mod:`planner.workflows.simulate_hybrid`).

Every random draw comes from the one seeded :class:`numpy.random.Generator` passed in.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy.special import expit, ndtr, ndtri

from planner import limits
from planner.errors import UsageError, check_range
from planner.hybrid import budget as hb
from planner.hybrid.ppi import human_only_bradley_terry, ppi_bradley_terry

__all__ = ["MoneyRow", "draw_items", "judge_rho", "replay_money", "simulate_money"]

_PAIR_NAMES = ("a", "b")


def _score_moments(win_rate: float, tie_rate: float) -> tuple[float, float]:
    """(E y, E y²) of one human vote: 1 w.p. (1−t)p, ½ w.p. t, 0 otherwise."""
    m1 = (1 - tie_rate) * win_rate + 0.5 * tie_rate
    m2 = (1 - tie_rate) * win_rate + 0.25 * tie_rate
    return m1, m2


def judge_rho(win_rate: float, tie_rate: float, agreement: float, position: float) -> float:
    """Closed-form corr(y, ŷ) of the synthetic judge (derivation in docs/methods.md).

    Jₖ (order k) = y w.p. q, else a Bernoulli(rₖ) with r₁ = σ(b), r₂ = 1 − σ(b) in the item's
    orientation. Cov(y, Jₖ) = q Var y; Cov(J₁, J₂) = q² Var y; Var Jₖ = q E y² + (1−q) rₖ − (E Jₖ)²;
    ŷ = (J₁ + J₂)/2, so ρ = q Var y / sqrt(Var y · (Var J₁ + Var J₂ + 2 q² Var y)/4).
    """
    m1, m2 = _score_moments(win_rate, tie_rate)
    var_y = m2 - m1 * m1
    q = agreement
    var_j = 0.0
    for r in (float(expit(position)), 1 - float(expit(position))):
        mean = q * m1 + (1 - q) * r
        var_j += q * m2 + (1 - q) * r - mean * mean
    var_hat = (var_j + 2 * q * q * var_y) / 4
    return float(q * var_y / math.sqrt(var_y * var_hat)) if var_hat > 0 and var_y > 0 else 0.0


def draw_items(m: int, win_rate: float, tie_rate: float, agreement: float, position: float,
               rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """``m`` synthetic items: (human scores y, judge predictions ŷ averaged over both orders)."""
    u = rng.random(m)
    y = np.where(u < tie_rate, 0.5, np.where(u < tie_rate + (1 - tie_rate) * win_rate, 1.0, 0.0))
    first = float(expit(position))
    scores = []
    for r in (first, 1 - first):                     # a shown first, then b shown first
        copy = rng.random(m) < agreement
        scores.append(np.where(copy, y, (rng.random(m) < r).astype(float)))
    return y, (scores[0] + scores[1]) / 2


@dataclass(frozen=True)
class MoneyRow:
    """One (budget, method): what the money bought and what the intervals achieved.

    ``predicted_half_width`` = z·σ_y/√(effective n) from the plan; ``half_width`` the mean achieved
    half-width (win-rate scale for synthetic, mean over systems' strengths for a replay, where the
    prediction is the human-only width × √(n_h/effective n)); ``coverage`` the share of intervals
    holding the truth (± ``coverage_se``, its Monte Carlo standard error); ``power`` the share
    excluding 0.5 (synthetic; ``None`` on a replay).
    """

    budget: float
    method: str
    n: int
    N: int
    cost: float
    effective_n: float
    predicted_half_width: float
    half_width: float
    half_width_se: float
    coverage: float
    coverage_se: float
    power: float | None
    predicted_power: float | None
    mean_lambda: float
    reps: int


def _check(budgets, human_cost, judge_cost, reps, confidence_level, max_items=None):
    budgets = [float(b) for b in budgets]
    if not budgets or any(not (b > 0 and math.isfinite(b)) for b in budgets):
        raise UsageError("`money`: give one or more positive amounts, comma-separated", parameters=('money',))
    limits.check_int("reps", reps, 1, limits.MAX_SIM_REPS)
    check_range("confidence_level", confidence_level, 0, 1)
    hb.check_costs(human_cost, judge_cost, max_items)
    return budgets


def _check_items(budget: float, n: int, N: int) -> None:
    if n + N > limits.MAX_SIM_BUDGET:
        raise UsageError(f"`money` {budget:g} buys {n + N:,} items per replicate; the simulator takes at most "
                         f"{limits.MAX_SIM_BUDGET:,}", parameters=('money',))
    if n < 2:
        raise UsageError(f"`money` {budget:g} buys {n} human labels; need at least 2", parameters=('money',))


def _row(budget, method, n, N, cost, eff, pred, widths, hits, rejects, pred_power, lams):
    widths, hits = np.asarray(widths), np.asarray(hits, float)
    reps = len(widths)
    return MoneyRow(float(budget), method, int(n), int(N), float(cost), float(eff), float(pred),
                    float(widths.mean()), float(widths.std(ddof=1) / math.sqrt(reps)) if reps > 1 else 0.0,
                    float(hits.mean()), float(math.sqrt(max(hits.mean() * (1 - hits.mean()), 1e-12) / reps)),
                    None if rejects is None else float(np.mean(rejects)), pred_power, float(np.mean(lams)), reps)


def _z_power(effect_score: float, sd: float, eff_n: float, z: float) -> float:
    """Two-sided z-test power at the effective n (normal approximation)."""
    shift = abs(effect_score) * math.sqrt(eff_n) / sd
    return float(ndtr(shift - z) + ndtr(-shift - z))


def simulate_money(budgets, *, human_cost: float, judge_cost: float, win_rate: float = 0.55,
                   tie_rate: float = 0.0, agreement: float = 0.8, position: float = 0.0,
                   reps: int = 200, confidence_level: float = 0.95,
                   rng: np.random.Generator) -> tuple[float, list[MoneyRow]]:
    """(ρ, rows): per budget a human-only row and a hybrid row (when the judge pays off)."""
    check_range("win_rate", win_rate, 0, 1)
    check_range("tie_rate", tie_rate, 0, 1, low_open=False)
    check_range("agreement", agreement, 0, 1, low_open=False, high_open=False)
    check_range("position", position, -10, 10, low_open=False, high_open=False)
    if judge_cost == 0:
        raise UsageError("`judge_cost` 0 makes the synthetic judge-only items unlimited; give a price > 0",
                         parameters=('judge_cost',))
    budgets = _check(budgets, human_cost, judge_cost, reps, confidence_level)
    rho = judge_rho(win_rate, tie_rate, agreement, position)
    m1, m2 = _score_moments(win_rate, tie_rate)
    sd = math.sqrt(m2 - m1 * m1)
    z = float(ndtri(0.5 + confidence_level / 2))
    rows = []
    for budget in budgets:
        n_h, split = hb.plan_for_money(budget, rho, human_cost, judge_cost)
        plans = [("humans only", n_h, 0, n_h * human_cost, float(n_h))]
        if split is not None:
            # the integer split's counts are whole (Split types them float for the continuous optimum)
            plans.append(("humans + judge", int(split.n), int(split.N), split.cost, split.effective_n))
        for method, n, N, cost, eff in plans:
            _check_items(budget, n, N)
            widths, hits, rejects, lams = [], [], [], []
            for _ in range(reps):
                y, yhat = draw_items(n + N, win_rate, tie_rate, agreement, position, rng)
                pairs = np.tile([0, 1], (n + N, 1))
                if N:
                    f = ppi_bradley_terry(_PAIR_NAMES, pairs[:n], y[:n], yhat[:n], pairs[n:], yhat[n:],
                                          confidence_level=confidence_level)
                else:
                    f = human_only_bradley_terry(_PAIR_NAMES, pairs, y, confidence_level=confidence_level)
                lo, hi = f.win_lo[0, 1], f.win_hi[0, 1]
                widths.append((hi - lo) / 2)
                hits.append(lo <= m1 <= hi)
                rejects.append(not lo <= 0.5 <= hi)
                lams.append(f.lam)
            pred = z * sd / math.sqrt(eff)
            pp = _z_power(m1 - 0.5, sd, eff, z) if m1 != 0.5 else None
            rows.append(_row(budget, method, n, N, cost, eff, pred, widths, hits, rejects, pp, lams))
    return rho, rows


def replay_money(items, budgets, *, human_cost: float, judge_cost: float, reps: int = 200,
                 confidence_level: float = 0.9, rng: np.random.Generator) -> tuple[float, list[MoneyRow]]:
    """(ρ̂, rows) on real items (:class:`planner.hybrid.items.HybridItems`; those without human
    votes are left out, since the replay needs each item's human score).

    Truth: the human-only fit on all items. ρ̂: :func:`planner.hybrid.budget.rho_from_items` on all
    items; the pool of items caps n + N. ``half_width`` is the mean strength half-width (log scale)
    over systems; the hybrid's ``predicted_half_width`` is the human-only row's achieved one ×
    √(n_h/effective n) (the plan's promise relative to humans only), the human-only row predicts
    itself. ``coverage``: share of system strengths inside their intervals.
    """
    lab = ~np.isnan(items.y)                      # items without human votes have no truth: left out
    budgets = _check(budgets, human_cost, judge_cost, reps, confidence_level, max_items=int(lab.sum()))
    names, pairs, y, yhat = items.names, items.pairs[lab], items.y[lab], items.yhat[lab]
    m = len(y)
    truth = human_only_bradley_terry(names, pairs, y, confidence_level=confidence_level).theta
    rho, _ = hb.rho_from_items(pairs, y, yhat)
    rows = []
    for budget in budgets:
        n_h, split = hb.plan_for_money(budget, rho, human_cost, judge_cost, max_items=m)
        n_h = min(n_h, m)
        plans = [("humans only", n_h, 0, n_h * human_cost, float(n_h))]
        if split is not None:
            # the integer split's counts are whole (Split types them float for the continuous optimum)
            plans.append(("humans + judge", int(split.n), int(split.N), split.cost, split.effective_n))
        base = None
        for method, n, N, cost, eff in plans:
            _check_items(budget, n, N)
            widths, hits, lams = [], [], []
            for _ in range(reps):
                pick = rng.permutation(m)[:n + N]
                li, ui = pick[:n], pick[n:]
                if N:
                    f = ppi_bradley_terry(names, pairs[li], y[li], yhat[li], pairs[ui], yhat[ui],
                                          confidence_level=confidence_level)
                else:
                    f = human_only_bradley_terry(names, pairs[li], y[li], confidence_level=confidence_level)
                widths.append(float(np.mean(f.hi - f.lo)) / 2)
                hits.append(float(np.mean((f.lo <= truth) & (truth <= f.hi))))
                lams.append(f.lam)
            if base is None:
                base = float(np.mean(widths))
            pred = base * math.sqrt(n_h / eff)
            rows.append(_row(budget, method, n, N, cost, eff, pred, widths, hits, None, None, lams))
    return rho, rows
