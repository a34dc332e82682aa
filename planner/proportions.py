"""Proportions: the one Wilson score interval and the one Newcombe difference.

Every Wilson interval planner prints (report diagnostics, release gates,
``planner significance``, pass-rate sample sizes) comes from here (issue 12:
there were three implementations — diagnostics', power's half-width and
scipy's ``binomtest(...).proportion_ci`` in ``significance``).

Wilson (1927, JASA 22:209–212), with ``p = k/n`` and ``z`` the two-sided
normal quantile of ``confidence_level``::

    centre = (p + z²/2n) / (1 + z²/n)
    half   = z · sqrt(p(1-p)/n + z²/4n²) / (1 + z²/n)
    [max(0, centre - half), min(1, centre + half)]   (exactly 0 at k = 0, 1 at k = n)

``k`` may be fractional (half-tie convention; the formula is used as is).
Agrees with ``statsmodels.stats.proportion.proportion_confint(method="wilson")``
and with scipy's ``binomtest(k, n).proportion_ci(method="wilson")`` to a few
units in the last place (same formula, different arithmetic order).

Newcombe (1998, Stat. Med. 17:873–890, method 10) for ``p1 - p2``::

    L = d - sqrt((p1 - l1)² + (u2 - p2)²),  U = d + sqrt((u1 - p1)² + (p2 - l2)²)

with ``(l_i, u_i)`` the Wilson intervals.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache

import numpy as np


@lru_cache(maxsize=64)
def z_two_sided(confidence_level: float) -> float:
    """``z`` with ``P(|Z| <= z) = confidence_level`` (``norm.ppf(0.5 + c/2)``)."""
    from scipy.stats import norm

    return float(norm.ppf(0.5 + confidence_level / 2.0))


def _centre_half(p, n, z: float):
    """Wilson centre and half-width (scalars or arrays, same arithmetic for both)."""
    denom = 1.0 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * np.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    return centre, half


def wilson_interval(k: float, n: float, confidence_level: float = 0.95) -> tuple[float, float] | tuple[None, None]:
    """Wilson score interval ``(low, high)`` for ``k/n``; ``(None, None)`` when ``n <= 0``."""
    if n <= 0:
        return None, None
    centre, half = _centre_half(k / n, n, z_two_sided(confidence_level))
    low = 0.0 if k <= 0 else max(0.0, float(centre - half))
    high = 1.0 if k >= n else min(1.0, float(centre + half))   # exact ends (rounding gave 0.9999999999999999)
    return low, high


def wilson_half_width(p: float, n: np.ndarray | int, confidence: float = 0.95) -> np.ndarray:
    """Half-width of the Wilson interval at observed proportion ``p`` and ``n`` trials.

    Vectorised over ``n``; decreases in ``n`` (used to solve for the items a
    pass-rate precision needs).
    """
    n = np.asarray(n, dtype=float)
    return _centre_half(p, n, z_two_sided(confidence))[1]


@dataclass(frozen=True)
class Proportion:
    """``k`` successes out of ``n`` with a Wilson interval.

    ``rate``, ``ci_low`` and ``ci_high`` are ``None`` when ``n == 0``. ``k``
    may be fractional (half-tie convention); the Wilson formula is used as is.
    """

    k: float
    n: int
    rate: float | None
    ci_low: float | None
    ci_high: float | None
    confidence_level: float


def proportion(k: float, n: int, confidence_level: float = 0.95) -> Proportion:
    """``k/n`` with its Wilson interval."""
    lo, hi = wilson_interval(k, n, confidence_level)
    return Proportion(k, int(n), (k / n) if n > 0 else None, lo, hi, confidence_level)


def newcombe_difference(k1: float, n1: float, k2: float, n2: float,
                        confidence: float) -> tuple[float | None, float | None, float | None]:
    """Newcombe's hybrid score interval for ``p1 - p2``: ``(d, low, high)``.

    ``(None, None, None)`` when either ``n`` is 0.
    """
    if n1 <= 0 or n2 <= 0:
        return None, None, None
    p1, p2 = k1 / n1, k2 / n2
    l1, u1 = wilson_interval(k1, n1, confidence)
    l2, u2 = wilson_interval(k2, n2, confidence)
    d = p1 - p2
    return d, d - math.sqrt((p1 - l1) ** 2 + (u2 - p2) ** 2), d + math.sqrt((u1 - p1) ** 2 + (p2 - l2) ** 2)
