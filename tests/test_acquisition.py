"""Tests of planner.acquisition (choosing comparisons)."""

from __future__ import annotations

import math
from collections import Counter, deque

import numpy as np
import pytest
from scipy import integrate
from scipy.special import ndtr, owens_t

from planner import acquisition as acq
from planner.acquisition.objectives import project_sum_to_zero
from planner.acquisition.state import SelectionState, _joint
from planner.counts import Counts
from planner.errors import DataError, UsageError
from planner.jsonable import jsonable
from planner.model import bt

PRIOR_SD = 2.0          # prior sd of the strengths in the fixtures (logits)


def posterior_from_design(mean, n_per_pair, prior_sd=PRIOR_SD, gamma=0.0, nu=0.0):
    """Gaussian posterior with covariance = inverse of (prior precision + Fisher
    information of the design), evaluated at ``mean`` (bt.information), in the
    sum-to-zero subspace. ``n_per_pair`` is an (M, M) symmetric count matrix."""
    mean = np.asarray(mean, dtype=float)
    m = mean.size
    lam = np.eye(m) / prior_sd ** 2
    for i in range(m):
        for j in range(i + 1, m):
            if n_per_pair[i, j]:
                d = np.zeros(m)
                d[i], d[j] = 1.0, -1.0
                info = 0.5 * (bt.information(mean[i] - mean[j] + gamma, nu)
                              + bt.information(mean[i] - mean[j] - gamma, nu))
                lam += n_per_pair[i, j] * info * np.outer(d, d)
    q, _ = np.linalg.qr(np.eye(m)[:, :-1] - 1.0 / m)
    cov = q @ np.linalg.inv(q.T @ lam @ q) @ q.T
    return bt.GaussianPosterior(tuple(f"s{i}" for i in range(m)), mean - mean.mean(), cov, gamma, nu)


def round_robin_counts(systems, per_pair):
    m = len(systems)
    i, j = np.triu_indices(m, 1)
    a = np.repeat(i, per_pair)
    b = np.repeat(j, per_pair)
    return Counts.from_arrays(systems, a, b, np.zeros(a.size, dtype=int))


# The close-pair fixture: eight systems, two of them close (0.05 logit apart), the rest
# 1 logit apart; posterior from a round-robin design of 10 judgments per pair.
CLOSE_MEAN = np.array([0.0, 0.05, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0])


@pytest.fixture
def close_fixture():
    post = posterior_from_design(CLOSE_MEAN, np.full((8, 8), 10))
    judged = round_robin_counts(post.systems, 10)
    return post, judged


def rng(seed=0):
    return np.random.default_rng(seed)


# ------------------------------------------------------------------ math
def test_misorder_after_matches_monte_carlo_and_owens_t():
    # E[Φ(−|X|/s')], X ~ N(m, τ²), s'² + τ² = s0²; Monte Carlo with 400,000
    # draws (seeded): MC standard error < 5e-4, tolerance 4 standard errors.
    g = np.random.default_rng(1)
    for m, s0, tau in [(0.3, 1.0, 0.6), (0.0, 0.5, 0.2), (1.2, 0.8, 0.3)]:
        sp = math.sqrt(s0 * s0 - tau * tau)
        x = g.normal(m, tau, 400_000)
        vals = ndtr(-np.abs(x) / sp)
        se = vals.std() / math.sqrt(vals.size)
        got = acq.misorder_after(m / s0, sp * sp, s0 * s0)
        assert abs(got - vals.mean()) < 4 * se + 1e-12
    # no information: the current P(misorder) = Φ(−h); full information: 0
    assert acq.misorder_after(1.0, 1.0, 1.0) == pytest.approx(ndtr(-1.0), abs=1e-15)
    assert acq.misorder_after(0.5, 1e-30, 1.0) == pytest.approx(0.0, abs=1e-12)


