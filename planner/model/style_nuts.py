"""NUTS engine of the style-controlled model (pymc; imported lazily by :func:`planner.model.style.fit_style`).

The same likelihood as :mod:`planner.model.style` — Davidson's three outcomes with
``delta = beta[a] - beta[b] + gamma_pos * p + x @ coef`` — over the grouped
design rows, each a Multinomial over (a wins, b wins, tie). Strengths have a
fixed prior sd (:data:`planner.model.style.STRENGTH_SD`), so there is no funnel; sampling and diagnostics are those of
:mod:`planner.model.nuts`. With clusters in the design the draws are convolved with the variance the
independent-judgment model misses, as the raw model's NUTS draws are (:func:`planner.model.robust.inflate_draws`
with the Laplace covariances at the mode, :mod:`planner.model.style_laplace`).
"""

from __future__ import annotations

import warnings

import numpy as np

from planner.model import bt


def build_style_model(design, prior, coef_sd: float, sigma: float):
    """The pymc model of a :class:`planner.model.style.StyleDesign` (pymc imported here)."""
    import pymc as pm
    import pytensor.tensor as pt

    obs = np.stack([design.a_wins, design.b_wins, design.ties], axis=1)
    coords = {"system": list(design.systems), "feature": list(design.features),
              "row": np.arange(obs.shape[0]), "outcome": ["A", "B", "tie"]}
    with pm.Model(coords=coords) as model:
        beta = pm.ZeroSumNormal("beta", sigma=sigma, dims="system")
        coef = pm.Normal("coef", mu=0.0, sigma=coef_sd, dims="feature")
        gamma = pm.Normal("gamma", mu=prior.gamma_mean, sigma=prior.gamma_sd)
        log_nu = pm.Normal("log_nu", mu=prior.log_nu_mean, sigma=prior.log_nu_sd)
        pm.Deterministic("nu", pt.exp(log_nu))
        delta = beta[design.a] - beta[design.b] + gamma * design.position + pt.dot(design.x, coef)
        half = delta / 2.0
        logits = pt.stack([half, -half, pt.ones_like(half) * log_nu], axis=1)
        pm.Multinomial("y", n=obs.sum(axis=1), p=pt.special.softmax(logits, axis=1), observed=obs,
                       dims=("row", "outcome"))
    return model


def fit_style_nuts(design, *, prior, coef_sd: float, sigma: float, seed: int, draws: int, tune: int, chains: int,
                   cores: int | None, progressbar: bool):
    """Sample the style-controlled model; see :func:`planner.model.style.fit_style`."""
    from planner.model.nuts import diagnose, draw_summary, flat_draws, sample_model
    from planner.model.style import StyleFit
    from planner.model.types import Fit, Summary

    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".*could not link to a BLAS.*")
        idata = sample_model(build_style_model(design, prior, coef_sd, sigma), seed, draws, tune, chains, cores,
                             progressbar)
    diag = diagnose(idata, ["beta", "coef", "gamma", "log_nu"], chains)
    beta_draws, coef_draws = flat_draws(idata, "beta"), flat_draws(idata, "coef")
    gamma_draws, log_nu_draws = flat_draws(idata, "gamma"), flat_draws(idata, "log_nu")
    clustering = None
    if design.clusters is not None:
        clustering, eps = _cluster_noise(design, prior, coef_sd, sigma, seed, beta_draws.shape[0])
        m, f = len(design.systems), len(design.features)
        beta_draws, coef_draws = beta_draws + eps[:, :m], coef_draws + eps[:, m: m + f]
        gamma_draws, log_nu_draws = gamma_draws + eps[:, m + f], log_nu_draws + eps[:, m + f + 1]
    beta_draws = beta_draws - beta_draws.mean(axis=1, keepdims=True)
    mean = beta_draws.mean(axis=0)
    cov = np.atleast_2d(np.cov(beta_draws, rowvar=False))
    gamma = draw_summary(gamma_draws)
    nu = draw_summary(np.exp(log_nu_draws) if clustering is not None else flat_draws(idata, "nu"))
    post = bt.GaussianPosterior(design.systems, mean, cov, gamma=gamma.mean, nu=nu.mean)
    nan = float("nan")
    fit = Fit(design.systems, ("all",), "nuts", post, beta_draws, gamma, nu, Summary(sigma, nan, nan, nan),
              None, None, None, None, None, design.n_judgments, 0, diag, prior, seed, idata=idata,
              clustering=clustering)
    coef = tuple(draw_summary(coef_draws[:, j]) for j in range(coef_draws.shape[1]))
    return StyleFit(fit, design.features, coef, design.scale, coef_draws, coef_sd)


def _cluster_noise(design, prior, coef_sd: float, sigma: float, seed: int, n_draws: int):
    """``(Clustering, eps)``: the Laplace robust and model covariances at the mode, and ``n_draws`` draws
    (S, P) of N(0, C_robust - C_model) over ``(beta, coef, gamma, log_nu)``."""
    from planner.model.robust import inflate_draws
    from planner.model.style_laplace import style_clustering, style_mode, style_robust

    prob, theta, prec, _, _, _, _ = style_mode(design, prior, coef_sd, sigma)
    rc = style_robust(prob, theta, prec, design.clusters)
    eps = inflate_draws(np.zeros((n_draws, prob.p)), rc.robust - rc.model, seed)
    return style_clustering(prob, design.clusters.by, rc), eps
