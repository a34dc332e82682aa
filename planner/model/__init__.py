"""The Bayesian Bradley–Terry–Davidson model with a position effect.

One judgment compares system ``a`` shown first (left) with ``b`` shown second
(right). With strengths ``beta`` (logit scale, sum to zero), a left-position
logit shift ``gamma`` and the Davidson (1970) tie parameter ``nu = exp(log_nu)``
the outcome probabilities are those of :func:`planner.model.bt.outcome_probs` with
``delta = beta[a] - beta[b] + gamma``.

Priors (see docs/methods.md, "The Bradley–Terry–Davidson model")::

    sigma  ~ HalfNormal(1.5)                 scale of the strengths
    beta   ~ ZeroSumNormal(sigma)            iid N(0, sigma^2) projected on sum(beta) = 0
    gamma  ~ Normal(0, 1)                    left-position logit shift
    log_nu ~ Normal(-1, 1.5)                 Davidson tie parameter nu = exp(log_nu)

Optional per-stratum effects with partial pooling (``by_stratum=True``)::

    tau              ~ HalfNormal(0.5)
    z[k, :]          ~ ZeroSumNormal(1)      one sum-to-zero vector per stratum k
    beta_stratum[k]  = beta + tau * z[k]

and the population strengths are ``sum_k w_k beta_stratum[k]`` with stratum
weights ``w`` (normalised to sum to one).

The likelihood is over aggregated cells (pair x position x stratum): a cell
with ``n_A`` a-wins, ``n_B`` b-wins and ``n_T`` ties contributes
``n_A log P(A) + n_B log P(B) + n_T log P(tie)`` (a Multinomial up to a
constant), so the cost of a fit does not grow with the number of judgments.
Invalid judgments are excluded from the likelihood (they are counted in
:attr:`Fit.n_invalid`).

Two engines:

* ``"laplace"``: Newton's method on the log posterior of
  ``(beta, [stratum deviations], gamma, log_nu)`` with analytic gradient and
  Hessian; the hierarchical scales ``sigma`` (and ``tau``) are fixed at the mode
  of their Laplace-approximated marginal posterior (type-II MAP, in log scale);
  the posterior is the Gaussian with the inverse negative Hessian as
  covariance, projected on the sum-to-zero space.
* ``"nuts"``: the same model in pymc, sampled with NUTS (Hoffman & Gelman
  2014); r-hat (Vehtari et al. 2021), ESS and divergences are checked and turned
  into plain-English warnings.

References: R. A. Bradley & M. E. Terry (1952), Biometrika 39:324–345;
R. R. Davidson (1970), JASA 65:317–328; P. V. Rao & L. L. Kupper (1967),
JASA 62:194–204; M. D. Hoffman & A. Gelman (2014), JMLR 15:1593–1623;
A. Vehtari, A. Gelman, D. Simpson, B. Carpenter & P.-C. Bürkner (2021),
Bayesian Analysis 16:667–718.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from scipy import linalg, sparse

from planner.model import bt
from planner.counts import Counts
from planner.errors import UsageError
from planner.stats.optim import minimize_scalar_bounded, nelder_mead_bounded

ENGINES = ("laplace", "nuts")
Z95 = 1.959963984540054  # standard normal 97.5% quantile


# ---------------------------------------------------------------- results
@dataclass(frozen=True)
class Prior:
    """Prior hyper-parameters (all on the logit scale).

    Attributes
    ----------
    sigma_scale : float
        Scale of the HalfNormal prior on ``sigma``, the standard deviation of
        the strengths. 1.5 logits puts about 95% prior mass on ``sigma < 2.9``
        (a strength spread up to ~ +-500 Elo points) and does not pull
        strengths of a few hundred Elo points towards zero.
    gamma_mean, gamma_sd : float
        Normal prior on the left-position logit shift (sd 1 logit: a first
        position win rate between 12% and 88% is a priori plausible).
    log_nu_mean, log_nu_sd : float
        Normal prior on ``log nu``. ``nu = e^-1 = 0.37`` gives a 16% tie rate
        at equal strengths; +-2 sd spans tie rates from 1.8% to 80%.
    tau_scale : float
        Scale of the HalfNormal prior on ``tau``, the stratum deviation sd
        (only with ``by_stratum``): strata usually disagree by a few tenths of
        a logit, rarely by more than one.
    """

    sigma_scale: float = 1.5
    gamma_mean: float = 0.0
    gamma_sd: float = 1.0
    log_nu_mean: float = -1.0
    log_nu_sd: float = 1.5
    tau_scale: float = 0.5

    def check(self) -> "Prior":
        for name in ("sigma_scale", "gamma_sd", "log_nu_sd", "tau_scale"):
            v = getattr(self, name)
            if not (isinstance(v, (int, float)) and math.isfinite(v) and v > 0):
                raise UsageError(f"prior {name} ({v!r}) must be a finite number > 0")
        for name in ("gamma_mean", "log_nu_mean"):
            v = getattr(self, name)
            if not (isinstance(v, (int, float)) and math.isfinite(v)):
                raise UsageError(f"prior {name} ({v!r}) must be a finite number")
        return self


@dataclass(frozen=True)
class Summary:
    """Posterior summary of one scalar: mean, sd and the 95% interval.

    ``lo``/``hi`` are the 2.5% and 97.5% posterior quantiles. ``nan`` where the
    engine does not provide the figure (the Laplace engine fixes hierarchical
    scales at their mode, so their ``sd``/``lo``/``hi`` are ``nan``).
    """

    mean: float
    sd: float
    lo: float
    hi: float


@dataclass(frozen=True)
class Diagnostics:
    """Sampler / optimiser diagnostics.

    Attributes
    ----------
    max_r_hat : float or None
        Largest rank-normalised split r-hat over all parameters (NUTS only).
    min_ess_bulk, min_ess_tail : float or None
        Smallest bulk / tail effective sample size (NUTS only).
    divergences : int
        Divergent transitions after tuning (NUTS only; 0 for Laplace).
    iterations : int
        Newton iterations (Laplace) summed over the hyper-parameter search.
    converged : bool
        Newton converged (Laplace); no warning-level problem (NUTS).
    warnings : tuple of str
        Plain-English problems, each with advice. Empty when all is well.
    """

    max_r_hat: float | None = None
    min_ess_bulk: float | None = None
    min_ess_tail: float | None = None
    divergences: int = 0
    iterations: int = 0
    converged: bool = True
    warnings: tuple[str, ...] = ()


@dataclass(frozen=True, eq=False)
class Fit:
    """A fitted Bradley–Terry–Davidson posterior.

    Attributes
    ----------
    systems, strata : tuple of str
    engine : str
        ``"laplace"`` or ``"nuts"``.
    posterior : planner.model.bt.GaussianPosterior
        Strengths (logit, sum to zero): mean and covariance. Without
        ``by_stratum`` these are the pooled strengths; with ``by_stratum`` the
        population strengths ``sum_k w_k beta_stratum[k]``. ``gamma`` is the
        posterior mean of the position shift, ``nu`` the posterior mean of the
        tie parameter.
    beta_draws : ndarray (S, M)
        Posterior draws of the same strengths (NUTS: chains concatenated;
        Laplace: draws from the Gaussian with ``numpy.random.default_rng(seed)``).
    gamma, nu, sigma : Summary
        Left-position logit shift, Davidson tie parameter, strength scale.
    tau : Summary or None
        Stratum deviation scale (``by_stratum`` only).
    stratum_mean, stratum_sd : ndarray (K, M) or None
        Per-stratum strengths (``by_stratum`` only), rows follow ``strata``.
    stratum_draws : ndarray (S, K, M) or None
    stratum_weights : dict or None
        Normalised weights used for the population strengths.
    n_usable, n_invalid : int
        Judgments in the likelihood / excluded as invalid.
    diagnostics : Diagnostics
    prior : Prior
    seed : int
    idata : arviz.InferenceData or None
        NUTS only; not part of repr or comparisons. Save with :meth:`to_netcdf`.
    """

    systems: tuple[str, ...]
    strata: tuple[str, ...]
    engine: str
    posterior: bt.GaussianPosterior
    beta_draws: np.ndarray = field(repr=False)
    gamma: Summary
    nu: Summary
    sigma: Summary
    tau: Summary | None
    stratum_mean: np.ndarray | None
    stratum_sd: np.ndarray | None
    stratum_draws: np.ndarray | None = field(repr=False)
    stratum_weights: dict[str, float] | None
    n_usable: int
    n_invalid: int
    diagnostics: Diagnostics
    prior: Prior
    seed: int
    idata: Any = field(default=None, repr=False, compare=False)

    # ---------------------------------------------------------- helpers
    @property
    def mean(self) -> np.ndarray:
        """Posterior mean strengths (logit), same as ``posterior.mean``."""
        return self.posterior.mean

    @property
    def sd(self) -> np.ndarray:
        """Posterior sd of the strengths (logit)."""
        return self.posterior.sd

    def interval(self, level: float = 0.95) -> tuple[np.ndarray, np.ndarray]:
        """Equal-tailed credible interval of every strength (logit).

        Laplace: Gaussian quantiles; NUTS: quantiles of the draws.
        """
        if not 0 < level < 1:
            raise UsageError(f"level ({level:g}) must be in (0, 1)")
        q = (1 - level) / 2
        if self.engine == "laplace":
            from scipy.special import ndtri  # what norm.ppf computes, without importing scipy.stats

            z = ndtri(1 - q)
            return self.mean - z * self.sd, self.mean + z * self.sd
        lo, hi = np.quantile(self.beta_draws, [q, 1 - q], axis=0)
        return lo, hi

    def prob_best(self) -> np.ndarray:
        """Posterior probability that each system has the largest strength (from the draws)."""
        m = len(self.systems)
        if self.beta_draws.shape[0] == 0 or m == 0:
            return np.full(m, np.nan)
        best = np.argmax(self.beta_draws, axis=1)
        return np.bincount(best, minlength=m) / self.beta_draws.shape[0]

    def to_inference_data(self):
        """ArviZ InferenceData: the sampled posterior (NUTS) or the Laplace draws."""
        if self.idata is not None:
            return self.idata
        import arviz as az

        post = {"beta": self.beta_draws[None]}
        dims = {"beta": ["system"]}
        coords = {"system": list(self.systems)}
        if self.stratum_draws is not None:
            post["beta_stratum"] = self.stratum_draws[None]
            dims["beta_stratum"] = ["stratum", "system"]
            coords["stratum"] = list(self.strata)
        return az.from_dict(posterior=post, dims=dims, coords=coords,
                            attrs={"engine": self.engine, "seed": self.seed})

    def to_netcdf(self, path=None):
        """Write the posterior as ArviZ netcdf to ``path``; with no path return the bytes."""
        idata = self.to_inference_data()
        if path is not None:
            idata.to_netcdf(str(path))
            return str(path)
        import os
        import tempfile

        fd, tmp = tempfile.mkstemp(suffix=".nc")
        os.close(fd)
        try:
            idata.to_netcdf(tmp)
            with open(tmp, "rb") as fh:
                return fh.read()
        finally:
            os.unlink(tmp)

    def to_dict(self) -> dict:
        """JSON-ready summary (draws and idata left out)."""
        lo, hi = self.interval()
        out = {
            "engine": self.engine,
            "systems": list(self.systems),
            "strata": list(self.strata),
            "mean": self.mean, "sd": self.sd, "lo": lo, "hi": hi,
            "elo": bt.to_elo(self.mean),
            "prob_best": self.prob_best(),
            "gamma": self.gamma, "nu": self.nu, "sigma": self.sigma, "tau": self.tau,
            "stratum_mean": self.stratum_mean, "stratum_sd": self.stratum_sd,
            "stratum_weights": self.stratum_weights,
            "n_usable": self.n_usable, "n_invalid": self.n_invalid,
            "diagnostics": self.diagnostics, "prior": self.prior, "seed": self.seed,
        }
        return out


# ------------------------------------------------------------ the layout
class _Problem:
    """Cells, design and prior precision of one fit.

    Parameter vector ``theta = [beta (M), d (K*M) if by_stratum, gamma, log_nu]``;
    per cell ``delta = X @ theta`` where ``X`` has +1 at ``beta[a]``, -1 at
    ``beta[b]``, +1 at ``gamma`` (and +1/-1 at ``d[k, a]``/``d[k, b]``).
    """

    def __init__(self, counts: Counts, by_stratum: bool, prior: Prior):
        self.m = len(counts.systems)
        self.k = len(counts.strata) if by_stratum else 0
        self.by_stratum = by_stratum
        self.prior = prior
        keep = counts.usable > 0
        a, b, st = counts.a[keep], counts.b[keep], counts.stratum[keep]
        self.n_a = counts.a_wins[keep].astype(float)
        self.n_b = counts.b_wins[keep].astype(float)
        self.n_t = counts.ties[keep].astype(float)
        self.n = self.n_a + self.n_b + self.n_t
        m, k = self.m, self.k
        self.p = m + k * m + 2
        self.ig, self.il = self.p - 2, self.p - 1
        nc = a.size
        rows = [np.arange(nc)] * 3
        cols = [a, b, np.full(nc, self.ig)]
        vals = [np.ones(nc), -np.ones(nc), np.ones(nc)]
        if by_stratum:
            rows += [np.arange(nc)] * 2
            cols += [m + st * m + a, m + st * m + b]
            vals += [np.ones(nc), -np.ones(nc)]
        self.x = sparse.csr_matrix((np.concatenate(vals), (np.concatenate(rows), np.concatenate(cols))),
                                   shape=(nc, self.p))
        self.xt = self.x.T.tocsr()
        self.mu = np.zeros(self.p)
        self.mu[self.ig] = prior.gamma_mean
        self.mu[self.il] = prior.log_nu_mean

    def precision(self, sigma: float, tau: float | None) -> np.ndarray:
        prec = np.empty(self.p)
        prec[: self.m] = 1.0 / sigma**2
        if self.by_stratum:
            prec[self.m: self.m + self.k * self.m] = 1.0 / tau**2
        prec[self.ig] = 1.0 / self.prior.gamma_sd**2
        prec[self.il] = 1.0 / self.prior.log_nu_sd**2
        return prec

    def value(self, theta, prec) -> float:
        """Log posterior density of ``theta`` (with the Gaussian prior normalisers)."""
        u = 0.5 * (self.x @ theta)
        lam = theta[self.il]
        log_d = _logsumexp3(u, -u, lam)
        ll = np.dot(self.n_a - self.n_b, u) + self.n_t.sum() * lam - np.dot(self.n, log_d)
        r = theta - self.mu
        return float(ll - 0.5 * np.dot(prec, r * r) + 0.5 * np.sum(np.log(prec / (2 * np.pi))))

    def derivatives(self, theta, prec):
        """Log posterior, its gradient and its negative Hessian at ``theta``."""
        u = 0.5 * (self.x @ theta)
        lam = theta[self.il]
        log_d = _logsumexp3(u, -u, lam)
        pa, pb, pt = np.exp(u - log_d), np.exp(-u - log_d), np.exp(lam - log_d)
        ll = np.dot(self.n_a - self.n_b, u) + self.n_t.sum() * lam - np.dot(self.n, log_d)
        r = theta - self.mu
        f = ll - 0.5 * np.dot(prec, r * r) + 0.5 * np.sum(np.log(prec / (2 * np.pi)))
        diff = pa - pb
        g = 0.5 * (self.xt @ ((self.n_a - self.n_b) - self.n * diff))
        g[self.il] += np.sum(self.n_t - self.n * pt)
        g -= prec * r
        w_uu = self.n * ((pa + pb) - diff * diff)       # -d2l/du2
        w_ul = -self.n * diff * pt                       # -d2l/du dlam
        w_ll = np.sum(self.n * pt * (1.0 - pt))          # -d2l/dlam2
        h = 0.25 * self._weighted_gram(w_uu)
        cross = 0.5 * (self.xt @ w_ul)
        h[:, self.il] += cross
        h[self.il, :] += cross
        h[self.il, self.il] += w_ll
        h[np.diag_indices(self.p)] += prec
        return float(f), g, h

    def _weighted_gram(self, w: np.ndarray) -> np.ndarray:
        """``X.T @ diag(w) @ X`` as a dense array — the same floats as SciPy's sparse product.

        SciPy 1.17's CSR product ``(X.T @ diag(w)) @ X`` adds, for each entry (i, j), the terms
        ``(x_ci * w_c) * x_cj`` in decreasing cell order ``c`` (its first product lists each row's
        cells in reverse); ``np.bincount`` adds its weights in input order, so listing the terms
        cell by cell, downwards, reproduces every sum bit for bit (tests/test_optim.py compares
        with the sparse product; tests/test_golden.py pins the fits), without the sparse
        machinery's per-call overhead (about 1 ms, paid ~200 times per by-stratum fit).
        """
        layout = getattr(self, "_gram_layout", None)
        if layout is None or layout[0] is not self.x:
            x = self.x
            cell = np.repeat(np.arange(x.shape[0]), np.diff(x.indptr))
            order = np.lexsort((x.indices, cell))        # sorted within each row, cells ascending
            cell, col, val = cell[order], x.indices[order], x.data[order]
            start = np.searchsorted(cell, np.arange(x.shape[0]))
            nnz = np.diff(np.append(start, cell.size))
            # every (i, j) pair of one cell's nonzeros, cells in order
            ii, jj = [], []
            for r in np.unique(nnz):
                rows = np.flatnonzero(nnz == r)
                base = start[rows][:, None] + np.arange(r)[None, :]
                ii.append(np.repeat(base, r, axis=1).reshape(-1, r * r))
                jj.append(np.tile(base, (1, r)))
            left = np.concatenate([a.ravel() for a in ii]) if ii else np.zeros(0, int)
            right = np.concatenate([a.ravel() for a in jj]) if jj else np.zeros(0, int)
            by_cell = np.argsort(-cell[left], kind="stable")    # SciPy's sums run over cells downwards
            left, right = left[by_cell], right[by_cell]
            flat = col[left] * self.p + col[right]
            layout = (x, cell[left], val[left], val[right], flat)
            self._gram_layout = layout
        _, cells, vi, vj, flat = layout
        terms = (vi * w[cells]) * vj
        return np.bincount(flat, weights=terms, minlength=self.p * self.p).reshape(self.p, self.p)


def _logsumexp3(x, y, z):
    """Elementwise log(e^x + e^y + e^z) for arrays x, y and a scalar or array z."""
    mx = np.maximum(np.maximum(x, y), z)
    return mx + np.log(np.exp(x - mx) + np.exp(y - mx) + np.exp(z - mx))


def _newton(problem: _Problem, prec, theta, tol: float = 1e-10, max_iter: int = 100):
    """Maximise the (strictly concave) log posterior by damped Newton steps.

    Returns ``(theta, f, neg_hessian_cholesky, iterations, converged)``.
    """
    f, g, h = problem.derivatives(theta, prec)
    for it in range(1, max_iter + 1):
        c = linalg.cho_factor(h, lower=True, check_finite=False)
        step = linalg.cho_solve(c, g, check_finite=False)
        dec = float(g @ step)  # Newton decrement squared
        if dec < 2 * tol:
            return theta, f, c, it, True
        t = 1.0
        while True:
            f_new = problem.value(theta + t * step, prec)
            if f_new >= f + 1e-4 * t * dec or t < 1e-10:
                break
            t *= 0.5
        theta = theta + t * step
        f, g, h = problem.derivatives(theta, prec)
    c = linalg.cho_factor(h, lower=True, check_finite=False)
    return theta, f, c, max_iter, False


def _half_normal_log_scale(s: float, scale: float) -> float:
    """Log density of log(x) when x ~ HalfNormal(scale), at log(x) = s (Jacobian included)."""
    x = math.exp(s)
    return math.log(2.0) - 0.5 * math.log(2 * math.pi * scale * scale) - x * x / (2 * scale * scale) + s


LOG_SIGMA_BOUNDS = (math.log(1e-3), math.log(50.0))  # search range of log sigma (type-II MAP)


def type2_log_sigma(neg_log_marginal) -> float:
    """The log sigma minimising ``neg_log_marginal(log_sigma)`` over :data:`LOG_SIGMA_BOUNDS`.

    ``neg_log_marginal`` is minus the Laplace-approximated log marginal
    posterior of log sigma (the type-II MAP step shared by the raw and the
    style-controlled fits).
    """
    # scipy.optimize.minimize_scalar(method="bounded", xatol=1e-4), step for step (planner.stats.optim)
    return minimize_scalar_bounded(neg_log_marginal, LOG_SIGMA_BOUNDS, xatol=1e-4)


def laplace_log_marginal(problem, prec, f: float, chol) -> float:
    """Laplace approximation of log p(y | hyper-parameters) at the mode (value ``f``, Cholesky ``chol``)."""
    logdet = 2.0 * np.sum(np.log(np.diag(chol[0])))
    return f + 0.5 * problem.p * math.log(2 * math.pi) - 0.5 * logdet


def gaussian_at_mode(theta: np.ndarray, chol, seed: int, draws: int) -> tuple[np.ndarray, np.ndarray]:
    """The Laplace posterior N(theta, H^-1) from the negative Hessian's Cholesky factor ``chol``:
    its (symmetrised) covariance and ``draws`` seeded draws (shared by the raw and the style fits)."""
    cov = linalg.cho_solve(chol, np.eye(theta.size), check_finite=False)
    cov = 0.5 * (cov + cov.T)
    eps = np.random.default_rng(seed).standard_normal((draws, theta.size))
    return cov, theta + linalg.solve_triangular(chol[0], eps.T, lower=True, trans="T", check_finite=False).T


def normal_summary(theta: np.ndarray, cov: np.ndarray, i: int) -> Summary:
    """Mean, sd and 95% interval of parameter ``i`` under N(theta, cov)."""
    mu, sd = float(theta[i]), float(math.sqrt(cov[i, i]))
    return Summary(mu, sd, mu - Z95 * sd, mu + Z95 * sd)


def lognormal_summary(theta: np.ndarray, cov: np.ndarray, i: int) -> Summary:
    """The summary of ``exp(parameter i)`` (the tie parameter nu from log nu) under N(theta, cov)."""
    l_mu, l_sd = float(theta[i]), float(math.sqrt(cov[i, i]))
    mean = math.exp(l_mu + l_sd**2 / 2)
    return Summary(mean, mean * math.sqrt(math.expm1(l_sd**2)), math.exp(l_mu - Z95 * l_sd),
                   math.exp(l_mu + Z95 * l_sd))


def _laplace(counts: Counts, strata: tuple[str, ...], by_stratum: bool, prior: Prior, weights: np.ndarray | None,
             seed: int, draws: int) -> Fit:
    prob = _Problem(counts, by_stratum, prior)
    m, k = prob.m, prob.k
    state = {"theta": prob.mu.copy(), "iters": 0, "ok": True}

    def inner(log_sigma: float, log_tau: float | None):
        tau = math.exp(log_tau) if log_tau is not None else None
        prec = prob.precision(math.exp(log_sigma), tau)
        theta, f, c, it, ok = _newton(prob, prec, state["theta"])
        state.update(theta=theta, iters=state["iters"] + it, ok=state["ok"] and ok)
        # Laplace approximation of log p(y | sigma, tau), plus the hyper-prior in log scale
        lml = laplace_log_marginal(prob, prec, f, c)
        lp = _half_normal_log_scale(log_sigma, prior.sigma_scale)
        if log_tau is not None:
            lp += _half_normal_log_scale(log_tau, prior.tau_scale)
        return -(lml + lp), theta, c, prec

    lo_s, hi_s = LOG_SIGMA_BOUNDS
    if not by_stratum:
        hyper = (type2_log_sigma(lambda s: inner(s, None)[0]), None)
    else:
        # scipy.optimize.minimize(method="Nelder-Mead", bounds=...), step for step (planner.stats.optim)
        x = nelder_mead_bounded(lambda v: inner(v[0], v[1])[0],
                                np.array([math.log(prior.sigma_scale), math.log(prior.tau_scale)]),
                                [(lo_s, hi_s), (math.log(1e-4), math.log(20.0))], xatol=1e-3, fatol=1e-7)
        hyper = (float(x[0]), float(x[1]))
    _, theta, c, _ = inner(*hyper)
    cov_full, theta_draws = gaussian_at_mode(theta, c, seed, draws)

    # linear maps from theta to reported strengths, projected to sum-to-zero
    proj = np.eye(m) - 1.0 / m if m else np.zeros((0, 0))

    def block(maps):
        mean = maps @ theta
        cov = maps @ cov_full @ maps.T
        return mean, 0.5 * (cov + cov.T), theta_draws @ maps.T

    base = np.zeros((m, prob.p))
    base[:, :m] = proj
    stratum_mean = stratum_sd = stratum_draws = None
    if by_stratum:
        maps_k = []
        for j in range(k):
            a_k = base.copy()
            a_k[:, m + j * m: m + (j + 1) * m] = proj
            maps_k.append(a_k)
        sm, sd, sdr = [], [], []
        for a_k in maps_k:
            mu_k, cov_k, dr_k = block(a_k)
            sm.append(mu_k)
            sd.append(np.sqrt(np.clip(np.diag(cov_k), 0, None)))
            sdr.append(dr_k)
        stratum_mean, stratum_sd = np.array(sm), np.array(sd)
        stratum_draws = np.stack(sdr, axis=1)
        pop = sum(w * a_k for w, a_k in zip(weights, maps_k))
        mean, cov, beta_draws = block(pop)
    else:
        mean, cov, beta_draws = block(base)

    nan = float("nan")
    gamma = normal_summary(theta, cov_full, prob.ig)
    nu = lognormal_summary(theta, cov_full, prob.il)
    sigma = Summary(math.exp(hyper[0]), nan, nan, nan)
    tau = Summary(math.exp(hyper[1]), nan, nan, nan) if by_stratum else None
    warnings = []
    if not state["ok"]:
        warnings.append("The Laplace optimiser did not converge; the strengths may be off. "
                        "Check the data for systems that always win or always lose, "
                        "or use --engine nuts.")
    diag = Diagnostics(iterations=state["iters"], converged=state["ok"], warnings=tuple(warnings))
    post = bt.GaussianPosterior(tuple(counts.systems), mean, cov, gamma=gamma.mean, nu=nu.mean)
    return Fit(tuple(counts.systems), strata, "laplace", post, beta_draws,
               gamma, nu, sigma, tau, stratum_mean, stratum_sd, stratum_draws,
               _weights_dict(counts.strata, weights) if by_stratum else None,
               int(counts.usable.sum()), int(counts.invalid.sum()), diag, prior, seed)


def _weights_dict(strata, weights):
    return {s: float(w) for s, w in zip(strata, weights)}


def _stratum_weights(counts: Counts, stratum_weights: dict | None) -> np.ndarray:
    """Normalised stratum weights; default: each stratum's share of usable judgments."""
    k = len(counts.strata)
    if stratum_weights is None:
        w = np.bincount(counts.stratum, weights=counts.usable, minlength=k).astype(float)
        if w.sum() <= 0:
            w = np.ones(k)
        return w / w.sum()
    unknown = sorted(set(stratum_weights) - set(counts.strata))
    if unknown:
        raise UsageError(f"stratum weights name unknown strata {unknown}; "
                         f"known strata are {list(counts.strata)}")
    w = np.array([float(stratum_weights.get(s, 0.0)) for s in counts.strata])
    if np.any(~np.isfinite(w)) or np.any(w < 0) or w.sum() <= 0:
        raise UsageError(f"stratum weights ({stratum_weights!r}) must be finite, >= 0 "
                         "and not all zero")
    return w / w.sum()


