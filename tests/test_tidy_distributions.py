"""planner.stats.distributions against scipy.stats itself: bit-for-bit on grids including the support's edges.

The module exists so that ``decide``, ``size`` and the reports never import
``scipy.stats`` (its import alone costs a second); the existing tests pin figures that were computed
with ``scipy.stats``, so the replacement must not move a single bit. The
tolerance is therefore zero: ``np.testing.assert_array_equal`` (NaN == NaN).
"""

import subprocess
import sys

import numpy as np
import pytest
from scipy import stats

from planner.stats.distributions import binom, norm

X = np.concatenate([np.linspace(-40, 40, 4001), [-np.inf, np.inf, 0.0, -0.0, 1e-300, -1e-300, np.nan]])
Q = np.concatenate([np.linspace(0, 1, 2001), [1e-300, 1e-17, 1 - 1e-16, 0.025, 0.05 / 56, 0.8]])


@pytest.mark.parametrize("method, grid", [("cdf", X), ("sf", X), ("pdf", X), ("ppf", Q), ("isf", Q)])
def test_norm_is_scipy_norm_bit_for_bit(method, grid):
    ours, ref = getattr(norm, method), getattr(stats.norm, method)
    np.testing.assert_array_equal(ours(grid), ref(grid))
    for v in grid[::97]:  # scalars: a numpy float64 scalar, as scipy returns
        a, b = ours(v), ref(v)
        assert type(a) is type(b)
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("p", [0.5, 0.54, 0.1, 0.0, 1.0, 0.8123456789])
def test_binom_is_scipy_binom_bit_for_bit(p):
    n = np.arange(0, 400)
    k = np.arange(-3, 403)
    kk, nn = np.meshgrid(k, n)
    for method in ("pmf", "cdf", "sf"):
        np.testing.assert_array_equal(getattr(binom, method)(kk, nn, p), getattr(stats.binom, method)(kk, nn, p),
                                      err_msg=method)
    for q in (0.0, 1e-9, 0.025, 0.5, 0.975, 1 - 1e-9, 1.0, 1 - 0.05 / 2 / 28):
        np.testing.assert_array_equal(binom.ppf(q, n, p), stats.binom.ppf(q, n, p), err_msg=f"ppf {q}")
    np.testing.assert_array_equal(binom.pmf(kk + 0.5, nn, p), stats.binom.pmf(kk + 0.5, nn, p))


def test_binom_large_n_as_power_uses_it():
    n = np.arange(0, 20001, 7)
    for q in (0.975, 1 - 0.05 / 2 / 28):
        np.testing.assert_array_equal(binom.ppf(q, n, 0.5), stats.binom.ppf(q, n, 0.5))
    k = (n * 0.53).astype(np.int64)
    np.testing.assert_array_equal(binom.sf(k - 1, n, 0.54), stats.binom.sf(k - 1, n, 0.54))
    np.testing.assert_array_equal(binom.cdf(n - k, n, 0.54), stats.binom.cdf(n - k, n, 0.54))


def test_decide_size_and_power_never_import_scipy_stats():
    code = ("import sys, planner.workflows.decide, planner.stats.power, planner.stats.distributions; "
            "print('scipy.stats' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False"
