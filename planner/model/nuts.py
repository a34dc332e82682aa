"""NUTS engine of the Bradley–Terry–Davidson model (pymc).

Call through :func:`planner.model.fit` with ``engine="nuts"``; this module is
imported lazily and imports pymc/arviz/pytensor only inside its functions.

The pymc model is the one written out in :mod:`planner.model`. The strengths
are centred (``beta ~ ZeroSumNormal(sigma)``) when the data dominate their
prior and non-centred (``beta = sigma * beta_raw``) otherwise, see
:func:`choose_centred`; stratum deviations are always non-centred. Each aggregated cell is a
Multinomial over (a wins, b wins, tie) with probabilities
``softmax(delta/2, -delta/2, log_nu)`` — exactly Davidson's probabilities.

Sampling: NUTS (Hoffman & Gelman 2014) with ``target_accept = 0.9``. After
sampling we check the rank-normalised split r-hat and bulk/tail ESS
(Vehtari et al. 2021) with ``az.summary(kind="diagnostics")`` and count
divergent transitions; each problem becomes a plain-English warning with
advice in :attr:`planner.model.Diagnostics.warnings`.
"""

from __future__ import annotations

import contextlib
import logging
import sys
import warnings

import numpy as np

from planner.counts import Counts
from planner.model import bt
from planner.model.laplace import fit_laplace, weights_dict
from planner.model.types import Diagnostics, Fit, Prior, Summary

R_HAT_MAX = 1.01      # Vehtari et al. (2021): use the sample only if r-hat < 1.01
ESS_PER_CHAIN = 100   # Vehtari et al. (2021): bulk and tail ESS of at least 100 per chain
TARGET_ACCEPT = 0.9


def choose_centred(counts: Counts, prior: Prior) -> bool:
    """Centre the strengths when the data dominate their prior, else use the non-centred form.

    Rule (after Betancourt & Girolami 2015): fit the Laplace engine (milliseconds) and centre
    when every strength's posterior sd is below half the fitted strength scale sigma, i.e.
    the data cut the prior variance at least fourfold. Centred sampling then avoids the
    curved sigma-beta_raw ridge of the non-centred form; with thin data the non-centred form
    avoids the funnel of the centred one.
    """
    # what fit(counts, prior=prior, draws=1) computes: the pooled Laplace fit, seed 0, one draw
    pooled = counts.pooled() if len(counts.strata) > 1 else counts
    lap = fit_laplace(pooled, tuple(counts.strata), False, prior, None, 0, 1)
    if len(counts.systems) < 2:
        return False
    return bool(np.max(lap.sd) < 0.5 * lap.sigma.mean)


def build_model(counts: Counts, strata: tuple[str, ...], by_stratum: bool, prior: Prior,
                centred: bool = True):
    """The pymc model over the usable cells of ``counts`` (pymc imported here).

    ``centred`` chooses ``beta ~ ZeroSumNormal(sigma)`` (True) or
    ``beta = sigma * beta_raw`` with ``beta_raw ~ ZeroSumNormal(1)`` (False).
    """
    import pymc as pm
    import pytensor.tensor as pt

    keep = counts.usable > 0
    a, b, st = counts.a[keep], counts.b[keep], counts.stratum[keep]
    obs = np.stack([counts.a_wins[keep], counts.b_wins[keep], counts.ties[keep]], axis=1)
    coords = {"system": list(counts.systems), "cell": np.arange(int(keep.sum())),
              "outcome": ["A", "B", "tie"]}
    if by_stratum:
        coords["stratum"] = list(strata)
    with pm.Model(coords=coords) as model:
        sigma = pm.HalfNormal("sigma", sigma=prior.sigma_scale)
        if centred:
            beta = pm.ZeroSumNormal("beta", sigma=sigma, dims="system")
        else:
            beta_raw = pm.ZeroSumNormal("beta_raw", sigma=1.0, dims="system")
            beta = pm.Deterministic("beta", sigma * beta_raw, dims="system")
        gamma = pm.Normal("gamma", mu=prior.gamma_mean, sigma=prior.gamma_sd)
        log_nu = pm.Normal("log_nu", mu=prior.log_nu_mean, sigma=prior.log_nu_sd)
        pm.Deterministic("nu", pt.exp(log_nu))
        if by_stratum:
            tau = pm.HalfNormal("tau", sigma=prior.tau_scale)
            z = pm.ZeroSumNormal("z", sigma=1.0, dims=("stratum", "system"), n_zerosum_axes=1)
            beta_k = pm.Deterministic("beta_stratum", beta[None, :] + tau * z,
                                      dims=("stratum", "system"))
            delta = beta_k[st, a] - beta_k[st, b] + gamma
        else:
            delta = beta[a] - beta[b] + gamma
        if obs.shape[0]:
            half = delta / 2.0
            logits = pt.stack([half, -half, pt.ones_like(half) * log_nu], axis=1)
            p = pt.special.softmax(logits, axis=1)
            pm.Multinomial("y", n=obs.sum(axis=1), p=p, observed=obs, dims=("cell", "outcome"))
    return model


def _summary(x: np.ndarray) -> Summary:
    x = np.asarray(x, float).ravel()
    lo, hi = np.quantile(x, [0.025, 0.975])
    return Summary(float(x.mean()), float(x.std(ddof=1)), float(lo), float(hi))


def _flat(idata, name: str) -> np.ndarray:
    """Posterior draws of ``name`` with chains concatenated: shape (chains*draws, ...)."""
    v = idata.posterior[name].values
    return v.reshape((-1,) + v.shape[2:])


