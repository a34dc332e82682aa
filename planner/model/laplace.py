"""The Laplace engine of the Bradley–Terry–Davidson model, and the Laplace pieces the style fit shares.

:func:`fit_laplace` maximises the log posterior of ``(beta, [stratum deviations], gamma, log_nu)``
by damped Newton steps (:func:`newton`, analytic gradient and Hessian from :class:`Problem`), fixes
the hierarchical scales ``sigma`` (and ``tau``) at the mode of their Laplace-approximated marginal
posterior (type-II MAP in log scale: :func:`type2_log_sigma`, :func:`laplace_log_marginal`) and
reports the Gaussian at the mode (:func:`gaussian_at_mode`, :func:`normal_summary`,
:func:`lognormal_summary`). The model is written out in :mod:`planner.model`; call it through
:func:`planner.model.fit`.
"""

from __future__ import annotations

import math

import numpy as np
from scipy import linalg, sparse

from planner.counts import Counts
from planner.model import bt
from planner.model.robust import RobustCovariance, gaussian_draws, robust_covariance
from planner.model.types import Z95, Clustering, Diagnostics, Fit, Prior, Summary
from planner.stats.clusters import ClusterCells
from planner.stats.optim import minimize_scalar_bounded, nelder_mead_bounded


# ------------------------------------------------------------ the layout
class Problem:
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
        self.x = self.design(a, b, st)
        self.xt = self.x.T.tocsr()
        self.mu = np.zeros(self.p)
        self.mu[self.ig] = prior.gamma_mean
        self.mu[self.il] = prior.log_nu_mean

    def design(self, a: np.ndarray, b: np.ndarray, st: np.ndarray) -> sparse.csr_matrix:
        """The design rows of judgments with ``a`` shown first, ``b`` second, in stratum ``st``."""
        m, nc = self.m, a.size
        rows = [np.arange(nc)] * 3
        cols = [a, b, np.full(nc, self.ig)]
        vals = [np.ones(nc), -np.ones(nc), np.ones(nc)]
        if self.by_stratum:
            rows += [np.arange(nc)] * 2
            cols += [m + st * m + a, m + st * m + b]
            vals += [np.ones(nc), -np.ones(nc)]
        return sparse.csr_matrix((np.concatenate(vals), (np.concatenate(rows), np.concatenate(cols))),
                                 shape=(nc, self.p))

    def precision(self, sigma: float, tau: float | None) -> np.ndarray:
        prec = np.empty(self.p)
        prec[: self.m] = 1.0 / sigma**2
        if self.by_stratum:
            if tau is None:
                raise ValueError("a per-stratum problem needs the strata's `tau`")
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


def newton(problem: Problem, prec, theta, tol: float = 1e-10, max_iter: int = 100):
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


def half_normal_log_scale(s: float, scale: float) -> float:
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


def _mode(prob: Problem, prior: Prior, by_stratum: bool):
    """Type-II MAP of the scales and the posterior mode at them.

    Returns ``(hyper, theta, chol, iterations, converged)`` with ``hyper = (log sigma, log tau or None)``.
    """
    state = {"theta": prob.mu.copy(), "iters": 0, "ok": True}

    def inner(log_sigma: float, log_tau: float | None):
        tau = math.exp(log_tau) if log_tau is not None else None
        prec = prob.precision(math.exp(log_sigma), tau)
        theta, f, c, it, ok = newton(prob, prec, state["theta"])
        state.update(theta=theta, iters=state["iters"] + it, ok=state["ok"] and ok)
        # Laplace approximation of log p(y | sigma, tau), plus the hyper-prior in log scale
        lml = laplace_log_marginal(prob, prec, f, c)
        lp = half_normal_log_scale(log_sigma, prior.sigma_scale)
        if log_tau is not None:
            lp += half_normal_log_scale(log_tau, prior.tau_scale)
        return -(lml + lp), theta, c, prec

    lo_s, hi_s = LOG_SIGMA_BOUNDS
    hyper: tuple[float, float | None]
    if not by_stratum:
        hyper = (type2_log_sigma(lambda s: inner(s, None)[0]), None)
    else:
        # scipy.optimize.minimize(method="Nelder-Mead", bounds=...), step for step (planner.stats.optim)
        x = nelder_mead_bounded(lambda v: inner(v[0], v[1])[0],
                                np.array([math.log(prior.sigma_scale), math.log(prior.tau_scale)]),
                                [(lo_s, hi_s), (math.log(1e-4), math.log(20.0))], xatol=1e-3, fatol=1e-7)
        hyper = (float(x[0]), float(x[1]))
    _, theta, c, _ = inner(*hyper)
    return hyper, theta, c, state["iters"], state["ok"]


