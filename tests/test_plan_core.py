"""planner plan's core: the clustered judge, the study's pool, the forecast's arithmetic, the saved forecast.

Every figure has an independent reference: Monte Carlo of the copula written here with numpy alone
(margins, ICC, conditional latent), slot counts by hand, quantiles by hand, the BTD likelihood from
scipy.stats.multinomial, the hybrid cost from planner.hybrid.budget (the one home of that formula).
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.stats import multinomial, norm

from planner.counts import Counts
from planner.simulation.cluster import canonical_probs, conditional_latent, copula_rho, outcomes, score_icc
from planner.simulation.costing import Prices
from planner.simulation.forecast import ParameterDraws, interval, needed, summarise_target
from planner.simulation.loop import Trace
from planner.simulation.metrics import resolved_pairs, resolved_share
from planner.simulation.remaining import SavedForecast, cell_table, update
from planner.simulation.spec import METRICS
from planner.simulation.study_pool import PilotVerdicts, PoolDesign, draw_pool, layout, open_slots, pair_index

# Monte Carlo tolerances: n draws of a share p have sd sqrt(p (1 - p) / n) <= 0.5 / sqrt(n);
# 4.5 sd keeps a correct implementation failing less than once in 10^5 runs (seeded: never)
N_MC = 200_000
MC_TOL = 4.5 * 0.5 / math.sqrt(N_MC)


def _davidson(delta, nu):
    """Davidson's three probabilities written out (not planner.model.bt): e^{d/2}, e^{-d/2}, nu over their sum."""
    a, b = math.exp(delta / 2), math.exp(-delta / 2)
    return a / (a + b + nu), b / (a + b + nu), nu / (a + b + nu)


def test_canonical_probs_are_davidsons_with_the_position_shift():
    # pair (i, j) = (0, 1), beta 0.4 vs -0.1, gamma 0.3, nu 0.5
    p_lose, p_tie = canonical_probs([0.4, 0.4], [-0.1, -0.1], [True, False], 0.3, 0.5)
    pa, pb, pt = _davidson(0.5 + 0.3, 0.5)          # i left: the left response is i, delta = 0.5 + gamma
    assert p_lose[0] == pytest.approx(pb) and p_tie[0] == pytest.approx(pt)
    pa, pb, pt = _davidson(-0.5 + 0.3, 0.5)         # j left: i loses when the left (j) wins
    assert p_lose[1] == pytest.approx(pa) and p_tie[1] == pytest.approx(pt)


def test_copula_keeps_each_verdicts_margin_and_gives_the_stated_icc():
    rng = np.random.default_rng(7)
    p_lose, p_tie = canonical_probs([0.3, 0.3], [0.0, 0.0], [True, False], 0.5, 0.4)
    same = np.array([[0.0, 1.0], [1.0, 0.0]])          # one verdict in each order per cluster
    rho = copula_rho(0.25, p_lose, p_tie, same)
    w = rng.standard_normal(N_MC)
    z = [math.sqrt(rho) * w + math.sqrt(1 - rho) * rng.standard_normal(N_MC) for _ in range(2)]
    out = [outcomes(z[k], p_lose[k], p_tie[k], [True, False][k]) for k in range(2)]
    # margins: order 0 has i left (0 = left won = i won), order 1 has j left (1 = right won = i won)
    assert np.mean(out[0] == 1) == pytest.approx(p_lose[0], abs=MC_TOL)
    assert np.mean(out[0] == 2) == pytest.approx(p_tie[0], abs=MC_TOL)
    assert np.mean(out[1] == 0) == pytest.approx(p_lose[1], abs=MC_TOL)
    # the ICC of the scores (+1 i wins, 0 tie, -1 i loses), centred within order: Pearson on the two orders
    y0 = np.where(out[0] == 2, 0, np.where(out[0] == 0, 1, -1))
    y1 = np.where(out[1] == 2, 0, np.where(out[1] == 1, 1, -1))
    c = np.cov(y0, y1)
    # the ICC's sampling sd at n = 2e5 pairs is about (1 - icc^2) / sqrt(n) = 0.002; 0.01 is 5 sd
    assert c[0, 1] / (0.5 * (c[0, 0] + c[1, 1])) == pytest.approx(0.25, abs=0.01)
    assert score_icc(rho, p_lose, p_tie, same) == pytest.approx(0.25, abs=1e-9)


