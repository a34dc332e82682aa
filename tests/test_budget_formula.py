"""planner.hybrid.budget: the PPI++ cost-optimal split against ppi_py and hand calculations."""

from __future__ import annotations

import math

import numpy as np
import pytest
from _lazy import lazy_import

from planner.errors import DataError, UsageError
from planner.hybrid import budget as hb
from planner.stats import power as pw

ppi_py = lazy_import("ppi_py")   # the oracle (test extra: ppi-python), imported by the first test using it

CASES = [(0.8, 1.0, 0.05, 1000), (0.6, 2.0, 0.1, 500), (0.9, 1.0, 0.2, 300), (0.5, 1.0, 0.01, 2000),
         (0.95, 3.0, 0.5, 120)]


@pytest.mark.parametrize("rho,ch,cj,n0", CASES)
def test_continuous_split_matches_ppi_power(rho, ch, cj, n0):
    """ppi_py.ppi_power(effective_n=n0) rounds n and N to the nearest whole number: our continuous
    optimum lies within 0.5 of each (plus the rounding of n feeding its N: within 1 + N/n there)."""
    s = hb.continuous_split(n0, rho, ch, cj)
    r = ppi_py.ppi_power(rho, cost_X=0, cost_Y=ch, cost_Yhat=cj, effective_n=n0)
    assert abs(s.n - r["n"]) <= 0.5
    assert abs(s.N - r["N"]) <= 1 + s.N / s.n
    # cost per human-only item (ppi_py's _get_costs): c_h (1 - ρ² + γρ² + 2√(γρ²(1-ρ²)))
    g = cj / ch
    assert s.cost == pytest.approx(n0 * ch * (1 - rho**2 + g * rho**2 + 2 * math.sqrt(g * rho**2 * (1 - rho**2))),
                                   rel=1e-12)
    assert hb.effective_n(s.n, s.N, rho) == pytest.approx(n0, rel=1e-12)


def test_hand_calculation():
    """ρ = 0.8, c_h = 1, c_j = 0.04 (γ = 0.04), n₀ = 100, written out:
    n* = 100 (1 − 0.64 + 0.8·√(0.04·0.36)) = 100 (0.36 + 0.8·0.12) = 45.6
    M* = 100 (0.64 + 0.8·√(0.36/0.04)) = 100 (0.64 + 2.4) = 304
    cost = 45.6 + 0.04·304 = 57.76 = 100 (0.6 + 0.8·0.2)² = 100·0.76²."""
    s = hb.continuous_split(100, 0.8, 1.0, 0.04)
    assert s.n == pytest.approx(45.6, rel=1e-12)
    assert s.items == pytest.approx(304, rel=1e-12)
    assert s.cost == pytest.approx(57.76, rel=1e-12)
    # variance check: (1 − ρ²)/n + ρ²/M = 0.36/45.6 + 0.64/304 = 1/100
    assert pytest.approx(1 / 100, rel=1e-12) == 0.36 / 45.6 + 0.64 / 304
    assert hb.ppi_variance_factor(45.6, 304 - 45.6, 0.8) / 45.6 == pytest.approx(1 / 100, rel=1e-12)


@pytest.mark.parametrize("rho,ch,cj,n0", CASES)
def test_integer_split_meets_target_and_is_near_optimal(rho, ch, cj, n0):
    s = hb.integer_split(n0, rho, ch, cj)
    c = hb.continuous_split(n0, rho, ch, cj)
    assert isinstance(s.n, int) and isinstance(s.N, int)
    assert s.effective_n >= n0 - 1e-9                        # the target is met, never undershot
    assert c.cost <= s.cost <= c.cost + ch + cj              # at most one extra label of each kind
    # the exhaustive whole-number optimum over a wide window agrees
    r2 = rho * rho
    best = min(n * ch + max(n, math.ceil(r2 / (1 / n0 - (1 - r2) / n) - 1e-9)) * cj
               for n in range(1, 3 * n0) if 1 / n0 - (1 - r2) / n > 0)
    assert s.cost == pytest.approx(best, abs=1e-9)


@pytest.mark.parametrize("rho,ch,cj,_", CASES)
def test_money_split_matches_ppi_power_budget(rho, ch, cj, _):
    """ppi_power(budget=B): most powerful pair for the money; ours is whole and within budget."""
    budget = 1000.0
    n_h, s = hb.plan_for_money(budget, rho, ch, cj)
    r = ppi_py.ppi_power(rho, cost_X=0, cost_Y=ch, cost_Yhat=cj, budget=budget)
    assert n_h == math.floor(budget / ch)
    assert s.cost <= budget + 1e-9
    assert abs(s.n - r["n"]) <= 1 + 0.01 * r["n"]
    assert s.effective_n == pytest.approx(hb.effective_n(r["n"], r["N"], rho), rel=0.01)


def test_capped_pool_matches_ppi_power_n_max():
    """A pool of at most 800 items (n + N ≤ 800): n = (1 − ρ²) n₀ M/(M − ρ² n₀), ppi_py's n_max rule."""
    s = hb.continuous_split(500, 0.8, 1.0, 0.05, max_items=800)
    assert s.capped and s.items == pytest.approx(800)
    assert s.n == pytest.approx(0.36 * 500 * 800 / (800 - 0.64 * 500), rel=1e-12)    # = 300
    r = ppi_py.ppi_power(0.8, cost_X=0, cost_Y=1.0, cost_Yhat=0.05, effective_n=500, n_max=800)
    assert (r["n"], r["N"]) == (300, 500)
    i = hb.integer_split(500, 0.8, 1.0, 0.05, max_items=800)
    assert i.items <= 800 and i.effective_n >= 500