def strength_maps(prob: Problem, weights) -> tuple[np.ndarray, list[np.ndarray] | None]:
    """``(population map, per-stratum maps)``: the (M, P) linear maps from ``theta`` to the reported
    strengths, projected to sum-to-zero — the pooled strengths (no stratum maps) or, ``by_stratum``,
    ``sum_k w_k beta_stratum[k]`` and each stratum's ``beta_stratum[k]``."""
    m, k = prob.m, prob.k
    proj = np.eye(m) - 1.0 / m if m else np.zeros((0, 0))
    base = np.zeros((m, prob.p))
    base[:, :m] = proj
    if not prob.by_stratum:
        return base, None
    maps_k = []
    for j in range(k):
        a_k = base.copy()
        a_k[:, m + j * m: m + (j + 1) * m] = proj
        maps_k.append(a_k)
    return sum(w * a_k for w, a_k in zip(weights, maps_k)), maps_k


def _strengths(prob: Problem, theta, cov_full, theta_draws, weights):
    """Reported strengths from the mode: linear maps of ``theta`` (:func:`strength_maps`).

    Returns ``(mean, cov, beta_draws, stratum_mean, stratum_sd, stratum_draws)``; the population
    strengths ``sum_k w_k beta_stratum[k]`` with ``by_stratum``, else the pooled strengths (and
    ``None`` for the three stratum arrays).
    """
    def block(maps):
        mean = maps @ theta
        cov = maps @ cov_full @ maps.T
        return mean, 0.5 * (cov + cov.T), theta_draws @ maps.T

    pop, maps_k = strength_maps(prob, weights)
    if maps_k is None:
        return (*block(pop), None, None, None)
    sm, sd, sdr = [], [], []
    for a_k in maps_k:
        mu_k, cov_k, dr_k = block(a_k)
        sm.append(mu_k)
        sd.append(np.sqrt(np.clip(np.diag(cov_k), 0, None)))
        sdr.append(dr_k)
    return (*block(pop), np.array(sm), np.array(sd), np.stack(sdr, axis=1))


def _with_gamma(prob: Problem, cov_full, weights) -> np.ndarray:
    """Cov(reported strengths, gamma): the strengths' linear map of ``theta`` (as in :func:`_strengths`)
    times the gamma column of the joint covariance."""
    m = prob.m
    col = cov_full[:, prob.ig]
    out = col[:m] - col[:m].mean()
    if prob.by_stratum:
        for j, w in enumerate(weights):
            block = col[m + j * m: m + (j + 1) * m]
            out = out + w * (block - block.mean())
    return out


def robust_at_mode(counts: Counts, by_stratum: bool, prior: Prior, clusters: ClusterCells):
    """``(prob, hyper, theta, robust covariance, iterations, converged)``: the Laplace mode of checked inputs
    and its cluster-robust covariance (:func:`planner.model.robust.robust_covariance`)."""
    prob = Problem(counts, by_stratum, prior)
    hyper, theta, _, iters, ok = _mode(prob, prior, by_stratum)
    prec = prob.precision(math.exp(hyper[0]), math.exp(hyper[1]) if by_stratum else None)
    return prob, hyper, theta, robust_covariance(prob, theta, prec, clusters), iters, ok


def clustering_summary(prob: Problem, weights, by: str, rc: RobustCovariance) -> Clustering:
    """The reported strengths' model and robust covariances and the design effects, as :class:`Clustering`."""
    pop = strength_maps(prob, weights)[0]

    def sym(c):
        c = pop @ c @ pop.T
        return 0.5 * (c + c.T)

    return Clustering(by, rc.n_clusters, sym(rc.model), sym(rc.robust), rc.design_effects)


