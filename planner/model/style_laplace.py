"""Laplace engine of the style-controlled model (imported lazily by :func:`planner.model.style.fit_style`).

The raw model's Newton problem (:class:`planner.model.laplace.Problem`) with the style columns
added to its design matrix: parameters ``(beta, coef, gamma_pos, log_nu)``, sigma fixed or at its
type-II MAP as in the raw model, the Gaussian at the mode, draws seeded by ``seed``. The model is
written out in :mod:`planner.model.style`; the NUTS engine is :mod:`planner.model.style_nuts`.
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
from planner.model.style import StyleDesign, StyleFit
from planner.model.types import Diagnostics, Fit, Prior, Summary


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


def fit_style_laplace(design: StyleDesign, prior: Prior, coef_sd: float, seed: int, draws: int,
                      sigma: float | None) -> StyleFit:
    """The Laplace fit of checked inputs (see :func:`planner.model.style.fit_style`, which checks them)."""
    prob = StyleProblem(design, prior, coef_sd)
    m, f = prob.m, prob.f
    state = {"theta": prob.mu.copy(), "iters": 0, "ok": True}

    def inner(log_sigma: float):
        prec = prob.precision(math.exp(log_sigma))
        theta, fval, c, it, ok = newton(prob, prec, state["theta"])
        state.update(theta=theta, iters=state["iters"] + it, ok=state["ok"] and ok)
        lml = laplace_log_marginal(prob, prec, fval, c)
        return -(lml + half_normal_log_scale(log_sigma, prior.sigma_scale)), theta, c

    log_sigma = type2_log_sigma(lambda s: inner(s)[0]) if sigma is None else math.log(sigma)
    _, theta, c = inner(log_sigma)
    cov, theta_draws = gaussian_at_mode(theta, c, seed, draws)
    proj = np.eye(m) - 1.0 / m
    mean = proj @ theta[:m]
    bcov = proj @ cov[:m, :m] @ proj.T
    beta_draws = theta_draws[:, :m] @ proj.T

    nu = lognormal_summary(theta, cov, prob.il)
    nan = float("nan")
    warnings = () if state["ok"] else (
        "The Laplace optimiser did not converge for the style-controlled model; use --engine nuts.",)
    post = bt.GaussianPosterior(design.systems, mean, 0.5 * (bcov + bcov.T), gamma=float(theta[prob.ig]),
                                nu=nu.mean)
    fit = Fit(design.systems, ("all",), "laplace", post, beta_draws, normal_summary(theta, cov, prob.ig), nu,
              Summary(math.exp(log_sigma), nan, nan, nan), None, None, None, None, None,
              design.n_judgments, 0, Diagnostics(iterations=int(state["iters"]), converged=bool(state["ok"]),
                                                 warnings=warnings), prior, seed)
    coef = tuple(normal_summary(theta, cov, m + j) for j in range(f))
    return StyleFit(fit, design.features, coef, design.scale, theta_draws[:, m: m + f], coef_sd)


__all__ = ["StyleProblem", "fit_style_laplace"]
