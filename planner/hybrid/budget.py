"""Budgeting a hybrid (humans + judge) study: how many human and judge labels, at what cost.

Pure functions (a pilot study is read by :func:`planner.services.study_pilot.rho_from_study`).

Model (PPI++ with the optimal λ; Angelopoulos, Duchi & Zrnic 2023, arXiv:2311.01453, and the cost
analysis of Broska, Howes & van Loon 2024, the "mixed subjects design", which ``ppi_py.ppi_power``
implements). An *item* is one (prompt, pair); ``n`` items get a human label *and* a judge label,
``N`` more items get only a judge label, ``M = n + N`` items are judged in all. With ρ the
correlation of the human score y and the judge prediction ŷ on an item (ties count half a win in
both; the judge averaged over its presentation orders), the variance of the PPI++ estimate of the
mean score (a pair's win rate, or — by the delta method — its Bradley–Terry contrast) is

    Var(n, N) = σ²/n · (1 − ρ² N/(n + N)) = σ² · ((1 − ρ²)/n + ρ²/M),

so a human-only study needs n₀ = n(n + N)/(n + (1 − ρ²)N) items (the *effective n*) for the same
variance. Costs: c_h per human label, c_j per judge label (a labelled item is judged too), so the
money spent is n·c_h + M·c_j. Minimising it at fixed variance σ²/n₀ (Lagrange; docs/methods.md,
"Budgeting a hybrid study"), with γ = c_j/c_h:

    n* = n₀ (1 − ρ² + ρ √(γ(1 − ρ²))),   M* = n₀ (ρ² + ρ √((1 − ρ²)/γ)),
    cost* = c_h n₀ (√(1 − ρ²) + ρ √γ)²,

which beats the human-only cost c_h n₀ iff √(1 − ρ²) + ρ√γ < 1 (then M* > n* automatically).
A free, unlimited judge (N → ∞) leaves n = n₀(1 − ρ²); a cap M ≤ M_max (a finite pool of prompts,
or a judge budget) gives n = (1 − ρ²) n₀ M_max / (M_max − ρ² n₀). Integer plans round explicitly:
:func:`integer_split` searches whole n near n* and takes the smallest whole M meeting the variance.
A negative ρ helps no more than ρ = 0 (PPI++ clips λ to [0, 1]), so ρ is used as max(ρ, 0).

The human-only sizes come from :mod:`planner.stats.power` (the same normal-approximation n as ``planner
size --ties half``), never from a copy of its formula.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy.special import ndtri

from planner import limits
from planner.errors import DataError, UsageError, check_range
from planner.stats import power as pw

__all__ = [
    "HybridPlan",
    "Split",
    "check_costs",
    "continuous_split",
    "effective_n",
    "integer_split",
    "plan",
    "plan_for_effect",
    "plan_for_money",
    "plan_for_width",
    "ppi_variance_factor",
    "rho_from_agreement",
    "rho_from_items",
    "rho_interval",
]

_SEARCH = 4          # whole n searched on each side of the continuous optimum


def rho_from_agreement(agreement: float) -> float:
    """ρ = 2a − 1 for binary verdicts whose two margins are both 1/2.

    With P(y = 1) = P(ŷ = 1) = 1/2 and agreement a = P(y = ŷ): P(y = ŷ = 1) = a/2 by symmetry,
    Cov(y, ŷ) = a/2 − 1/4 and Var y = Var ŷ = 1/4, so ρ = (a/2 − 1/4)/(1/4) = 2a − 1.
    """
    check_range("agreement", agreement, 0, 1, low_open=False, high_open=False)
    return 2.0 * agreement - 1.0


def ppi_variance_factor(n: float, N: float, rho: float) -> float:
    """Var(n, N)·n/σ² = 1 − ρ²·N/(n + N) (ρ < 0 counts as 0)."""
    r2 = max(rho, 0.0) ** 2
    return 1.0 - r2 * N / (n + N)


def effective_n(n: float, N: float, rho: float) -> float:
    """Human-only items with the same variance: n(n + N)/(n + (1 − ρ²)N)."""
    r2 = max(rho, 0.0) ** 2
    return n * (n + N) / (n + (1.0 - r2) * N)


@dataclass(frozen=True)
class Split:
    """``n`` human(+judge) items, ``N`` judge-only items, ``cost`` = n·c_h + (n + N)·c_j."""

    n: float
    N: float
    cost: float
    effective_n: float
    capped: bool = False

    @property
    def items(self) -> float:
        return self.n + self.N


def check_costs(human_cost: float, judge_cost: float, max_items=None) -> None:
    """One-line usage errors for the two prices and the pool cap."""
    if not (human_cost > 0 and math.isfinite(human_cost)):
        raise UsageError(f"`human_cost` ({human_cost:g}) must be a positive number", parameters=('human_cost',))
    if not (judge_cost >= 0 and math.isfinite(judge_cost)):
        raise UsageError(f"`judge_cost` ({judge_cost:g}) must be a number >= 0", parameters=('judge_cost',))
    if judge_cost == 0 and max_items is None:
        raise UsageError("`judge_cost` 0 makes the judge-only pool unlimited: give `max_items` too",
                         parameters=('judge_cost', 'max_items'))
    if max_items is not None and not (isinstance(max_items, (int, np.integer)) and max_items >= 1):
        raise UsageError(f"`max_items` ({max_items}) must be a whole number >= 1", parameters=('max_items',))


def _check_inputs(rho: float, human_cost: float, judge_cost: float, max_items) -> float:
    check_range("rho", rho, -1, 1, low_open=False, high_open=True)
    check_costs(human_cost, judge_cost, max_items)
    return max(rho, 0.0)


def continuous_split(n0: float, rho: float, human_cost: float, judge_cost: float,
                     max_items: int | None = None) -> Split | None:
    """The cost-optimal real (n, N) with effective n = ``n0``; ``None`` if the judge cannot pay off
    (√(1 − ρ²) + ρ√γ ≥ 1, or a cap ``max_items`` ≤ n0 that leaves no room for judge-only items)."""
    rho = _check_inputs(rho, human_cost, judge_cost, max_items)
    r2 = rho * rho
    gamma = judge_cost / human_cost
    if rho == 0 or rho * rho >= 1:
        return None
    if gamma > 0:
        n = n0 * (1 - r2 + rho * math.sqrt(gamma * (1 - r2)))
        m = n0 * (r2 + rho * math.sqrt((1 - r2) / gamma))
    else:
        n, m = n0 * (1 - r2), math.inf
    capped = max_items is not None and m > max_items
    if capped and max_items is not None:
        if max_items <= n0:
            return None
        m = float(max_items)
        n = (1 - r2) * n0 * m / (m - r2 * n0)
    cost = n * human_cost + m * judge_cost
    if m <= n or cost >= n0 * human_cost:
        return None
    return Split(n, m - n, cost, n0, capped)


def integer_split(n0: float, rho: float, human_cost: float, judge_cost: float,
                  max_items: int | None = None) -> Split | None:
    """Whole (n, N) meeting effective n ≥ ``n0`` at the least cost, searched near the continuous
    optimum: for each whole n, M = ⌈ρ²/(1/n₀ − (1 − ρ²)/n)⌉ (the fewest judged items that reach the
    variance), ties broken towards fewer humans. ``None`` where the judge does not pay off."""
    best = continuous_split(n0, rho, human_cost, judge_cost, max_items)
    if best is None:
        return None
    r2 = max(rho, 0.0) ** 2
    found = None
    lo = max(1, math.floor(best.n) - _SEARCH)
    for n in range(lo, math.ceil(best.n) + _SEARCH + 1):
        slack = 1.0 / n0 - (1.0 - r2) / n
        if slack <= 0:
            continue
        m = max(n, math.ceil(r2 / slack - 1e-9))
        if max_items is not None and m > max_items:
            continue
        cost = n * human_cost + m * judge_cost
        if found is None or cost < found.cost - 1e-12:
            found = Split(n, m - n, cost, effective_n(n, m - n, rho), best.capped)
    if found is None or found.cost >= math.ceil(n0 - 1e-9) * human_cost:
        return None
    return found


@dataclass(frozen=True)
class HybridPlan:
    """A hybrid budget beside the human-only answer for the same target.

    ``n0`` is the continuous human-only n (per pair) the target needs; ``human_n`` its whole
    number (what ``planner size --ties half`` reports as the normal-approximation n); ``hybrid``
    the whole cost-optimal split with effective n ≥ ``human_n`` (so it is at least as precise as
    the human-only plan beside it), or ``None`` where the judge does not pay off (then the human-only
    study is the plan); ``exact`` the continuous optimum. ``floor_n`` = ⌈n₀(1 − ρ²)⌉: the human
    items still needed with an unlimited free judge. Counts and costs are per pair; ``pairs``
    multiplies them into totals.
    """

    target: str
    target_text: str
    rho: float
    human_cost: float
    judge_cost: float
    n0: float
    human_n: int
    human_cost_total: float
    hybrid: Split | None
    exact: Split | None
    floor_n: int
    pairs: int
    max_items: int | None
    human_n_exact: int | None = None

    @property
    def use_judge(self) -> bool:
        return self.hybrid is not None

    @property
    def cost(self) -> float:
        """Cost of the recommended plan, all pairs."""
        return self.pairs * (self.hybrid.cost if self.hybrid else self.human_n * self.human_cost)

    @property
    def saving(self) -> float:
        """Human-only cost minus the plan's cost, all pairs (0 when the judge does not pay off)."""
        return self.human_cost_total - self.cost

    @property
    def rho_used(self) -> float:
        """The ρ the plan uses: max(ρ, 0) (PPI++ clips λ to [0, 1]: a negative ρ helps no more than 0)."""
        return max(self.rho, 0.0)

    @property
    def cost_ratio_limit(self) -> float:
        """(√(1 − ρ²) + ρ√γ)²: the hybrid's cost per human-only item at the continuous optimum (ρ = ``rho_used``)."""
        r = self.rho_used
        return (math.sqrt(1 - r * r) + r * math.sqrt(self.judge_cost / self.human_cost)) ** 2

    def to_dict(self) -> dict:
        def split(s):
            return None if s is None else {"n": s.n, "N": s.N, "items": s.items, "cost": s.cost,
                                           "effective_n": s.effective_n, "capped": s.capped}
        return {"target": self.target, "target_text": self.target_text, "rho": self.rho, "rho_used": self.rho_used,
                "human_cost": self.human_cost, "judge_cost": self.judge_cost, "n0": self.n0,
                "human_only": {"n": self.human_n, "cost": self.human_cost_total / self.pairs,
                               "n_exact": self.human_n_exact},
                "hybrid": split(self.hybrid), "continuous": split(self.exact),
                "floor_n": self.floor_n, "pairs": self.pairs, "max_items": self.max_items,
                "use_judge": self.use_judge, "cost_total": self.cost, "saving_total": self.saving,
                "human_only_cost_total": self.human_cost_total,
                "cost_ratio_limit": self.cost_ratio_limit}