def diagnose(idata, var_names, chains: int) -> Diagnostics:
    """r-hat, ESS and divergences of a sampled posterior, with plain-English warnings."""
    import arviz as az

    summ = az.summary(idata, var_names=var_names, kind="diagnostics", round_to="none")
    r_vals = summ["r_hat"].values if "r_hat" in summ else np.array([np.nan])
    r_hat = float(np.nanmax(r_vals)) if np.any(np.isfinite(r_vals)) else float("nan")
    ess_b = float(np.nanmin(summ["ess_bulk"].values))
    ess_t = float(np.nanmin(summ["ess_tail"].values))
    div = int(idata.sample_stats["diverging"].values.sum())
    warn = []
    if chains > 1 and not r_hat < R_HAT_MAX:
        warn.append(f"r-hat reaches {r_hat:.3f} (should be below {R_HAT_MAX}): the chains disagree, "
                    "so the intervals are not trustworthy yet. Run longer (raise --tune and --draws) "
                    "and compare with --engine laplace.")
    if chains == 1:
        warn.append("Only one chain was run, so r-hat cannot check convergence; use --chains 2 or more.")
    need = ESS_PER_CHAIN * chains
    if not min(ess_b, ess_t) >= need:
        warn.append(f"The effective sample size is only {min(ess_b, ess_t):.0f} (want at least {need}): "
                    "posterior means and interval ends are noisy. Raise --draws.")
    if div:
        warn.append(f"{div} divergent transitions: the sampler could not explore part of the posterior "
                    "and the results may be biased. Raise --tune; if they persist, the data may barely "
                    "inform some systems - compare with --engine laplace.")
    return Diagnostics(max_r_hat=r_hat, min_ess_bulk=ess_b, min_ess_tail=ess_t, divergences=div,
                       iterations=0, converged=not warn, warnings=tuple(warn))


def _sample(counts, strata, by_stratum, prior, seed, draws, tune, chains, cores, progressbar):
    """Build the model and run ``pm.sample``; progress (if any) on stderr."""
    model = build_model(counts, strata, by_stratum, prior, centred=choose_centred(counts, prior))
    return sample_model(model, seed, draws, tune, chains, cores, progressbar)


def sample_model(model, seed, draws, tune, chains, cores, progressbar):
    """``pm.sample`` on a built model with the project's settings; progress (if any) on stderr."""
    import pymc as pm

    cores = min(chains, 2) if cores is None else cores
    loggers = [logging.getLogger(n) for n in ("pymc", "pymc.sampling.mcmc", "pytensor")]
    levels = [lg.level for lg in loggers]
    if not progressbar:
        for lg in loggers:
            lg.setLevel(logging.ERROR)
    try:
        # progress bars (rich) write to sys.stdout at draw time: send them to stderr
        with contextlib.redirect_stdout(sys.stderr), model:
            return pm.sample(draws=draws, tune=tune, chains=chains, cores=cores, random_seed=seed,
                             target_accept=TARGET_ACCEPT, progressbar=progressbar,
                             compute_convergence_checks=False, return_inferencedata=True)
    finally:
        for lg, lv in zip(loggers, levels):
            lg.setLevel(lv)


def fit_nuts(counts: Counts, strata: tuple[str, ...], *, by_stratum: bool, prior: Prior,
             weights, seed: int, draws: int, tune: int, chains: int, cores: int | None,
             progressbar: bool) -> Fit:
    """Sample the model with NUTS; see :func:`planner.model.fit` for the arguments."""
    with warnings.catch_warnings():
        # pip-installed pytensor warns that it found no BLAS: a speed note, not about the result
        warnings.filterwarnings("ignore", message=".*could not link to a BLAS.*")
        idata = _sample(counts, strata, by_stratum, prior, seed, draws, tune, chains, cores,
                        progressbar)

    var_names = ["beta", "gamma", "log_nu", "sigma"] + (["tau", "beta_stratum"] if by_stratum else [])
    diag = diagnose(idata, var_names, chains)
    systems = tuple(counts.systems)
    stratum_mean = stratum_sd = stratum_draws = None
    if by_stratum:
        stratum_draws = _flat(idata, "beta_stratum")
        stratum_mean = stratum_draws.mean(axis=0)
        stratum_sd = stratum_draws.std(axis=0, ddof=1)
        beta_draws = np.einsum("k,skm->sm", weights, stratum_draws)
    else:
        beta_draws = _flat(idata, "beta")
    beta_draws = beta_draws - beta_draws.mean(axis=1, keepdims=True)  # exact sum-to-zero
    mean = beta_draws.mean(axis=0)
    cov = np.atleast_2d(np.cov(beta_draws, rowvar=False))
    gamma = _summary(_flat(idata, "gamma"))
    nu = _summary(_flat(idata, "nu"))
    post = bt.GaussianPosterior(systems, mean, cov, gamma=gamma.mean, nu=nu.mean)
    return Fit(systems, strata, "nuts", post, beta_draws, gamma, nu, _summary(_flat(idata, "sigma")),
               _summary(_flat(idata, "tau")) if by_stratum else None,
               stratum_mean, stratum_sd, stratum_draws, weights_dict(strata, weights) if by_stratum else None,
               int(counts.usable.sum()), int(counts.invalid.sum()), diag, prior, seed, idata=idata)


__all__ = ["build_model", "diagnose", "fit_nuts", "sample_model"]
