"""AlpacaEval's length-controlled win rate (planner.model.style_lc) against hand calculation and statsmodels."""

from __future__ import annotations

import math

import numpy as np
import pytest

from planner.model.style_lc import fit_fractional_logit, is_extreme_change, lc_win_rate


def _logit(p):
    return math.log(p / (1 - p))


def test_saturated_hand_case():
    # Two length patterns, 10 prompts each: the system is shorter by D on the first ten (anchor - system = +D)
    # and longer by D on the other ten. Preference means 0.8 and 0.4 (ties count 0.5).
    # delta has sd s = D * sqrt(20/19) (ddof 1), so the covariate is +-t with t = tanh(sqrt(19/20)).
    # Two parameters, two patterns: the MLE fits both means exactly,
    #   w0 + w1 t = logit 0.8,  w0 - w1 t = logit 0.4
    #   => w0 = (logit 0.8 + logit 0.4) / 2 = (1.386294 - 0.405465) / 2 = 0.490415,
    #      w1 = (logit 0.8 - logit 0.4) / (2 t);  LC = logistic(w0) = 0.620204.
    y = np.array([1] * 7 + [0.5] * 2 + [0] * 1 + [1] * 3 + [0.5] * 2 + [0] * 5, float)
    assert y[:10].mean() == pytest.approx(0.8) and y[10:].mean() == pytest.approx(0.4)
    D = 300.0
    len_sys = np.array([1000.0] * 10 + [1000.0 + D] * 10)
    len_anchor = np.array([1000.0 + D] * 10 + [1000.0] * 10)
    r = lc_win_rate("m", y, len_anchor, len_sys, prior_sd=None)
    w0 = (_logit(0.8) + _logit(0.4)) / 2
    t = math.tanh(math.sqrt(19 / 20))
    # Newton to 1e-12 in the decrement: 1e-9 on the weights
    assert r.weights["intercept"] == pytest.approx(w0, abs=1e-9)
    assert r.weights["tanh_length"] == pytest.approx((_logit(0.8) - _logit(0.4)) / (2 * t), abs=1e-9)
    assert r.lc_win_rate == pytest.approx(1 / (1 + math.exp(-w0)), abs=1e-9)
    assert r.lc_win_rate == pytest.approx(0.620204, abs=1e-6)
    assert r.win_rate == pytest.approx(0.6)
    assert r.lc_lo < r.lc_win_rate < r.lc_hi
    # a positive tanh-length weight: the system wins more when the anchor is longer, i.e. when it is shorter
    assert r.weights["tanh_length"] > 0


def test_matches_statsmodels_glm_with_difficulty():
    sm = pytest.importorskip("statsmodels.api")
    rng = np.random.default_rng(4)
    n = 300
    len_s = rng.integers(200, 3000, n).astype(float)
    len_a = rng.integers(200, 3000, n).astype(float)
    diff = rng.normal(0, 1, n)
    delta = (len_a - len_s) / np.std(len_a - len_s, ddof=1)
    eta = 0.3 - 0.8 * np.tanh(delta) + 0.5 * diff
    p = 1 / (1 + np.exp(-eta))
    u = rng.random(n)
    y = np.where(u < 0.1, 0.5, (rng.random(n) < p).astype(float))   # 10% ties
    r = lc_win_rate("m", y, len_a, len_s, diff, prior_sd=None)
    X = np.column_stack([np.ones(n), np.tanh(delta), diff])
    # statsmodels GLM Binomial accepts a fractional response in [0, 1]: the same quasi-likelihood
    res = sm.GLM(y, X, family=sm.families.Binomial()).fit(tol=1e-12)
    w = [r.weights["intercept"], r.weights["tanh_length"], r.weights["difficulty"]]
    sds = [r.weight_sd["intercept"], r.weight_sd["tanh_length"], r.weight_sd["difficulty"]]
    assert w == pytest.approx(list(res.params), abs=1e-7)      # both Newton/IRLS to 1e-12
    # the weights' covariance is a sandwich: judgment by judgment, statsmodels' HC0 times n/(n-1)
    # (the G/(G-1) factor with G = n); rel 1e-5: the same matrices from weights equal to 1e-7
    hc0 = sm.GLM(y, X, family=sm.families.Binomial()).fit(tol=1e-12, cov_type="HC0")
    assert sds == pytest.approx(list(hc0.bse * math.sqrt(n / (n - 1))), rel=1e-5)
    # ties (y = 1/2) vary less than the Bernoulli p(1 - p) the model-based errors assume: smaller here
    assert all(a < b for a, b in zip(sds, res.bse))
    lc = np.mean(1 / (1 + np.exp(-(res.params[0] + res.params[2] * diff))))
    assert r.lc_win_rate == pytest.approx(lc, abs=1e-7)


