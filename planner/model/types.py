"""Result and prior types of the Bradley–Terry–Davidson model: :class:`Prior`, :class:`Summary`,
:class:`Diagnostics` and :class:`Fit`.

Shared by both engines (:mod:`planner.model.laplace`, :mod:`planner.model.nuts`) and the
dispatcher :func:`planner.model.fit`; the model itself is written out in :mod:`planner.model`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from planner.equality import array_eq
from planner.errors import UsageError
from planner.limits import check_float
from planner.model import bt

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

    def __post_init__(self):
        for name in ("sigma_scale", "gamma_sd", "log_nu_sd", "tau_scale"):   # scales: > 0
            check_float(name, getattr(self, name), 0.0, math.inf, low_open=True)
        for name in ("gamma_mean", "log_nu_mean"):
            check_float(name, getattr(self, name), -math.inf, math.inf)


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


@array_eq
@dataclass(frozen=True)
class Clustering:
    """How clustered verdicts widened a fit's intervals (:mod:`planner.model.robust`).

    Attributes
    ----------
    by : str
        The clustering (:data:`planner.vocabulary.CLUSTER_BY`).
    n_clusters : int
        Clusters with a usable judgment.
    model_cov, robust_cov : ndarray (M, M)
        The reported strengths' covariance treating judgments as independent, and the
        cluster-robust one the fit reports (``Fit.posterior.cov``).
    eigen_design_effects : ndarray
        The design effects of the data along the whitened meat's eigenvectors, descending,
        before the floor at 1.
    """

    by: str
    n_clusters: int
    model_cov: np.ndarray
    robust_cov: np.ndarray
    eigen_design_effects: np.ndarray

    @property
    def design_effect(self) -> float:
        """Overall variance inflation of the strengths: ``tr(robust) / tr(model)`` (1 without data)."""
        den = float(np.trace(self.model_cov))
        return float(np.trace(self.robust_cov)) / den if den > 0 else 1.0

    def pair_design_effects(self) -> np.ndarray:
        """``(M, M)`` variance inflation of every strength difference ``beta_i - beta_j`` (NaN on the diagonal)."""
        def diff_var(c):
            v = np.diag(c)
            return v[:, None] + v[None, :] - 2.0 * c

        den = diff_var(self.model_cov)
        with np.errstate(divide="ignore", invalid="ignore"):
            out = np.where(den > 0, diff_var(self.robust_cov) / den, np.nan)
        np.fill_diagonal(out, np.nan)
        return out


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
    clustering : Clustering or None
        When the fit was given clusters: the intervals are cluster-robust and this says by how
        much they widened; None when the judgments were treated as independent.
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
    clustering: Clustering | None = field(default=None, repr=False)

    # ---------------------------------------------------------- helpers
    @property
    def mean(self) -> np.ndarray:
        """Posterior mean strengths (logit), same as ``posterior.mean``."""
        return self.posterior.mean

    @property
    def sd(self) -> np.ndarray:
        """Posterior sd of the strengths (logit)."""
        return self.posterior.sd

    def interval(self, confidence_level: float = 0.95) -> tuple[np.ndarray, np.ndarray]:
        """Equal-tailed credible interval of every strength (logit).

        Laplace: Gaussian quantiles; NUTS: quantiles of the draws.
        """
        if not 0 < confidence_level < 1:
            raise UsageError(f"`confidence_level` ({confidence_level:g}) must be in (0, 1)",
                             parameters=("confidence_level",))
        q = (1 - confidence_level) / 2
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

__all__ = ["Z95", "Clustering", "Diagnostics", "Fit", "Prior", "Summary"]