def test_misorder_tail_expansion_close_to_owens_t():
    # the tail expansion (a >= TAIL_A) replaces 2 T(h, a); its error relative to the
    # gain (Φ(−h) − 2T) is below 0.2 % (two-term asymptotic series, O(a^-4))
    h = np.linspace(0, 6, 31)[:, None]
    a = np.linspace(acq.TAIL_A, 60, 40)[None, :]
    s2 = a * a / (1 + a * a)                      # s0 = 1, s2/τ² = a²
    got = acq.misorder_after(h, s2, 1.0)
    exact = 2 * owens_t(h, a)
    gain = ndtr(-h) - exact
    big = gain > 1e-12
    assert np.all(np.abs((ndtr(-h) - got) - gain)[big] / gain[big] < 2e-3)


def test_pair_risk_truth_mode_is_mean_over_truth():
    # truth mode: E_θ[Φ(−|θ|/s)], θ ~ N(m, s0²), by quadrature (scipy.integrate.quad)
    m, s0, s = 0.4, 0.5, 0.3
    f = lambda t: ndtr(-abs(t) / s) * math.exp(-0.5 * ((t - m) / s0) ** 2) / (s0 * math.sqrt(2 * math.pi))
    ref = integrate.quad(f, -10, 10, points=[0.0])[0]
    assert acq.pair_risk(m, s0 * s0, s * s, "truth") == pytest.approx(ref, rel=1e-8)   # quad accuracy
    assert acq.pair_risk(m, s0 * s0, s * s, "fixed") == pytest.approx(ndtr(-m / s), rel=1e-12)


def test_expected_information_quadrature():
    # v = 0: the position average of bt.information; v > 0: scipy.integrate.quad of the
    # Gaussian average (7 Gauss–Hermite nodes integrate this smooth function to ~1e-4)
    assert acq.expected_information(0.7, 0.0, 0.2, 0.3) == pytest.approx(
        0.5 * (bt.information(0.9, 0.3) + bt.information(0.5, 0.3)), rel=1e-12)
    m, v = 0.5, 0.8
    f = lambda x: bt.information(x, 0.0) * math.exp(-0.5 * (x - m) ** 2 / v) / math.sqrt(2 * math.pi * v)
    ref = integrate.quad(f, -12, 12)[0]
    assert acq.expected_information(m, v, 0.0, 0.0) == pytest.approx(ref, rel=1e-4)


def test_rank_one_update_matches_direct_inverse(close_fixture):
    post, _ = close_fixture
    st = SelectionState(post.mean, _joint(post, project_sum_to_zero(post.cov)), 0.0, 0.0)   # gamma known: its row is 0
    st.apply(0, 3, 1.0, 0.4)
    m = 8
    q, _ = np.linalg.qr(np.eye(m)[:, :-1] - 1.0 / m)
    d = np.zeros(m)
    d[0], d[3] = 1, -1
    prec = np.linalg.inv(q.T @ post.cov @ q) + 0.4 * np.outer(q.T @ d, q.T @ d)
    direct = q @ np.linalg.inv(prec) @ q.T
    assert np.allclose(st.cov[:m, :m], direct, atol=1e-12)         # double-precision round-off
    assert not st.cov[m].any()


# ------------------------------------------------------------- selection
def test_active_ranking_concentrates_on_close_pair_round_robin_spreads(close_fixture):
    post, judged = close_fixture
    act = acq.select_pairs(post, 20, judged=judged, rng=rng())
    c = Counter(act.pairs)
    assert c[(0, 1)] > 10                     # most of the batch on the close pair
    # (all 20 is allowed: the only near-tie is worth more than anything else even after
    # 19 fantasized judgments; spreading is tested on the symmetric fixture below)
    rr = acq.select_pairs(post, 20, strategy="round-robin", judged=judged, rng=rng())
    assert len(set(rr.pairs)) == 20           # 20 of the 28 equally judged pairs, once each
    assert act.expected_reduction > rr.expected_reduction


