"""The M-estimation engine behind :mod:`planner.hybrid.ppi`: two outcome models, two designs.

Both Bradley–Terry models are exponential families in the linear predictor η of an item, so one
engine serves both. With parameters φ = (θ without the reference system[, κ = log ν]) and, per item,
η = A φ:

* ``logistic`` (ties as half a win): η = d = θ_i − θ_j, statistic s = y (the half-tie score),
  log-partition log(1 + eᵈ); ℓ = log(1 + eᵈ) − y·d.
* ``davidson`` (Davidson 1970, JASA 65:317): η = (d, κ), win/tie/loss probabilities
  e^{d/2}/Z, ν/Z, e^{−d/2}/Z with Z = e^{d/2} + e^{−d/2} + ν. The statistic of an outcome with
  win/tie/loss shares (w, t, l) is s = ((w − l)/2, t), the log-partition log Z, and
  ℓ = log Z − s·η is the multinomial negative log-likelihood (shares: a quasi-likelihood for the
  mean of an item's votes).

For either, ∇_η ℓ = m(η) − s with m = E[s] = (σ(d)) or ((p_w − p_l)/2, p_t), and ∇²_η ℓ = V(η),
the covariance of s: σ(1 − σ), or

    V = [[(p_w + p_l − (p_w − p_l)²)/4, −(p_w − p_l)·p_t/2], [−(p_w − p_l)·p_t/2, p_t(1 − p_t)]].

The Hessian does not depend on the outcome, so a rectified (PPI++) or inverse-probability-weighted
(active) loss is Σ_i a_i log Z(η_i) − Σ_i b_iᵀ η_i with a_i ≥ 0: convex, solved by damped Newton.
No study, no I/O; :mod:`planner.hybrid.ppi` turns the results into intervals.
"""

from __future__ import annotations

import numpy as np
from scipy.special import expit

from planner.errors import DataError

MODELS = ("logistic", "davidson")


def n_params(model: str, x: np.ndarray) -> int:
    return x.shape[1] + (model == "davidson")


def eta(model: str, x: np.ndarray, phi: np.ndarray) -> np.ndarray:
    """η_i = A_i φ: (n, q); A_i = x_i (logistic) or [[x_i, 0], [0, 1]] (davidson)."""
    p = x.shape[1]
    d = x @ phi[:p]
    return d[:, None] if model == "logistic" else np.column_stack([d, np.full(len(d), phi[p])])


def pull_back(model: str, x: np.ndarray, r: np.ndarray) -> np.ndarray:
    """Per-item A_iᵀ r_i: (n, P)."""
    g = x * r[:, :1]
    return g if model == "logistic" else np.column_stack([g, r[:, 1]])


def weighted_hessian(model: str, x: np.ndarray, v: np.ndarray, w: np.ndarray) -> np.ndarray:
    """Σ_i w_i A_iᵀ V_i A_i."""
    h00 = (x.T * (w * v[:, 0, 0])) @ x
    if model == "logistic":
        return h00
    p = x.shape[1]
    h = np.empty((p + 1, p + 1))
    h[:p, :p] = h00
    h[:p, p] = h[p, :p] = x.T @ (w * v[:, 0, 1])
    h[p, p] = float(w @ v[:, 1, 1])
    return h


def statistic(model: str, y: np.ndarray) -> np.ndarray:
    """s (n, q): the score (logistic) or ((w − l)/2, t) from win/tie/loss shares (davidson)."""
    y = np.asarray(y, dtype=float)
    if model == "logistic":
        return y.reshape(-1, 1)
    return np.column_stack([(y[:, 0] - y[:, 2]) / 2, y[:, 1]])


def moments(model: str, eta: np.ndarray):
    """log Z (n,), m = E s (n, q) and V = Cov s (n, q, q) at η (n, q)."""
    d = eta[:, 0]
    if model == "logistic":
        mu = expit(d)
        return np.logaddexp(0.0, d), mu[:, None], (mu * (1 - mu))[:, None, None]
    logits = np.column_stack([d / 2, eta[:, 1], -d / 2])
    top = logits.max(axis=1, keepdims=True)
    e = np.exp(logits - top)
    total = e.sum(axis=1)
    log_z = top[:, 0] + np.log(total)                       # log-sum-exp, stable
    pw, pt, pl = (e / total[:, None]).T
    diff = pw - pl
    v = np.empty((len(d), 2, 2))
    v[:, 0, 0] = (pw + pl - diff ** 2) / 4
    v[:, 0, 1] = v[:, 1, 0] = -diff * pt / 2
    v[:, 1, 1] = pt * (1 - pt)
    return log_z, np.column_stack([diff / 2, pt]), v


