"""Prediction-powered Bradley–Terry: few human verdicts plus many judge verdicts.

Pure functions on arrays → frozen results; no study, no I/O.

The sampling unit is an *item*: one (prompt, unordered pair of systems). Each item has a
judge prediction ``yhat`` in [0, 1] (the judge's expected score of the first system of the pair:
win 1, tie 1/2, loss 0, averaged over the judge's verdicts — both presentation orders when the
judge saw both, so its position bias cancels in the prediction) and, on a random subset, a human
outcome ``y`` in [0, 1] (the same half-tie score averaged over the item's human votes).

The target is the human Bradley–Terry strength vector θ (log-strengths, mean 0): the minimiser of
the expected logistic loss ℓ(θ; x, y) = −y·xᵀθ + log(1 + exp(xᵀθ)), x = e_i − e_j. Ties therefore
count as half a win (the "half-score" convention: a quasi-likelihood M-estimator, not Davidson).

PPI++ (Angelopoulos, Duchi & Zrnic 2023, arXiv:2311.01453; for Bradley–Terry: Boyeau et al.
2024, *AutoEval Done Right*, arXiv:2403.07008) minimises the rectified loss

    L_λ(θ) = λ/N Σ_unlabelled ℓ(θ; x, ŷ) − λ/n Σ_labelled ℓ(θ; x, ŷ) + 1/n Σ_labelled ℓ(θ; x, y)

and tunes λ ∈ [0, 1] to minimise the trace of the asymptotic covariance. The formulas, the
λ rule and the covariance follow ``ppi_py.ppi_logistic_ci`` step for step (tests check it to
1e-6), so the numbers can be reproduced with that package; λ = 0 is the classical (human-only)
M-estimator with a sandwich covariance.

Validity needs only that the human-labelled items are a uniform random sample of the items,
or a sample with known inclusion probabilities (:func:`ipw_bradley_terry`, the active design of
:mod:`planner.hybrid.select`); the judge may be arbitrarily biased, a worse judge only makes the
interval wider (λ → 0).

Ties the Davidson way (:func:`ppi_davidson`, ``model="davidson"``): the same PPI++ / IPW machinery
on the Bradley–Terry–Davidson likelihood (win/tie/loss with tie parameter ν), engine in
:mod:`planner.hybrid.mest`. There ``win`` is the decisive-win probability σ(θ_i − θ_j) (given no tie).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.special import expit
from scipy.stats import norm

from planner.equality import array_eq
from planner.errors import DataError, UsageError, parameters_of, shown
from planner.limits import check_choice

__all__ = [
    "BTInterval",
    "HybridComparison",
    "compare_hybrid",
    "design_matrix",
    "human_only_bradley_terry",
    "ipw_bradley_terry",
    "judge_only_bradley_terry",
    "ppi_bradley_terry",
    "ppi_davidson",
]


@array_eq
@dataclass(frozen=True)
class BTInterval:
    """Bradley–Terry strengths with frequentist intervals (log-strength scale, mean 0).

    ``win``[i, j] = σ(θ_i − θ_j): the expected score of i against j (ties as half), with
    ``win_lo``/``win_hi`` the marginal interval (the θ_i − θ_j interval mapped through σ).
    ``rank_low``/``rank_high`` (1 = best): a rank set per system, from Bonferroni-simultaneous
    intervals on all pairwise differences, so the whole ranking is covered with probability at
    least ``confidence_level`` (asymptotically). ``lam`` is the PPI++ weight of the judge
    (0 = human only); ``n``/``N`` the labelled/unlabelled item counts.
    """

    method: str
    names: tuple[str, ...]
    theta: np.ndarray
    cov: np.ndarray
    lo: np.ndarray
    hi: np.ndarray
    win: np.ndarray
    win_lo: np.ndarray
    win_hi: np.ndarray
    rank_low: np.ndarray
    rank_high: np.ndarray
    lam: float
    n: int
    N: int
    confidence_level: float
    nu: float = float("nan")           # Davidson tie parameter ν and its interval (NaN: logistic model)
    nu_lo: float = float("nan")
    nu_hi: float = float("nan")

    @property
    def se(self) -> np.ndarray:
        return np.sqrt(np.diag(self.cov))


@dataclass(frozen=True)
class HybridComparison:
    """The PPI estimate beside the human-only and judge-only ones.

    ``effective_n``: the number of human-labelled items a human-only estimate would need for the
    same total variance of the strengths (n × tr Σ_human / tr Σ_ppi); ``labels_gained`` =
    effective_n − n, "how many human labels the judge was worth". The judge-only interval is the
    judge's *own* preference (position-averaged) — it estimates a different quantity than the human
    target and is shown for contrast only.
    """

    ppi: BTInterval
    human: BTInterval
    judge: BTInterval
    effective_n: float
    labels_gained: float


def design_matrix(pairs: np.ndarray, k: int) -> np.ndarray:
    """Rows e_i − e_j for pairs (i, j), the first system's column dropped (it is the reference)."""
    pairs = np.asarray(pairs, dtype=np.int64)
    x = np.zeros((len(pairs), k))
    rows = np.arange(len(pairs))
    x[rows, pairs[:, 0]] += 1.0
    x[rows, pairs[:, 1]] -= 1.0
    return x[:, 1:]


