"""Cluster-robust (sandwich) covariance of the Bradley–Terry–Davidson fit.

At the Laplace mode ``theta`` (prior precision ``P``), with

* ``J`` the likelihood's observed information (the negative Hessian of the
  log-likelihood, i.e. the posterior's negative Hessian minus ``P``) and
* ``B = G/(G-1) sum_c g_c g_c^T`` the meat: ``g_c`` the log-likelihood scores of
  the judgments of cluster ``c`` summed (Liang & Zeger 1986; the usual ``G/(G-1)``
  small-sample factor),

the frequentist covariance of the estimate under clustering is the sandwich
``J^-1 B J^-1``; it equals ``J^-1`` when judgments are independent and the model
holds (``B ≈ J``). For the posterior we replace the likelihood's information
``J`` by the information the clustered data really carry, ``J B^-1 J`` (what a
Gaussian likelihood with the sandwich covariance holds), so the posterior is
``(P + J_robust)^-1``. The directions come from the whitened meat
``R = J^-1/2 B J^-1/2`` (on the range of ``J``; the sum-to-zero directions carry no
data): its eigenvalues are the *design effects* of the data along its
eigenvectors. Each is applied as at least 1
(:data:`planner.stats.clusters.MIN_APPLIED_DESIGN_EFFECT`):
``J_robust = J^1/2 U diag(1 / max(lambda, 1)) U^T J^1/2``, so ``J_robust <= J`` and
the robust posterior covariance is never smaller than the model's (in the
Loewner order: no interval, contrast or rank probability gets narrower). With
every eigenvalue 1 it is the model posterior exactly.

NUTS: the same correction as a convolution — every draw gets independent
``N(0, C_robust - C_model)`` noise (seeded), which turns a Gaussian posterior
``N(m, C_model)`` into ``N(m, C_robust)`` exactly and keeps the sampled shape
where the data are thin (:func:`inflate_draws`).

Formulas and the simulation behind them: docs/methods.md, "Clustered verdicts".
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy import linalg, sparse

from planner.equality import array_eq
from planner.stats.blas import one_blas_thread
from planner.stats.clusters import MIN_APPLIED_DESIGN_EFFECT, ClusterCells

#: eigenvalues of J below this share of the largest are its null space (sum-to-zero, unobserved directions)
RANGE_TOL = 1e-10


@array_eq
@dataclass(frozen=True)
class RobustCovariance:
    """The model and the cluster-robust posterior covariance of the full parameter vector.

    Attributes
    ----------
    model, robust : ndarray (P, P)
        ``(P + J)^-1`` and ``(P + J_robust)^-1``; ``robust - model`` is positive semi-definite.
    design_effects : ndarray
        Eigenvalues of the whitened meat ``J^-1/2 B J^-1/2``, descending (before the floor at 1).
    n_clusters : int
    """

    model: np.ndarray
    robust: np.ndarray
    design_effects: np.ndarray
    n_clusters: int


def cluster_scores(prob, theta: np.ndarray, cells: ClusterCells, x=None) -> sparse.csr_matrix:
    """``(G, P)``: the log-likelihood score of each cluster at ``theta`` (its judgments' scores summed).

    ``cells``: per row a cluster id and A / B / tie tallies (:class:`ClusterCells`, or
    :class:`planner.model.style.StyleClusters`); ``x``: the rows' design (default
    ``prob.design(cells.a, cells.b, cells.stratum)``; the style-controlled model passes its design rows,
    which carry the style covariates).

    Per (cluster, shown pair, stratum) row with ``n_A``, ``n_B``, ``n_T`` judgments and ``u = delta/2``:
    ``dl/du = (n_A - n_B) - n (P_A - P_B)``, ``dl/dlog nu = n_T - n P_T``, mapped to ``theta`` by the
    row's design (``prob.design``): ``g = 1/2 dl/du x + dl/dlog nu e_lognu``.
    """
    x = prob.design(cells.a, cells.b, cells.stratum) if x is None else sparse.csr_matrix(x)
    s_u, s_l = _row_scores(0.5 * (x @ theta), theta[prob.il], cells)
    x = x.tocoo()
    rows = np.concatenate([cells.cluster[x.row], cells.cluster])
    cols = np.concatenate([x.col, np.full(cells.cluster.size, prob.il)])
    vals = np.concatenate([0.5 * s_u[x.row] * x.data, s_l])
    return sparse.csr_matrix((vals, (rows, cols)), shape=(cells.n_clusters, prob.p))


def _probs(u: np.ndarray, lam: float) -> tuple[np.ndarray, np.ndarray]:
    """``(P_A - P_B, P_T)`` at ``u = delta/2`` and ``lam = log nu``, the largest exponent factored out."""
    big = np.maximum(np.abs(u), lam)
    ea, eb, et = np.exp(u - big), np.exp(-u - big), np.exp(lam - big)
    tot = ea + eb + et
    return (ea / tot) - (eb / tot), et / tot


def _row_scores(u: np.ndarray, lam: float, cells: ClusterCells, cell: np.ndarray | None = None):
    """Per row of ``cells``: ``dl/du`` and ``dl/dlog nu`` (see :func:`cluster_scores`), at ``u = delta/2`` of each
    row and ``lam = log nu``; or, with ``cell``, at ``u`` per shown cell, row ``r`` reading entry ``cell[r]``
    (the same floats: the probabilities are a function of the cell, computed once per cell, not per row)."""
    diff, pt = _probs(u, lam)
    if cell is not None:
        diff, pt = diff[cell], pt[cell]
    n_a, n_b, n_t = (v.astype(float) for v in (cells.a_wins, cells.b_wins, cells.ties))
    n = n_a + n_b + n_t
    return (n_a - n_b) - n * diff, n_t - n * pt


def _one_pair_meat(prob, theta: np.ndarray, cells: ClusterCells) -> np.ndarray | None:
    """``Σ_g s_g s_gᵀ`` (the meat before ``G/(G-1)``) when every cluster holds one unordered pair in one stratum,
    as (prompt, pair) clusters do; None otherwise (:func:`cluster_scores` then builds the scores).

    Such a cluster's score is ``c_g (e_i - e_j) [+ c_g (e_si - e_sj)] + d_g e_gamma + l_g e_lognu``: ``c_g`` sums
    ``±u``-scores by the side ``i`` was shown on, ``d_g`` the same without the sign, ``l_g`` the tie scores. Its
    outer products are summed by bincount over (column, column) keys: no (G, P) matrix is built, which at a
    million clusters costs most of a report's time.
    """
    m, p, g = prob.m, prob.p, cells.n_clusters
    a, b, st, cl = cells.a, cells.b, cells.stratum, cells.cluster
    if a.size == 0:
        return None
    lo, hi = np.minimum(a, b), np.maximum(a, b)
    k = int(st.max()) + 1
    key = (lo * m + hi) * k + st
    first = np.full(g, -1, dtype=np.int64)
    first[cl[::-1]] = key[::-1]                  # each cluster's (pair, stratum) key, from one of its rows
    if not np.array_equal(first[cl], key):
        return None
    u, cell = _cell_u(prob, theta, a, b, st)
    s_u, s_l = _row_scores(u, theta[prob.il], cells, cell)
    s_u = 0.5 * s_u
    c = np.bincount(cl, np.where(a == lo, s_u, -s_u), minlength=g)
    d = np.bincount(cl, s_u, minlength=g)
    lg = np.bincount(cl, s_l, minlength=g)
    # the clusters' products summed per (pair, stratum) first: three bincounts over the clusters, then a
    # scatter over the (at most M(M-1)/2 per stratum) keys that occur
    keys = m * m * k
    if keys <= g:       # summed by key directly (the same sums, in the same order), no sort of the clusters
        present = np.bincount(first, minlength=keys) > 0
        uniq = np.flatnonzero(present)
        cc, cd, cl_ = (np.bincount(first, w, minlength=keys)[uniq] for w in (c * c, c * d, c * lg))
    else:
        uniq, inv = np.unique(first, return_inverse=True)
        cc, cd, cl_ = (np.bincount(inv, w, minlength=uniq.size) for w in (c * c, c * d, c * lg))
    plo, phi, pst = uniq // k // m, uniq // k % m, uniq % k
    cols = [plo, phi]
    signs = [1.0, -1.0]
    if prob.by_stratum:
        cols += [m + pst * m + plo, m + pst * m + phi]
        signs += [1.0, -1.0]
    meat = np.zeros((p, p))
    for cp, sp in zip(cols, signs, strict=True):
        for cq, sq in zip(cols, signs, strict=True):
            np.add.at(meat, (cp, cq), sp * sq * cc)
        for col, w in ((prob.ig, cd), (prob.il, cl_)):
            np.add.at(meat, (cp, np.full(cp.size, col)), sp * w)
            np.add.at(meat, (np.full(cp.size, col), cp), sp * w)
    for (r, q), w in (((prob.ig, prob.ig), d @ d), ((prob.il, prob.il), lg @ lg), ((prob.ig, prob.il), d @ lg)):
        meat[r, q] += w
        if r != q:
            meat[q, r] += w
    return meat


def _cell_u(prob, theta: np.ndarray, a: np.ndarray, b: np.ndarray, st: np.ndarray):
    """``(u, cell)``: ``u = delta/2`` per shown cell ``(stratum, a, b)`` and each row's cell, when there are fewer
    cells (M² per stratum) than rows, as (prompt, pair) clusters at a million verdicts have; else per row
    (``cell`` None)."""
    m = prob.m
    k = prob.k if prob.by_stratum else 1
    if m * m * k < a.size:
        cell = (st * m + a) * m + b if prob.by_stratum else a * m + b
        at = np.arange(m * m * k)
        st, rest = np.divmod(at, m * m)
        a, b = np.divmod(rest, m)
    else:
        cell = None
    u = 0.5 * (theta[a] - theta[b] + theta[prob.ig])
    if prob.by_stratum:
        u = u + 0.5 * (theta[m + st * m + a] - theta[m + st * m + b])
    return u, cell


def robust_covariance(prob, theta: np.ndarray, prec: np.ndarray, cells: ClusterCells, x=None) -> RobustCovariance:
    """The model posterior covariance at the mode and its cluster-robust version (module docstring).

    ``x``: the design of ``cells``' rows when it is not ``prob.design`` of their pairs (:func:`cluster_scores`).

    On one BLAS thread (:func:`planner.stats.blas.one_blas_thread`): two small eigendecompositions, which
    a threaded LAPACK on a busy 2-core machine made 10x slower (0.65 s for an 82 x 82 pair, by stratum).
    """
    with one_blas_thread():
        return _robust_covariance(prob, theta, prec, cells, x)


def _robust_covariance(prob, theta: np.ndarray, prec: np.ndarray, cells: ClusterCells, x) -> RobustCovariance:
    _, _, h = prob.derivatives(theta, prec)
    j = h - np.diag(prec)
    j = 0.5 * (j + j.T)
    model = _inverse_pd(h)
    g = cells.n_clusters
    if g < 2:
        return RobustCovariance(model, model, np.zeros(0), g)
    meat = _one_pair_meat(prob, theta, cells) if x is None else None
    if meat is None:
        s = cluster_scores(prob, theta, cells, x)
        meat = np.asarray((s.T @ s).todense())
    meat = meat * (g / (g - 1.0))
    vals, vecs = np.linalg.eigh(j)
    keep = vals > RANGE_TOL * max(float(vals.max()), 0.0) if vals.size else vals > 0
    if not keep.any():
        return RobustCovariance(model, model, np.zeros(0), g)
    root = vecs[:, keep] * np.sqrt(vals[keep])            # J^1/2 on its range (P x r)
    white = vecs[:, keep] / np.sqrt(vals[keep])           # J^-1/2 on its range
    r = white.T @ meat @ white
    lam, u = np.linalg.eigh(0.5 * (r + r.T))
    shrink = 1.0 / np.maximum(lam, MIN_APPLIED_DESIGN_EFFECT)
    ru = root @ u
    j_robust = (ru * shrink) @ ru.T
    robust = _inverse_pd(np.diag(prec) + 0.5 * (j_robust + j_robust.T))
    return RobustCovariance(model, robust, lam[::-1].copy(), g)


def _inverse_pd(a: np.ndarray) -> np.ndarray:
    """The inverse of a symmetric positive-definite matrix (by Cholesky), symmetrised."""
    c = linalg.cho_factor(a, lower=True, check_finite=False)
    inv = linalg.cho_solve(c, np.eye(a.shape[0]), check_finite=False)
    return 0.5 * (inv + inv.T)


def gaussian_draws(theta: np.ndarray, cov: np.ndarray, seed: int, draws: int) -> np.ndarray:
    """``draws`` seeded draws of N(theta, cov) (``cov`` positive definite)."""
    low = linalg.cholesky(cov, lower=True, check_finite=False)
    eps = np.random.default_rng(seed).standard_normal((draws, theta.size))
    return theta + eps @ low.T


def inflate_draws(draws: np.ndarray, extra: np.ndarray, seed: int) -> np.ndarray:
    """``draws`` (S, P) plus independent N(0, ``extra``) noise: a posterior convolved with the variance the
    model missed. ``extra`` is positive semi-definite (rounding below zero is clipped)."""
    vals, vecs = np.linalg.eigh(0.5 * (extra + extra.T))
    root = vecs * np.sqrt(np.clip(vals, 0.0, None))
    eps = np.random.default_rng([seed, 1]).standard_normal(draws.shape)
    return draws + eps @ root.T


__all__ = ["RANGE_TOL", "RobustCovariance", "cluster_scores", "gaussian_draws", "inflate_draws",
           "robust_covariance"]