def test_greedy_gains_diminish_and_totals(close_fixture):
    post, judged = close_fixture
    sel = acq.select_pairs(post, 20, judged=judged, rng=rng())
    g = sel.gains
    assert np.all(g[1:] <= g[:-1] * (1 + 1e-9))        # lazy greedy: diminishing returns
    assert sel.expected_reduction == pytest.approx(g.sum())
    assert sel.value_after == pytest.approx(sel.value_before - g.sum())
    assert sel.value_before == pytest.approx(acq.objective_value(post, "ranking"))


def test_batch_diversity_symmetric_fixture():
    # Fair share: with six equal systems and a balanced design every pair is worth the
    # same, so no pair may take more than ceil(k / 15) + 1 of a batch of k = 30
    # (the +1 allows for the greedy order); the objective gives no reason to repeat.
    post = posterior_from_design(np.zeros(6), np.full((6, 6), 4))
    judged = round_robin_counts(post.systems, 4)
    for objective in ("ranking", "entropy", "variance"):
        sel = acq.select_pairs(post, 30, objective=objective, judged=judged, rng=rng(3))
        assert max(Counter(sel.pairs).values()) <= math.ceil(30 / 15) + 1, objective


def test_batch_cap_spreads_over_competing_pairs(close_fixture):
    # four near-tie-ish neighbour pairs (gaps 0.02, 0.2, 0.2, 0.2 logit) after 6 judgments
    # per pair: the plain greedy gives the closest pair 16 of 50 (measured); the cap
    # (max(5, ceil(0.1 * 50)) = 5 picks, yielding to any pair worth >= 25 %) spreads the batch
    mean = np.array([0.0, 0.02, 0.5, 0.7, 1.2, 1.4, 2.0, 2.2])
    post = posterior_from_design(mean, np.full((8, 8), 6))
    judged = round_robin_counts(post.systems, 6)
    assert max(Counter(acq.select_pairs(post, 50, judged=judged, rng=rng()).pairs).values()) <= 5
    no_cap = acq.SelectionOptions(batch_cap=None)
    assert max(Counter(acq.select_pairs(post, 50, judged=judged, rng=rng(), options=no_cap).pairs).values()) > 10
    # ... but a pair keeps taking picks when nothing else is worth a quarter of it: the
    # close fixture's only near-tie takes the whole batch (the objective says so)
    post, judged = close_fixture
    assert Counter(acq.select_pairs(post, 50, judged=judged, rng=rng()).pairs)[(0, 1)] == 50


def test_batch_cap_never_forces_round_robin_on_few_pairs():
    # 5 systems, two near-tie pairs (gaps 0.05 logit) and system 4 clearly ahead, 6 judgments
    # per pair, a batch of 50 over 10 pairs: the cap of max(5, ceil(0.1 * 50)) = 5 alone makes
    # every pair take exactly 5 -- round-robin's batch whatever the objective says (measured);
    # the even-share floor (2 x 50 / 10 = 10) lets the batch leave the settled pairs out
    post = posterior_from_design(np.array([0.0, 0.05, 0.4, 0.45, 1.0]), np.full((5, 5), 6))
    judged = round_robin_counts(post.systems, 6)
    no_floor = acq.SelectionOptions(cap_even=0.0)
    old = Counter(acq.select_pairs(post, 50, judged=judged, rng=rng(), options=no_floor).pairs)
    assert sorted(old.values()) == [5] * 10
    new = Counter(acq.select_pairs(post, 50, judged=judged, rng=rng()).pairs)
    assert sum(new.values()) == 50 and len(new) < 10 and max(new.values()) <= 10
    assert new[(0, 1)] == new[(2, 3)] == 10                # the two near-ties take their full cap
    # the floor only moves the cap when the batch is large for the pairs: unchanged at 28 and 120 pairs
    from planner.acquisition.greedy import pair_batch_cap
    o = acq.SelectionOptions()
    assert [pair_batch_cap(50, o, n) for n in (10, 21, 28, 120)] == [10, 5, 5, 5]
    assert pair_batch_cap(20, o, 10) == 5 and pair_batch_cap(1000, o, 44850) == 100
    assert pair_batch_cap(50, acq.SelectionOptions(batch_cap=None), 10) == 50


