"""Position bias (left vs right) and length bias (longer vs shorter response)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from planner.counts import Counts
from planner.diagnostics.records import binom_p, check_level, check_verdict, ranking_judgments, value_of
from planner.stats.proportions import proportion

POSITION_BIAS_FLAG_POINTS = 8.0     # flag when left-vs-right > 8 points


# ------------------------------------------------------------- position bias
@dataclass(frozen=True)
class PositionBias:
    """Win rate of the left-shown response among decisive judgments.

    ``difference_points = 100 * (left_win_rate - right_win_rate)
    = 100 * (2 * left_win_rate - 1)``; ``flagged`` when its absolute value
    exceeds ``threshold_points`` (8) **and** the Wilson interval of the left
    win rate excludes 50% (so a handful of judgments cannot raise the flag by
    chance). ``gamma`` is the model's position effect
    summary passed through unchanged (e.g. ``(mean, low, high)`` in logits).
    """

    left_wins: int
    right_wins: int
    n_decisive: int
    left_win_rate: float | None
    ci_low: float | None
    ci_high: float | None
    difference_points: float | None
    pvalue: float | None
    threshold_points: float
    flagged: bool
    gamma: Any = None


def position_bias(counts: Counts, gamma: Any = None,
                  threshold_points: float = POSITION_BIAS_FLAG_POINTS,
                  confidence_level: float = 0.95) -> PositionBias:
    """Left-vs-right win rates from counts (cell ``a`` is always the left one)."""
    check_level(confidence_level)
    left, right = int(counts.a_wins.sum()), int(counts.b_wins.sum())
    n = left + right
    p = proportion(left, n, confidence_level)
    diff = 100.0 * (left - right) / n if n else None
    lo, hi = p.ci_low, p.ci_high            # None without verdicts
    credible = lo is not None and hi is not None and (lo > 0.5 or hi < 0.5)
    flagged = diff is not None and abs(diff) > threshold_points and credible
    return PositionBias(left, right, n, p.rate, p.ci_low, p.ci_high, diff, binom_p(left, n),
                        threshold_points, flagged, gamma)


# --------------------------------------------------------------- length bias
@dataclass(frozen=True)
class LengthBias:
    """Share of decisive verdicts won by the longer response.

    Judgments with equal lengths (``n_equal``) or a missing length
    (``n_missing``) are left out of ``n``. ``flagged`` when ``ci_low > 0.5``
    (clearly above 50%).
    """

    longer_wins: int
    shorter_wins: int
    n: int
    n_equal: int
    n_missing: int
    share: float | None
    ci_low: float | None
    ci_high: float | None
    pvalue: float | None
    flagged: bool


def length_bias(judgments: Iterable[Any], lengths: Mapping[tuple[str, str], int],
                confidence_level: float = 0.95) -> LengthBias:
    """Length bias over decisive ranking judgments.

    Parameters
    ----------
    judgments : iterable of JudgmentLike
        Needs ``prompt``, ``a``, ``b``, ``verdict``; attention and
        acceptability judgments are skipped.
    lengths : mapping ``(prompt, system) -> int``
        Response length in any unit (words or characters — the caller's
        choice; only the comparison matters).
    """
    def signs():
        for j in ranking_judgments(judgments):
            v = check_verdict(j)
            if v in ("A", "B"):
                prompt = value_of(j, "prompt")
                la, lb = lengths.get((prompt, j.a)), lengths.get((prompt, j.b))
                yield v, None if la is None or lb is None else (la > lb) - (la < lb), 1

    return length_bias_counts(signs(), confidence_level)


def length_bias_counts(rows: Iterable[tuple[str, int | None, int]],
                       confidence_level: float = 0.95) -> LengthBias:
    """Length bias from tallied rows ``(verdict, sign, n)`` — the one definition.

    ``sign`` = sign(length of a - length of b) (``None`` when a length is
    missing); ``n`` judgments with that verdict and sign. Only ``A``/``B``
    verdicts count; the caller leaves out non-ranking kinds. The longer
    response won when the sign agrees with the verdict; flagged when the
    Wilson interval of the longer-wins share lies above 0.5.
    """
    check_level(confidence_level)
    longer = shorter = equal = missing = 0
    for v, sign, n in rows:
        if v not in ("A", "B"):
            continue
        if sign is None:
            missing += n
        elif sign == 0:
            equal += n
        elif (sign > 0) == (v == "A"):
            longer += n
        else:
            shorter += n
    n = longer + shorter
    p = proportion(longer, n, confidence_level)
    return LengthBias(longer, shorter, n, equal, missing, p.rate, p.ci_low, p.ci_high,
                      binom_p(longer, n), p.ci_low is not None and p.ci_low > 0.5)
