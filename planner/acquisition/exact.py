"""The exact one-dimensional preposterior misorder of one system pair: the audit of the Gaussian score.

:mod:`planner.acquisition` scores a pair by the Gaussian preposterior: after
``n`` judgments the posterior mean gap is ``N(m, τ²)`` and the expected
posterior misorder probability is ``2 T(|m|/s, s'/τ)`` (Owen's T). The truth
is discrete: ``n`` judgments have finitely many outcomes, and the posterior
of the gap ``δ`` after each is the prior ``N(m, v)`` times the
Bradley–Terry–Davidson likelihood. The expected posterior probability of
misordering the pair is then

    R_n = Σ_data min( ∫_{δ<0} φ_v(δ − m) L_data(δ) dδ , ∫_{δ>0} φ_v(δ − m) L_data(δ) dδ )

(for each outcome, the posterior mass on the side the posterior does not
favour, weighted by the outcome's probability; the normaliser cancels). Its
current value is ``R_0 = Φ(−|m|/√v)``. Because the posterior probability of a
side is a martingale, ``R_n = R_0`` exactly whenever no outcome can move the
posterior's favoured side — so a single judgment often has exact gain 0 while
the Gaussian one is positive (the myopia the look-ahead ``SelectionOptions.lookahead`` of the
ranking objective works around).

Positions are balanced: ``ceil(n/2)`` judgments with the first system shown
left (gap ``δ + γ``), ``floor(n/2)`` with it right (``δ − γ``). Integrals on a
uniform grid of ``m ± 10√v`` split at 0 (midpoint rule; accuracy ~1e-6 at the
default 4,000 cells).

With the position effect γ *uncertain* — ``(δ, γ)`` jointly Gaussian — and the
pair shown in ONE order ``s`` (the only order a pool has), every verdict depends
on ``u = δ + s γ`` alone. Given ``u`` the prior leaves ``δ | u`` Gaussian, so

    R_n = Σ_data min( ∫ φ(u) L_data(u) Φ(−a(u)) du , ∫ φ(u) L_data(u) Φ(a(u)) du ),

``a(u) = E[δ | u] / sd(δ | u)``: a one-dimensional integral again
(:func:`exact_misorder_one_order`). Its Gaussian counterpart is the rank-one
update of the joint along ``x = (1, s)`` that the selection makes
(:func:`gaussian_gain_one_order`). However many verdicts come, ``R_n`` stays above
``E[Φ(−|E[δ|u]| / sd(δ|u))]`` at ``u`` known exactly: what γ's uncertainty hides.
"""

from __future__ import annotations

import numpy as np
from scipy.special import gammaln, ndtr

from planner.acquisition.objectives import expected_information, misorder_after
from planner.errors import UsageError
from planner.model import bt


def _triples(h: int) -> np.ndarray:
    """All outcome counts ``(a, b, t)`` with ``a + b + t = h``."""
    return np.array([(a, b, h - a - b) for a in range(h + 1) for b in range(h + 1 - a)], dtype=float)


def _log_lik(trip: np.ndarray, x: np.ndarray, nu: float) -> np.ndarray:
    """Multinomial log-likelihood (rows: triples, cols: gaps ``x``)."""
    pa, pb, pt = bt.outcome_probs(x, nu)
    h = trip[0].sum()
    coef = gammaln(h + 1) - gammaln(trip + 1).sum(axis=1)
    with np.errstate(divide="ignore"):
        logs = np.stack([np.log(pa), np.log(pb), np.log(pt) if nu > 0 else np.full_like(pa, -np.inf)])
    ll = trip[:, :2] @ logs[:2]
    if nu > 0:
        ll = ll + trip[:, 2:3] * logs[2][None, :]
    else:
        ll = np.where(trip[:, 2:3] > 0, -np.inf, ll)
    return coef[:, None] + ll


def exact_misorder(mdiff: float, vdiff: float, n: int, gamma: float = 0.0, nu: float = 0.0,
                   cells: int = 4000) -> float:
    """``R_n``: expected posterior P(misorder) of a pair after ``n`` judgments (see module docstring)."""
    if int(n) != n or n < 0:
        raise UsageError(f"n ({n}) must be a whole number >= 0", parameters=("n",))
    if not (np.isfinite(mdiff) and np.isfinite(vdiff) and vdiff > 0):
        raise UsageError(f"mdiff ({mdiff}) must be finite and vdiff ({vdiff}) > 0", parameters=("mdiff", "vdiff"))
    sd = float(np.sqrt(vdiff))
    lo, hi = mdiff - 10 * sd, mdiff + 10 * sd
    sides = (_grid(min(lo, 0.0), min(hi, 0.0), cells), _grid(max(lo, 0.0), max(hi, 0.0), cells))
    n1, n2 = (int(n) + 1) // 2, int(n) // 2
    if n1 == n2 or gamma == 0.0:
        return _risk(sides, mdiff, sd, n1, n2, gamma, nu)
    # n odd: the extra judgment shows the first system left or right with probability 1/2 each
    return 0.5 * (_risk(sides, mdiff, sd, n1, n2, gamma, nu) + _risk(sides, mdiff, sd, n1, n2, -gamma, nu))


def _risk(sides, mdiff, sd, n1, n2, gamma, nu):
    parts = []
    for x, w in sides:
        prior = w * np.exp(-0.5 * ((x - mdiff) / sd) ** 2) / (sd * np.sqrt(2 * np.pi))
        l1 = _log_lik(_triples(n1), x + gamma, nu)                       # (T1, X)
        l2 = _log_lik(_triples(n2), x - gamma, nu) if n2 else np.zeros((1, x.size))
        # every combination of the two halves' outcomes: (T1, T2) masses on this side
        parts.append(np.einsum("ix,jx,x->ij", np.exp(l1), np.exp(l2), prior))
    return float(np.minimum(parts[0], parts[1]).sum())


