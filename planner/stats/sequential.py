"""Group-sequential tests: classical Pocock / O'Brien–Fleming boundaries and crossing probabilities.

:func:`sequential_design` solves a boundary's constant for the overall level
and the maximum sample size's inflation for the power;
:func:`crossing_probabilities` integrates the score process numerically;
:func:`check_look` validates ``--look k --looks K``. Used by ``size --looks``,
``significance --looks`` and ``decide --looks``. Formulas and references in
``docs/methods.md`` (section "Power analysis").
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from planner import limits
from planner.errors import UsageError, check_range
from planner.limits import check_choice
from planner.stats.conventions import BOUNDARIES, z_alpha
from planner.stats.distributions import norm  # scipy.stats' values without importing scipy.stats


@dataclass(frozen=True)
class SequentialDesign:
    """Group-sequential test with ``looks`` equally spaced analyses.

    Classical constant-shape boundaries (not alpha-spending approximations):
    Pocock (1977) ``c_k = C_P``; O'Brien & Fleming (1979) ``c_k = C_B sqrt(K/k)``,
    with the constant solved numerically so the overall type I error is
    ``alpha`` (Jennison & Turnbull 2000, Tables 2.1 and 2.3).

    Attributes
    ----------
    looks : int
    boundary : str
    alpha : float
        Overall level of the sequential test (per pair).
    alternative : str
    constant : float
        ``C_P`` or ``C_B``.
    z_boundaries : tuple of float
        Critical |z| at looks 1..K.
    nominal_alpha : tuple of float
        Nominal p-value thresholds at each look (two-sided when two-sided).
    alpha_spent : tuple of float
        Cumulative type I error spent by look k.
    inflation : float
        Maximum sample size over the fixed-sample size for the same power
        (``R_P`` / ``R_B`` in Jennison & Turnbull Tables 2.2 and 2.4).
    n_fixed, n_max, n_per_look : int or None
        Judgments per pair: single analysis, maximum over K looks, per look.
    """

    looks: int
    boundary: str
    alpha: float
    power: float
    alternative: str
    constant: float
    z_boundaries: tuple[float, ...]
    nominal_alpha: tuple[float, ...]
    alpha_spent: tuple[float, ...]
    inflation: float
    n_fixed: int | None = None
    n_max: int | None = None
    n_per_look: int | None = None


def _shape(looks: int, boundary: str) -> np.ndarray:
    k = np.arange(1, looks + 1)
    return np.ones(looks) if boundary == "pocock" else np.sqrt(looks / k)


def _simpson(lo: float, hi: float, grid: int) -> tuple[np.ndarray, np.ndarray]:
    x = np.linspace(lo, hi, grid)
    w = np.ones(grid)
    w[1:-1:2] = 4
    w[2:-1:2] = 2
    return x, w * (x[1] - x[0]) / 3


def crossing_probabilities(z: np.ndarray, drift: float, two_sided: bool,
                           grid: int = 301) -> tuple[np.ndarray, np.ndarray]:
    """Probabilities of first crossing the upper and the lower boundary at each look.

    Equally spaced information. Recursive numerical integration (Armitage,
    McPherson & Rowe 1969; Jennison & Turnbull 2000, ch. 19) of the score
    process ``S_k = Z_k sqrt(k)``, whose increments are independent N(drift, 1),
    on a Simpson grid over the continuation region ``(-b_k, b_k)`` (two-sided)
    or ``(-inf, b_k)`` (one-sided; truncated 12 sd below the mean).

    Returns
    -------
    upper, lower : ndarray
        ``lower`` is all zeros when ``two_sided`` is false.
    """
    K = len(z)
    b = np.asarray(z, dtype=float) * np.sqrt(np.arange(1, K + 1))
    upper = np.zeros(K)
    lower = np.zeros(K)
    x = np.array([0.0])
    wf = np.array([1.0])  # weights x density of S_{k-1} on the grid (a point mass at 0 for k=1)
    for k in range(K):
        upper[k] = float(np.dot(wf, norm.sf(b[k] - x - drift)))
        if two_sided:
            lower[k] = float(np.dot(wf, norm.cdf(-b[k] - x - drift)))
        if k == K - 1:
            break
        lo = -b[k] if two_sided else max(-b[k], drift * (k + 1) - 12 * math.sqrt(k + 1))
        xn, wn = _simpson(lo, b[k], grid)
        f = norm.pdf(xn[:, None] - x[None, :] - drift) @ wf
        x, wf = xn, wn * f
    return upper, lower


def sequential_design(looks: int, alpha: float = 0.05, power: float = 0.8,
                      boundary: str = "obrien-fleming", alternative: str = "two-sided",
                      n_fixed: int | None = None) -> SequentialDesign:
    """Boundaries and sample-size inflation of a K-look group-sequential test.

    The constant solves ``P_0(cross at some look) = alpha`` (two-sided: either
    boundary); the inflation ``R`` solves ``P_theta(cross upper) = power`` with the
    fixed-sample drift ``theta = z_{1-a} + z_{power}`` scaled by ``sqrt(R)``.
    """
    from planner.stats.optim import brentq  # scipy.optimize.brentq step for step, without its import

    limits.check_int("looks", looks, 1, limits.MAX_LOOKS)
    check_choice("boundary", boundary, BOUNDARIES)
    check_range("alpha", alpha, 0, 1)
    check_range("power", power, 0, 1)
    two = alternative == "two-sided"
    shape = _shape(looks, boundary)
    def type1(c: float) -> float:
        up, dn = crossing_probabilities(c * shape, 0.0, two)
        return up.sum() + dn.sum() - alpha

    c = brentq(type1, 0.5, 10, xtol=1e-10)
    z = c * shape
    # power: only the upper boundary counts as the right decision
    theta_fixed = z_alpha(alpha, alternative) + float(norm.ppf(power))

    def upper_power(R: float) -> float:
        drift = theta_fixed * math.sqrt(R / looks)  # per-look mean increment of S_k
        return crossing_probabilities(z, drift, two)[0].sum() - power

    R = brentq(upper_power, 0.5, 5.0, xtol=1e-10) if looks > 1 else 1.0
    nominal = tuple(float(2 * norm.sf(v) if two else norm.sf(v)) for v in z)
    up0, dn0 = crossing_probabilities(z, 0.0, two)
    spent = tuple(float(v) for v in np.cumsum(up0 + dn0))
    n_max = n_look = None
    if n_fixed is not None:
        n_max = int(math.ceil(R * n_fixed - 1e-9))
        n_look = int(math.ceil(n_max / looks))
        n_max = n_look * looks
    return SequentialDesign(looks=looks, boundary=boundary, alpha=alpha, power=power,
                            alternative=alternative, constant=float(c),
                            z_boundaries=tuple(float(v) for v in z), nominal_alpha=nominal,
                            alpha_spent=spent, inflation=float(R), n_fixed=n_fixed,
                            n_max=n_max, n_per_look=n_look)


def check_look(look: int | None, looks: int) -> int:
    """Validate ``--look k --looks K`` (1 <= k <= K); ``look`` defaults to the final look ``K``."""
    limits.check_int("looks", looks, 1, limits.MAX_LOOKS)
    if look is None:
        return int(looks)
    if not limits._is_int(look) or not 1 <= look <= looks:
        raise UsageError(f"`look` ({limits.quote(look)}) must be in [1, {looks}] (`looks`)",
                         parameters=('look', 'looks'))
    return int(look)
