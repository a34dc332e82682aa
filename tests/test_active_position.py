"""The position effect in the objective: picks update the joint Gaussian of (strengths, gamma).

References: the exact one-order preposterior (planner/acquisition/exact.py) pinned to
scipy quadrature, the Sherman–Morrison update pinned to a direct inverse of the joint
precision, and a fixed-order case built by hand in which the rule that treats gamma as
known (the rule before) keeps buying a pair whose verdicts cannot settle it.
"""

from __future__ import annotations

import itertools
from collections import Counter
from dataclasses import replace

import numpy as np
import pytest
from scipy.integrate import quad
from scipy.stats import norm

from planner import acquisition as acq
from planner.acquisition.exact import exact_misorder, exact_misorder_one_order, gaussian_gain, gaussian_gain_one_order
from planner.acquisition.state import SelectionState, _joint
from planner.counts import Counts
from planner.errors import DataError, UsageError
from planner.model import bt, fit

GRID_TOL = 1e-6     # midpoint rule on 4,000 cells over ±10 sd (as tests/test_active_exact.py)
SYSTEMS = ("a", "b", "c")


def joint_posterior(mean, design, gamma=0.3, prior_sd=2.0, gamma_sd=1.0, nu=0.0, names=SYSTEMS):
    """The joint Gaussian of (beta, gamma): prior precision plus the Fisher information of
    ``design`` = [(left, right, n)], each verdict along x = e_left - e_right + e_gamma,
    inverted in the sum-to-zero subspace (the Laplace posterior of such data, by hand)."""
    mean = np.asarray(mean, dtype=float)
    m = mean.size
    lam = np.zeros((m + 1, m + 1))
    lam[:m, :m] = np.eye(m) / prior_sd ** 2
    lam[m, m] = 1.0 / gamma_sd ** 2
    for left, right, n in design:
        x = np.zeros(m + 1)
        x[left], x[right], x[m] = 1.0, -1.0, 1.0
        lam += n * bt.information(mean[left] - mean[right] + gamma, nu) * np.outer(x, x)
    q = np.zeros((m + 1, m))
    q[:m, :m - 1] = np.linalg.qr(np.eye(m)[:, :-1] - 1.0 / m)[0]
    q[m, m - 1] = 1.0
    cov = q @ np.linalg.inv(q.T @ lam @ q) @ q.T
    return bt.GaussianPosterior(names, mean - mean.mean(), cov[:m, :m], gamma, nu,
                                gamma_var=float(cov[m, m]), gamma_cov=cov[:m, m])


# (0, 1) a near-tie judged 100 times, always with a on the left: beta_a - beta_b + gamma is
# known well, beta_a - beta_b only as well as gamma, which 20 balanced verdicts on the other
# two pairs pin to sd ~0.4
FIXED = dict(mean=[0.55, 0.5, -0.5], design=[(0, 1, 100), (0, 2, 5), (2, 0, 5), (1, 2, 5), (2, 1, 5)])
ORDERS = {(0, 1): 500, (0, 2): 500, (2, 0): 500, (1, 2): 500, (2, 1): 500}   # (b, a) is not available


def test_old_rule_keeps_buying_the_pair_gamma_hides_the_new_one_does_not():
    post = joint_posterior(**FIXED)
    old = replace(post, gamma_var=0.0, gamma_cov=None)      # gamma plugged in at its mean: the rule before
    for seed in range(5):
        new_sel = acq.select_pairs(post, 20, rng=np.random.default_rng(seed), order_capacity=ORDERS)
        old_sel = acq.select_pairs(old, 20, rng=np.random.default_rng(seed), order_capacity=ORDERS)
        assert Counter(old_sel.pairs)[(0, 1)] >= 15, old_sel.pairs         # measured: 18 of 20
        assert Counter(new_sel.pairs)[(0, 1)] == 0, new_sel.pairs
        # the new batch buys the balanced pairs that identify gamma, each in both orders
        assert set(new_sel.pairs) <= {(0, 2), (1, 2)}
        for p in set(new_sel.pairs):
            lefts = Counter(lf for q, lf in zip(new_sel.pairs, new_sel.left) if q == p)
            assert abs(lefts[p[0]] - lefts[p[1]]) <= 1
        # (0, 1) can only be shown with a on the left
        assert all(lf == 0 for q, lf in zip(old_sel.pairs, old_sel.left) if q == (0, 1))


