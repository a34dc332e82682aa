"""Objective values and the Gaussian preposterior quantities the rules score with.

The core identities (all in the sum-to-zero subspace of the strengths) are in
the package docstring (:mod:`planner.acquisition`): the posterior-predictive
expected Fisher information of one judgment (:func:`expected_information`),
the Sherman–Morrison update of the covariance, and the expected posterior
probability of misordering a pair, ``2 T(|m| / s, s' / τ)`` (Owen's T,
:func:`misorder_after`, :func:`pair_risk`).
"""

from __future__ import annotations

import numpy as np
from scipy.special import ndtr, owens_t

from planner.acquisition.options import OBJECTIVES, SelectionOptions
from planner.errors import UsageError
from planner.model import bt

TAIL_A = 5.0                # Owen's T: asymptotic tail formula used for a >= TAIL_A
_GH_Z, _GH_W = np.polynomial.hermite_e.hermegauss(7)
_GH_W = _GH_W / _GH_W.sum()


def sum_to_zero_basis(m: int) -> np.ndarray:
    """Orthonormal basis (M, M-1) of the sum-to-zero subspace."""
    q, _ = np.linalg.qr(np.eye(m)[:, :-1] - 1.0 / m)
    return q


def project_sum_to_zero(cov: np.ndarray) -> np.ndarray:
    out = cov - cov.mean(axis=0, keepdims=True)
    out = out - out.mean(axis=1, keepdims=True)       # (I − 11ᵀ/M) Σ (I − 11ᵀ/M)
    return 0.5 * (out + out.T)


def diff_var(cov):
    d = np.diag(cov)
    return np.clip(d[:, None] + d[None, :] - 2.0 * cov, 0.0, None)


def logistic(x):
    return 0.5 * (1.0 + np.tanh(0.5 * np.asarray(x, dtype=float)))


def expected_information(mdiff, vdiff, gamma: float = 0.0, nu: float = 0.0, *, both_positions=True):
    """Posterior-predictive expected Fisher information of one judgment.

    ``E_δ[I(δ)]`` with ``δ ~ N(mdiff ± gamma, vdiff)`` by 7-node Gauss–Hermite
    quadrature; with ``both_positions`` the average of the two positions
    (``+gamma``: system ``i`` shown left; ``-gamma``: right), as the batch
    assigns positions balanced. Units: logit⁻².
    """
    mdiff = np.asarray(mdiff, dtype=float)[..., None]
    sd = np.sqrt(np.clip(np.asarray(vdiff, dtype=float), 0.0, None))[..., None]
    x = mdiff + sd * _GH_Z
    if both_positions:
        info = 0.5 * (bt.information(x + gamma, nu) + bt.information(x - gamma, nu))
    else:
        info = bt.information(x + gamma, nu)
    return info @ _GH_W