def test_no_correlation_and_a_negative_icc_give_independent_verdicts():
    p_lose, p_tie = canonical_probs([0.0, 0.0], [0.0, 0.0], [True, False], 0.0, 0.3)
    same = np.array([[0.0, 1.0], [1.0, 0.0]])
    assert copula_rho(0.0, p_lose, p_tie, same) == 0.0
    assert copula_rho(-0.2, p_lose, p_tie, same) == 0.0     # simulated as 0 (documented)
    assert score_icc(0.0, p_lose, p_tie, same) == 0.0


def test_conditional_latent_matches_rejection_sampling():
    """W given one observed verdict: the draw equals W | (Z in the verdict's interval) by rejection."""
    rng = np.random.default_rng(3)
    rho, p_lose, p_tie = 0.5, 0.3, 0.2
    w = rng.standard_normal(N_MC)
    z = math.sqrt(rho) * w + math.sqrt(1 - rho) * rng.standard_normal(N_MC)
    u = norm.cdf(z)
    for code, keep in ((0, u < p_lose), (1, (u >= p_lose) & (u < p_lose + p_tie)), (2, u >= p_lose + p_tie)):
        got = conditional_latent(np.full(N_MC, code), np.full(N_MC, p_lose), np.full(N_MC, p_tie), rho,
                                 np.random.default_rng(code))
        # means of two samples of >= 4e4 unit-variance-ish draws: sd < 0.01; 0.03 is >= 3 sd
        assert got.mean() == pytest.approx(w[keep].mean(), abs=0.03)
        assert got.std() == pytest.approx(w[keep].std(), abs=0.03)
    unknown = conditional_latent(np.full(N_MC, -1), np.full(N_MC, p_lose), np.full(N_MC, p_tie), rho, rng)
    assert unknown.mean() == pytest.approx(0.0, abs=0.02) and unknown.std() == pytest.approx(1.0, abs=0.02)


def _pilot_two_clusters():
    # 3 systems: pairs (0,1) k=0, (0,2) k=1, (1,2) k=2. Pilot: two verdicts on pair 0 prompt 0 (i left
    # then j left), one on pair 2 prompt 5 (i left, invalid)
    return PilotVerdicts(np.array([0, 0, 2]), np.array([0, 0, 5]), np.array([True, False, True]),
                         np.array([2, 1, -1]))


def test_slots_by_hand_for_each_design():
    pilot = _pilot_two_clusters()
    prompts = np.array([4, 4, 4])
    # both orders, 1 vote: 3 pairs x 4 prompts x 2 orders = 24 slots, minus the pilot's 3
    assert open_slots(layout(PoolDesign(prompts, "both", 1), pilot), pilot) == 24 - 3
    # both orders, 2 votes: 48 - 3
    assert open_slots(layout(PoolDesign(prompts, "both", 2), pilot), pilot) == 48 - 3
    # one order, 1 vote: 12 clusters; pair 0 prompt 0 is shown i-left (its first pilot verdict), which
    # the pilot filled; the j-left pilot verdict fills nothing; pair 2 prompt 5 filled: 12 - 2
    assert open_slots(layout(PoolDesign(prompts, "one", 1), pilot), pilot) == 10
    # fixed order: pair 0's pilot is one i-left, one j-left (a tie: a coin); pair 2's is i-left
    lay = layout(PoolDesign(prompts, "fixed", 3), pilot)
    assert open_slots(lay, pilot) == 3 * 12 - 2   # the coin's order holds one pilot verdict of pair 0; pair 2 one


def test_the_pool_holds_every_open_slot_and_the_end_adds_the_pilot():
    pilot = _pilot_two_clusters()
    start = Counts.from_arrays(("a", "b", "c"), [0, 1, 1], [1, 0, 2], [0, 2, 3])
    lay = layout(PoolDesign(np.array([4, 4, 4]), "both", 1), pilot)
    drawn = draw_pool(lay, pilot, start, np.array([0.5, 0.0, -0.5]), 0.2, 0.3, 0.4, 0.1, 10_000,
                      np.random.default_rng(0))
    assert drawn.pool.size == 21
    assert {p: v.size for p, v in drawn.pool.by_pair.items()} == {(0, 1): 6, (0, 2): 8, (1, 2): 7}
    assert int(drawn.end.usable.sum() + drawn.end.invalid.sum()) == 21 + 3
    # a budget below the pool: each pair's pool capped at the budget; the end spreads it evenly
    capped = draw_pool(lay, pilot, start, np.array([0.5, 0.0, -0.5]), 0.2, 0.3, 0.4, 0.1, 5,
                       np.random.default_rng(0))
    assert {p: v.size for p, v in capped.pool.by_pair.items()} == {(0, 1): 5, (0, 2): 5, (1, 2): 5}
    assert int(capped.end.usable.sum() + capped.end.invalid.sum()) == 5 + 3