def test_joint_gain_matches_the_exact_one_order_preposterior_old_one_does_not():
    # the pair's own preposterior gain from n verdicts in its one order: the Gaussian update of the
    # joint against the exact integral; plugging gamma in overstates it many times
    post = joint_posterior(**FIXED)
    v = float(post.diff_sd()[0, 1] ** 2)
    cdg = float(post.gamma_cov[0] - post.gamma_cov[1])
    md = float(post.mean[0] - post.mean[1])
    for n in (4, 16, 64):
        exact = exact_misorder(md, v, 0) - exact_misorder_one_order(md, v, n, post.gamma, post.gamma_var, cdg)
        joint = gaussian_gain_one_order(md, v, n, post.gamma, post.gamma_var, cdg)
        plugged = gaussian_gain_one_order(md, v, n, post.gamma)
        # Gaussian vs exact preposterior: within 30 % at these n (tests/test_active_exact.py: 15 % with
        # gamma known at n = 16; here the prior of the gap is wider relative to its mean)
        assert joint == pytest.approx(exact, rel=0.3), n
        assert plugged > 4 * exact, n


def _quad_one_order(m, v, gamma, gamma_var, cdg, nu, sign):
    """R_1 of one verdict in order ``sign``, by scipy quad over u = delta + s gamma."""
    m_u, v_u = m + sign * gamma, v + gamma_var + 2 * sign * cdg
    slope = (v + sign * cdg) / v_u
    resid = v - (v + sign * cdg) ** 2 / v_u
    sd_u = np.sqrt(v_u)
    total = 0.0
    for o in range(3 if nu > 0 else 2):
        def below(u, o=o):
            z = (m + slope * (u - m_u)) / np.sqrt(resid)
            return norm.pdf(u, m_u, sd_u) * bt.outcome_probs(u, nu)[o] * norm.cdf(-z)

        def above(u, o=o):
            z = (m + slope * (u - m_u)) / np.sqrt(resid)
            return norm.pdf(u, m_u, sd_u) * bt.outcome_probs(u, nu)[o] * norm.cdf(z)
        lo, hi = m_u - 12 * sd_u, m_u + 12 * sd_u
        total += min(quad(below, lo, hi, epsabs=1e-13)[0], quad(above, lo, hi, epsabs=1e-13)[0])
    return total


@pytest.mark.parametrize("m,v,gamma,gamma_var,cdg,nu,sign", [
    (0.1, 0.2, 0.4, 0.1, -0.05, 0.0, 1), (-0.05, 0.1, -0.3, 0.2, 0.08, 0.3, -1), (0.3, 0.5, 0.0, 0.05, 0.0, 0.2, 1)])
def test_exact_one_order_matches_quadrature(m, v, gamma, gamma_var, cdg, nu, sign):
    ref = _quad_one_order(m, v, gamma, gamma_var, cdg, nu, sign)
    assert exact_misorder_one_order(m, v, 1, gamma, gamma_var, cdg, nu, sign) == pytest.approx(ref, abs=GRID_TOL)


