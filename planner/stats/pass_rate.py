"""Acceptability items for a pass-rate interval of a given half-width (``size --pass-rate --precision``).

The headline is the smallest n whose Wilson (1927) interval at the expected
pass rate is narrow enough (:func:`planner.stats.proportions.wilson_half_width`),
beside the Wald/normal count.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from planner.errors import check_range
from planner.stats.distributions import norm  # scipy.stats' values without importing scipy.stats
from planner.stats.proportions import wilson_half_width


@dataclass(frozen=True)
class PassRateSize:
    """Acceptability items needed for a pass-rate interval of half-width ``precision``.

    Attributes
    ----------
    pass_rate : float
        Expected pass rate P.
    precision : float
        Target half-width H of the ``confidence`` interval (absolute, 0.05 = ±5 points).
    items_wilson : int
        Headline: smallest n whose Wilson (1927) interval at p̂ = P has half-width <= H.
    items_normal : int
        Wald/normal: ``ceil(z^2 P(1-P) / H^2)``.
    items : int
        ``items_wilson`` inflated by ``1/(1-invalid_rate)``.
    half_width_wilson : float
        Wilson half-width at ``items_wilson``.
    """

    pass_rate: float
    precision: float
    confidence: float
    invalid_rate: float
    items_wilson: int
    items_normal: int
    items: int
    half_width_wilson: float
    method: str = "wilson"


def pass_rate_size(pass_rate: float, precision: float, confidence_level: float = 0.95,
                   invalid_rate: float = 0.0) -> PassRateSize:
    """Items needed to estimate a pass rate to ±``precision``; see :class:`PassRateSize`."""
    check_range("pass_rate", pass_rate, 0, 1, low_open=False, high_open=False)
    check_range("precision", precision, 0, 0.5)
    check_range("confidence_level", confidence_level, 0, 1)
    check_range("invalid_rate", invalid_rate, 0, 1, low_open=False)
    z = float(norm.isf((1 - confidence_level) / 2))
    n_norm = max(1, int(math.ceil(z * z * pass_rate * (1 - pass_rate) / precision ** 2 - 1e-9)))
    lo, hi = 1, max(4, 4 * n_norm + 100)
    while wilson_half_width(pass_rate, hi, confidence_level) > precision:
        hi *= 2
    while lo < hi:  # smallest n with half-width <= H (monotone, see wilson_half_width)
        mid = (lo + hi) // 2
        if wilson_half_width(pass_rate, mid, confidence_level) <= precision:
            hi = mid
        else:
            lo = mid + 1
    items = int(math.ceil(lo / (1 - invalid_rate) - 1e-9))
    return PassRateSize(pass_rate=pass_rate, precision=precision, confidence=confidence_level,
                        invalid_rate=invalid_rate, items_wilson=lo, items_normal=n_norm, items=items,
                        half_width_wilson=float(wilson_half_width(pass_rate, lo, confidence_level)))
