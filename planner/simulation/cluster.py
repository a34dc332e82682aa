"""Clustered verdicts for the simulated judge: a Gaussian copula with exact Bradley–Terry–Davidson margins.

Several verdicts on one (prompt, pair) — both presentation orders, several
annotators — are correlated (an intraclass correlation of 0.04–0.54 on the
real sets in bench/RESULTS.md). The simulated judge reproduces that without
changing what each single verdict looks like:

* every cluster ``c`` (one prompt, one unordered pair ``i < j``) draws
  ``W_c ~ N(0, 1)``, every verdict ``s`` in it ``E_s ~ N(0, 1)``, and
  ``Z_s = √ρ W_c + √(1 − ρ) E_s`` (standard normal; ``corr(Z_s, Z_t) = ρ``);
* with ``U_s = Φ(Z_s)`` and the verdict's own Davidson probabilities (its
  strengths, its position, the tie parameter: :func:`planner.model.bt.outcome_probs`)
  the verdict is "``i`` loses" when ``U_s < P(i loses)``, a tie when
  ``U_s < P(i loses) + P(tie)``, else "``i`` wins".

So each verdict's margin is exactly the model's (the strengths, the position
effect and ν keep their meaning: a fit of the margins estimates the same
parameters), and verdicts of one cluster agree more often than independent
ones. This is a Gaussian copula over ordinal outcomes (the latent-variable
form of correlated ordinal data; e.g. Agresti, *Analysis of Ordinal
Categorical Data*, 2nd ed., 2010, §10.1).

``ρ`` is calibrated to a stated intraclass correlation of the verdict scores
(+1 ``i`` wins, 0 tie, −1 ``i`` loses; centred within (pair, shown order)):
:func:`score_icc` computes the ICC a given ``ρ`` implies for a design —
between-verdict covariance in a cluster over the verdict variance, pooled over
the pairs — by Gauss–Hermite quadrature over ``W`` (given ``W`` the verdicts
of a cluster are independent), and :func:`copula_rho` inverts it by bisection.
A negative ICC (two orders disagreeing more than position explains) is
simulated as 0.

A verdict already observed (a pilot's) makes its cluster's later verdicts
predictable: :func:`conditional_latent` draws ``W_c`` given it — ``Z`` uniform
in probability within the observed outcome's interval, then
``W | Z ~ N(√ρ Z, 1 − ρ)``.
"""

from __future__ import annotations

import numpy as np
from scipy.special import ndtr, ndtri

from planner.model import bt

__all__ = ["HERMITE_NODES", "canonical_probs", "conditional_latent", "copula_rho", "outcomes", "score_icc"]

HERMITE_NODES = 48      # Gauss–Hermite nodes of the ICC integral: exact to ~1e-10 for these smooth integrands
_BISECT = 60            # bisection steps of copula_rho: 2^-60 of the unit interval


def canonical_probs(beta_i, beta_j, i_left, gamma: float, nu: float) -> tuple[np.ndarray, np.ndarray]:
    """``(P(i loses), P(tie))`` for verdicts on pairs ``i < j`` shown with ``i`` left where ``i_left``."""
    gap = np.asarray(beta_i, dtype=float) - np.asarray(beta_j, dtype=float)
    i_left = np.asarray(i_left, dtype=bool)
    delta = np.where(i_left, gap + gamma, -gap + gamma)    # the left response's logit advantage
    p_left, p_right, p_tie = bt.outcome_probs(delta, nu)
    return np.where(i_left, p_right, p_left), p_tie


def outcomes(z: np.ndarray, p_lose: np.ndarray, p_tie: np.ndarray, i_left: np.ndarray) -> np.ndarray:
    """Outcome codes (0 left won, 1 right won, 2 tie) of verdicts with latents ``z``."""
    u = ndtr(np.asarray(z, dtype=float))
    i_wins = u >= p_lose + p_tie
    tie = (u >= p_lose) & ~i_wins
    left_won = np.where(np.asarray(i_left, dtype=bool), i_wins, ~i_wins & ~tie)
    return np.where(tie, 2, np.where(left_won, 0, 1)).astype(np.int64)