def plan(n0: float, rho: float, human_cost: float, judge_cost: float, *, target: str = "n0",
         target_text: str = "", pairs: int = 1, max_items: int | None = None,
         human_n: int | None = None, human_n_exact: int | None = None) -> HybridPlan:
    """The plan for a human-only requirement of ``n0`` items (continuous) per pair."""
    if not (n0 > 0 and math.isfinite(n0)):
        raise UsageError(f"the human-only size must be a positive finite number; got {n0!r:.40}", parameters=('n0',))
    if n0 > limits.MAX_JUDGMENTS:
        raise UsageError(f"the target needs about {n0:,.0f} human labels per pair; planner budgets at most "
                         f"{limits.MAX_JUDGMENTS:,} (a larger effect or `width`, or lower `power`/`confidence_level`, "
                         "needs fewer)", parameters=('width', 'power', 'confidence_level'))
    hn = math.ceil(n0 - 1e-9) if human_n is None else int(human_n)
    exact = continuous_split(n0, rho, human_cost, judge_cost, max_items)
    hybrid = integer_split(hn, rho, human_cost, judge_cost, max_items)      # at least the human-only n
    if max_items is not None and hn > max_items:
        raise UsageError(f"`max_items` ({max_items:,}) is below the {hn:,} items the target needs "
                         "even with a human label on each", parameters=('max_items',))
    r2 = max(rho, 0.0) ** 2
    return HybridPlan(target, target_text or f"human-only n = {n0:.1f}", rho, human_cost, judge_cost, n0, hn,
                      pairs * hn * human_cost, hybrid, exact, math.ceil(n0 * (1 - r2) - 1e-9), pairs,
                      max_items, human_n_exact)


