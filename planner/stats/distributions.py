"""The standard normal and the binomial of ``scipy.stats``, without importing ``scipy.stats``.

``import scipy.stats`` costs seconds on a loaded machine (SciPy builds every
distribution and parses their docstrings at import), which made ``planner
decide`` three times slower than ``planner status``. The gate, the
power analysis and the reports need only a handful of methods of two
distributions, and ``scipy.stats`` computes those with ``scipy.special``
ufuncs behind a generic wrapper. This module calls the same ufuncs with the
same boundary rules, so every value is **bit-for-bit** what ``scipy.stats``
returns (tests/test_tidy_distributions.py compares them on grids including the
support's edges):

* ``norm.cdf(x) = ndtr(x)``, ``norm.sf(x) = ndtr(-x)``, ``norm.ppf(q) =
  ndtri(q)``, ``norm.isf(q) = -ndtri(q)``, ``norm.pdf(x) = exp(-x**2/2) /
  sqrt(2*pi)`` (``scipy.stats._continuous_distns._norm_*``);
* ``binom.pmf/cdf/sf/ppf`` use the Boost-based ``scipy.special._ufuncs._binom_*``
  that ``scipy.stats.binom`` calls, inside the support, and the wrapper's
  values outside it (cdf 0 below / 1 from ``n`` on; sf the reverse; pmf 0 off
  the integers; ppf ``-1`` at ``q = 0`` and ``n`` at ``q = 1``). Arguments are
  valid by construction here (integer ``n >= 0``, ``0 <= p <= 1``); nothing is
  checked. Should a SciPy release drop the private ufuncs, ``binom`` falls back
  to ``scipy.stats.binom`` itself (slower import, same numbers).

Usage mirrors ``scipy.stats``: ``from planner.stats.distributions import norm, binom``.
"""

from __future__ import annotations

import math

import numpy as np
from scipy.special import ndtr, ndtri

_SQRT_2PI = math.sqrt(2 * math.pi)  # scipy's _norm_pdf_C = np.sqrt(2*np.pi): the same double


def _out(x: np.ndarray):
    """A 0-d result as a numpy scalar, as ``scipy.stats`` returns it."""
    return x[()] if x.ndim == 0 else x


class _Norm:
    """Standard normal: the methods of ``scipy.stats.norm`` planner uses (loc 0, scale 1)."""

    @staticmethod
    def cdf(x):
        return _out(np.asarray(ndtr(np.asarray(x, dtype=float))))

    @staticmethod
    def sf(x):
        return _out(np.asarray(ndtr(-np.asarray(x, dtype=float))))

    @staticmethod
    def ppf(q):
        return _out(np.asarray(ndtri(np.asarray(q, dtype=float))))

    @staticmethod
    def isf(q):
        return _out(np.asarray(-ndtri(np.asarray(q, dtype=float))))

    @staticmethod
    def pdf(x):
        x = np.asarray(x, dtype=float)
        return _out(np.asarray(np.exp(-x ** 2 / 2.0) / _SQRT_2PI))


def _floats(*args) -> tuple[np.ndarray, ...]:
    return np.broadcast_arrays(*(np.asarray(a, dtype=float) for a in args))


class _Binom:
    """Binomial(n, p): ``pmf``, ``cdf``, ``sf``, ``ppf`` of ``scipy.stats.binom`` (loc 0)."""

    def __init__(self, ufuncs) -> None:
        self._pmf, self._cdf, self._sf, self._ppf = ufuncs

    def pmf(self, k, n, p):
        k, n, p = _floats(k, n, p)
        inside = (k >= 0) & (k <= n) & (np.floor(k) == k)
        with np.errstate(all="ignore"):
            v = np.clip(self._pmf(k, n, p), 0, 1)
        return _out(np.where(inside, v, 0.0))

    def cdf(self, k, n, p):
        k, n, p = _floats(k, n, p)
        with np.errstate(all="ignore"):
            v = np.clip(self._cdf(np.floor(k), n, p), 0, 1)
        return _out(np.where(k >= n, 1.0, np.where(k < 0, 0.0, v)))

    def sf(self, k, n, p):
        k, n, p = _floats(k, n, p)
        with np.errstate(all="ignore"):
            v = np.clip(self._sf(np.floor(k), n, p), 0, 1)
        return _out(np.where(k < 0, 1.0, np.where(k >= n, 0.0, v)))

    def ppf(self, q, n, p):
        q, n, p = _floats(q, n, p)
        with np.errstate(all="ignore"):
            v = self._ppf(q, n, p)
        return _out(np.where(q == 0, -1.0, np.where(q == 1, n, v)).astype(float))


def _binom():
    try:
        from scipy.special._ufuncs import _binom_cdf, _binom_pmf, _binom_ppf, _binom_sf
    except ImportError:  # pragma: no cover - a SciPy without the private ufuncs
        from scipy.stats import binom as scipy_binom

        return scipy_binom
    return _Binom((_binom_pmf, _binom_cdf, _binom_sf, _binom_ppf))


norm = _Norm()
binom = _binom()