def misorder_after(h, s2, s0_2):
    """Expected posterior P(misorder) of a pair after information arrives.

    ``h = |m| / s0`` (standardised current mean gap), ``s0_2`` the current
    variance of the difference, ``s2`` the variance after the (fantasized)
    update. The mean gap after the update is ``N(m, τ²)``, ``τ² = s0² − s²``,
    and ``E[Φ(−|X| / s)] = 2 T(h, s / τ)`` (Owen's T). For ``s/τ ≥ 5`` the
    asymptotic tail expansion of ``T`` (two terms, relative error < 0.2 %) is
    used because ``scipy.special.owens_t`` costs ~100 ns per value.
    """
    h = np.abs(np.asarray(h, dtype=float))
    s2 = np.asarray(s2, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        a = np.sqrt(np.maximum(s2, 0.0) / np.maximum(s0_2 - s2, 0.0))
        if a.shape != h.shape:
            h, a = np.broadcast_arrays(h, a)
        a = np.where(np.isnan(a), np.inf, a)
        small = a < TAIL_A
        n_small = np.count_nonzero(small)
        if n_small == a.size:
            return 2.0 * owens_t(h, a)
        out = np.empty(a.shape)
        if n_small:
            out[small] = 2.0 * owens_t(h[small], a[small])
            big = ~small
            hb, ab = h[big], a[big]
        else:
            hb, ab = h, a
        e = np.exp(-0.5 * hb * hb * ab * ab)
        ab_inf = np.isinf(ab)
        j2 = np.where(ab_inf, 0.0, e / ab - hb * np.sqrt(2 * np.pi) * ndtr(-hb * ab))
        j4 = np.where(ab_inf, 0.0, e / (3 * ab ** 3)) - hb * hb / 3.0 * j2
        res = ndtr(-hb) - np.exp(-0.5 * hb * hb) / np.pi * (j2 - j4)
    if not n_small:
        return res.reshape(a.shape)
    out[big] = res
    return out


def pair_risk(absm, s0_2, s2, mode: str = "bayes", est=None):
    """Misorder probability of system pairs after (fantasized) information.

    ``absm = |μ_k − μ_l|``, ``s0_2`` the current posterior variance of
    ``β_k − β_l`` and ``s2`` the variance after the fantasized judgments.
    Modes (see docs/methods.md, "Choosing comparisons"):

    ``bayes`` (default of ``ranking``/``top-k``)
        Expected posterior probability of misordering (preposterior: the mean
        moves when the judgments come back): ``2 T(|m| / s0, s / τ)``,
        ``τ² = s0² − s²``. It is also the probability that the posterior-mean
        order after the update differs from the true order (``θ − X'`` is
        independent of the updated mean ``X'``), so summed over pairs it is the
        expected number of discordant pairs, ``(1 − E τ_Kendall) · P / 2``.
        Myopic for one judgment (one judgment rarely flips a decision): the
        greedy scores a candidate by its best rate over a few look-ahead
        sizes (``SelectionOptions.lookahead``).
    ``truth``
        ``E_θ[Φ(−|θ| / s)]`` with the true gap ``θ ~ N(m, s0²)`` (the current
        posterior) and an estimate of sd ``s`` around it:
        ``2 T(|m| / sqrt(s0² + s²), s / s0)``. The expected probability that
        the ranking estimated after the batch orders the pair differently from
        the truth when the estimate's error is independent of the current
        mean (a heuristic: it ignores where the current estimate stands).
    ``fixed``
        ``Φ(−|m| / s)``, the mean held fixed. With the true gap as ``m`` this
        is the probability an estimate of sd ``s`` misorders the pair. Also
        myopic: for a near-tie (``|m| ≪ s``) it barely moves.
    ``oracle`` (strategy ``oracle``)
        ``absm`` is the signed TRUE gap ``θ`` and ``est`` the signed current
        posterior-mean gap ``x``. In the linear-Gaussian model the new data
        are ``z ~ N(θ, 1/λ)``, ``λ = 1/s² − 1/s0²``, and the updated mean
        ``X' = s² (x / s0² + λ z)`` has mean ``(s² x + τ² θ) / s0²`` and sd
        ``s τ / s0``; the risk is ``P(sign X' ≠ sign θ)``
        ``= Φ(−sign(θ) (s² x + τ² θ) / (s0 s τ))`` (at ``τ = 0``: 1 when the
        current order is wrong, else 0).
    """
    if mode == "oracle":
        theta, x = np.asarray(absm, dtype=float), np.asarray(est, dtype=float)
        sgn = np.where(theta >= 0, 1.0, -1.0)
        tau2 = np.clip(s0_2 - s2, 0.0, None)
        den = np.sqrt(np.clip(s0_2 * s2 * tau2, 0.0, None))
        num = sgn * (s2 * x + tau2 * theta)
        with np.errstate(divide="ignore", invalid="ignore"):
            r = ndtr(-num / den)
        now = np.where(sgn * x < 0, 1.0, np.where(x == 0, 0.5, 0.0))
        return np.where(den > 0, r, now)
    absm = np.abs(absm)
    s2 = np.maximum(s2, 1e-300)
    if mode == "fixed":
        return ndtr(-absm / np.sqrt(s2))
    if mode == "bayes":
        with np.errstate(divide="ignore", invalid="ignore"):
            return misorder_after(absm / np.sqrt(s0_2), s2, s0_2)
    return 2.0 * owens_t(absm / np.sqrt(s0_2 + s2), np.sqrt(s2 / np.clip(s0_2, 1e-300, None)))


def tie_probability(gap, sd, margin: float):
    """P(|Δ| < margin) for Δ ~ N(gap, sd²) (arrays; 0 when ``margin`` is 0)."""
    gap, sd = np.abs(np.asarray(gap, dtype=float)), np.asarray(sd, dtype=float)
    if margin <= 0:
        return np.zeros(np.broadcast(gap, sd).shape)
    with np.errstate(divide="ignore", invalid="ignore"):
        p = ndtr((margin - gap) / sd) - ndtr((-margin - gap) / sd)
    return np.where(sd > 0, p, (gap < margin).astype(float))


def check_objective(objective, m, systems, top_k, anchor):
    if objective not in OBJECTIVES:
        raise UsageError(f"`objective` ({objective!r}) must be one of " + ", ".join(OBJECTIVES),
                         parameters=('objective',))
    if objective == "top-k" and (top_k is None or not (1 <= int(top_k) <= m - 1)):
            raise UsageError(f"top-k K ({top_k}) must be an integer in [1, {m - 1}]", parameters=("top_k",))
    if objective == "anchor":
        anchor_index(systems, anchor)


def anchor_index(systems, anchor) -> int:
    if anchor is None:
        raise UsageError("`anchor` is required for the anchor strategy/objective", parameters=('anchor',))
    if anchor not in systems:
        raise UsageError(f"`anchor` ({anchor!r}) is not a system; systems: " + ", ".join(systems[:20]),
                         parameters=('anchor',))
    return systems.index(anchor)


def pair_weights(mean, objective, top_k):
    """Weights (M, M) over system pairs (k < l) of the misorder sum."""
    m = mean.size
    w = np.triu(np.ones((m, m)), 1)
    if objective == "top-k":
        order = np.argsort(-mean, kind="stable")
        top = np.zeros(m, bool)
        top[order[:top_k]] = True
        w = w * (top[:, None] != top[None, :])
    return w


def objective_value(posterior: bt.GaussianPosterior, objective: str = "ranking", *,
                    top_k: int | None = None, anchor: str | None = None,
                    mean: np.ndarray | None = None, options: SelectionOptions | None = None) -> float:
    """Value of the uncertainty an objective measures, under a Gaussian posterior.

    Parameters
    ----------
    posterior : GaussianPosterior
    objective : {"ranking", "entropy", "variance", "anchor", "top-k"}
        ``ranking``: ``Σ_{k<l} Φ(−|μ_k − μ_l| / sd_kl)``, the expected number
        of system pairs the posterior-mean ranking has in the wrong order.
        ``top-k``: the same sum over pairs straddling the top-``top_k``
        boundary of the posterior-mean ranking. ``entropy``: ½ log det of the
        covariance in the sum-to-zero subspace (nats, Gaussian entropy up to a
        constant). ``variance``: trace of the covariance (logit²).
        ``anchor``: ``Σ_c (p_c (1 − p_c))² Var(β_c − β_anchor)``, the
        delta-method variance of each candidate's win rate
        ``p_c = σ(μ_c − μ_anchor)`` against the anchor, summed (win-rate²).
    top_k, anchor : needed by ``top-k`` / ``anchor``.
    mean : ndarray, optional
        Replace the posterior mean (used by ``oracle``: the true strengths).
    options : SelectionOptions, optional
        Its ``ranking_risk`` is the misorder risk of ``ranking``/``top-k``
        (default :class:`SelectionOptions`).
    """
    systems = tuple(posterior.systems)
    m = len(systems)
    check_objective(objective, m, systems, top_k, anchor)
    mu = np.asarray(posterior.mean if mean is None else mean, dtype=float)
    mu = mu - mu.mean()
    cov = project_sum_to_zero(np.asarray(posterior.cov, dtype=float))
    risk_mode = (SelectionOptions() if options is None else options).ranking_risk
    return value_gaussian(objective, mu, cov, top_k, systems.index(anchor) if anchor else None, risk_mode)


def value_gaussian(objective, mu, cov, top_k, a_idx, risk_mode):
    if objective in ("ranking", "top-k"):
        w = pair_weights(mu, objective, top_k)
        kr, lr = np.nonzero(w)
        v = diff_var(cov)[kr, lr]
        r = pair_risk(np.abs(mu[kr] - mu[lr]), v, v, risk_mode)
        return float(np.where(v > 0, r, 0.0).sum())
    if objective == "entropy":
        q = sum_to_zero_basis(mu.size)
        return float(0.5 * np.linalg.slogdet(q.T @ cov @ q)[1])
    if objective == "variance":
        return float(np.trace(cov))
    # anchor
    p = logistic(mu - mu[a_idx])
    wv = (p * (1 - p)) ** 2
    return float((wv * diff_var(cov)[:, a_idx]).sum())