def plan_for_effect(effect: float, rho: float, human_cost: float, judge_cost: float, *,
                    alpha: float = 0.05, power: float = 0.8, alternative: str = "two-sided",
                    tie_rate: float = 0.0, systems: int = 2, design: str = "anchor",
                    max_items: int | None = None) -> HybridPlan:
    """Detect a win rate of 0.5 + ``effect`` (among decisive verdicts; ties count half) vs 0.5.

    n₀ is :func:`planner.stats.power.n_normal` with ``ties='half'``; the human-only n is the
    normal-approximation n of :func:`planner.stats.power.size` (the exact binomial n is kept beside it).
    The PPI test is a z-test, so the variance factor applies under H0 and H1 alike.
    """
    d = pw.Design(alpha=alpha, power=power, alternative=alternative, tie_rate=tie_rate, ties="half",
                  systems=systems, design=design)
    res = pw.size(effect, d)
    n0 = pw.n_normal(effect, d.validated())
    text = (f"detect {0.5 + effect:.1%} vs 50% ({alternative}, α = {alpha:g}"
            f"{f' per family, {d.alpha_per_pair:.4g} per pair' if d.pairs > 1 else ''}, power {power:.0%})")
    return plan(n0, rho, human_cost, judge_cost, target="effect", target_text=text, pairs=d.pairs,
                max_items=max_items, human_n=res.comparisons_normal, human_n_exact=res.comparisons_exact)


