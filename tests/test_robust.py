"""The cluster-robust (sandwich) covariance of the model (planner/model/robust.py) against independent references.

* The sandwich ``H^-1 B H^-1`` from :func:`cluster_scores` and the model's Hessian, at statsmodels' own
  maximum-likelihood estimate of a decisive-only Bradley–Terry with a position term, equals
  statsmodels ``GLM(Binomial).fit(cov_type="cluster")`` (no small-sample correction, times ``G/(G-1)``)
  for every strength contrast and the position term.
* With a negligible prior and every design effect above 1, the robust posterior
  ``(P + J B^-1 J)^-1`` is that same sandwich.
* The robust covariance is never smaller than the model's (Loewner order), equals it when every
  judgment is its own cluster and the design effects are floored, and the fit refuses clusters that
  tally other judgments.
"""

from __future__ import annotations

import numpy as np
import pytest

from planner.counts import Counts
from planner.errors import DataError
from planner.model import Prior, fit
from planner.model.laplace import Problem
from planner.model.robust import cluster_scores, robust_covariance
from planner.stats.clusters import JudgmentArrays, cluster_cells

M = 4
BETA = np.array([0.6, 0.2, -0.1, -0.7])
GAMMA = 0.3


def _clustered(seed: int, n_items: int = 300, votes: int = 3, ties: bool = False):
    """Items (prompt, pair) judged ``votes`` times in one random order, with a shared item effect (ICC > 0)."""
    g = np.random.default_rng(seed)
    left, right, outcome, prompt = [], [], [], []
    for it in range(n_items):
        a, b = g.choice(M, 2, replace=False)
        shift = g.normal(0.0, 1.2)                   # the item's own taste: shared by its votes
        delta = BETA[a] - BETA[b] + GAMMA + shift
        for _ in range(votes):
            p_tie = 0.2 if ties else 0.0
            u = g.random()
            win = 1.0 / (1.0 + np.exp(-delta))
            o = 2 if u < p_tie else (0 if g.random() < win else 1)
            left.append(a)
            right.append(b)
            outcome.append(o)
            prompt.append(it)
    return JudgmentArrays.build([f"s{i}" for i in range(M)], left, right, outcome, prompt=prompt)


def test_sandwich_matches_statsmodels_cluster_robust_glm():
    import statsmodels.api as sm

    ja = _clustered(5)
    y = (ja.outcome == 0).astype(float)
    x = np.zeros((ja.n, M))
    x[np.arange(ja.n), ja.left] += 1.0
    x[np.arange(ja.n), ja.right] -= 1.0
    design = np.column_stack([x[:, 1:], np.ones(ja.n)])          # system 0 is the reference; then position
    groups = ja.prompt
    res = sm.GLM(y, design, family=sm.families.Binomial()).fit(
        cov_type="cluster", cov_kwds={"groups": groups, "use_correction": False}, tol=1e-12)
    g_count = np.unique(groups).size
    want = res.cov_params() * g_count / (g_count - 1)

    prior = Prior(sigma_scale=1.0, gamma_sd=1e4, log_nu_sd=1e4)
    counts = ja.counts()
    prob = Problem(counts, False, prior)
    prec = prob.precision(1e4, None)                              # prior precision 1e-8: negligible
    beta = np.concatenate([[0.0], res.params[:M - 1]])
    theta = np.concatenate([beta - beta.mean(), [res.params[-1], -40.0]])   # log nu -40: no ties, as the data
    _, _, h = prob.derivatives(theta, prec)
    s = cluster_scores(prob, theta, cluster_cells(ja, "item"))
    meat = np.asarray((s.T @ s).todense()) * g_count / (g_count - 1)
    hinv = np.linalg.inv(h)
    sand = hinv @ meat @ hinv
    # contrasts beta_i - beta_0 and the position term, in statsmodels' parameterisation
    c = np.zeros((M, prob.p))
    for i in range(1, M):
        c[i - 1, i], c[i - 1, 0] = 1.0, -1.0
    c[M - 1, prob.ig] = 1.0
    got = c @ sand @ c.T
    # the same quantities in other arithmetic: 1e-6 relative; atol 1e-7 (1e-5 of the entries) because H
    # carries only the prior's 1e-8 along sum(beta), so H^-1 holds 1e8 there and the contrasts cancel it to
    # ~1e8 x 1e-15 — 2.4e-8 with OpenBLAS's Sandybridge kernels, 1e-9 with Haswell's
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-7)
    # the robust posterior is the sandwich when the prior is negligible and every design effect exceeds 1
    cells = cluster_cells(ja, "item")
    rc = robust_covariance(prob, theta, prec, cells)
    assert rc.design_effects.min() > 1.0
    np.testing.assert_allclose(c @ rc.robust @ c.T, want, rtol=1e-6, atol=1e-7)