def test_pool_verdicts_follow_the_model_margins():
    """A large pool with no clustering: shares per (pair, order) are Davidson's with the position shift."""
    m, prompts = 3, 20_000
    beta, gamma, nu = np.array([0.6, 0.0, -0.6]), 0.4, 0.5
    lay = layout(PoolDesign(np.full(3, prompts), "both", 1), PilotVerdicts.empty())
    drawn = draw_pool(lay, PilotVerdicts.empty(), Counts.empty(("a", "b", "c")), beta, gamma, nu, 0.0, 0.0,
                      10 ** 7, np.random.default_rng(1))
    pool = drawn.pool
    n_per = prompts   # verdicts per (pair, order)
    tol = 4.5 * 0.5 / math.sqrt(n_per)
    for (i, j) in zip(*pair_index(m)):
        for left, right in ((i, j), (j, i)):
            sel = (pool.left == left) & (pool.right == right)
            assert sel.sum() == n_per
            pa, pb, pt = _davidson(beta[left] - beta[right] + gamma, nu)
            got = np.bincount(pool.outcome[sel], minlength=3) / n_per
            assert got == pytest.approx([pa, pb, pt], abs=tol)


def test_parameter_draws_follow_the_joint_gaussian():
    mean = np.array([0.5, -0.5, 0.3, -1.0])
    a = np.array([[0.04, -0.04, 0.01, 0.0], [-0.04, 0.04, -0.01, 0.0], [0.01, -0.01, 0.02, 0.005],
                  [0.0, 0.0, 0.005, 0.09]])
    draws = np.array([ParameterDraws(mean, a).draw(np.random.default_rng(k)) for k in range(20_000)])
    assert np.allclose(draws[:, :2].sum(axis=1), 0.0, atol=1e-12)       # strengths keep sum zero
    # sample mean sd <= 0.3 / sqrt(2e4) = 0.002; covariance entries' sd <= 0.09 * sqrt(2 / 2e4) ~ 0.001
    assert draws.mean(axis=0) == pytest.approx(mean, abs=0.01)
    assert np.cov(draws, rowvar=False) == pytest.approx(a, abs=0.005)


def _trace(spent, values):
    vals = {k: np.full(len(spent), np.nan) for k in METRICS}
    vals.update({k: np.asarray(v, dtype=float) for k, v in values.items()})
    return Trace("active", 0, np.asarray(spent, dtype=np.int64), vals)


def test_needed_interval_and_rounds_by_hand():
    traces = [_trace([0, 50, 100], {"resolved": [0.5, 0.9, 1.0]}),     # met at 100
              _trace([0, 50], {"resolved": [1.0, 1.0]}),               # met by the pilot: 0
              _trace([0, 50, 100, 150], {"resolved": [0.2, 0.5, 0.7, 0.9]}),   # never: +inf
              _trace([0, 50, 100], {"resolved": [0.9, 1.0, 0.9]})]      # first crossing: 50
    assert [needed(t, "resolved", 1.0) for t in traces] == [100, 0, math.inf, 50]
    f = summarise_target(traces, "resolved", 1.0, "resolved at 50 Elo", 0.5, 150, 50)
    # sorted 0, 50, 100, inf; inverted-CDF quantiles: 0.5 -> 50, 0.25 -> 0, 0.75 -> 100
    assert (f.median, f.lo, f.hi) == (50.0, 0.0, 100.0)
    assert f.reached == 0.75 and f.already == 0.25
    assert (f.rounds_median, f.rounds_lo, f.rounds_hi) == (1.0, 0.0, 2.0)
    assert interval([10, 20, 30, math.inf, math.inf], 0.8) == (30.0, 10.0, math.inf)