def _grid(a: float, b: float, cells: int):
    """Midpoints and widths of ``cells`` equal cells on ``[a, b]`` (empty when ``a == b``)."""
    if b <= a:
        return np.zeros(0), np.zeros(0)
    h = (b - a) / cells
    return a + h * (np.arange(cells) + 0.5), np.full(cells, h)


def exact_gain(mdiff: float, vdiff: float, n: int = 1, gamma: float = 0.0, nu: float = 0.0) -> float:
    """Exact expected reduction of the pair's own misorder probability from ``n`` judgments
    (both terms on the same grid, so a gain that is 0 in exact arithmetic is 0 to rounding)."""
    return exact_misorder(mdiff, vdiff, 0) - exact_misorder(mdiff, vdiff, n, gamma, nu)


def gaussian_gain(mdiff: float, vdiff: float, n: int = 1, gamma: float = 0.0, nu: float = 0.0) -> float:
    """The Gaussian preposterior's reduction of the same quantity (what the ranking objective uses)."""
    info = n * float(expected_information(mdiff, vdiff, gamma, nu))
    s2 = vdiff / (1.0 + info * vdiff)
    h = abs(mdiff) / np.sqrt(vdiff)
    return float(ndtr(-h) - misorder_after(h, s2, vdiff))


def _one_order_prior(mdiff, vdiff, gamma, gamma_var, cov_dg, sign):
    """Mean and variance of ``u = δ + s γ``, and the regression of ``δ`` on ``u``: (m_u, V_u, slope, resid var)."""
    m_u = mdiff + sign * gamma
    v_u = vdiff + gamma_var + 2.0 * sign * cov_dg
    cross = vdiff + sign * cov_dg
    if not (v_u > 0):
        raise UsageError(f"the verdict's variance ({v_u}) must be > 0: check vdiff, gamma_var and cov_dg",
                         parameters=("vdiff", "gamma_var", "cov_dg"))
    resid = vdiff - cross * cross / v_u
    if resid < -1e-12 * vdiff:
        raise UsageError("(delta, gamma) covariance is not positive semi-definite: |cov_dg| > sd x sd",
                         parameters=("cov_dg",))
    return m_u, v_u, cross / v_u, max(resid, 0.0)


def exact_misorder_one_order(mdiff: float, vdiff: float, n: int, gamma: float = 0.0, gamma_var: float = 0.0,
                             cov_dg: float = 0.0, nu: float = 0.0, sign: int = 1, cells: int = 4000) -> float:
    """``R_n`` of ``n`` verdicts all shown in order ``sign`` with ``(δ, γ)`` jointly Gaussian (module docstring)."""
    if int(n) != n or n < 0:
        raise UsageError(f"n ({n}) must be a whole number >= 0", parameters=("n",))
    if not (np.isfinite(mdiff) and np.isfinite(vdiff) and vdiff > 0):
        raise UsageError(f"mdiff ({mdiff}) must be finite and vdiff ({vdiff}) > 0", parameters=("mdiff", "vdiff"))
    m_u, v_u, slope, resid = _one_order_prior(mdiff, vdiff, gamma, gamma_var, cov_dg, sign)
    sd_u = float(np.sqrt(v_u))
    lo, hi = m_u - 10 * sd_u, m_u + 10 * sd_u
    # split where E[δ | u] = 0: with γ known P(δ < 0 | u) is a step there
    cut = min(max(m_u - mdiff / slope, lo), hi) if slope else lo
    (u1, w1), (u2, w2) = _grid(lo, cut, cells), _grid(cut, hi, cells)
    u, w = np.concatenate([u1, u2]), np.concatenate([w1, w2])
    prior = w * np.exp(-0.5 * ((u - m_u) / sd_u) ** 2) / (sd_u * np.sqrt(2 * np.pi))
    mean_d = mdiff + slope * (u - m_u)
    if resid > 0:
        below = ndtr(-mean_d / np.sqrt(resid))
    else:                                   # γ known: δ = u − s γ exactly
        below = np.where(mean_d < 0, 1.0, np.where(mean_d == 0, 0.5, 0.0))
    lik = np.exp(_log_lik(_triples(int(n)), u, nu))                   # (T, U)
    return float(np.minimum(lik @ (prior * below), lik @ (prior * (1.0 - below))).sum())


def gaussian_gain_one_order(mdiff: float, vdiff: float, n: int = 1, gamma: float = 0.0, gamma_var: float = 0.0,
                            cov_dg: float = 0.0, nu: float = 0.0, sign: int = 1) -> float:
    """The selection's Gaussian preposterior gain for the same design: ``n`` verdicts along
    ``x = (1, s)`` on the joint ``(δ, γ)`` (information ``n E[I(u)]``, Sherman–Morrison)."""
    m_u, v_u, _, _ = _one_order_prior(mdiff, vdiff, gamma, gamma_var, cov_dg, sign)
    info = n * float(expected_information(m_u, v_u, 0.0, nu, both_positions=False))
    cross = vdiff + sign * cov_dg
    s2 = vdiff - info * cross * cross / (1.0 + info * v_u)
    h = abs(mdiff) / np.sqrt(vdiff)
    return float(ndtr(-h) - misorder_after(h, s2, vdiff))