def test_pending_is_fantasized(close_fixture):
    post, judged = close_fixture
    # six equal systems, balanced design: every pair gets 2 of a batch of 30; with 10
    # pending items on (0, 1) that pair is no longer worth a pick
    sym = posterior_from_design(np.zeros(6), np.full((6, 6), 4))
    sym_judged = round_robin_counts(sym.systems, 4)
    pending = Counts.from_arrays(sym.systems, [0] * 10, [1] * 10, [3] * 10)
    for objective in ("ranking", "entropy", "variance"):
        base = acq.select_pairs(sym, 30, objective=objective, judged=sym_judged, rng=rng(3))
        sel = acq.select_pairs(sym, 30, objective=objective, judged=sym_judged, pending=pending, rng=rng(3))
        assert Counter(base.pairs)[(0, 1)] >= 1 and Counter(sel.pairs)[(0, 1)] == 0, objective
        assert sel.value_before < base.value_before                # pending already counted
    # the close fixture: pending judgments on the close pair lower its first-pick gain
    g0 = acq.select_pairs(post, 1, judged=judged, rng=rng()).gains[0]
    pend = Counts.from_arrays(post.systems, [0] * 30, [1] * 30, [3] * 30)
    assert acq.select_pairs(post, 1, judged=judged, pending=pend, rng=rng()).gains[0] < g0
    # round-robin: a pair with pending items comes last
    pend = Counts.from_arrays(post.systems, [2], [5], [3])
    rr = acq.select_pairs(post, 27, strategy="round-robin", judged=judged, pending=pend, rng=rng())
    assert (2, 5) not in rr.pairs and len(set(rr.pairs)) == 27


def _connected(m, pairs):
    adj = {v: set() for v in range(m)}
    for a, b in pairs:
        adj[a].add(b)
        adj[b].add(a)
    seen, todo = {0}, deque([0])
    while todo:
        v = todo.popleft()
        for w in adj[v] - seen:
            seen.add(w)
            todo.append(w)
    return len(seen) == m


def test_connected_start_design():
    for m, k in [(2, 3), (5, 5), (12, 12), (12, 40)]:
        p1 = acq.connected_start(m, k, rng(7))
        assert len(p1) == k and _connected(m, p1)
        assert p1 == acq.connected_start(m, k, rng(7))          # deterministic
    assert acq.connected_start(12, 12, rng(7)) != acq.connected_start(12, 12, rng(8))
    # restricted candidates: a random spanning tree of the allowed graph
    allowed = {(0, 1), (1, 2), (2, 3), (3, 4), (0, 4), (0, 2)}
    p = acq.connected_start(5, 6, rng(1), allowed=allowed)
    assert _connected(5, p) and set(p) <= allowed
    # select_pairs uses it when nothing has been judged
    post = posterior_from_design(np.zeros(10), np.zeros((10, 10)))
    sel = acq.select_pairs(post, 10, judged=Counts.empty(post.systems), rng=rng(2))
    assert _connected(10, sel.pairs)
    assert sel.pairs == acq.connected_start(10, 10, rng(2))


