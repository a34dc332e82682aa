"""The exact one-dimensional preposterior misorder of one system pair (issue 14 audit).

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
        raise UsageError(f"n ({n}) must be a whole number >= 0")
    if not (np.isfinite(mdiff) and np.isfinite(vdiff) and vdiff > 0):
        raise UsageError(f"mdiff ({mdiff}) must be finite and vdiff ({vdiff}) > 0")
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
