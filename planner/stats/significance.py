"""Is an observed win rate distinguishable from 50%? (``planner significance``).

The exact binomial (sign) test on the decisive judgments, Wald, Wilson and
Clopper–Pearson intervals, an optional group-sequential look
(:mod:`planner.stats.sequential`) and one sentence that agrees with the table.
``scipy.stats`` (``binomtest``) is imported only inside :func:`significance`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

from planner import limits
from planner.errors import check_range
from planner.stats.conventions import ALTERNATIVES, BOUNDARIES, TIE_CONVENTIONS
from planner.stats.distributions import norm  # scipy.stats' values without importing scipy.stats
from planner.stats.proportions import wilson_interval
from planner.stats.sequential import check_look, sequential_design


@dataclass(frozen=True)
class Interval:
    low: float | None
    high: float | None


@dataclass(frozen=True)
class SignificanceResult:
    """Is an observed win rate distinguishable from 50%?

    Attributes
    ----------
    wins, losses, ties : int
    ties_convention : {'drop', 'half'}
    win_rate : float or None
        ``wins/(wins+losses)`` (drop) or the half-tie score
        ``(wins + ties/2)/(wins+losses+ties)`` (half); ``None`` with no usable judgment.
    n : int
        Judgments the estimate uses (decisive for drop; all for half).
    pvalue : float
        Exact binomial (sign) test of H0: win rate = 1/2 on the decisive
        judgments (:func:`scipy.stats.binomtest`); under ``half`` this is the
        exact conditional test given the number of ties.
    wald, wilson, clopper_pearson : Interval
        ``confidence`` intervals. Under ``half`` only Wald (with the empirical
        variance of the 1/0.5/0 score) applies to the score; Wilson and
        Clopper–Pearson are for the decisive win rate and are reported as
        ``decisive_*``.
    significant : bool
        ``pvalue < alpha`` (single look) or ``|z| >= boundary`` (sequential).
    look, looks, boundary, z, z_boundary, nominal_alpha :
        Group-sequential check (``looks > 1``): the score statistic
        ``z = (wins - losses)/sqrt(wins + losses)`` against the boundary at ``look``.
    """

    wins: int
    losses: int
    ties: int
    ties_convention: str
    alternative: str
    confidence: float
    alpha: float
    n: int
    win_rate: float | None
    pvalue: float | None
    wald: Interval
    wilson: Interval
    clopper_pearson: Interval
    significant: bool
    conclusion: str
    z: float | None = None
    look: int | None = None
    looks: int | None = None
    boundary: str | None = None
    z_boundary: float | None = None
    nominal_alpha: float | None = None


def significance(wins: int, losses: int, ties: int = 0, *, ties_convention: str = "drop",
                 confidence_level: float = 0.95, alternative: str = "two-sided",
                 look: int | None = None, looks: int = 1,
                 boundary: str = "obrien-fleming") -> SignificanceResult:
    """Exact binomial test and Wald, Wilson, Clopper–Pearson intervals for a win rate.

    Parameters
    ----------
    wins, losses, ties : int
        Judgments won by the candidate, lost, tied (>= 0).
    ties_convention : {'drop', 'half'}
    confidence_level : float
        Interval level; the test level is ``alpha = 1 - confidence_level``.
    alternative : {'two-sided', 'greater'}
    look, looks, boundary :
        Group-sequential analysis: this is analysis ``look`` of ``looks`` equally
        spaced ones; the test uses the matching Pocock / O'Brien–Fleming boundary
        (:func:`sequential_design`) instead of ``pvalue < alpha``.
    """
    for name, v in (("wins", wins), ("losses", losses), ("ties", ties)):
        limits.check_int(name, v, 0, limits.MAX_COUNT)
    limits.check_choice("ties_convention", ties_convention, TIE_CONVENTIONS)
    limits.check_choice("alternative", alternative, ALTERNATIVES)
    check_range("confidence_level", confidence_level, 0, 1)
    limits.check_choice("boundary", boundary, BOUNDARIES)
    look = check_look(look, looks)
    from scipy import stats  # binomtest: only `significance` pays for importing scipy.stats

    alpha = 1 - confidence_level
    n_dec = wins + losses
    n = n_dec + ties if ties_convention == "half" else n_dec
    z_crit = float(norm.isf(alpha / 2))
    none = Interval(None, None)
    wald = wilson = cp = none
    rate = pvalue = z = None
    if n_dec > 0:
        bt = stats.binomtest(wins, n_dec, 0.5, alternative=alternative)
        pvalue = float(bt.pvalue)
        z = (wins - losses) / math.sqrt(n_dec)
    if n > 0:
        if ties_convention == "drop":
            rate = wins / n
            se = math.sqrt(rate * (1 - rate) / n)
            ci_level = confidence_level
            c = stats.binomtest(wins, n, 0.5).proportion_ci(confidence_level=ci_level, method="exact")
            wilson, cp = Interval(*wilson_interval(wins, n, ci_level)), Interval(float(c.low), float(c.high))
        else:
            rate = (wins + ties / 2) / n
            second = (wins + ties / 4) / n  # mean of the squared 1/0.5/0 score
            se = math.sqrt(max(second - rate * rate, 0.0) / n)
        wald = Interval(max(0.0, rate - z_crit * se), min(1.0, rate + z_crit * se))
    seq = None
    if looks > 1:
        seq = sequential_design(looks, alpha, 0.8, boundary, alternative)
        zb = seq.z_boundaries[look - 1]
        if z is None:
            significant = False
        elif alternative == "two-sided":
            significant = abs(z) >= zb
        else:
            significant = z >= zb
    else:
        significant = pvalue is not None and pvalue < alpha
    res = SignificanceResult(
        wins=wins, losses=losses, ties=ties, ties_convention=ties_convention,
        alternative=alternative, confidence=confidence_level, alpha=alpha, n=n, win_rate=rate,
        pvalue=pvalue, wald=wald, wilson=wilson, clopper_pearson=cp, significant=significant,
        conclusion="", z=z,
        look=look if looks > 1 else None, looks=looks if looks > 1 else None,
        boundary=boundary if looks > 1 else None,
        z_boundary=seq.z_boundaries[look - 1] if seq else None,
        nominal_alpha=seq.nominal_alpha[look - 1] if seq else None)
    return replace(res, conclusion=_conclusion(res))


def _conclusion(r: SignificanceResult) -> str:
    """One sentence whose decision and quoted interval agree with the table.

    The exact binomial (sign) test on the decisive judgments decides (or the
    group-sequential boundary with looks). With ``ties='drop'`` the sentence
    quotes the Clopper–Pearson interval, the exact interval that goes with
    that test; the Wald interval is an approximation, and when it disagrees
    with the test (60–40: Wald [50.4%, 69.6%] excludes 50%, p = 0.057) the
    sentence says so and why instead of contradicting the table.
    """
    if r.win_rate is None:
        return "No usable judgment: there is no win rate to test."
    what = "win rate" if r.ties_convention == "drop" else "half-tie score"
    lvl = f"{r.confidence:.0%}"
    if r.ties_convention == "drop" and r.clopper_pearson.low is not None:
        iv = f"exact (Clopper–Pearson) {lvl} interval [{r.clopper_pearson.low:.1%}, {r.clopper_pearson.high:.1%}]"
    else:
        iv = f"Wald {lvl} interval [{r.wald.low:.1%}, {r.wald.high:.1%}]"
    head = f"Observed {what} {r.win_rate:.1%} over {r.n:,} judgments ({iv})"
    if r.looks:
        test = (f"at look {r.look} of {r.looks} the {r.boundary} boundary is |z| >= {r.z_boundary:.3f} "
                f"(nominal p < {r.nominal_alpha:.4f}); z = {r.z:.3f}" if r.z is not None
                else "no decisive judgment to test")
    else:
        test = (f"the exact binomial test on the {r.wins + r.losses:,} decisive judgments decides: p = {r.pvalue:.3g}"
                if r.pvalue is not None else "no decisive judgment")
    if r.significant:
        direction = "better" if (r.z or 0) > 0 else "worse"
        out = f"{head}; {test}: the candidate is distinguishably {direction} than 50%."
    else:
        out = f"{head}; {test}: not distinguishable from 50%."
    low, high = r.wald.low, r.wald.high
    wald_excludes = low is not None and high is not None and not (low <= 0.5 <= high)
    if r.pvalue is not None and wald_excludes != r.significant:
        quoted = "above" if iv.startswith("Wald") else f"[{r.wald.low:.1%}, {r.wald.high:.1%}]"
        out += (f" The Wald interval {quoted} "
                + ("excludes" if wald_excludes else "includes")
                + " 50%: it is a normal approximation"
                + (" that is too narrow at this n" if wald_excludes else "")
                + (", not adjusted for the sequential looks" if r.looks else "")
                + "; the test above decides.")
    return out
