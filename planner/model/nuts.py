"""NUTS engine of the Bradley–Terry–Davidson model (pymc).

Call through :func:`planner.model.fit` with ``engine="nuts"``; this module is
imported lazily and imports pymc/arviz/pytensor only inside its functions.

The pymc model is the one written out in :mod:`planner.model`. The strengths
are centred (``beta ~ ZeroSumNormal(sigma)``) when the data dominate their
prior and non-centred (``beta = sigma * beta_raw``) otherwise, see
:func:`choose_centred`. By stratum, :func:`choose_centred_by_stratum` applies the same idea to
the hierarchy: a stratum whose own data dominate its deviation prior has its strengths sampled
directly (``beta_stratum[k] - beta ~ ZeroSumNormal(tau)``), a thin one as
``beta + tau * z[k]``; beta is centred only when the strata pin it. Each aggregated cell is a
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
from planner.model.laplace import clustering_summary, fit_laplace, robust_at_mode, strength_maps, weights_dict
from planner.model.robust import inflate_draws
from planner.model.types import Diagnostics, Fit, Prior, Summary
from planner.stats.clusters import ClusterCells

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


def choose_centred_by_stratum(counts: Counts, prior: Prior) -> tuple[bool, tuple[bool, ...]]:
    """Parameterisation of a by-stratum fit: (centre beta?, centre each stratum's strengths?).

    :func:`choose_centred`'s rule (centre what the data dominate) applied to the hierarchy, from the
    by-stratum Laplace fit (milliseconds; sigma-hat, tau-hat and each stratum strength's sd):

    * stratum k is centred (``beta_stratum[k]`` sampled directly) when all its strengths' posterior
      sds are below tau-hat / 2, i.e. its own data cut the prior variance of its deviations at least
      fourfold; thin strata, or a tau-hat near 0 (strata that agree), stay non-centred;
    * beta, whose only data in this model are the K stratum strengths (conditional sd about
      tau / sqrt(K)), is centred when tau-hat / sqrt(K) < sigma-hat / 4. The threshold is stricter
      than the pooled sigma-hat / 2 because sigma rests on only M - 1 strengths and its long left
      tail makes a funnel: measured (bench/README.md) ratio 0.48 (3 strata) diverged centred,
      0.20 (Vicuna80, 9 strata) sampled best centred.
    """
    k = len(counts.strata)
    if len(counts.systems) < 2 or k < 2:
        return False, (False,) * k
    lap = fit_laplace(counts, tuple(counts.strata), True, prior, np.full(k, 1.0 / k), 0, 1)
    if lap.tau is None or lap.sigma is None or lap.stratum_sd is None:
        raise ValueError("a per-stratum Laplace fit reports tau, sigma and the strata's sds")
    tau, sigma = lap.tau.mean, lap.sigma.mean
    return bool(tau / np.sqrt(k) < sigma / 4), tuple(bool(v) for v in lap.stratum_sd.max(axis=1) < tau / 2)


def build_model(counts: Counts, strata: tuple[str, ...], by_stratum: bool, prior: Prior,
                centred: bool = True, stratum_centred: tuple[bool, ...] = ()):
    """The pymc model over the usable cells of ``counts`` (pymc imported here).

    ``centred`` chooses ``beta ~ ZeroSumNormal(sigma)`` (True) or
    ``beta = sigma * beta_raw`` with ``beta_raw ~ ZeroSumNormal(1)`` (False).
    ``stratum_centred`` (``by_stratum`` only; one flag per stratum, missing = False) samples
    stratum k's strengths directly with ``beta_stratum[k] - beta ~ ZeroSumNormal(tau)`` (True)
    or as ``beta_stratum[k] = beta + tau * z[k]`` with ``z[k] ~ ZeroSumNormal(1)`` (False):
    the same density either way.
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
            beta_k = _stratum_strengths(pm, beta, tau, strata, stratum_centred)
            delta = beta_k[st, a] - beta_k[st, b] + gamma
        else:
            delta = beta[a] - beta[b] + gamma
        if obs.shape[0]:
            half = delta / 2.0
            logits = pt.stack([half, -half, pt.ones_like(half) * log_nu], axis=1)
            p = pt.special.softmax(logits, axis=1)
            pm.Multinomial("y", n=obs.sum(axis=1), p=p, observed=obs, dims=("cell", "outcome"))
    return model


def _stratum_strengths(pm, beta, tau, strata, centred_flags):
    """``beta_stratum`` (stratum x system): centred strata sampled directly, the rest as beta + tau * z.

    Centred: ``beta_stratum_c`` is flat on the zero-sum subspace and a potential adds the
    ``ZeroSumNormal(tau)`` log-density of ``beta_stratum_c - beta`` (the prior of ``tau * z``
    translated, so the model is the same); non-centred: ``z ~ ZeroSumNormal(1)``.
    """
    import pytensor.tensor as pt
    from pymc.distributions.transforms import ZeroSumTransform

    flags = np.array([bool(f) for f in centred_flags] + [False] * (len(strata) - len(centred_flags)))
    parts, order = [], []
    for on, name in ((True, "stratum_c"), (False, "stratum_n")):
        idx = np.flatnonzero(flags == on)
        if not idx.size:
            continue
        if idx.size == len(strata):
            name = "stratum"
        else:
            pm.modelcontext(None).add_coord(name, [strata[i] for i in idx])
        if on:
            part = pm.Flat("beta_stratum_c", dims=(name, "system"), transform=ZeroSumTransform([-1]))
            dev = pm.ZeroSumNormal.dist(sigma=tau, n_zerosum_axes=1, shape=(idx.size, beta.shape[0]))
            pm.Potential("stratum_deviations", pm.logp(dev, part - beta[None, :]))
        else:
            z = pm.ZeroSumNormal("z", sigma=1.0, dims=(name, "system"), n_zerosum_axes=1)
            part = beta[None, :] + tau * z
        parts.append(part)
        order.extend(idx)
    joined = parts[0] if len(parts) == 1 else pt.concatenate(parts, axis=0)[np.argsort(order)]
    return pm.Deterministic("beta_stratum", joined, dims=("stratum", "system"))


def draw_summary(x: np.ndarray) -> Summary:
    x = np.asarray(x, float).ravel()
    lo, hi = np.quantile(x, [0.025, 0.975])
    return Summary(float(x.mean()), float(x.std(ddof=1)), float(lo), float(hi))


def flat_draws(idata, name: str) -> np.ndarray:
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
    if by_stratum:
        centred, stratum_centred = choose_centred_by_stratum(counts, prior)
    else:
        centred, stratum_centred = choose_centred(counts, prior), ()
    model = build_model(counts, strata, by_stratum, prior, centred=centred, stratum_centred=stratum_centred)
    return sample_model(model, seed, draws, tune, chains, cores, progressbar)


#: draws between two calls of a progress callback (every draw would be thousands of calls)
PROGRESS_EVERY = 50


def _counter(report, total: int):
    """A ``pm.sample`` callback calling ``report(done, total)`` every :data:`PROGRESS_EVERY` draws."""
    seen = [0]

    def callback(trace=None, draw=None) -> None:
        seen[0] += 1
        if seen[0] % PROGRESS_EVERY == 0 or seen[0] == total:
            report(seen[0], total)

    return callback


def sample_model(model, seed, draws, tune, chains, cores, progressbar):
    """``pm.sample`` on a built model with the project's settings; progress (if any) on stderr.

    ``progressbar``: True for pymc's own bar; a callable ``report(done, total)`` for a count of
    the draws of all chains, tuning included (a caller's progress line off a terminal); False
    for nothing.
    """
    import pymc as pm

    callback = None
    if callable(progressbar):
        callback, progressbar = _counter(progressbar, chains * (tune + draws)), False
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
                             target_accept=TARGET_ACCEPT, progressbar=progressbar, callback=callback,
                             compute_convergence_checks=False, return_inferencedata=True)
    finally:
        for lg, lv in zip(loggers, levels):
            lg.setLevel(lv)


def fit_nuts(counts: Counts, strata: tuple[str, ...], *, by_stratum: bool, prior: Prior,
             weights, seed: int, draws: int, tune: int, chains: int, cores: int | None,
             progressbar: bool, clusters: ClusterCells | None = None) -> Fit:
    """Sample the model with NUTS; see :func:`planner.model.fit` for the arguments.

    With ``clusters`` the draws are convolved with the variance the independent-judgment model
    misses (:func:`_cluster_noise`)."""
    with warnings.catch_warnings():
        # pip-installed pytensor warns that it found no BLAS: a speed note, not about the result
        warnings.filterwarnings("ignore", message=".*could not link to a BLAS.*")
        idata = _sample(counts, strata, by_stratum, prior, seed, draws, tune, chains, cores,
                        progressbar)

    var_names = ["beta", "gamma", "log_nu", "sigma"] + (["tau", "beta_stratum"] if by_stratum else [])
    diag = diagnose(idata, var_names, chains)
    systems = tuple(counts.systems)
    stratum_mean = stratum_sd = stratum_draws = None
    gamma_draws, log_nu_draws = flat_draws(idata, "gamma"), flat_draws(idata, "log_nu")
    if by_stratum:
        stratum_draws = flat_draws(idata, "beta_stratum")
        beta_draws = np.einsum("k,skm->sm", weights, stratum_draws)
    else:
        beta_draws = flat_draws(idata, "beta")
    clustering = None
    if clusters is not None:
        clustering, noise = _cluster_noise(counts, by_stratum, prior, weights, clusters, seed, beta_draws.shape[0])
        beta_draws = beta_draws + noise["beta"]
        gamma_draws, log_nu_draws = gamma_draws + noise["gamma"], log_nu_draws + noise["log_nu"]
        if by_stratum:
            stratum_draws = stratum_draws + noise["stratum"]
    if by_stratum:
        stratum_mean = stratum_draws.mean(axis=0)
        stratum_sd = stratum_draws.std(axis=0, ddof=1)
    beta_draws = beta_draws - beta_draws.mean(axis=1, keepdims=True)  # exact sum-to-zero
    mean = beta_draws.mean(axis=0)
    cov = np.atleast_2d(np.cov(beta_draws, rowvar=False))
    gamma = draw_summary(gamma_draws)
    nu = draw_summary(np.exp(log_nu_draws) if clusters is not None else flat_draws(idata, "nu"))
    g_c = gamma_draws.reshape(-1) - gamma_draws.mean()
    post = bt.GaussianPosterior(systems, mean, cov, gamma=gamma.mean, nu=nu.mean,
                                gamma_var=float(g_c @ g_c / max(g_c.size - 1, 1)),
                                gamma_cov=(beta_draws - mean).T @ g_c / max(g_c.size - 1, 1))
    return Fit(systems, strata, "nuts", post, beta_draws, gamma, nu, draw_summary(flat_draws(idata, "sigma")),
               draw_summary(flat_draws(idata, "tau")) if by_stratum else None,
               stratum_mean, stratum_sd, stratum_draws, weights_dict(strata, weights) if by_stratum else None,
               int(counts.usable.sum()), int(counts.invalid.sum()), diag, prior, seed, idata=idata,
               clustering=clustering)


def _cluster_noise(counts, by_stratum, prior, weights, clusters, seed, n_draws):
    """``(Clustering, noise)``: the Laplace robust and model covariances at the mode, and per reported
    quantity the draws of N(0, C_robust - C_model) (:func:`planner.model.robust.inflate_draws`) mapped like
    the strengths: ``beta`` (S, M), ``stratum`` (S, K, M) with ``by_stratum``, ``gamma`` and ``log_nu`` (S,).

    A draw of a sampled posterior plus independent noise of the missing variance has, for a Gaussian
    posterior, exactly the robust covariance; the sampled shape is kept where the data are thin."""
    prob, _, _, rc, _, _ = robust_at_mode(counts, by_stratum, prior, clusters)
    eps = inflate_draws(np.zeros((n_draws, prob.p)), rc.robust - rc.model, seed)
    pop, maps_k = strength_maps(prob, weights)
    noise = {"beta": eps @ pop.T, "gamma": eps[:, prob.ig], "log_nu": eps[:, prob.il]}
    if maps_k is not None:
        noise["stratum"] = np.stack([eps @ a_k.T for a_k in maps_k], axis=1)
    clustering = clustering_summary(prob, weights, clusters.by, rc)
    return clustering, noise


__all__ = ["build_model", "choose_centred", "choose_centred_by_stratum", "diagnose", "fit_nuts", "sample_model"]
