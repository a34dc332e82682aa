"""How many more comparisons an undecided stratum needs (the gate's "more" column).

The power rule of :func:`planner.stats.power.size` with ``ties='half'`` at the
Holm first step's Bonferroni level; rule and rationale: docs/methods.md,
"Release gates".
"""

from __future__ import annotations

import math
from functools import lru_cache

#: power of the sample-size rule behind ``more_comparisons``
PLANNING_POWER = 0.8
#: smallest decisive-scale effect the "more comparisons" rule plans for; below
#: it the figure would be tens of thousands and is reported as None instead
MIN_PLANNING_EFFECT = 0.02
#: tie share above which the conditional thresholds degenerate (capped here)
MAX_TIE_SHARE = 0.95


def conditional_threshold(theta: float, tie_rate: float) -> float:
    """Decisive-win-rate threshold equivalent to half-tie score ``theta`` given tie share ``t``.

    ``S = t/2 + (1 - t) p`` so ``S > theta`` iff ``p > (theta - t/2)/(1 - t)``;
    clipped to (1e-9, 1 - 1e-9).
    """
    t = min(tie_rate, MAX_TIE_SHARE)
    return float(min(max((theta - t / 2) / (1 - t), 1e-9), 1 - 1e-9))


@lru_cache(maxsize=256)
def needed_judgments(delta: float, tie_rate: float, invalid_rate: float, alpha: float, looks: int,
                     boundary: str) -> int | None:
    """Judgments one stratum needs to detect a half-tie distance ``delta`` (power 0.8).

    :func:`planner.stats.power.size` with ``ties='half'``: the decisive effect
    ``d = delta / (1 - t)`` shifts the half-tie score by ``delta``; two-sided at
    ``alpha`` (the Bonferroni level alpha/K of Holm's first step), observed
    invalid rate; with ``looks > 1`` the group-sequential maximum ``n_max``.
    """
    from planner.stats import power as pw

    t = min(tie_rate, MAX_TIE_SHARE)
    d = delta / (1 - t)
    if not d >= MIN_PLANNING_EFFECT:
        return None
    d = min(d, 0.49)
    design = pw.Design(alpha=alpha, power=PLANNING_POWER, alternative="two-sided", ties="half",
                       tie_rate=t, invalid_rate=min(invalid_rate, 0.9))
    res = pw.size(d, design, looks=looks, boundary=boundary)
    n_max = res.sequential.n_max if looks > 1 and res.sequential is not None else None
    return int(n_max) if n_max is not None else int(res.judgments_per_pair)


def plan_more(n, inv, tie, s, margin, theta_pass, theta_reg, pooled_tie, pooled_inv, alpha_each,
              looks, boundary, candidate, baseline, design_effect: float = 1.0):
    """(more_comparisons, needed_total, note) for an undecided stratum.

    Planning distance = the margin (the distance between "equal" and the
    threshold) or, when larger, the observed distance of the win rate from the
    nearer threshold; judgments needed for it from :func:`needed_judgments`, minus
    the judgments collected (invalid included). When the stratum already has that
    many, re-plan for the (smaller) observed distance; None when even that is
    met or below :data:`MIN_PLANNING_EFFECT`. With clustered judgments every figure is
    multiplied by the stratum's ``design_effect`` (as ``size --icc`` plans). Rule and rationale:
    docs/methods.md, "Release gates".
    """
    def needed_for(distance):
        got = needed_judgments(distance, t, r, alpha_each, looks, boundary)
        return None if got is None else int(math.ceil(got * design_effect - 1e-9))

    t = tie if n > 0 else pooled_tie
    r = inv / (n + inv) if n + inv > 0 else pooled_inv
    have = n + inv
    dist = None if s is None else min(abs(s - theta_pass), abs(s - theta_reg))
    plan = margin if dist is None else max(margin, dist)
    level = f"power {PLANNING_POWER:g}, two-sided Bonferroni level {alpha_each:.3g}"
    needed = needed_for(plan) if plan > 0 else None
    if needed is not None and needed > have:
        basis = (f"the margin {margin:g} (a true win rate of 50%)" if dist is None or dist <= margin
                 else f"the observed distance {dist:.3f} from the threshold")
        return needed - have, needed, f"{needed:,} judgments to detect {basis}, {level}; {have:,} collected"
    if s is None:
        return None, None, (f"no comparisons between {candidate} and {baseline} in this stratum, and margin 0 "
                            "leaves no distance to plan for")
    if dist < plan:  # already past the margin's size: the win rate sits closer to the threshold
        again = needed_for(dist)
        if again is not None and again > have:
            return again - have, again, (f"{again:,} judgments to detect the observed distance {dist:.3f} from the "
                                         f"threshold (less than the margin), {level}; {have:,} collected")
    thresholds = f"{theta_reg:.0%}" + ("" if theta_pass == theta_reg else f"/{theta_pass:.0%}")
    return None, needed, (f"the win rate {s:.1%} sits at the threshold ({thresholds}) with {have:,} judgments "
                          "collected: more comparisons may not decide it")