def _check(pairs, y, k: int, what: str) -> tuple[np.ndarray, np.ndarray]:
    pairs = np.asarray(pairs)
    y = np.asarray(y, dtype=float)
    if pairs.ndim != 2 or pairs.shape[1] != 2 or len(pairs) != len(y):
        raise UsageError(f"{shown(what)}: pairs must be an (n, 2) array with one outcome each; "
                         f"got shapes {pairs.shape} and {y.shape}", parameters=parameters_of(what))
    if len(pairs) and (pairs.min() < 0 or pairs.max() >= k or np.any(pairs[:, 0] == pairs[:, 1])):
        raise UsageError(f"{shown(what)}: system indices must be distinct and in 0..{k - 1}",
                         parameters=parameters_of(what))
    if not np.all(np.isfinite(y)) or np.any((y < 0) | (y > 1)):
        raise UsageError(f"{shown(what)}: outcomes must be scores in [0, 1] (1 = first system wins, 1/2 tie)",
                         parameters=parameters_of(what))
    return pairs.astype(np.int64), y


def _fit(x_l, y_l, yh_l, x_u, yh_u, lam: float) -> np.ndarray:
    """Newton on the rectified loss; its Hessian λ·H_u + (1−λ)·H_l is PSD for λ ∈ [0, 1]."""
    n, m = len(x_l), len(x_u)
    theta = np.zeros(x_l.shape[1])
    for _ in range(100):
        mu_l, mu_u = expit(x_l @ theta), expit(x_u @ theta) if m else np.zeros(0)
        g = x_l.T @ (mu_l - y_l) / n - lam * x_l.T @ (mu_l - yh_l) / n
        h = (1 - lam) * (x_l.T * (mu_l * (1 - mu_l))) @ x_l / n
        if m and lam:
            g = g + lam * x_u.T @ (mu_u - yh_u) / m
            h = h + lam * (x_u.T * (mu_u * (1 - mu_u))) @ x_u / m
        try:
            step = np.linalg.solve(h, g)
        except np.linalg.LinAlgError as e:
            raise DataError("the comparisons do not connect all systems (singular Bradley–Terry fit); "
                            "every system needs comparisons linking it to the others") from e
        theta = theta - step
        if np.max(np.abs(step)) < 1e-12:
            return theta
    raise DataError("the Bradley–Terry fit has no finite solution (a system wins or loses all of its "
                    "labelled comparisons); label more items")