def item_gradients(model: str, x: np.ndarray, phi: np.ndarray, s: np.ndarray) -> np.ndarray:
    """Per-item ∇_φ ℓ = A_iᵀ (m_i − s_i): (n, P)."""
    _, m, _ = moments(model, eta(model, x, phi))
    return pull_back(model, x, m - s)


def hessian(model: str, x: np.ndarray, phi: np.ndarray, w: np.ndarray) -> np.ndarray:
    """Σ_i w_i A_iᵀ V_i A_i at φ."""
    return weighted_hessian(model, x, moments(model, eta(model, x, phi))[2], w)


def solve(model: str, x: np.ndarray, w: np.ndarray, b: np.ndarray) -> np.ndarray:
    """argmin_φ Σ w_i log Z(A_i φ) − Σ b_iᵀ A_i φ (w ≥ 0), damped Newton with step halving."""
    phi = np.zeros(n_params(model, x))

    def loss(f):
        e = eta(model, x, f)
        return float(w @ moments(model, e)[0] - np.sum(b * e))

    cur = loss(phi)
    for _ in range(200):
        _, m, v = moments(model, eta(model, x, phi))
        g = pull_back(model, x, w[:, None] * m - b).sum(axis=0)
        try:
            step = np.linalg.solve(weighted_hessian(model, x, v, w), g)
        except np.linalg.LinAlgError as e:
            raise DataError("the comparisons do not connect all systems (singular Bradley–Terry fit); "
                            "every system needs comparisons linking it to the others") from e
        t = 1.0
        while t > 1e-10:
            new = loss(phi - t * step)
            if new <= cur + 1e-14 * max(1.0, abs(cur)):
                break
            t /= 2
        phi, cur = phi - t * step, new
        if np.max(np.abs(phi)) > 40:
            break
        if np.max(np.abs(t * step)) < 1e-11:
            return phi
    raise DataError("the Bradley–Terry fit has no finite solution (a system wins or loses all of its "
                    "labelled comparisons, or no labelled comparison is a tie under the Davidson model); "
                    "label more items")


def trace_lam(cov_cross: np.ndarray, var_c: np.ndarray, inv_h: np.ndarray, p: int) -> float:
    """λ minimising tr[(H⁻¹ Var(B + λC) H⁻¹)_θθ], clipped to [0, 1] (θ block: the strengths).

    ``cov_cross`` = Cov(B, C) + Cov(C, B); ``var_c`` = Var(C).
    """
    ih = inv_h[:p]
    num = np.trace(ih @ cov_cross @ ih.T)
    den = 2 * np.trace(ih @ var_c @ ih.T)
    return float(np.clip(-num / den, 0.0, 1.0)) if den > 0 else 0.0


def ppi(model: str, x_l, s_l, sh_l, x_u, sh_u, lam: float | None):
    """PPI++ (two labelled/unlabelled samples) for any model: ``ppi_py``'s formulas, generalised.

    Returns ``(phi, sigma, lam)``; for ``logistic`` this is exactly ``hybrid.ppi_bradley_terry``.
    """
    n, m = len(x_l), len(x_u)
    p = x_l.shape[1]

    def fit(lm):
        w = np.concatenate([np.full(n, (1 - lm) / n), np.full(m, lm / m if m else 0.0)])
        b = np.concatenate([(s_l - lm * sh_l) / n, lm * sh_u / m if m else sh_u[:0]])
        phi = solve(model, np.concatenate([x_l, x_u]), w, b)
        grads, grads_hat = item_gradients(model, x_l, phi, s_l), item_gradients(model, x_l, phi, sh_l)
        if lm:
            g_hat_u = item_gradients(model, x_u, phi, sh_u)
            h = hessian(model, np.concatenate([x_l, x_u]), phi, np.full(n + m, 1.0 / (n + m)))
        else:
            g_hat_u = np.zeros((m, n_params(model, x_l)))
            h = hessian(model, x_l, phi, np.full(n, 1.0 / n))
        return phi, grads, grads_hat, g_hat_u, np.linalg.inv(h)

    def tuned(grads, grads_hat, g_hat_u, inv_h):
        gc, ghc = grads - grads.mean(0), grads_hat - grads_hat.mean(0)
        var_gh = np.atleast_2d(np.cov(np.concatenate([grads_hat, g_hat_u]).T))
        # the PPI++ criterion (ppi_py._calc_lam_glm): B = grads, C = −grads_hat (labelled) with the
        # unlabelled sample's independent variance added: Var(C) → (1 + n/m)·Var(ĝ)
        return trace_lam(-(gc.T @ ghc + ghc.T @ gc) / n, (1 + n / m) * var_gh, inv_h, p)

    if lam is None:
        lam = tuned(*fit(1.0)[1:])
        lam = tuned(*fit(lam)[1:])
    phi, grads, grads_hat, g_hat_u, inv_h = fit(lam)
    d = n_params(model, x_l)
    var_u = np.atleast_2d(np.cov((lam * g_hat_u).T)).reshape(d, d) if m > 1 else np.zeros((d, d))
    var = np.atleast_2d(np.cov((grads - lam * grads_hat).T)).reshape(d, d)
    return phi, inv_h @ ((n / m if m else 0.0) * var_u + var) @ inv_h / n, float(lam)