def test_robust_never_below_model_and_equal_without_clusters():
    ja = _clustered(9, n_items=200, votes=2, ties=True)
    counts = ja.counts()
    plain = fit(counts)
    item = fit(counts, clusters=cluster_cells(ja, "item"))
    np.testing.assert_array_equal(item.mean, plain.mean)           # the same mode
    diff = item.posterior.cov - plain.posterior.cov
    assert np.linalg.eigvalsh(diff).min() > -1e-12                # robust >= model (Loewner)
    assert item.clustering.design_effect > 1.1                     # the shared item effect shows
    pairs = item.clustering.pair_design_effects()[np.triu_indices(M, 1)]
    assert (pairs >= 1 - 1e-9).all()
    np.testing.assert_allclose(item.clustering.model_cov, plain.posterior.cov, rtol=1e-9, atol=1e-14)
    # every judgment its own cluster: the design effects scatter around 1; floored, never below the model
    alone = fit(counts, clusters=cluster_cells(ja, "none"))
    assert 1.0 <= alone.clustering.design_effect < 1.1
    assert alone.clustering.by == "none" and alone.clustering.n_clusters == int(counts.usable.sum())


def test_by_stratum_and_pooled_clusters():
    ja = _clustered(2, n_items=240, votes=2, ties=True)
    ja = JudgmentArrays.build(ja.systems, ja.left, ja.right, ja.outcome, stratum=ja.prompt % 2, prompt=ja.prompt,
                              strata=("even", "odd"))
    cells = cluster_cells(ja, "item")
    pooled = fit(ja.counts(), clusters=cells)                     # the dispatcher pools counts and clusters
    assert pooled.clustering.design_effect > 1.0
    by = fit(ja.counts(), by_stratum=True, clusters=cells)
    assert by.clustering.design_effect > 1.0 and by.stratum_sd is not None


def test_clusters_of_other_judgments_are_refused():
    ja = _clustered(3, n_items=50)
    other = _clustered(4, n_items=50)
    with pytest.raises(DataError, match="do not tally the same judgments"):
        fit(ja.counts(), clusters=cluster_cells(other, "item"))
    empty = Counts.empty(ja.systems)
    with pytest.raises(DataError):
        fit(empty, clusters=cluster_cells(ja, "item"))


def test_one_cluster_falls_back_to_the_model():
    ja = _clustered(6, n_items=1, votes=5)
    f = fit(ja.counts(), clusters=cluster_cells(ja, "item"))
    np.testing.assert_allclose(f.posterior.cov, fit(ja.counts()).posterior.cov, rtol=1e-9, atol=1e-14)
    assert f.clustering.n_clusters == 1 and f.clustering.design_effect == pytest.approx(1.0)


