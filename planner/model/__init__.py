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

Modules: :mod:`planner.model.types` (``Prior``, ``Summary``, ``Diagnostics``, ``Fit``),
:mod:`planner.model.laplace` (the Laplace engine and the Laplace pieces the style fit shares),
:mod:`planner.model.nuts` (the NUTS engine, imported only when asked for) and
:mod:`planner.model.dispatch` (the :func:`fit` dispatcher; not ``model/fit.py``: a submodule named
like the function would shadow it, ``import planner.model.fit as f`` gives the function). This package
re-exports their public names.
"""

from __future__ import annotations

from planner.model import bt
from planner.model.dispatch import fit
from planner.model.laplace import (
    LOG_SIGMA_BOUNDS,
    gaussian_at_mode,
    laplace_log_marginal,
    lognormal_summary,
    normal_summary,
    type2_log_sigma,
)
from planner.model.types import Z95, Diagnostics, Fit, Prior, Summary

__all__ = ["LOG_SIGMA_BOUNDS", "Z95", "Diagnostics", "Fit", "Prior", "Summary", "bt", "fit",
           "gaussian_at_mode", "laplace_log_marginal", "lognormal_summary", "normal_summary", "type2_log_sigma"]
