"""report --surrogate (PPI) under clustering, and `strata.same_as_pooled`.

* The IPW engine's cluster-robust covariance, at λ = 0 with a constant π (the human-only M-estimator),
  equals statsmodels' ``GLM(Binomial)`` on the fractional outcomes with ``cov_type="cluster"`` over the
  prompts (no small-sample correction, times G/(G−1)).
* ``same_as_pooled`` is true exactly when the population estimate is the pooled one: then its strengths
  and covariance are the pooled fit's, number for number; with other weights it is false and they differ.
* ``--cluster prompt`` widens the hybrid intervals on data whose prompts carry a shared effect;
  ``--cluster annotator`` is refused (the unit is the item).
"""

from __future__ import annotations

import numpy as np
import pytest
from test_humans_hybrid import _write_study

from planner.errors import UsageError
from planner.hybrid import mest as me
from planner.hybrid.ppi import design_matrix


def test_ipw_cluster_covariance_matches_statsmodels_glm():
    import statsmodels.api as sm

    g = np.random.default_rng(8)
    k, n_prompts = 4, 80
    theta = np.array([0.0, 0.4, -0.3, 0.8])
    pairs = np.array([(i, j) for i in range(k) for j in range(i + 1, k)] * n_prompts)
    prompts = np.repeat(np.arange(n_prompts), 6)
    shift = g.normal(0, 0.8, n_prompts)[prompts]                 # a prompt effect shared by its items
    p = 1 / (1 + np.exp(-(theta[pairs[:, 0]] - theta[pairs[:, 1]] + shift)))
    y = g.binomial(3, p) / 3.0                                   # three votes averaged per item
    x = design_matrix(pairs, k)
    n = len(y)
    labelled = np.ones(n, dtype=bool)
    s = me.statistic("logistic", y)
    phi, sigma, _lam = me.ipw("logistic", x, s, s, labelled, np.ones(n), np.ones(n), 0.0, clusters=prompts)
    res = sm.GLM(y, x, family=sm.families.Binomial()).fit(
        cov_type="cluster", cov_kwds={"groups": prompts, "use_correction": False}, tol=1e-12)
    np.testing.assert_allclose(phi, res.params, rtol=1e-7, atol=1e-9)    # two optimisers, one likelihood
    want = res.cov_params() * n_prompts / (n_prompts - 1)
    np.testing.assert_allclose(sigma, want, rtol=1e-6, atol=1e-12)
    plain = me.ipw("logistic", x, s, s, labelled, np.ones(n), np.ones(n), 0.0)[1]
    assert np.trace(sigma) > 1.2 * np.trace(plain)               # the prompt effect shows


def test_same_as_pooled_only_when_it_is(tmp_path):
    from planner.workflows.hybrid_report import hybrid_report

    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    equal, _ = _write_study(tmp_path / "a", seed=3)                       # no weights: prompts per stratum
    rep = hybrid_report(equal, surrogate="judge")
    assert rep.strata["same_as_pooled"] is True
    np.testing.assert_array_equal(rep.population.theta, rep.comparison.ppi.theta)
    np.testing.assert_array_equal(rep.population.cov, rep.comparison.ppi.cov)
    assert any("the population estimate is the pooled one" in n for n in rep.notes)
    weighted, _ = _write_study(tmp_path / "b", seed=3, weights=(1.0, 3.0))
    rep = hybrid_report(weighted, surrogate="judge")
    assert rep.strata["same_as_pooled"] is False
    assert np.abs(rep.population.theta - rep.comparison.ppi.theta).max() > 1e-6


def test_cluster_prompt_and_annotator(tmp_path):
    from planner.workflows.hybrid_report import hybrid_report

    study, _ = _write_study(tmp_path, seed=5, pilot=0.4)
    item = hybrid_report(study, surrogate="judge")
    prompt = hybrid_report(study, surrogate="judge", cluster="prompt")
    none = hybrid_report(study, surrogate="judge", cluster="none")
    np.testing.assert_array_equal(none.comparison.ppi.theta, item.comparison.ppi.theta)   # the item is the unit
    assert any("clustered by prompt" in n for n in prompt.notes)
    assert any("the unit is the item" in n for n in item.notes)
    assert np.all(np.isfinite(prompt.comparison.ppi.cov))
    with pytest.raises(UsageError, match="does not apply to the hybrid"):
        hybrid_report(study, surrogate="judge", cluster="annotator")