def test_exact_one_order_reduces_to_the_known_gamma_case():
    # gamma known, one verdict: exact_misorder's n = 1 shows it in either order with probability 1/2
    for m, v, g, nu in [(0.2, 0.25, 0.3, 0.0), (-0.1, 0.5, 0.5, 0.4)]:
        both = [exact_misorder_one_order(m, v, 1, g, 0.0, 0.0, nu, s) for s in (1, -1)]
        assert 0.5 * sum(both) == pytest.approx(exact_misorder(m, v, 1, g, nu), abs=GRID_TOL)
    # ... and with gamma = 0 the Gaussian one-order gain is the balanced one (both positions alike)
    assert gaussian_gain_one_order(0.1, 0.3, 5, 0.0) == pytest.approx(gaussian_gain(0.1, 0.3, 5, 0.0), rel=1e-12)


def test_exact_one_order_gain_is_capped_by_what_gamma_hides():
    # u known exactly (n -> infinity) still leaves delta | u with sd sqrt(resid): the expected
    # misorder cannot fall below E_u[Phi(-|E[delta|u]| / sd)], computed here by quad
    m, v, g, gv, cdg = 0.05, 0.2, 0.3, 0.15, -0.1
    m_u, v_u = m + g, v + gv + 2 * cdg
    slope, resid = (v + cdg) / v_u, v - (v + cdg) ** 2 / v_u
    floor = quad(lambda u: norm.pdf(u, m_u, np.sqrt(v_u)) * norm.cdf(-abs(m + slope * (u - m_u)) / np.sqrt(resid)),
                 m_u - 12 * np.sqrt(v_u), m_u + 12 * np.sqrt(v_u))[0]
    risks = [exact_misorder_one_order(m, v, n, g, gv, cdg) for n in (0, 16, 64, 128)]
    assert all(a >= b - 1e-12 for a, b in itertools.pairwise(risks))          # more data never hurts on average
    # 128 verdicts: most of the way down to the floor (measured 13 % of the distance left), never below it;
    # with gamma known the same verdicts would take the pair far below that floor
    assert floor - GRID_TOL < risks[-1] < floor + 0.2 * (risks[0] - floor)
    assert exact_misorder_one_order(m, v, 128, g, 0.0, 0.0) < 0.5 * floor
    # the Gaussian joint update has the same floor: its variance after n verdicts stays above resid
    st = SelectionState(np.array([m / 2, -m / 2]), np.array([[v / 4, -v / 4, cdg / 2], [-v / 4, v / 4, -cdg / 2],
                                                     [cdg / 2, -cdg / 2, gv]]), g, 0.0)
    st.apply(0, 1, 1.0, 1e6)
    after = st.cov[0, 0] + st.cov[1, 1] - 2 * st.cov[0, 1]
    assert after == pytest.approx(resid, rel=1e-4)       # 1e6 information: within 1e-4 of the limit


def test_rank_one_update_of_the_joint_matches_a_direct_inverse():
    post = joint_posterior(**FIXED)
    m = 3
    joint = _joint(post, post.cov)
    st = SelectionState(post.mean, joint, post.gamma, 0.0)
    st.apply(1, 2, -1.0, 0.37)                      # c shown left of b
    q = np.zeros((m + 1, m))
    q[:m, :m - 1] = np.linalg.qr(np.eye(m)[:, :-1] - 1.0 / m)[0]
    q[m, m - 1] = 1.0
    x = np.array([0.0, 1.0, -1.0, -1.0])           # e_b - e_c - e_gamma
    prec = np.linalg.inv(q.T @ joint @ q) + 0.37 * np.outer(q.T @ x, q.T @ x)
    assert np.allclose(st.cov, q @ np.linalg.inv(prec) @ q.T, atol=1e-12)    # double-precision round-off


def test_pending_items_are_fantasized_in_their_shown_order():
    post = joint_posterior(**FIXED)
    joint = _joint(post, post.cov)
    pend = Counts.from_arrays(SYSTEMS, [2, 2, 0], [1, 1, 2], [3, 3, 3])     # c left of b twice, a left of c once
    batch = SelectionState(post.mean, joint, post.gamma, 0.0)
    batch.apply_counts(pend)
    one = SelectionState(post.mean, joint, post.gamma, 0.0)
    for i, j, s in ((1, 2, -1.0), (1, 2, -1.0), (0, 2, 1.0)):
        one.apply(i, j, s, float(one.info(np.array([i]), np.array([j]), np.array([s]))[0]))
    # the batch uses the information at the start for every item, the sequence re-reads it: close, not equal
    assert np.allclose(batch.cov, one.cov, atol=2e-4)