def test_resolved_by_hand():
    # two systems, difference N(0.1, 0.05^2) on the logit scale: P(order) = Phi(2) = 0.977 > 0.95
    mean, cov = np.array([0.05, -0.05]), np.array([[0.000625, -0.000625], [-0.000625, 0.000625]])
    assert resolved_pairs(mean, cov, 0.0)[0, 1]
    # difference N(0.02, 0.05^2): P(order) = Phi(0.4) = 0.66; P(|d| < 0.2) = Phi(3.6) - Phi(-4.4) > 0.95
    mean = np.array([0.01, -0.01])
    assert not resolved_pairs(mean, cov, 0.0)[0, 1]
    assert resolved_share(mean, cov, 0.2) == 1.0
    assert norm.cdf((0.1 - 0.02) / 0.05) - norm.cdf((-0.1 - 0.02) / 0.05) < 0.95    # margin 0.1: not yet
    assert resolved_share(mean, cov, 0.1) == 0.0


def test_costs_by_hand_and_the_hybrid_split_is_size_hybrids():
    from planner.hybrid.budget import plan as hybrid_plan

    assert Prices(human=0.5).of(420, 28).total == pytest.approx(210.0)
    assert Prices(judge=0.002).of(1000, 28).total == pytest.approx(2.0)
    assert math.isinf(Prices(human=1.0).of(math.inf, 28).total)
    hp = hybrid_plan(2800 / 28, 0.7, 1.0, 0.05, pairs=28)
    got = Prices(human=1.0, judge=0.05, rho=0.7).of(2800, 28)
    assert got.total == pytest.approx(hp.cost) and got.humans == hp.hybrid.n * 28
    assert got.total < 2800 * 1.0


def test_the_saved_forecast_reweights_by_the_likelihood_of_the_new_judgments():
    systems = ("a", "b")
    then = Counts.from_arrays(systems, [0, 1], [1, 0], [0, 0])
    new_a, new_b, new_t = 6, 2, 1                       # a (left) beat b 6 times, lost 2, tied 1
    now = then + Counts.from_arrays(systems, [0] * 9, [1] * 9, [0] * new_a + [1] * new_b + [2] * new_t)
    theta = np.array([[0.5, -0.5, 0.0, math.log(0.3)], [-0.5, 0.5, 0.0, math.log(0.3)],
                      [0.2, -0.2, 0.1, math.log(0.6)]])
    needed_ = np.array([100.0, 300.0, 200.0])
    saved = SavedForecast("credible_tau", 0.9, "credible-τ 0.9", 0.5, 10, 1000, cell_table(then), theta, needed_)
    got = update(saved, now)
    # weights: the multinomial likelihood of (6, 2, 1) under each repetition's Davidson probabilities
    w = np.array([multinomial.pmf([new_a, new_b, new_t], 9, _davidson(t[0] - t[1] + t[2], math.exp(t[3])))
                  for t in theta])
    w = w / w.sum()
    rest = needed_ - 9
    order = np.argsort(rest)
    cum = np.cumsum(w[order])
    assert got.median == rest[order][np.searchsorted(cum, 0.5)]
    assert got.ess == pytest.approx(1 / (w ** 2).sum())
    # a forecast of 3 repetitions is stale below 1.5 effective ones (half of them); 1.85 is not
    assert got.new == 9 and not got.stale


def test_a_live_target_rules_out_repetitions_that_met_it_already():
    systems = ("a", "b")
    then = Counts.from_arrays(systems, [0], [1], [0])
    now = then + Counts.from_arrays(systems, [0] * 30, [1] * 30, [0, 1, 2] * 10)
    theta = np.tile([0.0, 0.0, 0.0, math.log(0.5)], (40, 1))
    needed_ = np.array([20.0] * 20 + [50.0] * 20)      # half met it within the 30 judgments since
    saved = SavedForecast("resolved", 1.0, "resolved at 50 Elo", 0.8, 10, 1000, cell_table(then), theta, needed_)
    assert update(saved, now, met_now=True).met
    got = update(saved, now, met_now=False)
    assert (got.median, got.lo, got.hi) == (20.0, 20.0, 20.0) and got.ess == pytest.approx(20.0)
    assert update(saved, now).median == 0.0       # not measurable live: the early ones count as met
    retracted = update(saved, Counts.from_arrays(systems, [1], [0], [0]))
    assert retracted.stale and "retracted" in retracted.why