def ipw(model: str, x, s, sh, labelled, pi, weights, lam: float | None, clusters=None):
    """Active-inference (IPW) PPI over all N items (Zrnic & Candès 2024, ICML).

    Minimises (1/N) Σ_i c_i [λ ℓ(φ; ŷ_i) + ξ_i/π_i (ℓ(φ; y_i) − λ ℓ(φ; ŷ_i))], ξ_i = labelled,
    π_i its inclusion probability, c_i a population weight (1 = every item alike). Sandwich
    covariance H⁻¹ Ĉov(g_i) H⁻¹ / N over the N per-item gradients g_i; λ tuned to minimise the
    trace of its strength block (g_i = B_i + λ C_i, B_i = c ξ/π ∇ℓ(y), C_i = c (1 − ξ/π) ∇ℓ(ŷ)).
    ``clusters`` (N,) integer ids: items sharing a cluster (a prompt) are correlated, so the meat sums
    their centred gradients first — ``G/(G−1) Σ_c (Σ_{i∈c} g_i − n_c ḡ)(…)ᵀ / N`` (Liang & Zeger 1986).
    Returns ``(phi, sigma, lam)``.
    """
    n_all = len(x)
    r = np.where(labelled, 1.0 / pi, 0.0) * weights
    s = np.where(labelled[:, None], s, 0.0)
    p = x.shape[1]

    def fit(lm):
        w = (weights * lm + r * (1 - lm)) / n_all
        b = (weights[:, None] * lm * sh + r[:, None] * (s - lm * sh)) / n_all
        phi = solve(model, x, w, b)
        g_y, g_h = item_gradients(model, x, phi, s), item_gradients(model, x, phi, sh)
        big_b = r[:, None] * g_y
        big_c = (weights - r)[:, None] * g_h
        inv_h = np.linalg.inv(hessian(model, x, phi, w))
        return phi, big_b, big_c, inv_h

    def tuned(big_b, big_c, inv_h):
        bc, cc = big_b - big_b.mean(0), big_c - big_c.mean(0)
        return trace_lam((bc.T @ cc + cc.T @ bc) / n_all, cc.T @ cc / n_all, inv_h, p)

    def fit_or_less(lm):
        """Large 1/π weights can push the rectified outcomes of a pair outside [0, 1] and leave the
        loss without a minimum at this λ: halve λ until it has one (λ = 0, plain IPW, always may)."""
        for _ in range(8):
            try:
                return lm, fit(lm)
            except DataError:
                if lm == 0:
                    raise
                lm = lm / 2 if lm > 1 / 64 else 0.0
        return 0.0, fit(0.0)

    if lam is None:
        lam = tuned(*fit_or_less(1.0)[1][1:])
        lam = tuned(*fit_or_less(lam)[1][1:])
        lam, (phi, big_b, big_c, inv_h) = fit_or_less(lam)
    else:
        phi, big_b, big_c, inv_h = fit(lam)
    g = big_b + lam * big_c
    gc = g - g.mean(0)
    if clusters is not None:
        ids = np.unique(np.asarray(clusters), return_inverse=True)[1].ravel()
        k = int(ids.max()) + 1
        sums = np.zeros((k, gc.shape[1]))
        np.add.at(sums, ids, gc)
        meat = sums.T @ sums / n_all * (k / (k - 1.0) if k > 1 else 1.0)
        return phi, inv_h @ meat @ inv_h / n_all, float(lam)
    return phi, inv_h @ (gc.T @ gc / n_all) @ inv_h / n_all, float(lam)