def score_sd(win_rate: float = 0.5, tie_rate: float = 0.0) -> float:
    """sd of one item's human score (win 1, tie ½, loss 0) at a decisive win rate: planner.stats.power's."""
    check_range("win_rate", win_rate, 0, 1)
    check_range("tie_rate", tie_rate, 0, 1, low_open=False)
    return pw.sigmas(abs(win_rate - 0.5), pw.Design(ties="half", tie_rate=tie_rate))[1]


def plan_for_width(half_width: float, rho: float, human_cost: float, judge_cost: float, *,
                   confidence_level: float = 0.95, win_rate: float = 0.5, tie_rate: float = 0.0,
                   max_items: int | None = None) -> HybridPlan:
    """A ``confidence_level`` interval of half-width ``half_width`` on a pair's score (ties half).

    n₀ = (z σ / h)² with σ the item score's sd at the expected ``win_rate`` (0.5: the widest).
    """
    check_range("width", half_width, 0, 0.5)
    check_range("confidence_level", confidence_level, 0, 1)
    z = float(ndtri(0.5 + confidence_level / 2))
    try:
        n0 = (z * score_sd(win_rate, tie_rate) / half_width) ** 2
    except OverflowError:                          # a half-width like 1e-300
        n0 = math.inf
    if not n0 <= limits.MAX_JUDGMENTS:
        about = f"about {n0:,.0f}" if math.isfinite(n0) else "an unbounded number of"
        raise UsageError(f"`width` ({half_width:g}) needs {about} human labels per pair; planner budgets "
                         f"at most {limits.MAX_JUDGMENTS:,} (a wider `width` or lower `confidence_level` needs fewer)",
                         parameters=('width', 'confidence_level'))
    text = f"estimate ±{half_width:.3g} at {confidence_level:.0%} on a win rate near {win_rate:.0%} (ties count half)"
    return plan(n0, rho, human_cost, judge_cost, target="width", target_text=text, max_items=max_items)