def test_gaussian_and_draws_agree_on_top_choices():
    # the close fixture with 2 judgments per pair (several pairs still uncertain);
    # 8,000 draws from the Gaussian itself, seeded
    post = posterior_from_design(CLOSE_MEAN, np.full((8, 8), 2))
    draws = rng(0).multivariate_normal(post.mean, post.cov, size=8000, method="eigh")
    for objective in ("ranking", "entropy", "variance", "anchor"):
        g = acq.candidate_gains(post, objective=objective, anchor="s3")
        d = acq.candidate_gains(post, objective=objective, anchor="s3", draws=draws)
        assert g.pairs[:3] == d.pairs[:3], objective
        assert d.engine == "draws" and g.engine == "gaussian"
        if objective != "ranking":   # smooth objectives: the best gain within 10 % (MC error)
            assert d.gains[0] == pytest.approx(g.gains[0], rel=0.1), objective
    # ranking: the draws see the discrete outcome (the mean gap moves by ±δ), the Gaussian
    # path a N(m, τ²) move with E|X| = τ √(2/π); at a tie the reduction is ∝ E|X|, so the
    # draws' gain is up to 1/√(2/π) = 1.25 times larger (+ MC error): ratio in [1, 1.4]
    g = acq.candidate_gains(post)
    d = acq.candidate_gains(post, draws=draws)
    assert 1.0 <= d.gains[0] / g.gains[0] <= 1.4
    # top-k: the boundary pair of a fixture with a near-tie at the top-3 boundary
    edge = posterior_from_design(np.array([0, 0.3, 0.6, 0.9, 1.2, 1.25, 1.8, 2.4]), np.full((8, 8), 3))
    edge_draws = rng(0).multivariate_normal(edge.mean, edge.cov, size=8000, method="eigh")
    assert (acq.candidate_gains(edge, objective="top-k", top_k=3).pairs[0]
            == acq.candidate_gains(edge, objective="top-k", top_k=3, draws=edge_draws).pairs[0] == (4, 5))
    # the batch: same picks from both engines
    sel_g = acq.select_pairs(post, 3, rng=rng())
    sel_d = acq.select_pairs(post, 3, rng=rng(), draws=draws)
    assert sel_g.pairs == sel_d.pairs and sel_d.engine == "draws"


def test_arena_rule_hand_calculation():
    # three systems, mean (0.5, 0, -0.5), covariance diag(0.04, 0.09, 0.16) projected to
    # sum-to-zero; counts n = (3, 0, 8) for pairs (0,1), (0,2), (1,2).
    mean = np.array([0.5, 0.0, -0.5])
    c = np.eye(3) - 1 / 3
    cov = c @ np.diag([0.04, 0.09, 0.16]) @ c
    post = bt.GaussianPosterior(("a", "b", "c"), mean, cov)
    ci, cj, n = np.array([0, 0, 1]), np.array([1, 2, 2]), np.array([3, 0, 8])
    # Var(β_i − β_j) of the projected cov equals the unprojected one: 0.13, 0.20, 0.25
    # p = σ(0.5) = 0.622459, σ(1.0) = 0.731059, σ(0.5)
    # Σ_aa = (p(1-p))² v: 0.235004² 0.13 = 0.0071795; 0.196612² 0.20 = 0.0077313; 0.235004² 0.25 = 0.0138067
    # w = sqrt(Σ/ñ) − sqrt(Σ/(ñ+1)), ñ = max(n, 1):
    #   (0,1): sqrt(0.0071795/3) − sqrt(0.0071795/4) = 0.048920 − 0.042366 = 0.0065539
    #   (0,2): sqrt(0.0077313/1) − sqrt(0.0077313/2) = 0.087928 − 0.062174 = 0.0257538
    #   (1,2): sqrt(0.0138067/8) − sqrt(0.0138067/9) = 0.0415432 − 0.0391673 = 0.0023759
    # (n = 0 is floored to 1 in both terms of (0,2): the rule is undefined at 0)
    w = np.array([0.0065539, 0.0257538, 0.0023759])
    got = acq.arena_weights(post, ci, cj, n)
    assert np.allclose(got, w / w.sum(), rtol=1e-4)   # hand arithmetic to 5 significant digits