def test_laplace_fit_reports_the_joint_and_nuts_style_fields_default():
    rng = np.random.default_rng(2)
    a = rng.integers(0, 3, 300)
    b = (a + rng.integers(1, 3, 300)) % 3
    o = rng.integers(0, 3, 300)
    f = fit(Counts.from_arrays(SYSTEMS, a, b, o), engine="laplace")
    p = f.posterior
    assert p.gamma_var == pytest.approx(f.gamma.sd ** 2, rel=1e-12)
    assert p.gamma_cov.shape == (3,) and abs(p.gamma_cov.sum()) < 1e-12
    # the joint is a covariance: |Cov(beta_k, gamma)| <= sd_k sd_gamma
    assert np.all(p.gamma_cov ** 2 <= np.diag(p.cov) * p.gamma_var)


def test_bad_joint_is_refused():
    post = joint_posterior(**FIXED)
    with pytest.raises(DataError, match="gamma_var"):
        acq.select_pairs(replace(post, gamma_var=-1.0), 2, rng=np.random.default_rng(0))
    with pytest.raises(DataError, match="exceeds"):
        acq.select_pairs(replace(post, gamma_cov=post.gamma_cov * 50), 2, rng=np.random.default_rng(0))
    with pytest.raises(UsageError, match="order capacity"):
        acq.select_pairs(post, 2, rng=np.random.default_rng(0), order_capacity={(0, 1): -1})


def test_by_stratum_fit_reports_the_population_strengths_covariance_with_gamma():
    # population strengths = sum_k w_k (P beta + P d_k) (P: the sum-to-zero projection), so their
    # covariance with gamma is that linear map applied to gamma's column of the joint inverse Hessian
    from planner.model.laplace import Problem, _mode, gaussian_at_mode
    from planner.model.types import Prior

    rng = np.random.default_rng(4)
    n = 600
    a = rng.integers(0, 3, n)
    b = (a + rng.integers(1, 3, n)) % 3
    st = rng.integers(0, 2, n)
    counts = Counts.from_arrays(SYSTEMS, a, b, rng.integers(0, 3, n), stratum=st, strata=("s1", "s2"))
    weights = {"s1": 0.3, "s2": 0.7}
    f = fit(counts, engine="laplace", by_stratum=True, stratum_weights=weights)
    prob = Problem(counts, True, Prior())
    _, theta, chol, _, _ = _mode(prob, Prior(), True)
    cov, _ = gaussian_at_mode(theta, chol, 0, 1)
    col = cov[:, prob.ig]
    proj = np.eye(3) - 1.0 / 3
    want = proj @ col[:3] + 0.3 * proj @ col[3:6] + 0.7 * proj @ col[6:9]
    np.testing.assert_allclose(f.posterior.gamma_cov, want, rtol=1e-9, atol=1e-15)   # same floats up to sums
    assert f.posterior.gamma_var == pytest.approx(cov[prob.ig, prob.ig], rel=1e-12)


def test_candidate_gains_score_each_pair_in_the_order_it_can_take():
    post = joint_posterior(**FIXED)
    new = acq.candidate_gains(post, order_capacity=ORDERS)
    old = acq.candidate_gains(replace(post, gamma_var=0.0, gamma_cov=None), order_capacity=ORDERS)
    assert old.pairs[0] == (0, 1) and new.pairs[-1] == (0, 1)
    assert dict(zip(new.pairs, new.gains))[(0, 1)] < 0.2 * dict(zip(old.pairs, old.gains))[(0, 1)]