def _stats(theta, x_l, y_l, yh_l, x_u, yh_u, use_unlabelled: bool):
    """Per-item gradients and the inverse Hessian, exactly as ``ppi_py._logistic_get_stats``."""
    n, m = len(x_l), len(x_u)
    mu_l, mu_u = expit(x_l @ theta), expit(x_u @ theta)
    if use_unlabelled:
        hess = ((x_u.T * (mu_u * (1 - mu_u))) @ x_u + (x_l.T * (mu_l * (1 - mu_l))) @ x_l) / (n + m)
        g_hat_u = x_u * (mu_u - yh_u)[:, None]
    else:
        hess = (x_l.T * (mu_l * (1 - mu_l))) @ x_l / n
        g_hat_u = np.zeros_like(x_u)
    grads = x_l * (mu_l - y_l)[:, None]
    grads_hat = x_l * (mu_l - yh_l)[:, None]
    return grads, grads_hat, g_hat_u, np.linalg.inv(hess)


def _lam(grads, grads_hat, g_hat_u, inv_h) -> float:
    """PPI++ power tuning (trace criterion, clipped to [0, 1]) as ``ppi_py._calc_lam_glm``."""
    n, m = len(grads), len(g_hat_u)
    gc, ghc = grads - grads.mean(0), grads_hat - grads_hat.mean(0)
    cov_g = (gc.T @ ghc + ghc.T @ gc) / n
    var_gh = np.atleast_2d(np.cov(np.concatenate([grads_hat, g_hat_u]).T))
    num = np.trace(inv_h @ cov_g @ inv_h)
    den = 2 * (1 + n / m) * np.trace(inv_h @ var_gh @ inv_h)
    return float(np.clip(num / den, 0.0, 1.0)) if den > 0 else 0.0


def _rectified(x_l, y_l, yh_l, x_u, yh_u, lam):
    """Point estimate and covariance (reference-dropped coordinates) for a fixed λ."""
    n, m = len(x_l), len(x_u)
    theta = _fit(x_l, y_l, yh_l, x_u, yh_u, lam)
    grads, grads_hat, g_hat_u, inv_h = _stats(theta, x_l, y_l, yh_l, x_u, yh_u, lam != 0)
    d = x_l.shape[1]
    var_u = np.atleast_2d(np.cov((lam * g_hat_u).T)).reshape(d, d) if m > 1 else np.zeros((d, d))
    var = np.atleast_2d(np.cov((grads - lam * grads_hat).T)).reshape(d, d)
    sigma = inv_h @ ((n / m if m else 0.0) * var_u + var) @ inv_h / n
    return theta, sigma, (grads, grads_hat, g_hat_u, inv_h)


def _interval(method, names, theta_r, cov_r, lam, n, m, confidence_level) -> BTInterval:
    k = len(names)
    emb = np.vstack([np.zeros(k - 1), np.eye(k - 1)])          # reference-dropped → full
    centre = np.eye(k) - 1.0 / k                                 # full → mean 0
    a = centre @ emb
    theta, cov = a @ theta_r, a @ cov_r @ a.T
    z = norm.ppf(0.5 + confidence_level / 2)
    se = np.sqrt(np.clip(np.diag(cov), 0, None))
    diff = theta[:, None] - theta[None, :]
    var_d = np.clip(np.diag(cov)[:, None] + np.diag(cov)[None, :] - 2 * cov, 0, None)
    sd_d = np.sqrt(var_d)
    n_pairs = k * (k - 1) // 2
    zb = norm.ppf(1 - (1 - confidence_level) / (2 * n_pairs))    # Bonferroni over the pairs
    above = (diff - zb * sd_d) > 0                               # i credibly above j
    np.fill_diagonal(above, False)
    rank_low = 1 + above.sum(axis=0)                             # systems credibly above i
    rank_high = k - above.sum(axis=1)                            # minus systems credibly below i
    return BTInterval(method, tuple(names), theta, cov, theta - z * se, theta + z * se,
                      expit(diff), expit(diff - z * sd_d), expit(diff + z * sd_d),
                      rank_low, rank_high, float(lam), int(n), int(m), float(confidence_level))