@pytest.mark.parametrize("by_stratum", [False, True])
def test_one_pair_meat_is_the_scores_outer_product(by_stratum):
    """The bincount path for (prompt, pair) clusters is the (G, P) score matrix's ``SᵀS``, both orders shown, ties,
    strata; clusters holding several pairs (``prompt`` clustering here) take the score-matrix path."""
    from planner.model.robust import _one_pair_meat

    g = np.random.default_rng(11)
    base = _clustered(6, n_items=240, votes=3, ties=True)
    flip = g.random(base.n) < 0.5                                   # both presentation orders within items
    left, right = np.where(flip, base.right, base.left), np.where(flip, base.left, base.right)
    ja = JudgmentArrays.build(base.systems, left, right, base.outcome, stratum=base.prompt % 3, prompt=base.prompt,
                              strata=("x", "y", "z"))
    counts = ja.counts() if by_stratum else ja.counts().pooled()
    prob = Problem(counts, by_stratum, Prior())
    theta = g.normal(0.0, 0.5, prob.p)
    cells = cluster_cells(ja, "item")
    cells = cells if by_stratum else cells.pooled()
    s = cluster_scores(prob, theta, cells)
    want = np.asarray((s.T @ s).todense())
    got = _one_pair_meat(prob, theta, cells)
    # the same sums in another order: 1e-12 relative to the largest entry
    np.testing.assert_allclose(got, want, rtol=0, atol=1e-12 * np.abs(want).max())
    # fewer clusters than (pair, stratum) keys: the keys are found by a sort instead of a dense bincount
    few = JudgmentArrays.build(base.systems, left[:20], right[:20], base.outcome[:20], stratum=base.prompt[:20] % 3,
                               prompt=base.prompt[:20], strata=("x", "y", "z"))
    few_cells = cluster_cells(few, "item")
    few_cells = few_cells if by_stratum else few_cells.pooled()
    assert few_cells.n_clusters < M * M * (3 if by_stratum else 1) <= cells.n_clusters
    s = cluster_scores(prob, theta, few_cells)
    want = np.asarray((s.T @ s).todense())
    np.testing.assert_allclose(_one_pair_meat(prob, theta, few_cells), want, rtol=0, atol=1e-12 * np.abs(want).max())
    # four items to a prompt: a prompt's cluster holds several pairs, and the bincount path declines
    shared = JudgmentArrays.build(base.systems, left, right, base.outcome, stratum=base.prompt // 4 % 3,
                                  prompt=base.prompt // 4, strata=("x", "y", "z"))
    prompt_cells = cluster_cells(shared, "prompt")
    assert _one_pair_meat(prob, theta, prompt_cells if by_stratum else prompt_cells.pooled()) is None


@pytest.mark.parametrize("by_stratum", [False, True])
def test_scores_per_cell_are_the_scores_per_row_bit_for_bit(by_stratum):
    """The one-pair meat takes the outcome probabilities once per shown cell (fewer cells than rows) and reads them
    per row: the same floats as computing them row by row (each row's ``u`` is the same expression)."""
    from planner.model.robust import _cell_u, _row_scores

    g = np.random.default_rng(12)
    base = _clustered(7, n_items=200, votes=3, ties=True)
    ja = JudgmentArrays.build(base.systems, base.left, base.right, base.outcome, stratum=base.prompt % 3,
                              prompt=base.prompt, strata=("x", "y", "z"))
    counts = ja.counts() if by_stratum else ja.counts().pooled()
    prob = Problem(counts, by_stratum, Prior())
    theta = g.normal(0.0, 0.5, prob.p)
    cells = cluster_cells(ja, "item")
    cells = cells if by_stratum else cells.pooled()
    u, cell = _cell_u(prob, theta, cells.a, cells.b, cells.stratum)
    assert cell is not None and u.size < cells.a.size
    row_u = 0.5 * (theta[cells.a] - theta[cells.b] + theta[prob.ig])
    if by_stratum:
        m = prob.m
        row_u = row_u + 0.5 * (theta[m + cells.stratum * m + cells.a] - theta[m + cells.stratum * m + cells.b])
    lam = theta[prob.il]
    for got, want in zip(_row_scores(u, lam, cells, cell), _row_scores(row_u, lam, cells), strict=True):
        np.testing.assert_array_equal(got, want)
