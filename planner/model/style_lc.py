"""Length-controlled win rate against an anchor (AlpacaEval's LC GLM; core, pure).

Dubois, Galambosi, Liang & Hashimoto (2024), "Length-Controlled AlpacaEval: A
Simple Way to Debias Automatic Evaluators", arXiv:2404.04475. Upstream code:
github.com/tatsu-lab/alpaca_eval, commit cd543a149df89434d8a54582c0151c0b945c3d20,
``src/alpaca_eval/metrics/glm_winrate.py`` (``GLM_INFO``,
``_get_featurized_data``, ``get_length_controlled_winrate``).

For one system ``m`` judged against the anchor on prompts ``i``, with the
preference ``y_i`` for ``m`` (1 win, 0.5 tie, 0 loss) and response lengths in
characters::

    std_delta_len_i = (len_anchor_i - len_m_i) / sd(len_anchor - len_m)      (sd with ddof = 1)
    logit P(m preferred)_i = w_m + w_len * tanh(std_delta_len_i) [+ w_diff * difficulty_i]

fitted by maximum likelihood with the fractional outcome ``y`` (the Bernoulli
log likelihood ``y log p + (1 - y) log(1 - p)``, upstream's
``is_ytrue_proba=True``). The **LC win rate** is the mean predicted preference
with the length term set to 0: ``mean_i logistic(w_m [+ w_diff * difficulty_i])``
(``logistic(w_m)`` without difficulty).

Departures from upstream, documented in docs/methods.md: upstream fits with
scikit-learn's L1-penalised ``LogisticRegressionCV`` (5-fold, penalty chosen by
cross-validation) and, in ``length_controlled_v1``, regularises toward two
"gamed" baselines with instruction difficulties downloaded from the Hugging Face
hub; here the fit is plain maximum likelihood with an optional weak Gaussian
prior (``prior_sd``, default 10 logits, which only matters when one side wins
every judgment) and the difficulty is the study's own ``prompts.difficulty``
when every prompt involved has one.

The interval is the delta method on a **cluster-robust (sandwich) covariance** of the weights,
``H^-1 B H^-1`` with ``B = G/(G-1) sum_c g_c g_c^T`` over clusters ``c`` of judgments (the same prompt:
both orders, several annotators; Liang & Zeger 1986), ``g_c`` their summed scores ``x (y - p)``. The
model-based inverse information treats every outcome as Bernoulli with variance ``p (1 - p)``; a half
tie (``y = 1/2``) varies less, and verdicts on one prompt agree, so neither is right. Clustering never
narrows the interval below the judgment-by-judgment sandwich (clusters of one judgment).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from planner.errors import UsageError

LC_PRIOR_SD = 10.0  # weak N(0, 10^2) prior on every GLM weight: finite estimates under separation


@dataclass(frozen=True)
class LCResult:
    """Length-controlled win rate of one system against the anchor.

    Attributes
    ----------
    system : str
    n : int
        Usable judgments against the anchor (ties count as half a win).
    win_rate : float
        Raw half-tie win rate.
    lc_win_rate, lc_lo, lc_hi : float
        LC win rate and its 95% interval (delta method on the GLM weights,
        clipped to [0, 1]).
    weights : dict
        GLM weights: ``intercept``, ``tanh_length`` (negative when the judge
        favours the longer answer: the covariate is anchor minus system) and
        ``difficulty`` when used.
    weight_sd : dict
        Their standard errors (cluster-robust sandwich, :func:`sandwich`).
    """

    system: str
    n: int
    win_rate: float
    lc_win_rate: float
    lc_lo: float
    lc_hi: float
    weights: dict
    weight_sd: dict


def is_extreme_change(win_rate: float, lc: float, abs_diff: float = 0.10, rel_diff: float = 4.0) -> bool:
    """Upstream's warning rule (``get_is_extreme_changes``), on the [0, 1] scale.

    True when the LC win rate falls below ``min(w - w/rel, w - abs)`` or rises
    above ``max(w + (1 - w)/rel, w + abs)``: "this might be a sign of failure of
    the GLM" (typically one system is longer on nearly every prompt, so setting
    the length term to 0 extrapolates).
    """
    low = min(win_rate - win_rate / rel_diff, win_rate - abs_diff)
    high = max(win_rate + (1 - win_rate) / rel_diff, win_rate + abs_diff)
    return lc < low or lc > high


def _design(len_anchor, len_system, difficulty):
    delta = np.asarray(len_anchor, float) - np.asarray(len_system, float)
    sd = float(np.std(delta, ddof=1)) if delta.size > 1 else 0.0
    std_delta = delta / sd if sd > 0 else np.zeros_like(delta)
    cols = [np.ones_like(delta), np.tanh(std_delta)]
    if difficulty is not None:
        cols.append(np.asarray(difficulty, float))
    return np.column_stack(cols)


def fit_fractional_logit(x, y, prior_sd: float | None = LC_PRIOR_SD, tol: float = 1e-12, max_iter: int = 100):
    """Maximum (penalised) likelihood of ``logit P = x @ w`` for outcomes ``y`` in [0, 1], by Newton.

    Returns ``(w, cov)`` with ``cov`` the inverse of the observed information
    (plus the prior precision). ``prior_sd=None``: plain maximum likelihood.
    """
    x = np.asarray(x, float)
    y = np.asarray(y, float)
    prec = 0.0 if prior_sd is None else 1.0 / prior_sd**2
    w = np.zeros(x.shape[1])

    def objective(v):
        eta = x @ v
        return float(np.sum(y * eta - np.logaddexp(0.0, eta)) - 0.5 * prec * v @ v)

    f = objective(w)
    for _ in range(max_iter):
        p = 1.0 / (1.0 + np.exp(-(x @ w)))
        g = x.T @ (y - p) - prec * w
        h = (x * (p * (1 - p))[:, None]).T @ x + prec * np.eye(x.shape[1])
        step = np.linalg.solve(h, g)
        if float(g @ step) < 2 * tol:
            break
        t = 1.0
        while objective(w + t * step) < f and t > 1e-10:
            t *= 0.5
        w = w + t * step
        f = objective(w)
    p = 1.0 / (1.0 + np.exp(-(x @ w)))
    h = (x * (p * (1 - p))[:, None]).T @ x + prec * np.eye(x.shape[1])
    return w, np.linalg.inv(h)


def sandwich(x, y, w, clusters=None, prior_sd: float | None = LC_PRIOR_SD) -> np.ndarray:
    """Cluster-robust covariance ``H^-1 B H^-1`` of the fractional-logit weights ``w`` (module docstring).

    ``H`` is the penalised fit's observed information, ``B = G/(G-1) sum_c g_c g_c^T`` with ``g_c`` the
    summed likelihood scores ``x_i (y_i - p_i)`` of cluster ``c``; ``clusters=None``: every judgment its
    own cluster (a heteroskedasticity-robust sandwich).
    """
    x = np.asarray(x, float)
    p = 1.0 / (1.0 + np.exp(-(x @ w)))
    prec = 0.0 if prior_sd is None else 1.0 / prior_sd**2
    h = (x * (p * (1 - p))[:, None]).T @ x + prec * np.eye(x.shape[1])
    scores = x * (np.asarray(y, float) - p)[:, None]
    ids = np.arange(len(p)) if clusters is None else np.unique(np.asarray(clusters), return_inverse=True)[1].ravel()
    g = int(ids.max()) + 1 if ids.size else 0
    sums = np.zeros((g, x.shape[1]))
    np.add.at(sums, ids, scores)
    meat = sums.T @ sums * (g / (g - 1.0) if g > 1 else 1.0)
    hinv = np.linalg.inv(h)
    return hinv @ meat @ hinv


def lc_win_rate(system: str, y, len_anchor, len_system, difficulty=None,
                prior_sd: float | None = LC_PRIOR_SD, clusters=None) -> LCResult:
    """AlpacaEval's length-controlled win rate of ``system`` against the anchor.

    Parameters
    ----------
    y : array (n,)
        Preference for ``system``: 1 win, 0.5 tie, 0 loss (invalid judgments left out).
    len_anchor, len_system : arrays (n,)
        Response lengths in characters on the same prompts.
    difficulty : array (n,), optional
        Instruction difficulty per judgment (upstream's ``instruction_difficulty``).
    prior_sd : float or None
        Weak Gaussian prior sd on every weight; None for plain maximum likelihood.
    clusters : array (n,), optional
        Cluster of each judgment (its prompt): the interval's covariance is cluster-robust; None:
        judgment by judgment. Either way a sandwich (:func:`sandwich`), never below the judgment-by-judgment one.
    """
    from planner.model.types import Z95

    y = np.asarray(y, float)
    if y.size == 0:
        raise UsageError(f"length-controlled win rate: {system} has no usable judgment against the anchor",
                         parameters=('anchor',))
    if np.any((y < 0) | (y > 1)):
        raise UsageError("length-controlled win rate: preferences must be in [0, 1]", parameters=('y',))
    x = _design(len_anchor, len_system, difficulty)
    w, _ = fit_fractional_logit(x, y, prior_sd)
    alone = sandwich(x, y, w, None, prior_sd)
    cov = alone if clusters is None else sandwich(x, y, w, clusters, prior_sd)
    x0 = x.copy()
    x0[:, 1] = 0.0                         # the length term set to 0
    p0 = 1.0 / (1.0 + np.exp(-(x0 @ w)))
    lc = float(p0.mean())
    grad = (x0 * (p0 * (1 - p0))[:, None]).mean(axis=0)
    se = math.sqrt(max(float(grad @ cov @ grad), float(grad @ alone @ grad), 0.0))
    names = ["intercept", "tanh_length"] + (["difficulty"] if difficulty is not None else [])
    sds = np.sqrt(np.clip(np.diag(cov), 0, None))
    return LCResult(system, int(y.size), float(y.mean()), lc, max(0.0, lc - Z95 * se), min(1.0, lc + Z95 * se),
                    {k: float(v) for k, v in zip(names, w)}, {k: float(v) for k, v in zip(names, sds)})
