"""Accuracy of a simulated posterior against the truth, and the target test.

A metric meets its target within ``TARGET_TOL`` (Kendall tau over 5 systems
with one misordered pair is 0.8 computed as 0.7999999999999999). A replay's
truth is itself a fit, so each pair carries its full-pool P(order), and
``credible_tau``/``credible_all`` count only the pairs that fit settles.
"""

from __future__ import annotations

import numpy as np

from planner.model import bt

Z95 = 1.959963984540054  # scipy.stats.norm.ppf(0.975)
# For these metrics smaller is better when reading a --target.
SMALLER_IS_BETTER = {"rmse", "width", "max_width"}
# A metric meets its target within this tolerance: with 5 systems one misordered pair gives
# Kendall tau = 1 - 2/10 = 0.8, computed as 0.7999999999999999, which a bare ``>=`` rejects.
TARGET_TOL = 1e-9
# A replay pair is "credibly separated" when the full-pool posterior puts P(order) above this.
CREDIBLE = 0.95
# ``resolved``: a pair is settled when P(order) or P(|gap| < margin) exceeds this.
RESOLVED = 0.95

def meets(metric: str, value, target: float):
    """Whether ``value`` meets ``target`` for ``metric``, within ``TARGET_TOL`` (works on arrays)."""
    if metric in SMALLER_IS_BETTER:
        return np.asarray(value) <= target + TARGET_TOL
    return np.asarray(value) >= target - TARGET_TOL


def pair_order_probs(mean: np.ndarray, cov: np.ndarray) -> np.ndarray:
    """P(strength i > strength j) for every pair under a Gaussian posterior (M x M)."""
    from scipy.special import ndtr  # what scipy.stats.norm.cdf computes, without its per-call overhead

    d = mean[:, None] - mean[None, :]
    v = np.diag(cov)[:, None] + np.diag(cov)[None, :] - 2 * cov
    with np.errstate(divide="ignore", invalid="ignore"):
        z = d / np.sqrt(np.maximum(v, 0))
    z = np.where(np.isfinite(z), z, np.where(d > 0, np.inf, np.where(d < 0, -np.inf, 0.0)))
    p = ndtr(z)
    np.fill_diagonal(p, 0.5)
    return p


def resolved_pairs(mean: np.ndarray, cov: np.ndarray, margin: float) -> np.ndarray:
    """Upper-triangle mask of the resolved pairs: P(order) > ``RESOLVED`` or P(|β_i − β_j| < margin) > ``RESOLVED``.

    ``margin`` is in logits (0: only credibly ordered pairs count). The target ``resolved`` asks for
    every pair; it needs no truth, so it is measured the same way in a simulation, a replay and a live
    study (the Gaussian posterior of the strengths: the Laplace fit, or the NUTS draws' moments).
    """
    from planner.acquisition.objectives import tie_probability

    m = mean.size
    p_order = pair_order_probs(mean, cov)
    v = np.diag(cov)[:, None] + np.diag(cov)[None, :] - 2 * cov
    p_tie = tie_probability(mean[:, None] - mean[None, :], np.sqrt(np.maximum(v, 0.0)), margin)
    settled = (np.maximum(p_order, 1 - p_order) > RESOLVED) | (p_tie > RESOLVED)
    return settled & np.triu(np.ones((m, m), dtype=bool), 1)


def resolved_share(mean: np.ndarray, cov: np.ndarray, margin: float) -> float:
    """Share of the pairs that are resolved (:func:`resolved_pairs`); 1.0 when every pair is."""
    m = mean.size
    n = m * (m - 1) // 2
    return float(resolved_pairs(mean, cov, margin).sum() / n) if n else 1.0


def credible_scores(mean: np.ndarray, truth: np.ndarray, credible: np.ndarray) -> tuple[float, float]:
    """Kendall tau over the credible pairs only, and 1.0 if all of them are ordered right.

    tau = (concordant - discordant) / (credible pairs); a tie in the posterior
    mean counts as neither. With no credible pair both are NaN.
    """
    i, j = np.nonzero(credible)
    if i.size == 0:
        return float("nan"), float("nan")
    s = np.sign(mean[i] - mean[j]) * np.sign(truth[i] - truth[j])
    return float(s.mean()), float(np.all(s > 0))


def metrics(mean: np.ndarray, sd: np.ndarray, truth: np.ndarray,
            credible: np.ndarray | None = None, *, cov: np.ndarray | None = None,
            margin: float = 0.0) -> dict[str, float]:
    """Accuracy of a posterior against the truth.

    ``tau``/``rho``: Kendall tau-b / Spearman rho between posterior means and
    the truth; ``rmse``: RMSE between z-scored means and z-scored truth;
    ``width``/``max_width``: mean/max 95% interval width in Elo points;
    ``coverage``: share of systems whose (centred) truth lies in its 95%
    interval; ``top1``: 1 if the top system is right; ``credible_tau`` /
    ``credible_all``: see :func:`credible_scores` (``credible`` defaults to
    every pair of unequal true strengths); ``resolved``: the share of pairs
    resolved at ``margin`` logits (:func:`resolved_share`; NaN without ``cov``).
    """
    from scipy.stats import kendalltau, spearmanr

    t = truth - truth.mean()
    z = lambda x: (x - x.mean()) / (x.std() if x.std() > 0 else 1.0)  # noqa: E731
    if np.ptp(mean) == 0:
        tau = rho = 0.0
    else:
        tau = float(kendalltau(mean, t).statistic)
        rho = float(spearmanr(mean, t).statistic)
    width = 2 * Z95 * sd * bt.ELO_SCALE
    if credible is None:
        credible = np.triu(t[:, None] != t[None, :], 1)
    ctau, call_ = credible_scores(mean, t, credible)
    return {
        "tau": tau,
        "rho": rho,
        "rmse": float(np.sqrt(np.mean((z(mean) - z(t)) ** 2))),
        "width": float(width.mean()),
        "max_width": float(width.max()),
        "coverage": float(np.mean(np.abs(mean - t) <= Z95 * sd)),
        "top1": float(np.argmax(mean) == np.argmax(t)),
        "credible_tau": ctau,
        "credible_all": call_,
        "resolved": float("nan") if cov is None else resolved_share(mean, cov, margin),
    }