def test_baseline_strategies(close_fixture):
    post, judged = close_fixture
    anc = acq.select_pairs(post, 21, strategy="anchor", anchor="s2", judged=judged, rng=rng())
    assert all(2 in p for p in anc.pairs)
    assert set(Counter(anc.pairs).values()) == {3}       # 7 opponents × 3: balanced
    sw = acq.select_pairs(post, 14, strategy="swiss", judged=judged, rng=rng())
    assert set(sw.pairs) == {(t, t + 1) for t in range(7)}   # neighbours in the mean ranking
    rnd = acq.select_pairs(post, 50, strategy="random", judged=judged, rng=rng())
    assert len(rnd.pairs) == 50 and all(i < j for i, j in rnd.pairs)
    # oracle: the truth has s0 and s1 the other way round (s0 better by 0.1): the current
    # estimate misorders exactly that pair, and the oracle goes for it
    truth = CLOSE_MEAN.copy()
    truth[0] = 0.15
    ora = acq.select_pairs(post, 10, strategy="oracle", judged=judged, rng=rng(), true_mean=truth)
    assert Counter(ora.pairs).most_common(1)[0] == ((0, 1), 10)
    assert ora.gains[0] > 0
    allowed = {(0, 2), (3, 4)}
    for strategy in ("active", "round-robin", "random", "arena"):
        sel = acq.select_pairs(post, 6, strategy=strategy, judged=judged, rng=rng(), allowed=allowed)
        assert set(sel.pairs) <= allowed, strategy


def test_top_k_and_anchor_objectives(close_fixture):
    post, judged = close_fixture
    top = acq.select_pairs(post, 5, objective="top-k", top_k=3, judged=judged, rng=rng())
    assert Counter(top.pairs).most_common(1)[0][0] == (4, 5)    # the top-3 boundary pair
    anc = acq.select_pairs(post, 6, objective="anchor", anchor="s3", judged=judged, rng=rng())
    assert all(3 in p for p in anc.pairs)                        # only anchor pairs matter


def test_determinism_with_seed(close_fixture):
    post, judged = close_fixture
    for strategy in acq.STRATEGIES:
        kw = dict(strategy=strategy, judged=judged, anchor="s0", true_mean=CLOSE_MEAN)
        a = acq.select_pairs(post, 15, rng=rng(11), **kw)
        b = acq.select_pairs(post, 15, rng=rng(11), **kw)
        assert a.pairs == b.pairs and np.array_equal(a.gains, b.gains), strategy
    r1 = acq.select_pairs(post, 15, strategy="random", rng=rng(1)).pairs
    assert r1 != acq.select_pairs(post, 15, strategy="random", rng=rng(2)).pairs


def test_settled_advice(close_fixture):
    post, judged = close_fixture
    sel = acq.select_pairs(post, 2, judged=judged, rng=rng())
    assert not sel.settled and "s1" in sel.reason and "s0" in sel.reason
    far = posterior_from_design(np.arange(6) * 1.5, np.full((6, 6), 200))
    sel = acq.select_pairs(far, 2, judged=round_robin_counts(far.systems, 200), rng=rng())
    assert sel.settled and "stop" in sel.reason
    anc = acq.select_pairs(far, 2, objective="anchor", anchor="s2", rng=rng())
    assert anc.settled
    doc = jsonable(sel)
    assert doc["settled"] is True and isinstance(doc["pairs"][0][0], str)


def test_speed_100_systems_batch_200():
    # selection for 100 systems, batch 200 must stay "well under a second" (interactive use); the bench
    # measures ~0.1 s; 3 s here leaves room for a loaded CI machine.
    import time
    m = 100
    mean = np.linspace(-4, 4, m)
    lam = np.full((m, m), -20 * 0.2)
    np.fill_diagonal(lam, 0.0)
    np.fill_diagonal(lam, -lam.sum(axis=1) + 1 / PRIOR_SD ** 2)
    q, _ = np.linalg.qr(np.eye(m)[:, :-1] - 1.0 / m)
    post = bt.GaussianPosterior(tuple(f"s{i}" for i in range(m)), mean - mean.mean(),
                                q @ np.linalg.inv(q.T @ lam @ q) @ q.T)
    t0 = time.perf_counter()
    sel = acq.select_pairs(post, 200, rng=rng())
    assert time.perf_counter() - t0 < 3.0
    assert len(sel.pairs) == 200


