"""planner.stats.optim against scipy.optimize itself: the same floats (``==``, no tolerance).

planner.stats.optim transcribes SciPy 1.17's brentq (C), bounded Brent and bounded
Nelder–Mead so the everyday commands need not import ``scipy.optimize``
(0.35–0.5 s). A transcription is right only if it takes the same steps, so every
case compares the returned float exactly; the golden report/decide outputs
(tests/test_golden.py) pin the model's use of them.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import scipy
from scipy import optimize

from planner.stats import optim

#: planner.stats.optim was transcribed from, and checked against, SciPy 1.17.1: there the results must be
#: the same floats. Another SciPy may have changed its arithmetic (brentq's sign test did once), so
#: elsewhere the comparisons allow 1e-9 (the tolerances asked of the solvers are 1e-12 to 1e-3, and
#: the goldens still pin planner's own numbers exactly).
EXACT = scipy.__version__.startswith("1.17.")


def same(got, ref) -> bool:
    got, ref = np.asarray(got, float), np.asarray(ref, float)
    return bool(np.array_equal(got, ref)) if EXACT else bool(np.allclose(got, ref, rtol=1e-9, atol=1e-9))

ROOT_CASES = [
    (lambda x: x ** 3 - 2 * x - 5, 2.0, 3.0, 2e-12),
    (lambda x: math.cos(x) - x, 0.0, 1.0, 1e-12),
    (lambda x: math.exp(x) - 10.0, -5.0, 5.0, 1e-10),
    (lambda x: x - 0.3, 0.0, 1.0, 2e-12),                   # linear: one secant step
    (lambda x: (x - 0.7) ** 9, 0.0, 1.0, 1e-6),             # flat root: many bisections
    (lambda x: math.tanh(50 * (x - 0.123)), -1.0, 1.0, 2e-12),
    (lambda x: x, 0.0, 1.0, 2e-12),                         # root at an end point
    (lambda x: 1e-300 * (x - 0.5), 0.0, 1.0, 2e-12),        # tiny values
]


@pytest.mark.parametrize("i", range(len(ROOT_CASES)))
def test_brentq_is_scipy_step_for_step(i):
    f, a, b, xtol = ROOT_CASES[i]
    assert same(optim.brentq(f, a, b, xtol=xtol), optimize.brentq(f, a, b, xtol=xtol))
    got, ref = _outcome(optim.brentq, f, a, b), _outcome(optimize.brentq, f, a, b)
    assert got == ref if isinstance(ref, str) else same(got, ref)   # default tolerances


def _outcome(solver, *args):
    try:
        return solver(*args)
    except RuntimeError as e:                  # the flat root at xtol 2e-12: both give up alike
        return str(e)


def test_brentq_random_cubics():
    rng = np.random.default_rng(3)
    for _ in range(200):
        r, c = rng.uniform(-1, 1), rng.uniform(0.1, 5)
        f = lambda x, r=r, c=c: c * (x - r) ** 3 + (x - r)   # noqa: E731
        lo, hi = r - rng.uniform(0.01, 3), r + rng.uniform(0.01, 3)
        assert same(optim.brentq(f, lo, hi, xtol=1e-12), optimize.brentq(f, lo, hi, xtol=1e-12))


def test_brentq_errors_match():
    with pytest.raises(ValueError, match="different signs"):
        optim.brentq(lambda x: x * x + 1, -1.0, 1.0)
    # (x - 0.7)^9 at xtol 1e-12: SciPy itself gives up after 100 iterations, and so does the copy
    for solver in (optim.brentq, optimize.brentq):
        with pytest.raises(RuntimeError, match="Failed to converge after 100 iterations"):
            solver(lambda x: (x - 0.7) ** 9, 0.0, 1.0, xtol=1e-12)


SCALAR_CASES = [
    (lambda x: (x - 1.3) ** 2, (-3.0, 4.0), 1e-4),
    (lambda x: math.cos(x) + 0.1 * x, (0.0, 7.0), 1e-5),
    (lambda x: abs(x - 0.2), (-1.0, 1.0), 1e-4),           # kink: golden steps
    (lambda x: x, (math.log(1e-3), math.log(50.0)), 1e-4),  # minimum on the lower bound
    (lambda x: -x, (math.log(1e-3), math.log(50.0)), 1e-4),  # on the upper bound
    (lambda x: 5.0, (0.0, 1.0), 1e-4),                       # flat
]


@pytest.mark.parametrize("i", range(len(SCALAR_CASES)))
def test_bounded_brent_is_scipy_step_for_step(i):
    f, bounds, xatol = SCALAR_CASES[i]
    ref = optimize.minimize_scalar(f, bounds=bounds, method="bounded", options={"xatol": xatol})
    assert same(optim.minimize_scalar_bounded(f, bounds, xatol=xatol), float(ref.x))


NM_CASES = [
    (lambda v: (v[0] - 0.4) ** 2 + 3 * (v[1] + 0.2) ** 2 + v[0] * v[1], [0.0, 0.5]),
    (lambda v: 100 * (v[1] - v[0] ** 2) ** 2 + (1 - v[0]) ** 2, [-1.0, 1.5]),  # Rosenbrock: hits 400 calls
    (lambda v: (v[0] + 9) ** 2 + (v[1] - 5) ** 2, [1.0, 0.0]),                # optimum outside: clipped
    (lambda v: math.exp(v[0]) - v[0] + (v[1] - 2.9) ** 2, [math.log(3.0), math.log(1.5)]),
]


@pytest.mark.parametrize("i", range(len(NM_CASES)))
def test_bounded_nelder_mead_is_scipy_step_for_step(i):
    f, x0 = NM_CASES[i]
    bounds = [(math.log(1e-3), math.log(50.0)), (math.log(1e-4), math.log(20.0))]
    ref = optimize.minimize(f, x0=np.array(x0), method="Nelder-Mead", bounds=bounds,
                            options={"xatol": 1e-3, "fatol": 1e-7})
    got = optim.nelder_mead_bounded(f, np.array(x0), bounds, xatol=1e-3, fatol=1e-7)
    assert same(got, ref.x)


def test_everyday_commands_do_not_import_scipy_optimize(tmp_path):
    import subprocess
    import sys

    code = ("import sys; import planner.model, planner.stats.proportions, planner.workflows.decide, "
            "planner.workflows.report; "
            "print('scipy.optimize' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


@pytest.mark.parametrize("by_stratum", [False, True])
def test_weighted_gram_is_scipys_sparse_product(by_stratum):
    """model._Problem's Hessian core: the same floats as ``(X.T @ diag(w)) @ X`` in scipy.sparse."""
    from scipy import sparse

    from planner.counts import Counts
    from planner.model import Prior
    from planner.model.laplace import Problem as _Problem

    rng = np.random.default_rng(5)
    systems, strata = ["a", "b", "c", "d", "e"], ["s1", "s2", "s3"]
    n = 400
    a = rng.integers(0, 5, n)
    b = (a + rng.integers(1, 5, n)) % 5
    counts = Counts.from_arrays(systems, a, b, rng.integers(0, 3, n), rng.integers(0, 3, n), strata)
    prob = _Problem(counts, by_stratum, Prior())
    nc = prob.x.shape[0]
    for w in (rng.uniform(0, 5, nc), rng.exponential(1e-3, nc) * (rng.random(nc) > 0.3)):   # some exact zeros
        ref = (prob.xt @ sparse.diags(w) @ prob.x).toarray()
        assert same(prob._weighted_gram(w), ref)
    # a design with real-valued columns (the style-controlled fit's)
    x = rng.normal(size=(300, 7))
    x[x < -1.2] = 0.0
    prob.x = sparse.csr_matrix(x)
    prob.xt, prob.p = prob.x.T.tocsr(), 7
    w = rng.uniform(0, 5, 300)
    assert same(prob._weighted_gram(w), (prob.xt @ sparse.diags(w) @ prob.x).toarray())
