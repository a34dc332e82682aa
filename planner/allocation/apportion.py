"""Integer apportionment: split ``n`` units into integers proportional to a basis, within bounds.

Largest-remainder (Hamilton) rounding of a continuous water-filling: what a
capped stratum cannot take goes to the others in proportion to their basis.
Used by ``allocate`` (prompts over strata) and ``next-batch`` (comparisons over
strata, :func:`planner.allocation.maths.plan_strata`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping

import numpy as np

from planner.errors import UsageError


def apportion(basis: Mapping[str, float], n: int, *,
              lower: Mapping[str, int] | None = None,
              upper: Mapping[str, int | None] | None = None) -> dict[str, int]:
    """Split ``n`` into integers proportional to ``basis`` within bounds.

    Largest-remainder (Hamilton) apportionment with lower and upper bounds:
    first the continuous allocation ``x_h = clip(lam * basis_h, lower_h,
    upper_h)`` with ``sum(x) = n`` (water-filling: what a capped stratum cannot
    take goes to the others in proportion to their basis), then every stratum
    gets ``floor(x_h)`` and the ``n - sum(floor)`` leftover units go to the largest
    fractional parts. Ties: larger ``x_h`` first, then stratum name (ascending),
    so the result is deterministic. Strata with basis 0 get their lower bound,
    unless the others' caps cannot absorb ``n``; then the rest is split equally
    among the zero-basis strata.

    When no bound binds, every ``n_h`` is ``floor`` or ``ceil`` of the exact
    quota ``n * basis_h / sum(basis)``.

    Parameters
    ----------
    basis : mapping stratum -> float >= 0, not all 0.
    n : int >= 0
    lower : mapping stratum -> int, optional (default 0)
    upper : mapping stratum -> int or None, optional (None = no cap)

    Returns
    -------
    dict stratum -> int, summing to ``n``, same keys as ``basis``.

    Raises
    ------
    UsageError
        ``n`` negative, bounds inconsistent, or ``n`` outside
        ``[sum(lower), sum(upper)]``.
    """
    return quotas(basis, n, lower=lower, upper=upper)[1]


def quotas(basis: Mapping[str, float], n: int, *,
           lower: Mapping[str, int] | None = None,
           upper: Mapping[str, int | None] | None = None) -> tuple[np.ndarray, dict[str, int]]:
    """:func:`apportion` with the continuous quotas: ``(x, n_h)``, ``x`` in the order of ``basis``'s keys."""
    names = list(basis)
    x = _fill(names, basis, n, lower, upper)
    lo = np.array([(lower or {}).get(k, 0) for k in names], dtype=float)
    hi = np.array([_cap((upper or {}).get(k)) for k in names], dtype=float)
    return x, _round(names, x, n, lo, hi)


def _cap(value: int | None) -> float:
    return math.inf if value is None else float(value)


def _fill(names: list[str], basis: Mapping[str, float], n: int,
          lower: Mapping[str, int] | None, upper: Mapping[str, int | None] | None):
    """Continuous water-filling; returns ``x`` in ``names`` order."""
    if isinstance(n, bool) or int(n) != n or n < 0:
        raise UsageError(f"`budget` ({n}) must be an integer >= 0", parameters=('budget',))
    w = np.array([float(basis[k]) for k in names], dtype=float)
    if len(w) == 0:
        raise UsageError("no strata to allocate over", parameters=('basis',))
    if not np.all(np.isfinite(w)) or np.any(w < 0) or not np.any(w > 0):
        raise UsageError(f"stratum basis {dict(basis)} must be finite, >= 0 and not all 0", parameters=('basis',))
    lo = np.array([(lower or {}).get(k, 0) for k in names], dtype=float)
    hi = np.array([_cap((upper or {}).get(k)) for k in names], dtype=float)
    if np.any(lo < 0) or np.any(lo > hi):
        raise UsageError("each stratum's minimum must be >= 0 and <= its cap", parameters=('lower', 'upper'))
    if n < lo.sum() or n > hi.sum():
        raise UsageError(f"`budget` ({n}) must be in [{lo.sum():g}, {hi.sum():g}] "
                         "given the per-stratum minimums and caps", parameters=('budget',))
    w = w / w.max()
    w[w < 1e-12] = 0.0  # relative basis below 1e-12 counts as 0 (keeps the breakpoints finite)
    pos = w > 0

    def f(lam: float) -> float:
        return float(np.clip(lam * w, lo, hi).sum())

    top = float(np.where(pos, hi, lo).sum())
    if top < n:  # positive-basis strata are full: spread the rest over zero-basis ones
        x = np.where(pos, hi, lo)
        rest = n - top
        idx = [i for i in range(len(names)) if not pos[i]]
        sub = _fill([names[i] for i in idx], {names[i]: 1.0 for i in idx}, int(round(rest + lo[idx].sum())),
                    {names[i]: int(lo[i]) for i in idx},
                    {names[i]: (None if math.isinf(hi[i]) else int(hi[i])) for i in idx})
        x[idx] = sub
        return x
    lam0, f0 = 0.0, f(0.0)
    if f0 >= n:
        return lo.copy()
    breaks = sorted({float(v) for v in np.concatenate([lo[pos] / w[pos], hi[pos] / w[pos]]) if math.isfinite(v)})
    for lam1 in breaks:
        if lam1 <= lam0:
            continue
        f1 = f(lam1)
        if f1 >= n:
            lam = lam0 + (n - f0) * (lam1 - lam0) / (f1 - f0)
            return np.clip(lam * w, lo, hi)
        lam0, f0 = lam1, f1
    slope = float(w[pos & np.isinf(hi)].sum())
    if slope == 0:  # f reached n only up to float error at the last breakpoint
        return np.where(pos, hi, lo)
    lam = lam0 + (n - f0) / slope
    return np.clip(lam * w, lo, hi)


def _round(names: list[str], x: np.ndarray, n: int, lo: np.ndarray, hi: np.ndarray) -> dict[str, int]:
    fl = np.clip(np.floor(x + 1e-9), lo, hi)  # 1e-9: absorb float error of the fill (x is O(budget))
    left = int(n - fl.sum())
    frac = x - fl
    order = sorted((i for i in range(len(names)) if fl[i] < hi[i]),
                   key=lambda i: (-round(float(frac[i]), 12), -round(float(x[i]), 12), names[i]))
    for i in order[:left]:
        fl[i] += 1
    return {k: int(v) for k, v in zip(names, fl)}