def test_clustered_sandwich_matches_statsmodels_and_never_narrows():
    sm = pytest.importorskip("statsmodels.api")
    rng = np.random.default_rng(6)
    n_prompts = 150
    prompts = np.repeat(np.arange(n_prompts), 2)                     # both orders of every prompt
    n = prompts.size
    len_s = np.repeat(rng.integers(200, 3000, n_prompts).astype(float), 2)
    len_a = np.repeat(rng.integers(200, 3000, n_prompts).astype(float), 2)
    delta = (len_a - len_s) / np.std(len_a - len_s, ddof=1)
    eta = 0.2 - 0.6 * np.tanh(delta) + np.repeat(rng.normal(0, 2.5, n_prompts), 2)   # a shared prompt effect
    y = (rng.random(n) < 1 / (1 + np.exp(-eta))).astype(float)
    y[rng.random(n) < 0.15] = 0.5
    r = lc_win_rate("m", y, len_a, len_s, prior_sd=None, clusters=prompts)
    X = np.column_stack([np.ones(n), np.tanh(delta)])
    res = sm.GLM(y, X, family=sm.families.Binomial()).fit(
        tol=1e-12, cov_type="cluster", cov_kwds={"groups": prompts, "use_correction": False})
    want = np.sqrt(np.diag(res.cov_params()) * n_prompts / (n_prompts - 1))
    assert [r.weight_sd["intercept"], r.weight_sd["tanh_length"]] == pytest.approx(list(want), rel=1e-5)
    alone = lc_win_rate("m", y, len_a, len_s, prior_sd=None)
    assert r.lc_hi - r.lc_lo > 1.15 * (alone.lc_hi - alone.lc_lo)      # the prompt effect shows
    # the same data with the pairs of one prompt disagreeing: the interval never narrows below alone's
    y2 = y.copy()
    y2[1::2] = 1.0 - y2[0::2]
    r2 = lc_win_rate("m", y2, len_a, len_s, prior_sd=None, clusters=prompts)
    a2 = lc_win_rate("m", y2, len_a, len_s, prior_sd=None)
    assert (r2.lc_lo, r2.lc_hi) == (a2.lc_lo, a2.lc_hi)


def test_weak_prior_keeps_separated_data_finite():
    y = np.ones(8)
    r = lc_win_rate("m", y, np.arange(8.0) * 10 + 100, np.full(8, 150.0))
    assert math.isfinite(r.weights["intercept"]) and r.lc_win_rate > 0.9
    w, cov = fit_fractional_logit(np.ones((4, 1)), np.array([1, 0, 1, 0.5]))
    # the penalised score equation, written out: sum(y - p) - w / 10^2 = 0 with sum(y) = 2.5 of 4
    p = 1 / (1 + math.exp(-w[0]))
    assert 2.5 - 4 * p - w[0] / 100 == pytest.approx(0.0, abs=1e-9)
    assert w[0] == pytest.approx(_logit(0.625), rel=0.02)   # ~1% shrinkage: 1 / (100 * 4 * 0.234)
    assert cov[0, 0] == pytest.approx(1 / (4 * p * (1 - p) + 0.01), rel=1e-9)   # the fit's own information


def test_bad_input():
    from planner.errors import UsageError

    with pytest.raises(UsageError, match="no usable judgment"):
        lc_win_rate("m", [], [], [])
    with pytest.raises(UsageError, match=r"\[0, 1\]"):
        lc_win_rate("m", [2.0], [1.0], [1.0])


def test_extreme_change_rule_is_upstreams():
    # get_is_extreme_changes docstring: old win rate 20 (abs 10, rel 4) warns below min(15, 10) = 10 ...
    assert is_extreme_change(0.20, 0.099) and not is_extreme_change(0.20, 0.101)
    # ... or above max(20 + 80/4, 30) = 40; old 50 warns below 37.5 or above 62.5
    assert is_extreme_change(0.20, 0.401) and not is_extreme_change(0.20, 0.399)
    assert is_extreme_change(0.50, 0.374) and is_extreme_change(0.50, 0.626)
    assert not is_extreme_change(0.50, 0.376) and not is_extreme_change(0.50, 0.624)
