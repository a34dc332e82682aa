"""Multiple testing: Holm's (1979) step-down procedure and Holm-adjusted p-values.

Generic: statistics or p-values in, decisions out. Used by the release gate
(:mod:`planner.gate`) across strata. Formulas: docs/methods.md, "Release gates".
"""

from __future__ import annotations

import math
from collections.abc import Sequence


def holm(z: Sequence[float | None], critical) -> tuple[list[bool], list[float | None]]:
    """Holm's step-down procedure on one-sided statistics (larger = more evidence).

    Parameters
    ----------
    z : sequence of float or None
        One statistic per hypothesis (None: untestable, never rejected but
        counted in the family).
    critical : callable m -> float
        Critical value of a test at level ``alpha/m`` (Holm 1979: the j-th
        smallest p-value is compared with ``alpha/(K - j + 1)``).

    Returns
    -------
    rejected : list of bool
    crit : list of float
        The critical value at the step each hypothesis was tested at.
    """
    K = len(z)
    z_sort = [-math.inf if v is None else v for v in z]   # a missing statistic is tested last
    order = sorted(range(K), key=lambda i: (-z_sort[i], i))
    rejected = [False] * K
    crit: list[float | None] = [None] * K
    going = True
    for step, i in enumerate(order):
        c = critical(K - step)
        crit[i] = c
        if going and z[i] is not None and z[i] >= c:
            rejected[i] = True
        else:
            going = False
    return rejected, crit


def holm_adjusted(p: Sequence[float | None]) -> list[float | None]:
    """Holm-adjusted p-values ``max_{i<=j} min(1, (K - i + 1) p_(i))`` (None stays None)."""
    K = len(p)
    order = sorted(range(K), key=lambda i: (p[i] if p[i] is not None else math.inf, i))
    out: list[float | None] = [None] * K
    running = 0.0
    for step, i in enumerate(order):
        p_i = p[i]
        if p_i is None:
            continue
        running = max(running, min(1.0, (K - step) * p_i))
        out[i] = running
    return out