def _prepare(names, pairs_l, y_l, yhat_l, pairs_u, yhat_u, confidence_level):
    k = len(names)
    if k < 2 or len(set(names)) != k:
        raise UsageError(f"need at least 2 distinct system names; got {k}", parameters=('names',))
    if not 0 < confidence_level < 1:
        raise UsageError(f"`confidence_level` must be in (0, 1); got {confidence_level!r:.80}",
                         parameters=('confidence_level',))
    pairs_l, y_l = _check(pairs_l, y_l, k, "labelled items")
    _, yhat_l = _check(pairs_l, yhat_l, k, "judge predictions on labelled items")
    pairs_u, yhat_u = _check(pairs_u, yhat_u, k, "judge predictions on unlabelled items")
    if len(y_l) < k:
        raise UsageError(f"need at least {k} human-labelled items for {k} systems; got {len(y_l)}",
                         parameters=('y_labelled',))
    return k, design_matrix(pairs_l, k), y_l, yhat_l, design_matrix(pairs_u, k), yhat_u


def ppi_bradley_terry(names, pairs_labelled, y_labelled, yhat_labelled, pairs_unlabelled, yhat_unlabelled,
                      *, confidence_level: float = 0.9, lam: float | None = None) -> BTInterval:
    """PPI++ Bradley–Terry strengths of the *human* preference.

    ``pairs_*``: (n, 2) system indices into ``names``; ``y_labelled``: human scores of the first
    system in [0, 1]; ``yhat_*``: judge predictions of the same score. ``lam=None`` tunes λ
    (two passes, as ``ppi_py.ppi_logistic_ci``); a number fixes it (0 = human only).
    """
    _k, x_l, y_l, yh_l, x_u, yh_u = _prepare(names, pairs_labelled, y_labelled, yhat_labelled,
                                             pairs_unlabelled, yhat_unlabelled, confidence_level)
    if len(x_u) < 2 and lam != 0:
        raise UsageError("need at least 2 unlabelled items with judge predictions (or `lam` 0)", parameters=('lam',))
    if lam is None:
        _, _, st = _rectified(x_l, y_l, yh_l, x_u, yh_u, 1.0)
        lam1 = _lam(*st)
        _, _, st = _rectified(x_l, y_l, yh_l, x_u, yh_u, lam1)
        lam = _lam(*st)
    elif not 0 <= lam <= 1:
        raise UsageError(f"`lam` must be in [0, 1] or None (tuned); got {lam!r:.80}", parameters=('lam',))
    theta, sigma, _ = _rectified(x_l, y_l, yh_l, x_u, yh_u, float(lam))
    return _interval("ppi++" if lam else "human only", names, theta, sigma, lam, len(x_l), len(x_u),
                     confidence_level)


def human_only_bradley_terry(names, pairs, y, *, confidence_level: float = 0.9) -> BTInterval:
    """Classical M-estimate from the human-labelled items alone (sandwich covariance)."""
    pairs = np.asarray(pairs)
    y = np.asarray(y, dtype=float)
    return ppi_bradley_terry(names, pairs, y, y, pairs[:0], y[:0], confidence_level=confidence_level, lam=0.0)


def judge_only_bradley_terry(names, pairs, yhat, *, confidence_level: float = 0.9) -> BTInterval:
    """The judge's own (position-averaged) preference on every item: not the human target."""
    r = human_only_bradley_terry(names, pairs, yhat, confidence_level=confidence_level)
    return BTInterval("judge only", *[getattr(r, f) for f in BTInterval.__dataclass_fields__ if f != "method"])


def compare_hybrid(names, pairs_labelled, y_labelled, yhat_labelled, pairs_unlabelled, yhat_unlabelled,
                   *, confidence_level: float = 0.9) -> HybridComparison:
    """PPI++, human-only and judge-only fits on the same items, and the effective-sample-size gain."""
    ppi = ppi_bradley_terry(names, pairs_labelled, y_labelled, yhat_labelled, pairs_unlabelled,
                            yhat_unlabelled, confidence_level=confidence_level)
    human = human_only_bradley_terry(names, pairs_labelled, y_labelled, confidence_level=confidence_level)
    all_pairs = np.concatenate([np.asarray(pairs_labelled), np.asarray(pairs_unlabelled)])
    all_yhat = np.concatenate([np.asarray(yhat_labelled, float), np.asarray(yhat_unlabelled, float)])
    judge = judge_only_bradley_terry(names, all_pairs, all_yhat, confidence_level=confidence_level)
    n = ppi.n
    ratio = float(np.trace(human.cov) / np.trace(ppi.cov)) if np.trace(ppi.cov) > 0 else float("nan")
    return HybridComparison(ppi, human, judge, n * ratio, n * ratio - n)



