"""Shared Bradley–Terry–Davidson math with a position effect.

One judgment compares system ``a`` shown first (left) with ``b`` shown second
(right). With strengths ``beta`` (logit scale), a position shift ``gamma`` for
the left response and the Davidson (1970) tie parameter ``nu >= 0``::

    delta  = beta[a] - beta[b] + gamma
    D      = exp(delta / 2) + exp(-delta / 2) + nu
    P(A)   = exp(delta / 2) / D
    P(B)   = exp(-delta / 2) / D
    P(tie) = nu / D

With ``nu = 0`` and ``gamma = 0`` this is the plain Bradley–Terry model
``P(A) = 1 / (1 + exp(-(beta[a] - beta[b])))``.

Reference: R. R. Davidson (1970), "On extending the Bradley-Terry model to
accommodate ties in paired comparison experiments", JASA 65(329), 317–328.

Everything an outcome depends on is the scalar ``delta``, so the Fisher
information of one judgment about ``beta`` is rank one:
``I(delta) * (e_a - e_b)(e_a - e_b)^T`` with
``I(delta) = sum_k (dP_k/d delta)^2 / P_k``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from planner.equality import array_eq

ELO_SCALE = 400.0 / np.log(10.0)  # 173.7177...: Elo points per logit unit
ELO_BASE = 1500.0


def to_elo(beta):
    """Logit strengths to the Elo scale: R = 1500 + 400/ln(10) * beta."""
    return ELO_BASE + ELO_SCALE * np.asarray(beta, dtype=float)


def expected_score(r_a, r_b):
    """Elo expected score of a player rated ``r_a`` against one rated ``r_b``.

    ``E = 1 / (1 + 10**((r_b - r_a) / 400))`` (Elo 1978); equal to the
    Bradley–Terry win probability for ``beta = (R - 1500) / ELO_SCALE``.
    """
    diff = np.asarray(r_b, dtype=float) - np.asarray(r_a, dtype=float)
    return 1.0 / (1.0 + 10.0 ** (diff / 400.0))


def elo_update(r_a, r_b, score, k: float = 32.0):
    """New rating of ``a`` after one game against ``b``: ``R_a + k (S - E)``.

    ``score`` is 1 for a win, 0.5 for a draw, 0 for a loss.
    """
    return np.asarray(r_a, dtype=float) + k * (np.asarray(score, dtype=float) - expected_score(r_a, r_b))


def outcome_probs(delta, nu: float | np.ndarray = 0.0):
    """Davidson outcome probabilities ``(P(A), P(B), P(tie))`` for logit gaps ``delta``.

    Numerically stable for large ``|delta|`` (computed relative to the larger
    exponent).
    """
    d = np.asarray(delta, dtype=float) / 2.0
    m = np.abs(d)
    ea = np.exp(d - m)
    eb = np.exp(-d - m)
    et = nu * np.exp(-m)
    tot = ea + eb + et
    return ea / tot, eb / tot, et / tot


def information(delta, nu: float = 0.0):
    """Fisher information about ``delta`` carried by one judgment.

    ``I = sum_k (dP_k/d delta)^2 / P_k`` over the three Davidson outcomes.
    For ``nu = 0`` this is ``p (1 - p)`` with ``p = P(A)``, the logistic
    variance.
    """
    pa, pb, pt = outcome_probs(delta, nu)
    # dP_A/dd = P_A (1/2 - D'/D) with D'/D = (P_A - P_B)/2 ; similar for the others
    half_diff = 0.5 * (pa - pb)
    da = pa * (0.5 - half_diff)
    db = pb * (-0.5 - half_diff)
    dt = pt * (-half_diff)
    with np.errstate(divide="ignore", invalid="ignore"):
        terms = (np.where(pa > 0, da * da / pa, 0.0) + np.where(pb > 0, db * db / pb, 0.0)
                 + np.where(pt > 0, dt * dt / pt, 0.0))
    return terms


@array_eq
@dataclass(frozen=True)
class GaussianPosterior:
    """A Gaussian approximation to the posterior of the strengths.

    The NUTS engine summarises its draws into one of these (plus keeps the
    draws); the Laplace engine produces one directly. Acquisition and the
    simulator work on this type.

    Attributes
    ----------
    systems : tuple of str
    mean : ndarray (M,)
        Posterior mean strengths (logit scale, sum to zero).
    cov : ndarray (M, M)
        Posterior covariance of the strengths (singular along the all-ones
        direction because of the sum-to-zero constraint).
    gamma : float
        Posterior mean of the left-position logit shift.
    nu : float
        Posterior mean (or mode) of the Davidson tie parameter.
    gamma_var : float
        Posterior variance of the position shift (0: treated as known).
    gamma_cov : ndarray (M,) or None
        Posterior covariance of each strength with the position shift (sums to
        zero; None: 0). With ``gamma_var`` it completes the joint Gaussian of
        ``(beta, gamma)`` that active selection updates (a judgment with ``a``
        shown left informs ``beta_a - beta_b + gamma``).
    """

    systems: tuple[str, ...]
    mean: np.ndarray
    cov: np.ndarray
    gamma: float = 0.0
    nu: float = 0.0
    gamma_var: float = 0.0
    gamma_cov: np.ndarray | None = None

    @property
    def sd(self) -> np.ndarray:
        return np.sqrt(np.clip(np.diag(self.cov), 0.0, None))

    def diff_sd(self) -> np.ndarray:
        """SD of every pairwise difference beta_i - beta_j, shape (M, M)."""
        v = np.diag(self.cov)
        var = v[:, None] + v[None, :] - 2.0 * self.cov
        return np.sqrt(np.clip(var, 0.0, None))