def test_unlimited_free_judge_floor():
    """N → ∞: n = n₀(1 − ρ²). A free judge with a huge pool approaches it."""
    p = hb.plan(1000, 0.8, 1.0, 0.0, max_items=10**9)
    assert p.floor_n == 360
    assert p.hybrid.n == pytest.approx(360, abs=1)


def test_judge_that_does_not_pay():
    """√(1 − ρ²) + ρ√γ ≥ 1 → human-only: ρ = 0.3, γ = 0.25: 0.954 + 0.15 > 1."""
    p = hb.plan(400, 0.3, 1.0, 0.25)
    assert not p.use_judge and p.hybrid is None and p.saving == 0
    assert p.cost == 400
    assert hb.plan(400, -0.5, 1.0, 0.01).hybrid is None            # negative ρ: λ clipped to 0


@pytest.mark.parametrize("effect,alpha,power,tie_rate,systems,design",
                         [(0.05, 0.05, 0.8, 0.0, 2, "anchor"), (0.1, 0.01, 0.9, 0.3, 2, "anchor"),
                          (0.08, 0.05, 0.8, 0.2, 4, "round-robin")])
def test_human_only_equals_planner_size(effect, alpha, power, tie_rate, systems, design):
    p = hb.plan_for_effect(effect, 0.7, 1.0, 0.05, alpha=alpha, power=power, tie_rate=tie_rate,
                           systems=systems, design=design)
    d = pw.Design(alpha=alpha, power=power, tie_rate=tie_rate, ties="half", systems=systems, design=design)
    r = pw.size(effect, d)
    assert p.human_n == r.comparisons_normal
    assert p.human_n_exact == r.comparisons_exact
    assert p.pairs == r.pairs
    assert p.human_cost_total == r.comparisons_normal * r.pairs
    # the hybrid's z-test power at its effective n reaches the target (normal approximation)
    assert pw.power_normal(effect, p.hybrid.effective_n, d) >= power - 1e-9


def test_width_target_hand():
    """±0.03 at 95%, no ties, win rate 0.5: σ = 1/2, n₀ = (1.959964·0.5/0.03)² = 1067.07."""
    p = hb.plan_for_width(0.03, 0.7, 1.0, 0.05)
    assert p.n0 == pytest.approx((1.959963984540054 * 0.5 / 0.03) ** 2, rel=1e-12)
    assert p.human_n == 1068


def test_agreement_to_rho():
    assert hb.rho_from_agreement(0.8) == pytest.approx(0.6)
    assert hb.rho_from_agreement(0.5) == 0
    # check the stated formula on a simulated balanced binary pair: agreement 0.85 → ρ ≈ 0.7
    rng = np.random.default_rng(1)
    y = rng.integers(0, 2, 200_000)
    yhat = np.where(rng.random(len(y)) < 0.85, y, 1 - y)
    assert np.corrcoef(y, yhat)[0, 1] == pytest.approx(0.7, abs=0.01)   # MC sd ≈ 0.0016


def test_rho_from_items_matches_ppi_py_mean_corr():
    """One pair: the within-pair correlation is ppi_py's PPI correlation of the mean."""
    from ppi_py.ppi_power_analysis import _get_ppi_corr

    rng = np.random.default_rng(2)
    y = rng.choice([0.0, 0.5, 1.0], 500, p=[0.4, 0.2, 0.4])
    yhat = np.clip(y + rng.normal(0, 0.4, 500), 0, 1)
    rho, n = hb.rho_from_items(np.tile([0, 1], (500, 1)), y, yhat)
    ref = _get_ppi_corr(y - y.mean(), yhat - y.mean(), np.eye(1))
    assert n == 500 and rho == pytest.approx(ref, rel=1e-12)


def test_rho_interval_fisher_z():
    """ρ̂ = 0.35 on 224 items: atanh 0.35 = 0.365444, ± 1.644854/√221 = 0.110645 → tanh: 0.249, 0.443."""
    lo, hi = hb.rho_interval(0.35, 224)
    assert (lo, hi) == (pytest.approx(math.tanh(0.365444 - 0.110645), abs=1e-5),
                        pytest.approx(math.tanh(0.365444 + 0.110645), abs=1e-5))
    assert round(lo, 3) == 0.249 and round(hi, 3) == 0.443


def test_bad_inputs():
    with pytest.raises(UsageError, match="`human_cost`"):
        hb.plan(100, 0.5, 0.0, 0.1)
    with pytest.raises(UsageError, match="`judge_cost` 0"):
        hb.plan(100, 0.5, 1.0, 0.0)
    with pytest.raises(UsageError, match="`rho`"):
        hb.plan(100, 1.0, 1.0, 0.1)
    with pytest.raises(UsageError, match="`max_items`"):
        hb.plan(100, 0.5, 1.0, 0.1, max_items=50)
    with pytest.raises(DataError, match="need at least 3"):
        hb.rho_from_items(np.array([[0, 1]]), [1.0], [1.0])
