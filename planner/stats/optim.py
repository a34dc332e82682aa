"""Three small optimisers, step for step those of SciPy, without importing ``scipy.optimize``.

``import scipy.optimize`` costs about 0.35–0.5 s (it loads the whole package:
linprog, shgo, spatial, ...) and the everyday commands (``report``, ``decide``,
``next-batch``) need only three of its routines. Each function below follows
SciPy 1.17's code operation for operation, so the results are bit-for-bit
SciPy's (tests/test_optim.py checks ``==`` against ``scipy.optimize`` on smooth,
bounded, flat and boundary cases, and the golden report/decide outputs did not
move):

* :func:`brentq` — ``scipy.optimize.brentq`` (the C routine
  ``scipy/optimize/Zeros/brentq.c``: Brent 1973, inverse quadratic / secant
  steps safeguarded by bisection), same defaults ``xtol=2e-12``,
  ``rtol=4·eps``, ``maxiter=100``;
* :func:`minimize_scalar_bounded` — ``minimize_scalar(method="bounded")``
  (``_minimize_scalar_bounded``: Brent's fminbound, golden section plus
  parabolic steps);
* :func:`nelder_mead_bounded` — ``minimize(method="Nelder-Mead", bounds=...)``
  (``_minimize_neldermead``, non-adaptive, vertices clipped to the bounds).

SciPy is BSD-3-licensed (Copyright (c) 2001-2002 Enthought, Inc. 2003, SciPy
Developers); the algorithms are transcribed from scipy/optimize/_optimize.py
and scipy/optimize/Zeros/brentq.c of SciPy 1.17.1.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import numpy as np

_EPS = float(np.finfo(float).eps)
BRENTQ_XTOL = 2e-12
BRENTQ_RTOL = 4 * _EPS


class _TooManyCalls(Exception):
    pass


def brentq(f: Callable[[float], float], a: float, b: float, xtol: float = BRENTQ_XTOL,
           rtol: float = BRENTQ_RTOL, maxiter: int = 100) -> float:
    """A root of ``f`` in ``[a, b]`` (``f(a)``, ``f(b)`` of opposite signs), as ``scipy.optimize.brentq``.

    Raises ``ValueError`` when the signs agree or a value is NaN and
    ``RuntimeError`` after ``maxiter`` iterations without convergence (SciPy's messages).
    """
    xpre, xcur = float(a), float(b)
    xblk = fblk = spre = scur = 0.0
    fpre, fcur = float(f(xpre)), float(f(xcur))
    if math.isnan(fpre) or math.isnan(fcur):
        raise ValueError("The function value at x=%f is NaN; solver cannot continue." % (a if math.isnan(fpre) else b))
    if fpre == 0:
        return xpre
    if fcur == 0:
        return xcur
    if math.copysign(1.0, fpre) == math.copysign(1.0, fcur):
        raise ValueError("f(a) and f(b) must have different signs")
    for _ in range(maxiter):
        if fpre != 0 and fcur != 0 and math.copysign(1.0, fpre) != math.copysign(1.0, fcur):
            xblk, fblk = xpre, fpre
            spre = scur = xcur - xpre
        if abs(fblk) < abs(fcur):
            xpre, xcur, xblk = xcur, xblk, xcur
            fpre, fcur, fblk = fcur, fblk, fcur
        delta = (xtol + rtol * abs(xcur)) / 2
        sbis = (xblk - xcur) / 2
        if fcur == 0 or abs(sbis) < delta:
            return xcur
        if abs(spre) > delta and abs(fcur) < abs(fpre):
            if xpre == xblk:
                stry = -fcur * (xcur - xpre) / (fcur - fpre)          # interpolate
            else:
                dpre = (fpre - fcur) / (xpre - xcur)                  # extrapolate
                dblk = (fblk - fcur) / (xblk - xcur)
                stry = -fcur * (fblk * dblk - fpre * dpre) / (dblk * dpre * (fblk - fpre))
            if 2 * abs(stry) < min(abs(spre), 3 * abs(sbis) - delta):
                spre, scur = scur, stry                               # good short step
            else:
                spre = scur = sbis                                    # bisect
        else:
            spre = scur = sbis                                        # bisect
        xpre, fpre = xcur, fcur
        xcur += scur if abs(scur) > delta else (delta if sbis > 0 else -delta)
        fcur = float(f(xcur))
        if math.isnan(fcur):
            raise ValueError(f"The function value at x={xcur:f} is NaN; solver cannot continue.")
    raise RuntimeError(f"Failed to converge after {maxiter:d} iterations.")


def minimize_scalar_bounded(func: Callable[[float], float], bounds: Sequence[float], xatol: float = 1e-5,
                            maxiter: int = 500) -> float:
    """The minimiser's ``x`` of ``scipy.optimize.minimize_scalar(func, bounds, method="bounded",
    options={"xatol": xatol, "maxiter": maxiter})``."""
    x1, x2 = bounds
    if not (math.isfinite(x1) and math.isfinite(x2)) or x1 > x2:
        raise ValueError("bounds must be finite with lower <= upper")
    sqrt_eps = math.sqrt(2.2e-16)
    golden_mean = 0.5 * (3.0 - math.sqrt(5.0))
    a, b = x1, x2
    fulc = a + golden_mean * (b - a)
    nfc, xf = fulc, fulc
    rat = e = 0.0
    x = xf
    fx = func(x)
    num = 1
    ffulc = fnfc = fx
    xm = 0.5 * (a + b)
    tol1 = sqrt_eps * np.abs(xf) + xatol / 3.0
    tol2 = 2.0 * tol1
    while np.abs(xf - xm) > (tol2 - 0.5 * (b - a)):
        golden = 1
        if np.abs(e) > tol1:                      # parabolic fit
            golden = 0
            r = (xf - nfc) * (fx - ffulc)
            q = (xf - fulc) * (fx - fnfc)
            p = (xf - fulc) * q - (xf - nfc) * r
            q = 2.0 * (q - r)
            if q > 0.0:
                p = -p
            q = np.abs(q)
            r = e
            e = rat
            if (np.abs(p) < np.abs(0.5 * q * r)) and (p > q * (a - xf)) and (p < q * (b - xf)):
                rat = (p + 0.0) / q
                x = xf + rat
                if ((x - a) < tol2) or ((b - x) < tol2):
                    si = np.sign(xm - xf) + ((xm - xf) == 0)
                    rat = tol1 * si
            else:
                golden = 1
        if golden:                                # golden-section step
            e = (a - xf) if xf >= xm else (b - xf)
            rat = golden_mean * e
        si = np.sign(rat) + (rat == 0)
        x = xf + si * np.maximum(np.abs(rat), tol1)
        fu = func(x)
        num += 1
        if fu <= fx:
            if x >= xf:
                a = xf
            else:
                b = xf
            fulc, ffulc = nfc, fnfc
            nfc, fnfc = xf, fx
            xf, fx = x, fu
        else:
            if x < xf:
                a = x
            else:
                b = x
            if (fu <= fnfc) or (nfc == xf):
                fulc, ffulc = nfc, fnfc
                nfc, fnfc = x, fu
            elif fu <= ffulc or fulc in (xf, nfc):
                fulc, ffulc = x, fu
        xm = 0.5 * (a + b)
        tol1 = sqrt_eps * np.abs(xf) + xatol / 3.0
        tol2 = 2.0 * tol1
        if num >= maxiter:
            break
    return float(xf)


def nelder_mead_bounded(func: Callable[[np.ndarray], float], x0: Sequence[float] | np.ndarray,
                        bounds: Sequence[tuple[float, float]], xatol: float = 1e-4,
                        fatol: float = 1e-4) -> np.ndarray:
    """The minimiser's ``x`` of ``scipy.optimize.minimize(func, x0, method="Nelder-Mead", bounds=bounds,
    options={"xatol": xatol, "fatol": fatol})`` (finite bounds; default iteration limits ``200·N``)."""
    lower = np.array([b[0] for b in bounds], dtype=float)
    upper = np.array([b[1] for b in bounds], dtype=float)
    if (lower > upper).any():
        raise ValueError("a lower bound is greater than its upper bound")
    rho, chi, psi, sigma = 1, 2, 0.5, 0.5
    x0 = np.clip(np.asarray(x0, dtype=float).flatten(), lower, upper)
    n = len(x0)
    sim = np.empty((n + 1, n), dtype=float)
    sim[0] = x0
    for k in range(n):
        y = np.array(x0, copy=True)
        y[k] = (1 + 0.05) * y[k] if y[k] != 0 else 0.00025
        sim[k + 1] = y
    maxiter = maxfun = n * 200
    sim = np.clip(np.where(sim > upper, 2 * upper - sim, sim), lower, upper)
    fsim = np.full((n + 1,), np.inf, dtype=float)
    calls = [0]

    def fn(x):
        if calls[0] >= maxfun:
            raise _TooManyCalls
        calls[0] += 1
        fx = func(np.copy(x))
        return fx if np.isscalar(fx) else np.asarray(fx).item()

    try:
        for k in range(n + 1):
            fsim[k] = fn(sim[k])
    except _TooManyCalls:
        pass
    finally:
        ind = np.argsort(fsim)
        sim, fsim = np.take(sim, ind, 0), np.take(fsim, ind, 0)
    ind = np.argsort(fsim)
    fsim, sim = np.take(fsim, ind, 0), np.take(sim, ind, 0)
    iterations = 1
    while calls[0] < maxfun and iterations < maxiter:
        try:
            if (np.max(np.ravel(np.abs(sim[1:] - sim[0]))) <= xatol
                    and np.max(np.abs(fsim[0] - fsim[1:])) <= fatol):
                break
            _nelder_mead_step(fn, sim, fsim, n, lower, upper, rho, chi, psi, sigma)
            iterations += 1
        except _TooManyCalls:
            pass
        ind = np.argsort(fsim)
        sim, fsim = np.take(sim, ind, 0), np.take(fsim, ind, 0)
    return sim[0]


def _nelder_mead_step(fn, sim, fsim, n, lower, upper, rho, chi, psi, sigma) -> None:
    """One reflection / expansion / contraction / shrink of SciPy's loop, in place."""
    xbar = np.add.reduce(sim[:-1], 0) / n
    xr = np.clip((1 + rho) * xbar - rho * sim[-1], lower, upper)
    fxr = fn(xr)
    if fxr < fsim[0]:
        xe = np.clip((1 + rho * chi) * xbar - rho * chi * sim[-1], lower, upper)
        fxe = fn(xe)
        if fxe < fxr:
            sim[-1], fsim[-1] = xe, fxe
        else:
            sim[-1], fsim[-1] = xr, fxr
        return
    if fxr < fsim[-2]:
        sim[-1], fsim[-1] = xr, fxr
        return
    doshrink = False
    if fxr < fsim[-1]:
        xc = np.clip((1 + psi * rho) * xbar - psi * rho * sim[-1], lower, upper)
        fxc = fn(xc)
        if fxc <= fxr:
            sim[-1], fsim[-1] = xc, fxc
        else:
            doshrink = True
    else:
        xcc = np.clip((1 - psi) * xbar + psi * sim[-1], lower, upper)
        fxcc = fn(xcc)
        if fxcc < fsim[-1]:
            sim[-1], fsim[-1] = xcc, fxcc
        else:
            doshrink = True
    if doshrink:
        for j in range(1, n + 1):
            sim[j] = np.clip(sim[0] + sigma * (sim[j] - sim[0]), lower, upper)
            fsim[j] = fn(sim[j])


__all__ = ["brentq", "minimize_scalar_bounded", "nelder_mead_bounded"]