def plan_for_money(budget: float, rho: float, human_cost: float, judge_cost: float, *,
                   max_items: int | None = None) -> tuple[int, Split | None]:
    """Spend ``budget``: (human-only n = ⌊B/c_h⌋, the whole hybrid split with the largest
    effective n whose cost ≤ B, or ``None`` when the judge does not pay off).

    The continuous optimum puts n₀ = B / (c_h (√(1 − ρ²) + ρ√γ)²); the whole split is the
    :func:`integer_split` for the largest n₀ that stays within the budget (bisection)."""
    if not (budget > 0 and math.isfinite(budget)):
        raise UsageError(f"`money` ({budget:g}) must be a positive number", parameters=('money',))
    check_costs(human_cost, judge_cost, max_items)
    if budget / human_cost > limits.MAX_JUDGMENTS:
        raise UsageError(f"`money` ({budget:g}) buys more than {limits.MAX_JUDGMENTS:,} human labels; planner "
                         "budgets at most that many", parameters=('money',))
    n_h = int(math.floor(budget / human_cost + 1e-9))
    if continuous_split(max(n_h, 1), rho, human_cost, judge_cost, max_items) is None:
        return n_h, None
    r = max(rho, 0.0)
    ratio = (math.sqrt(1 - r * r) + r * math.sqrt(judge_cost / human_cost)) ** 2
    hi = budget / (human_cost * ratio)
    lo = hi * 0.5
    best = None
    for _ in range(60):
        mid = 0.5 * (lo + hi)
        s = integer_split(mid, rho, human_cost, judge_cost, max_items)
        if s is not None and s.cost <= budget + 1e-9:
            best, lo = s, mid
        else:
            hi = mid
    if best is None or best.effective_n <= n_h:
        return n_h, None
    return n_h, best


def rho_from_items(pairs: np.ndarray, y: np.ndarray, yhat: np.ndarray) -> tuple[float, int]:
    """(ρ̂, items used): the Pearson correlation of human and judge scores on the labelled items,
    each centred by its pair's mean (so differences between pairs do not count as agreement) —
    the PPI correlation of a pair's win rate, pooled over pairs (``ppi_py`` computes the same for one
    pair from the mean's gradients)."""
    pairs = np.asarray(pairs)
    y, yhat = np.asarray(y, float), np.asarray(yhat, float)
    keep = ~np.isnan(y)
    pairs, y, yhat = pairs[keep], y[keep], yhat[keep]
    if len(y) < 3:
        raise DataError(f"the pilot has {len(y)} items with both human and judge scores; need at least 3")
    _, group = np.unique(pairs, axis=0, return_inverse=True)
    group = group.ravel()
    cy = y - (np.bincount(group, y) / np.bincount(group))[group]
    ch = yhat - (np.bincount(group, yhat) / np.bincount(group))[group]
    den = math.sqrt(float(cy @ cy) * float(ch @ ch))
    if den == 0:
        raise DataError("the pilot's human or judge scores do not vary within any pair; ρ is undefined")
    return float(cy @ ch) / den, len(y)


def rho_interval(rho: float, n: int, confidence_level: float = 0.9) -> tuple[float, float]:
    """Fisher-z interval for a correlation from ``n`` items: tanh(atanh ρ̂ ± z/√(n − 3)).

    (Approximate for scores in {0, ½, 1}; it shows how far a pilot's ρ̂ can be off.)"""
    if n <= 3:
        raise DataError(f"a correlation interval needs more than 3 items; got {n}")
    half = float(ndtri(0.5 + confidence_level / 2)) / math.sqrt(n - 3)
    r = min(max(rho, -1 + 1e-12), 1 - 1e-12)
    return math.tanh(math.atanh(r) - half), math.tanh(math.atanh(r) + half)