# -------------------------------------------------------------- entry
def fit(counts: Counts, *, engine: str = "laplace", by_stratum: bool = False,
        stratum_weights: dict | None = None, prior: Prior | None = None, seed: int = 0,
        draws: int = 1000, tune: int = 1000, chains: int = 2, cores: int | None = None,
        progressbar: bool = False) -> Fit:
    """Fit the Bradley–Terry–Davidson model with a position effect.

    Parameters
    ----------
    counts : planner.counts.Counts
        Aggregated cells (``a`` shown first/left). Invalid judgments are
        excluded from the likelihood and reported in ``Fit.n_invalid``.
    engine : {"laplace", "nuts"}
        ``"laplace"``: Gaussian at the posterior mode (fast, deterministic);
        ``"nuts"``: pymc NUTS sampling.
    by_stratum : bool
        Partially pooled per-stratum strengths (``beta + tau * z[k]``); the
        reported ``posterior`` is then the population ranking
        ``sum_k w_k beta_stratum[k]``.
    stratum_weights : dict stratum -> weight, optional
        Population weights (``by_stratum`` only; normalised; strata left out
        get weight 0). Default: each stratum's share of usable judgments.
    prior : Prior, optional
    seed : int
        Seeds the NUTS sampler or the Laplace draws; same inputs and seed give
        identical results.
    draws, tune, chains, cores : int
        Posterior draws per chain (Laplace: total draws), tuning steps, chains
        and worker processes (NUTS only for the last three; ``cores`` defaults
        to ``min(chains, 2)``).
    progressbar : bool
        NUTS progress on stderr.

    Returns
    -------
    Fit
    """
    if engine not in ENGINES:
        raise UsageError(f"--engine ({engine!r}) must be one of 'laplace' or 'nuts'")
    for name, v, low in (("draws", draws, 1), ("tune", tune, 0), ("chains", chains, 1)):
        if not isinstance(v, (int, np.integer)) or v < low:
            raise UsageError(f"--{name} ({v!r}) must be an integer >= {low}")
    if cores is not None and (not isinstance(cores, (int, np.integer)) or cores < 1):
        raise UsageError(f"--cores ({cores!r}) must be an integer >= 1")
    if stratum_weights is not None and not by_stratum:
        raise UsageError("stratum weights need --by-stratum")
    prior = (prior or Prior()).check()
    if len(counts.systems) < 1:
        raise UsageError("the model needs at least one system")
    weights = None
    strata = tuple(counts.strata)
    if by_stratum:
        weights = _stratum_weights(counts, stratum_weights)
    else:
        counts = counts.pooled() if len(counts.strata) > 1 else counts
    if engine == "laplace":
        return _laplace(counts, strata, by_stratum, prior, weights, seed, draws)
    from planner.model.nuts import fit_nuts

    return fit_nuts(counts, strata, by_stratum=by_stratum, prior=prior, weights=weights, seed=seed,
                    draws=draws, tune=tune, chains=chains, cores=cores, progressbar=progressbar)
