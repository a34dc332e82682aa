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
    u = 0.5 * (x @ theta)
    lam = theta[prob.il]
    big = np.maximum(np.abs(u), lam)
    ea, eb, et = np.exp(u - big), np.exp(-u - big), np.exp(lam - big)
    tot = ea + eb + et
    pa, pb, pt = ea / tot, eb / tot, et / tot
    n_a, n_b, n_t = (v.astype(float) for v in (cells.a_wins, cells.b_wins, cells.ties))
    n = n_a + n_b + n_t
    s_u = (n_a - n_b) - n * (pa - pb)
    s_l = n_t - n * pt
    x = x.tocoo()
    rows = np.concatenate([cells.cluster[x.row], cells.cluster])
    cols = np.concatenate([x.col, np.full(cells.cluster.size, prob.il)])
    vals = np.concatenate([0.5 * s_u[x.row] * x.data, s_l])
    return sparse.csr_matrix((vals, (rows, cols)), shape=(cells.n_clusters, prob.p))


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
    s = cluster_scores(prob, theta, cells, x)
    meat = np.asarray((s.T @ s).todense()) * (g / (g - 1.0))
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