def fit_laplace(counts: Counts, strata: tuple[str, ...], by_stratum: bool, prior: Prior, weights: np.ndarray | None,
                seed: int, draws: int, clusters: ClusterCells | None = None) -> Fit:
    """The Laplace fit of checked inputs (see :func:`planner.model.fit`, which checks and pools them).

    ``counts`` are pooled unless ``by_stratum``; ``strata`` are the study's strata as reported in
    :attr:`Fit.strata`; ``weights`` the normalised stratum weights (``by_stratum`` only);
    ``clusters`` (tallied like ``counts``): the cluster-robust posterior (:mod:`planner.model.robust`).
    """
    clustering = None
    if clusters is None:
        prob = Problem(counts, by_stratum, prior)
        hyper, theta, c, iters, ok = _mode(prob, prior, by_stratum)
        cov_full, theta_draws = gaussian_at_mode(theta, c, seed, draws)
    else:
        prob, hyper, theta, rc, iters, ok = robust_at_mode(counts, by_stratum, prior, clusters)
        cov_full, theta_draws = rc.robust, gaussian_draws(theta, rc.robust, seed, draws)
        clustering = clustering_summary(prob, weights, clusters.by, rc)
    mean, cov, beta_draws, stratum_mean, stratum_sd, stratum_draws = _strengths(prob, theta, cov_full,
                                                                                theta_draws, weights)
    nan = float("nan")
    gamma = normal_summary(theta, cov_full, prob.ig)
    nu = lognormal_summary(theta, cov_full, prob.il)
    sigma = Summary(math.exp(hyper[0]), nan, nan, nan)
    tau = Summary(math.exp(hyper[1]), nan, nan, nan) if by_stratum else None
    warnings = []
    if not ok:
        warnings.append("The Laplace optimiser did not converge; the strengths may be off. "
                        "Check the data for systems that always win or always lose, "
                        "or use --engine nuts.")
    diag = Diagnostics(iterations=iters, converged=ok, warnings=tuple(warnings))
    post = bt.GaussianPosterior(tuple(counts.systems), mean, cov, gamma=gamma.mean, nu=nu.mean,
                                gamma_var=float(cov_full[prob.ig, prob.ig]),
                                gamma_cov=_with_gamma(prob, cov_full, weights))
    return Fit(tuple(counts.systems), strata, "laplace", post, beta_draws,
               gamma, nu, sigma, tau, stratum_mean, stratum_sd, stratum_draws,
               weights_dict(counts.strata, weights) if by_stratum else None,
               int(counts.usable.sum()), int(counts.invalid.sum()), diag, prior, seed, clustering=clustering)


def joint_laplace(counts: Counts, prior: Prior | None = None) -> tuple[np.ndarray, np.ndarray]:
    """The pooled Laplace posterior of ``(beta, gamma, log_nu)`` jointly: its mean (M + 2) and covariance.

    The mode and negative Hessian of :func:`fit_laplace` on the counts pooled over strata, with the
    strengths projected on sum-to-zero (the first M entries match ``fit(counts).posterior``). A forecast
    draws whole parameter vectors from it, so the strengths, the position effect and the tie parameter
    keep their correlations.
    """
    prior = prior or Prior()        # a Prior checks itself when built
    counts = counts.pooled() if len(counts.strata) > 1 else counts
    prob = Problem(counts, False, prior)
    _, theta, c, _, _ = _mode(prob, prior, False)
    cov = linalg.cho_solve(c, np.eye(theta.size), check_finite=False)
    m = prob.m
    maps = np.zeros((m + 2, prob.p))
    maps[:m, :m] = np.eye(m) - 1.0 / m
    maps[m, prob.ig] = maps[m + 1, prob.il] = 1.0
    joint = maps @ cov @ maps.T
    return maps @ theta, 0.5 * (joint + joint.T)


def weights_dict(strata, weights) -> dict[str, float]:
    """``{stratum: weight}`` of the normalised stratum weights (as :attr:`Fit.stratum_weights` reports them)."""
    return {s: float(w) for s, w in zip(strata, weights)}


__all__ = ["LOG_SIGMA_BOUNDS", "Problem", "clustering_summary", "fit_laplace", "gaussian_at_mode",
           "half_normal_log_scale", "joint_laplace", "laplace_log_marginal", "lognormal_summary", "newton",
           "normal_summary", "robust_at_mode", "strength_maps", "type2_log_sigma", "weights_dict"]