def test_bad_input(close_fixture):
    post, _judged = close_fixture
    with pytest.raises(UsageError, match="strategy"):
        acq.select_pairs(post, 5, strategy="best", rng=rng())
    with pytest.raises(UsageError, match="objective"):
        acq.select_pairs(post, 5, objective="fun", rng=rng())
    with pytest.raises(UsageError, match="batch size"):
        acq.select_pairs(post, 0, rng=rng())
    with pytest.raises(UsageError, match="top-k"):
        acq.select_pairs(post, 5, objective="top-k", rng=rng())
    with pytest.raises(UsageError, match="anchor"):
        acq.select_pairs(post, 5, strategy="anchor", rng=rng())
    with pytest.raises(UsageError, match="anchor"):
        acq.select_pairs(post, 5, objective="anchor", anchor="nobody", rng=rng())
    with pytest.raises(UsageError, match="true_mean"):
        acq.select_pairs(post, 5, strategy="oracle", rng=rng())
    with pytest.raises(UsageError, match="allowed"):
        acq.select_pairs(post, 5, allowed={(1, 1)}, rng=rng())
    with pytest.raises(UsageError, match="two systems"):
        acq.select_pairs(bt.GaussianPosterior(("a",), np.zeros(1), np.zeros((1, 1))), 5, rng=rng())
    with pytest.raises(DataError, match="systems"):
        acq.select_pairs(post, 5, judged=Counts.empty(("x", "y")), rng=rng())
    with pytest.raises(DataError, match="draws"):
        acq.select_pairs(post, 5, draws=np.zeros((10, 3)), rng=rng())


# ------------------------------------------------- options (no module-global knobs: every setting is an option)
def test_default_options_are_the_former_module_values_and_change_nothing(close_fixture):
    # the values the former module globals had (bench/README.md chose them): the defaults change nothing
    o = acq.SelectionOptions()
    assert (o.settle_prob, o.ranking_risk, o.risk_eps, o.pool_min, o.lookahead, o.lazy_chunk, o.arena_floor,
            o.batch_cap, o.cap_min, o.cap_yield, o.sparse_rel, o.draws_pool, o.explore, o.thompson) == (
        0.95, "bayes", 1e-7, 256, (1, 4, 16), 8, 1e-3, 0.1, 5, 0.25, 1e-4, 64, 0.0, False)
    assert o.cap_even == 2.0        # the even-share floor of the batch cap
    post, judged = close_fixture
    for strategy in acq.STRATEGIES:
        kw = dict(strategy=strategy, judged=judged, anchor="s0", true_mean=CLOSE_MEAN)
        assert acq.select_pairs(post, 15, rng=rng(5), **kw).to_dict() == \
            acq.select_pairs(post, 15, rng=rng(5), options=o, **kw).to_dict(), strategy


def test_options_reach_the_rules(close_fixture):
    post, judged = close_fixture
    sel = acq.select_pairs(post, 4, judged=judged, rng=rng(), options=acq.SelectionOptions(settle_prob=0.999))
    assert not sel.settled and sel.reason.endswith("<= 0.999")
    # explore/thompson from the options are the explicit arguments' defaults; an argument wins
    opt = acq.SelectionOptions(explore=0.4, thompson=True)
    a = acq.select_pairs(post, 10, judged=judged, rng=rng(2), options=opt)
    b = acq.select_pairs(post, 10, judged=judged, rng=rng(2), explore=0.4, thompson=True)
    assert a.to_dict() == b.to_dict()
    c = acq.select_pairs(post, 10, judged=judged, rng=rng(2), options=opt, explore=0.0, thompson=False)
    assert c.to_dict() == acq.select_pairs(post, 10, judged=judged, rng=rng(2)).to_dict()
    # arena floor: every weight at least `arena_floor` x the largest (counts 1 .. 10^4 make the
    # unfloored weights span far more than a factor 2)
    ci, cj = np.triu_indices(8, 1)
    n = np.logspace(0, 4, ci.size)
    w0 = acq.arena_weights(post, ci, cj, n)
    w = acq.arena_weights(post, ci, cj, n, options=acq.SelectionOptions(arena_floor=0.5))
    assert w0.min() < 0.5 * w0.max() and w.min() >= 0.5 * w.max() * (1 - 1e-12)
    assert w.sum() == pytest.approx(1.0, abs=1e-12)