# ---------------------------------------------------------------- Davidson ties, IPW (active) design

def _check_shares(y3, n: int, what: str, allow_missing: bool = False) -> np.ndarray:
    y3 = np.asarray(y3, dtype=float)
    if y3.shape != (n, 3):
        raise UsageError(f"{shown(what)}: need one (win, tie, loss) share row per item; got shape {y3.shape}",
                         parameters=parameters_of(what))
    ok = ~np.isnan(y3).all(axis=1) if allow_missing else np.ones(n, dtype=bool)
    v = y3[ok]
    if not np.all(np.isfinite(v)) or np.any(v < 0) or np.any(np.abs(v.sum(axis=1) - 1) > 1e-9):
        raise UsageError(f"{shown(what)}: shares must be >= 0 and sum to 1 per item (win, tie, loss of the "
                         f"first system)",
                         parameters=parameters_of(what))
    return y3


def _finish(method, names, model, phi, sigma, lam, n, m, confidence_level) -> BTInterval:
    from dataclasses import replace

    p = len(names) - 1
    r = _interval(method, names, phi[:p], sigma[:p, :p], lam, n, m, confidence_level)
    if model != "davidson":
        return r
    z, kappa = norm.ppf(0.5 + confidence_level / 2), float(phi[p])
    se = float(np.sqrt(max(sigma[p, p], 0.0)))
    return replace(r, nu=float(np.exp(kappa)), nu_lo=float(np.exp(kappa - z * se)), nu_hi=float(np.exp(kappa + z * se)))


def _score(y3: np.ndarray) -> np.ndarray:
    return y3[:, 0] + y3[:, 1] / 2


def ppi_davidson(names, pairs_labelled, y_labelled, yhat_labelled, pairs_unlabelled, yhat_unlabelled,
                 *, confidence_level: float = 0.9, lam: float | None = None) -> BTInterval:
    """PPI++ on the Bradley–Terry–Davidson likelihood: ties as ties, not half wins.

    ``y_labelled``/``yhat_*``: (n, 3) win/tie/loss shares of the first system (the human votes'
    shares; the judge's over its verdicts, both orders pooled). λ is tuned on the strength block
    of the covariance. Without a single tie (human or judge) ν has no finite estimate: the fit is
    then exactly the logistic one (:func:`ppi_bradley_terry` on the scores), ν = 0.
    """
    from planner.hybrid import mest as me

    y_l = _check_shares(y_labelled, len(np.asarray(pairs_labelled)), "labelled items")
    yh_l = _check_shares(yhat_labelled, len(y_l), "judge predictions on labelled items")
    yh_u = _check_shares(yhat_unlabelled, len(np.asarray(pairs_unlabelled)), "judge predictions on unlabelled items")
    if not (y_l[:, 1].any() or yh_l[:, 1].any() or yh_u[:, 1].any()):
        from dataclasses import replace

        r = ppi_bradley_terry(names, pairs_labelled, _score(y_l), _score(yh_l), pairs_unlabelled, _score(yh_u),
                              confidence_level=confidence_level, lam=lam)
        return replace(r, nu=0.0, nu_lo=0.0, nu_hi=0.0)
    _k, x_l, _, _, x_u, _ = _prepare(names, pairs_labelled, _score(y_l), _score(yh_l), pairs_unlabelled,
                                     _score(yh_u), confidence_level)
    if len(x_u) < 2 and lam != 0:
        raise UsageError("need at least 2 unlabelled items with judge predictions (or `lam` 0)", parameters=('lam',))
    if lam is not None and not 0 <= lam <= 1:
        raise UsageError(f"`lam` must be in [0, 1] or None (tuned); got {lam!r:.80}", parameters=('lam',))
    st = me.statistic
    phi, sigma, lam = me.ppi("davidson", x_l, st("davidson", y_l), st("davidson", yh_l),
                             x_u, st("davidson", yh_u), lam)
    return _finish("ppi++ davidson" if lam else "human only davidson", names, "davidson", phi, sigma, lam,
                   len(x_l), len(x_u), confidence_level)


