"""Laplace engine of the style-controlled model (imported lazily by :func:`planner.model.style.fit_style`).

The raw model's Newton problem (:class:`planner.model.laplace.Problem`) with the style columns
added to its design matrix: parameters ``(beta, coef, gamma_pos, log_nu)``, sigma fixed or at its
type-II MAP as in the raw model, the Gaussian at the mode, draws seeded by ``seed``. The model is
written out in :mod:`planner.model.style`; the NUTS engine is :mod:`planner.model.style_nuts`.

When the design carries clusters (:class:`planner.model.style.StyleClusters`) the covariance is the
cluster-robust one of :func:`planner.model.robust.robust_covariance` at the same mode (bread: the
posterior's Hessian there, prior included; meat: the clusters' summed scores, style columns included).
"""

from __future__ import annotations

import math

import numpy as np
from scipy import sparse

from planner.model import bt
from planner.model.laplace import (
    Problem,
    gaussian_at_mode,
    half_normal_log_scale,
    laplace_log_marginal,
    lognormal_summary,
    newton,
    normal_summary,
    type2_log_sigma,
)
from planner.model.robust import RobustCovariance, gaussian_draws, robust_covariance
from planner.model.style import StyleDesign, StyleFit
from planner.model.types import Clustering, Diagnostics, Fit, Prior, Summary


class StyleProblem(Problem):
    """The raw model's Newton problem with the style columns added to its design matrix.

    Parameter vector ``theta = [beta (M), coef (F), gamma_pos, log_nu]``; the coefficients have the
    fixed prior sd ``coef_sd``.
    """

    def __init__(self, design: StyleDesign, prior: Prior, coef_sd: float):
        m, f = len(design.systems), len(design.features)
        self.m, self.k, self.f, self.by_stratum, self.prior = m, 0, f, False, prior
        self.coef_sd = coef_sd
        self.n_a, self.n_b, self.n_t = (v.astype(float) for v in (design.a_wins, design.b_wins, design.ties))
        self.n = self.n_a + self.n_b + self.n_t
        self.p = m + f + 2
        self.ig, self.il = self.p - 2, self.p - 1
        nc = design.a.size
        dense = np.zeros((nc, self.p))
        dense[np.arange(nc), design.a] += 1.0
        dense[np.arange(nc), design.b] -= 1.0
        dense[:, m: m + f] = design.x
        dense[:, self.ig] = design.position
        self.x = sparse.csr_matrix(dense)
        self.xt = self.x.T.tocsr()
        self.mu = np.zeros(self.p)
        self.mu[self.ig] = prior.gamma_mean
        self.mu[self.il] = prior.log_nu_mean

    def precision(self, sigma, tau=None):
        prec = np.empty(self.p)
        prec[: self.m] = 1.0 / sigma**2
        prec[self.m: self.m + self.f] = 1.0 / self.coef_sd**2
        prec[self.ig] = 1.0 / self.prior.gamma_sd**2
        prec[self.il] = 1.0 / self.prior.log_nu_sd**2
        return prec


def style_mode(design: StyleDesign, prior: Prior, coef_sd: float, sigma: float | None):
    """``(prob, theta, prec, chol, log_sigma, iterations, converged)``: the posterior mode of checked inputs,
    with the precision and the Cholesky factor of the negative Hessian there."""
    prob = StyleProblem(design, prior, coef_sd)
    state = {"theta": prob.mu.copy(), "iters": 0, "ok": True}

    def inner(log_sigma: float):
        prec = prob.precision(math.exp(log_sigma))
        theta, fval, c, it, ok = newton(prob, prec, state["theta"])
        state.update(theta=theta, iters=state["iters"] + it, ok=state["ok"] and ok)
        lml = laplace_log_marginal(prob, prec, fval, c)
        return -(lml + half_normal_log_scale(log_sigma, prior.sigma_scale)), theta, c, prec

    log_sigma = type2_log_sigma(lambda s: inner(s)[0]) if sigma is None else math.log(sigma)
    _, theta, c, prec = inner(log_sigma)
    return prob, theta, prec, c, log_sigma, state["iters"], state["ok"]


def style_robust(prob: StyleProblem, theta: np.ndarray, prec: np.ndarray, clusters) -> RobustCovariance:
    """The model and cluster-robust covariances of the full parameter vector at the mode."""
    return robust_covariance(prob, theta, prec, clusters, x=prob.x[clusters.row])


def style_clustering(prob: StyleProblem, by: str, rc: RobustCovariance) -> Clustering:
    """The sum-to-zero strengths' model and robust covariances and the design effects."""
    proj = np.eye(prob.m) - 1.0 / prob.m

    def sym(c):
        c = proj @ c[: prob.m, : prob.m] @ proj.T
        return 0.5 * (c + c.T)

    return Clustering(by, rc.n_clusters, sym(rc.model), sym(rc.robust), rc.design_effects)


def fit_style_laplace(design: StyleDesign, prior: Prior, coef_sd: float, seed: int, draws: int,
                      sigma: float | None) -> StyleFit:
    """The Laplace fit of checked inputs (see :func:`planner.model.style.fit_style`, which checks them);
    cluster-robust when ``design.clusters`` is set."""
    prob, theta, prec, c, log_sigma, iters, ok = style_mode(design, prior, coef_sd, sigma)
    m, f = prob.m, prob.f
    clustering = None
    if design.clusters is None:
        cov, theta_draws = gaussian_at_mode(theta, c, seed, draws)
    else:
        rc = style_robust(prob, theta, prec, design.clusters)
        cov, theta_draws = rc.robust, gaussian_draws(theta, rc.robust, seed, draws)
        clustering = style_clustering(prob, design.clusters.by, rc)
    proj = np.eye(m) - 1.0 / m
    mean = proj @ theta[:m]
    bcov = proj @ cov[:m, :m] @ proj.T
    beta_draws = theta_draws[:, :m] @ proj.T

    nu = lognormal_summary(theta, cov, prob.il)
    nan = float("nan")
    warnings = () if ok else (
        "The Laplace optimiser did not converge for the style-controlled model; use --engine nuts.",)
    post = bt.GaussianPosterior(design.systems, mean, 0.5 * (bcov + bcov.T), gamma=float(theta[prob.ig]),
                                nu=nu.mean)
    fit = Fit(design.systems, ("all",), "laplace", post, beta_draws, normal_summary(theta, cov, prob.ig), nu,
              Summary(math.exp(log_sigma), nan, nan, nan), None, None, None, None, None,
              design.n_judgments, 0, Diagnostics(iterations=iters, converged=ok, warnings=warnings), prior, seed,
              clustering=clustering)
    coef = tuple(normal_summary(theta, cov, m + j) for j in range(f))
    return StyleFit(fit, design.features, coef, design.scale, theta_draws[:, m: m + f], coef_sd)


__all__ = ["StyleProblem", "fit_style_laplace", "style_clustering", "style_mode", "style_robust"]