def test_ranking_risk_option_against_hand_values():
    # two systems 0.5 logit apart, Var(β0 − β1) = 0.5 (cov = 0.125 [[1, -1], [-1, 1]]):
    # bayes at no new information is Φ(−|m|/sd) = Φ(−0.5/√0.5) = Φ(−0.70711) = 0.23975;
    # truth is 2 T(|m|/√(2v), 1) = Φ(h)(1 − Φ(h)) at h = 0.5 (Owen 1956: T(h, 1) = ½ Φ(h) Φ(−h))
    post = bt.GaussianPosterior(("a", "b"), np.array([0.25, -0.25]), 0.125 * np.array([[1.0, -1.0], [-1.0, 1.0]]))
    assert acq.objective_value(post, "ranking") == pytest.approx(ndtr(-0.5 / math.sqrt(0.5)), rel=1e-12)
    truth = acq.objective_value(post, "ranking", options=acq.SelectionOptions(ranking_risk="truth"))
    assert truth == pytest.approx(ndtr(0.5) * ndtr(-0.5), rel=1e-12)


@pytest.mark.parametrize("kw, what", [
    (dict(ranking_risk="best"), "`ranking_risk` ('best') must be one of bayes, truth, fixed"),
    (dict(settle_prob=1.0), "`settle_prob` (1.0) must be in (0.5, 1)"),
    (dict(explore=1.0), "`explore` (1.0) must be in [0, 1)"),
    (dict(lookahead=()), "`lookahead` (()) must be a non-empty tuple of integers >= 1"),
    (dict(lookahead=(1, 0)), "`lookahead` ((1, 0)) must be a non-empty tuple of integers >= 1"),
    (dict(pool_min=0), "`pool_min` (0) must be an integer >= 1"),
    (dict(batch_cap=0.0), "`batch_cap` (0.0) must be in (0, 1] or missing (no cap)"),
    (dict(cap_yield=1.5), "`cap_yield` (1.5) must be in [0, 1)"),
])
def test_bad_options_one_line_usage_error(kw, what):
    with pytest.raises(UsageError) as e:
        acq.SelectionOptions(**kw)
    assert str(e.value) == what and "\n" not in str(e.value)


def test_options_are_frozen():
    import dataclasses
    with pytest.raises(dataclasses.FrozenInstanceError):
        acq.SelectionOptions().batch_cap = None


def test_package_layout_no_knobs_no_cycles():
    # every module-level name bound in planner/acquisition is a true constant (vocabulary,
    # quadrature nodes, Owen's T switch); submodules import each other without a cycle
    # and never the package itself (its __init__ only re-exports)
    import ast
    from pathlib import Path
    pkg = Path(acq.__file__).parent
    constants = {"STRATEGIES", "OBJECTIVES", "RISK_MODES", "TAIL_A", "_GH_Z", "_GH_W", "__all__",
                 "SIG_BITS"}      # SIG_BITS: the near-tie rounding of planner/acquisition/ties.py
    graph = {}
    for path in sorted(pkg.glob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in tree.body:
            if isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                names = {n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)}
                assert names <= constants, f"{path.name}: module-level {sorted(names - constants)}"
        assert not any(isinstance(n, ast.Global) for n in ast.walk(tree)), path.name
        deps = {n.module.rsplit(".", 1)[-1] for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)
                and (n.module or "").startswith("planner.acquisition")}
        if path.stem != "__init__":
            assert "acquisition" not in deps, f"{path.name} imports the package __init__"
        graph[path.stem] = deps
    done: set[str] = set()

    def visit(mod, stack):
        assert mod not in stack, " -> ".join([*stack, mod])
        if mod not in done:
            for d in graph.get(mod, ()):
                visit(d, [*stack, mod])
            done.add(mod)
    for mod in graph:
        visit(mod, [])