def ipw_bradley_terry(names, pairs, y, yhat, labelled, pi, *, model: str = "logistic", weights=None,
                      confidence_level: float = 0.9, lam: float | None = None, clusters=None) -> BTInterval:
    """Active-inference PPI (inverse-probability weighted) over *all* items.

    ``pairs`` (N, 2); ``labelled`` (N,) bool: the items that carry human votes; ``pi`` (N,) each
    item's known inclusion probability (used where labelled; > 0 there); ``y``: human outcomes
    (scores, or (N, 3) shares for ``model="davidson"``; ignored where unlabelled); ``yhat`` the
    judge's predictions in the same form. ``weights`` (N,) optional population weights c_i (e.g.
    stratum weight ÷ stratum share of items): the target becomes the c-weighted population fit.
    ``lam=0``: the Horvitz–Thompson human-only estimate; ``lam=None`` tunes λ. ``clusters`` (N,)
    optional integer ids (the items' prompts): the covariance is cluster-robust over them.
    """
    from planner.hybrid import mest as me

    check_choice("model", model, me.MODELS)
    k = len(names)
    labelled = np.asarray(labelled, dtype=bool)
    n_all = len(labelled)
    pi = np.asarray(pi, dtype=float)
    c = np.ones(n_all) if weights is None else np.asarray(weights, dtype=float)
    if pi.shape != (n_all,) or c.shape != (n_all,):
        raise UsageError(f"`pi` and `weights` need one value per item ({n_all}); got {pi.shape} and {c.shape}",
                         parameters=('pi', 'weights'))
    if np.any(~np.isfinite(pi[labelled])) or np.any((pi[labelled] <= 0) | (pi[labelled] > 1)):
        raise UsageError("`pi`: every labelled item needs an inclusion probability in (0, 1]", parameters=('pi',))
    if not np.all(np.isfinite(c)) or np.any(c < 0):
        raise UsageError("`weights` must be finite and >= 0", parameters=('weights',))
    if model == "davidson":
        y3 = _check_shares(np.where(labelled[:, None], y, np.nan), n_all, "labelled items", allow_missing=True)
        yh3 = _check_shares(yhat, n_all, "judge predictions")
        y_s, yh_s = np.where(labelled, _score(np.nan_to_num(y3)), 0.5), _score(yh3)
        s, sh = me.statistic(model, np.nan_to_num(y3)), me.statistic(model, yh3)
    else:
        y_s, yh_s = np.where(labelled, np.asarray(y, dtype=float), 0.5), np.asarray(yhat, dtype=float)
        s, sh = me.statistic(model, y_s), me.statistic(model, yh_s)
    _, x, _, _, _, _ = _prepare(names, np.asarray(pairs), y_s, yh_s, np.asarray(pairs)[:0], yh_s[:0], confidence_level)
    if labelled.sum() < k:
        raise UsageError(f"need at least {k} human-labelled items for {k} systems; got {int(labelled.sum())}",
                         parameters=('y',))
    if lam is not None and not 0 <= lam <= 1:
        raise UsageError(f"`lam` must be in [0, 1] or None (tuned); got {lam!r:.80}", parameters=('lam',))
    phi, sigma, lam = me.ipw(model, x, s, sh, labelled, np.where(labelled, pi, 1.0), c, lam, clusters)
    tag = "ipw-ppi" if lam else "ipw human only"
    return _finish(tag + (" davidson" if model == "davidson" else ""), names, model, phi, sigma, lam,
                   int(labelled.sum()), int(n_all - labelled.sum()), confidence_level)