def conditional_latent(code_i: np.ndarray, p_lose: np.ndarray, p_tie: np.ndarray, rho: float,
                       rng: np.random.Generator) -> np.ndarray:
    """Cluster latents ``W`` given one observed verdict each: ``code_i`` 0 ``i`` lost, 1 tie, 2 ``i`` won,
    −1 unknown (invalid: ``W`` from its prior)."""
    code_i = np.asarray(code_i, dtype=np.int64)
    lo = np.where(code_i == 0, 0.0, np.where(code_i == 1, p_lose, p_lose + p_tie))
    hi = np.where(code_i == 0, p_lose, np.where(code_i == 1, p_lose + p_tie, 1.0))
    v = rng.random(code_i.size)
    z = ndtri(np.clip(lo + v * (hi - lo), 1e-300, 1 - 1e-16))
    w = np.sqrt(rho) * z + np.sqrt(1.0 - rho) * rng.standard_normal(code_i.size)
    return np.where(code_i < 0, rng.standard_normal(code_i.size), w)


def _score_moments(p_lose, p_tie, rho: float, nodes, weights):
    """Per verdict kind: E[y | W] at the quadrature nodes (kinds x nodes), mean and variance of y."""
    p_lose, p_tie = np.atleast_1d(p_lose)[:, None], np.atleast_1d(p_tie)[:, None]
    a, b = np.sqrt(rho), np.sqrt(1.0 - rho)
    cut_lose, cut_win = ndtri(np.clip(p_lose, 1e-300, 1.0)), ndtri(np.clip(p_lose + p_tie, 1e-300, 1.0))
    lose = ndtr((cut_lose - a * nodes[None, :]) / b)
    win = 1.0 - ndtr((cut_win - a * nodes[None, :]) / b)
    mean = (1.0 - (p_lose + p_tie)) - p_lose
    var = (1.0 - p_tie) - mean ** 2
    return win - lose, mean[:, 0], var[:, 0]


def score_icc(rho: float, p_lose: np.ndarray, p_tie: np.ndarray, same: np.ndarray) -> float:
    """The intraclass correlation of the verdict scores implied by copula correlation ``rho``.

    ``p_lose``/``p_tie`` (K,) describe K verdict kinds (a pair in one shown order); ``same`` (K, K) weighs
    the pairs of verdicts that share a cluster (kind k with kind l), e.g. both orders of a prompt. The ICC
    is the weighted within-cluster covariance over the weighted variance (each kind's variance counted
    with the weight of the pairs it is in), pooled over the kinds.
    """
    if rho <= 0:
        return 0.0
    x, w = np.polynomial.hermite_e.hermegauss(HERMITE_NODES)
    w = w / w.sum()
    cond, mean, var = _score_moments(p_lose, p_tie, min(rho, 1 - 1e-12), x, w)
    cov = (cond * w[None, :]) @ cond.T - np.outer(mean, mean)
    same = np.asarray(same, dtype=float)
    denom = float((same * 0.5 * (var[:, None] + var[None, :])).sum())
    return float((same * cov).sum() / denom) if denom > 0 else 0.0


def copula_rho(icc: float, p_lose: np.ndarray, p_tie: np.ndarray, same: np.ndarray) -> float:
    """The copula correlation whose :func:`score_icc` is ``icc`` (0 for ``icc <= 0``; bisection)."""
    if icc <= 0:
        return 0.0
    lo, hi = 0.0, 1.0
    if score_icc(1 - 1e-9, p_lose, p_tie, same) <= icc:
        return 1.0 - 1e-9
    for _ in range(_BISECT):
        mid = 0.5 * (lo + hi)
        if score_icc(mid, p_lose, p_tie, same) < icc:
            lo = mid
        else:
            hi = mid
    return 0.5 * (lo + hi)
