"""Proportions: the one Wilson score interval, the one Newcombe difference, and
the trinomial score interval for a half-tie win rate (wins, ties, losses).

Every Wilson interval planner prints (report diagnostics, release gates,
``planner significance``, pass-rate sample sizes) comes from here, so two
tables can never print two different intervals for the same counts.

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
    from scipy.special import ndtri  # not scipy.stats: seconds of import on the report path

    return float(ndtri(0.5 + confidence_level / 2.0))


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
    return _wilson(k, n, confidence_level)


def _wilson(k: float, n: float, confidence_level: float) -> tuple[float, float]:
    """:func:`wilson_interval` for ``n > 0``."""
    centre, half = _centre_half(k / n, n, z_two_sided(confidence_level))
    low = 0.0 if k <= 0 else max(0.0, float(centre - half))
    high = 1.0 if k >= n else min(1.0, float(centre + half))   # exact ends (rounding gave 0.9999999999999999)
    return low, high


def wilson_half_width(p: float, n: np.ndarray | int, confidence_level: float = 0.95) -> np.ndarray:
    """Half-width of the Wilson interval at observed proportion ``p`` and ``n`` trials.

    Vectorised over ``n``; decreases in ``n`` (used to solve for the items a
    pass-rate precision needs).
    """
    n = np.asarray(n, dtype=float)
    return _centre_half(p, n, z_two_sided(confidence_level))[1]


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
                        confidence_level: float) -> tuple[float | None, float | None, float | None]:
    """Newcombe's hybrid score interval for ``p1 - p2``: ``(d, low, high)``.

    ``(None, None, None)`` when either ``n`` is 0.
    """
    if n1 <= 0 or n2 <= 0:
        return None, None, None
    p1, p2 = k1 / n1, k2 / n2
    l1, u1 = _wilson(k1, n1, confidence_level)
    l2, u2 = _wilson(k2, n2, confidence_level)
    d = p1 - p2
    return d, d - math.sqrt((p1 - l1) ** 2 + (u2 - p2) ** 2), d + math.sqrt((u1 - p1) ** 2 + (p2 - l2) ** 2)


# ------------------------------------------------- half-tie score (trinomial)
def tie_share_at(w, l, t, theta):
    """Constrained MLE of the tie share ``pT`` given the half-tie mean ``theta``.

    Maximises ``w log pW + t log pT + l log pL`` over the simplex subject to
    ``pW + pT/2 = theta``. With ``u = pT/2``, ``pW = theta - u``,
    ``pL = 1 - theta - u``, the stationarity condition is the quadratic
    ``N u² - (w (1-θ) + t + l θ) u + t θ (1-θ) = 0``; its smaller root lies in
    ``[0, min(θ, 1-θ)]``. Vectorised over every argument.
    """
    n = w + l + t
    a = np.asarray(theta, dtype=float)
    b = 1.0 - a
    big = w * b + t + l * a
    disc = np.maximum(big * big - 4.0 * n * t * a * b, 0.0)
    u = (big - np.sqrt(disc)) / (2.0 * n)
    return 2.0 * np.clip(u, 0.0, np.minimum(a, b))


#: continuity correction subtracted from ``|W + T/2 - N theta|``: half a win, Yates' classic for the
#: decisive count. It keeps the exact size of each one-sided test at nominal 0.025 below 0.027 for every
#: N from 20 to 300, every tie share and margins 0 to 0.2 (without it: up to 0.0445, bench/exact_decide.py)
CONTINUITY = 0.5


def half_tie_z(w, l, t, theta, design_effect: float = 1.0, continuity: float = CONTINUITY):
    """Tango's score statistic for ``H0: pW + pT/2 = theta`` (vectorised over every argument).

    ``z = sign(d) max(|d| - c, 0) / N / sqrt(deff V(theta) / N)`` with ``d = W + T/2 - N theta``,
    ``c`` the continuity correction, ``V(theta) = pW + pT/4 - theta²`` the variance of one judgment's
    score (1, 1/2, 0) at the restricted maximum-likelihood trinomial (:func:`tie_share_at`) and ``deff``
    the design effect of clustered judgments (1: independent). ``nan`` where ``N == 0``; 0 where
    ``|d| <= c``; ``±inf`` where ``V == 0``.
    """
    w, l, t = (np.asarray(x, dtype=float) for x in (w, l, t))
    n = w + l + t
    theta = np.asarray(theta, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        d = w + t / 2.0 - n * theta
        d = np.sign(d) * np.maximum(np.abs(d) - continuity, 0.0)
        pt = tie_share_at(w, l, t, theta)
        v = theta - pt / 4.0 - theta * theta
        z = np.where(v > 0, d / np.sqrt(np.maximum(v, 1e-300) * n * design_effect), np.sign(d) * np.inf)
        z = np.where(d == 0, 0.0, z)
        return np.where(n > 0, z, np.nan)


def half_tie_score_z(w: float, l: float, t: float, theta: float, design_effect: float = 1.0) -> float | None:
    """:func:`half_tie_z` for one tally: Tango's (1998) paired score statistic with a continuity correction.

    The half-tie score compares ``S - 1/2 = (pW - pL)/2``: ``(W, L)`` are the discordant pairs and
    ties the concordant ones of Tango's paired design (T. Tango 1998, "Equivalence test and confidence
    interval for the difference in proportions for the paired-sample design", *Stat. Med.*
    17:891–908), whose score test estimates the nuisance (the tie share) under the null by restricted
    maximum likelihood. Without ties and correction it is Wilson's (1927) score test. ``None`` when
    ``N == 0``; 0 when ``|W + T/2 - N theta| <= c``.
    """
    if w + l + t <= 0:
        return None
    return float(half_tie_z(w, l, t, theta, design_effect))


def half_tie_interval(w: float, l: float, t: float, confidence_level: float = 0.95,
                      design_effect: float = 1.0) -> tuple[float, float] | tuple[None, None]:
    """Score interval for the half-tie win rate ``pW + pT/2`` of a trinomial.

    The set of ``theta`` with ``|half_tie_score_z(w, l, t, theta)| <= z`` (inverting Tango's score
    test, continuity-corrected, with the tie share at its restricted MLE under each candidate
    ``theta``; see docs/methods.md "Release gates"), so a one-stratum gate passes exactly when the
    interval's lower end clears the threshold. It accounts for the sampling error of the tie share, so
    it never collapses onto the estimate (``tie/2 + (1 - tie)·Wilson(W, W+L)`` did: 1–0–1 gave 75.0%
    (35.3–75.0)). Without ties it is Wilson's interval with continuity correction (Newcombe 1998,
    method 4; scipy's ``wilsoncc``). ``design_effect`` widens it for clustered judgments.
    ``(None, None)`` when ``N == 0``.
    """
    from planner.stats.optim import brentq  # scipy.optimize.brentq step for step, without its import

    n = w + l + t
    if n <= 0:
        return None, None
    z = z_two_sided(confidence_level)
    s = (w + t / 2.0) / n

    def gap(theta):                        # <= 0 inside the interval (vectorised)
        pts = tie_share_at(w, l, t, theta)
        d = np.maximum(np.abs(n * (s - theta)) - CONTINUITY, 0.0)
        return d * d / n - z * z * design_effect * np.maximum(theta - pts / 4.0 - theta * theta, 0.0)

    grid = np.linspace(0.0, 1.0, 2001)
    inside = np.flatnonzero(gap(grid) <= 0.0)
    if inside.size == 0:                   # only S itself (cannot happen for N >= 1, kept for safety)
        return s, s
    i_lo, i_hi = int(inside[0]), int(inside[-1])

    def g(theta: float) -> float:
        return float(gap(np.float64(theta)))

    lo = grid[i_lo] if i_lo == 0 else brentq(g, grid[i_lo - 1], grid[i_lo], xtol=1e-12)
    hi = grid[i_hi] if i_hi == grid.size - 1 else brentq(g, grid[i_hi], grid[i_hi + 1], xtol=1e-12)
    return float(max(0.0, min(lo, s))), float(min(1.0, max(hi, s)))
