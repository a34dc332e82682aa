"""Leaderboard summaries: letters, comparisons with the leader, rank intervals, P(best).

Two readings of a posterior. Under a Gaussian posterior (the Laplace engine, or
standard errors) every pairwise figure has a closed form: the difference
``β_i - β_j`` is normal with mean ``μ_i - μ_j`` and variance
``Σ_ii + Σ_jj - 2 Σ_ij``, so separation, P(leader > x) and tied-with-the-leader
are exact and never depend on a seed. Rank intervals and P(best) have no closed
form; they come from :func:`rank_draws_needed` Gaussian draws, enough that the
Monte Carlo sd of every tail share deciding an interval is below
:data:`RANK_MC_SD`. From posterior draws (NUTS) every figure is a share of
draws, and a decision whose share sits within two Monte Carlo standard errors
of its threshold is listed with that error (:class:`NearThreshold`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from planner import sentences
from planner.diagnostics.letters import LETTERS_MAX_SYSTEMS, compact_letters
from planner.diagnostics.pairs import p_better_from_draws
from planner.diagnostics.records import check_level
from planner.errors import UsageError

#: bound on the Monte Carlo sd of a rank-interval tail share (Gaussian draws): sqrt(q (1 - q) / n) <= this
RANK_MC_SD = 0.001
#: a draws-based decision is "near its threshold" when |P - threshold| <= this many Monte Carlo standard errors
NEAR_THRESHOLD_SE = 2.0


@dataclass(frozen=True)
class NearThreshold:
    """A decision read from posterior draws whose share is within :data:`NEAR_THRESHOLD_SE` Monte Carlo
    standard errors of its threshold, so another run of the sampler could decide it the other way.

    ``what``: ``"separated"`` / ``"not separated"`` (pair ``upper``, ``lower``; ``p`` = P(upper > lower),
    threshold ``(1 + level) / 2``) or ``"below the leader"`` / ``"tied with the leader"`` (``upper`` the
    leader; threshold ``level``). ``mcse``: Monte Carlo standard error of ``p`` (effective sample size of
    the indicator across chains, ``arviz.mcse``).
    """

    upper: str
    lower: str
    what: str
    p: float
    mcse: float
    threshold: float


@dataclass(frozen=True)
class RankGroups:
    """Leaderboard summaries that never group credibly separated systems.

    ``order``: systems by decreasing mean. ``letters`` (following ``order``):
    a compact letter display (:func:`planner.diagnostics.letters.compact_letters`):
    two systems share a letter **if and only if** the interval of their
    difference includes 0, so no letter ever holds two separated systems.
    ``letters`` is empty and ``letters_note`` says why when there are more than
    ``max_letter_systems`` systems. ``rank_low``/``rank_high``: the
    (1-level)/2 and (1+level)/2 quantiles of each system's rank over draws
    (1 = best; Chatbot Arena's rank intervals), ``p_best``: share of draws
    where the system ranks first; all three follow ``order`` and are ``None``
    without draws. ``rank_draws``: the draws behind them; ``rank_mc_sd``: the
    Monte Carlo sd of a tail share at the interval's quantiles,
    ``sqrt(q (1 - q) / rank_draws)`` (Gaussian draws, independent; ``None``
    for posterior draws, whose errors are in ``near_threshold``).

    ``p_leader_better`` (following ``order``): P(leader > system), the leader
    being ``order[0]`` (``None`` for the leader itself). ``tied_with_leader``:
    systems (leader included) with ``p_leader_better < level`` — not credibly
    below the top (one-sided, e.g. P < 0.95). This is a comparison with the
    leader only, not a group: two systems tied with the leader may still be
    separated from each other (their letters say so). ``method``:
    ``"gaussian"`` (closed forms from the mean and covariance) or ``"draws"``.
    """

    order: tuple[str, ...]
    means: tuple[float, ...]
    rank_low: tuple[int, ...] | None
    rank_high: tuple[int, ...] | None
    p_best: tuple[float, ...] | None
    confidence_level: float
    letters: tuple[str, ...] = ()
    p_leader_better: tuple[float | None, ...] = ()
    tied_with_leader: tuple[str, ...] = ()
    method: str = "gaussian"
    rank_draws: int = 0
    rank_mc_sd: float | None = None
    letters_note: str | None = None
    near_threshold: tuple[NearThreshold, ...] = ()


# ----------------------------------------------------------- closed forms
def pair_z(means: np.ndarray, cov: np.ndarray) -> np.ndarray:
    """``z[i, j] = (μ_i - μ_j) / sd(β_i - β_j)`` under N(means, cov); ±inf for a certain order, 0 on ties.

    The sd is ``sqrt(Σ_ii + Σ_jj - 2 Σ_ij)`` (clipped at 0): the covariance's
    correlations count, as they do in the draws.
    """
    mu = np.asarray(means, dtype=float)
    cov = np.asarray(cov, dtype=float)
    v = np.diag(cov)
    sd = np.sqrt(np.clip(v[:, None] + v[None, :] - 2.0 * cov, 0.0, None))
    diff = mu[:, None] - mu[None, :]
    with np.errstate(divide="ignore", invalid="ignore"):
        z = np.where(sd > 0, diff / np.where(sd > 0, sd, 1.0), np.sign(diff) * np.inf)
    z[diff == 0] = 0.0
    return z


def p_better_gaussian(means: np.ndarray, cov: np.ndarray) -> np.ndarray:
    """``P[i, j] = P(β_i > β_j) = Φ(z[i, j])`` under N(means, cov) (diagonal 0.5); the exact form of
    :func:`planner.diagnostics.p_better_from_draws`."""
    from scipy.special import ndtr

    p = ndtr(pair_z(means, cov))
    np.fill_diagonal(p, 0.5)
    return p


def rank_draws_needed(confidence_level: float, mc_sd: float = RANK_MC_SD) -> int:
    """Independent draws for a Monte Carlo sd of at most ``mc_sd`` on the tail share ``q = (1 - level)/2``:
    ``ceil(q (1 - q) / mc_sd²)`` (24,375 at level 0.95 and the default bound)."""
    q = (1 - confidence_level) / 2
    return int(math.ceil(q * (1 - q) / mc_sd ** 2 - 1e-9))


#: rank draws generated and counted per block (memory: a block of draws, not all 24,375, at any size)
RANK_BLOCK = 4096


def _factor(cov: np.ndarray) -> tuple[np.ndarray, bool]:
    """``(chol, sum_to_zero)``: a Cholesky factor of the covariance, of its first ``M - 1`` rows and
    columns when ``cov @ 1 = 0`` (the model's strengths; the full matrix is then singular)."""
    m = cov.shape[0]
    scale = float(np.max(np.abs(cov))) if m else 0.0
    sum_to_zero = m > 1 and scale > 0 and float(np.max(np.abs(cov.sum(axis=1)))) <= 1e-9 * scale
    k = m - 1 if sum_to_zero else m
    block = cov[:k, :k]
    try:
        return np.linalg.cholesky(block), sum_to_zero
    except np.linalg.LinAlgError:   # singular beyond sum-to-zero (a degenerate posterior): a tiny ridge
        return np.linalg.cholesky(block + np.eye(k) * max(scale, 1.0) * 1e-12), sum_to_zero


def _draw(mu: np.ndarray, factor: tuple[np.ndarray, bool], n: int, rng: np.random.Generator) -> np.ndarray:
    chol, sum_to_zero = factor
    noise = rng.standard_normal((n, chol.shape[0])) @ chol.T
    if sum_to_zero:
        noise = np.column_stack([noise, -noise.sum(axis=1)])
    return mu + noise


def gaussian_draws(means: np.ndarray, cov: np.ndarray, n: int, rng: np.random.Generator) -> np.ndarray:
    """``n`` draws (rows) from N(means, cov) through a Cholesky factor (no eigenvector signs: the same
    draws on every CPU up to rounding).

    A sum-to-zero covariance (``cov @ 1 = 0``, the model's strengths) is singular: the
    first ``M - 1`` strengths are drawn and the last is minus their sum.
    """
    return _draw(np.asarray(means, dtype=float), _factor(np.asarray(cov, dtype=float)), n, rng)


def _rank_counts(draws: np.ndarray) -> np.ndarray:
    """``counts[i, r]`` = draws in which system ``i`` has rank ``r + 1`` (one sort per draw, one ``bincount``)."""
    m = draws.shape[1]
    order = np.argsort(-draws, axis=1)                       # order[s, r] = system at rank r + 1 in draw s
    return np.bincount((order * m + np.arange(m)).ravel(), minlength=m * m).reshape(m, m)


def _intervals(counts: np.ndarray, n: int, confidence_level: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    cum = np.cumsum(counts, axis=1)                          # cum[i, r] = draws with rank(i) <= r + 1
    lo_q, hi_q = (1 - confidence_level) / 2, (1 + confidence_level) / 2
    # numpy's "lower"/"higher" pick sorted element floor/ceil((n - 1) q): the smallest rank whose count
    # reaches that element's position + 1
    k_lo, k_hi = int(np.floor((n - 1) * lo_q)), int(np.ceil((n - 1) * hi_q))
    low = (cum < k_lo + 1).sum(axis=1) + 1
    high = (cum < k_hi + 1).sum(axis=1) + 1
    return low, high, counts[:, 0] / n


def rank_intervals(draws: np.ndarray, confidence_level: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(low, high, p_best)`` per system (columns of ``draws``) from the ranks over draws (1 = best).

    ``low``/``high`` are ``numpy.quantile(rank, (1 - level)/2, method="lower")`` and
    ``((1 + level)/2, method="higher")`` of each system's ranks, computed from one
    count matrix (one sort per draw, one ``bincount``) instead of a quantile per system.
    """
    return _intervals(_rank_counts(draws), draws.shape[0], confidence_level)


def gaussian_rank_intervals(means: np.ndarray, cov: np.ndarray, n: int, rng: np.random.Generator,
                            confidence_level: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """:func:`rank_intervals` of ``n`` draws of N(means, cov), drawn and counted :data:`RANK_BLOCK` at a
    time (the same draws as :func:`gaussian_draws` with the same ``rng``: the stream is read in order)."""
    mu = np.asarray(means, dtype=float)
    factor = _factor(np.asarray(cov, dtype=float))
    counts = np.zeros((mu.size, mu.size), dtype=np.int64)
    for start in range(0, n, RANK_BLOCK):
        counts += _rank_counts(_draw(mu, factor, min(RANK_BLOCK, n - start), rng))
    return _intervals(counts, n, confidence_level)


# -------------------------------------------------------------- the reading
def rank_groups(systems: Sequence[str], means: Sequence[float], sds: Sequence[float] | None = None,
                draws: np.ndarray | None = None, confidence_level: float = 0.95, *,
                cov: np.ndarray | None = None, chains: int = 1, rank_draws: int = 0, seed: int = 0,
                max_letter_systems: int | None = None) -> RankGroups:
    """Letter display, comparisons with the leader, rank intervals and P(best).

    Parameters
    ----------
    systems, means : sequences of length M
        Any scale (logit or Elo), larger = better.
    cov : ndarray (M, M), optional
        Posterior covariance: separation, P(leader > x) and tied-with-the-leader
        are then exact (``method="gaussian"``); ``sds`` is the same with a
        diagonal covariance (independent normal approximation).
    draws : ndarray (n_draws, M), optional
        Posterior draws (same scale), ``chains`` chains concatenated. Without
        ``cov``/``sds`` every pairwise figure is a share of these draws
        (``method="draws"``), with Monte Carlo errors near thresholds; with
        them, the draws give only the rank intervals and P(best).
    rank_draws, seed : int
        With a covariance and no ``draws``: rank intervals and P(best) from
        this many draws of N(means, cov) with ``numpy.random.default_rng(seed)``
        (0: none).
    max_letter_systems : int, optional
        Leave the letters out above this many systems (``letters_note`` says
        why); default :data:`planner.diagnostics.letters.LETTERS_MAX_SYSTEMS`.
    """
    check_level(confidence_level)
    mu = np.asarray(means, dtype=float)
    m = mu.size
    if len(systems) != m:
        raise UsageError(f"`systems` ({len(systems)}) and `means` ({m}) must have the same length",
                         parameters=('systems', 'means'))
    if sds is not None and cov is None:
        cov = np.diag(np.asarray(sds, dtype=float) ** 2)
    if cov is None and draws is None:
        raise UsageError("rank_groups needs `sds`, `cov` or `draws`", parameters=('sds', 'cov', 'draws'))
    if cov is not None:
        cov = np.asarray(cov, dtype=float)
        if cov.shape != (m, m):
            raise UsageError(f"`cov` shape ({cov.shape}) must be ({m}, {m})", parameters=('cov',))
    if draws is not None:
        draws = np.asarray(draws, dtype=float)
        if draws.ndim != 2 or draws.shape[1] != m:
            raise UsageError(f"`draws` shape ({draws.shape}) must be (n_draws, {m})", parameters=('draws',))
    order = np.argsort(-mu, kind="stable")
    hi_q = (1 + confidence_level) / 2
    if cov is not None:
        from scipy.special import ndtr, ndtri

        z = pair_z(mu, cov)[np.ix_(order, order)]
        sep = np.abs(z) > float(ndtri(hi_q))
        p_lead = ndtr(z[0]) if m else np.zeros(0)
    else:
        p = p_better_from_draws(draws[:, order])
        sep = (p > hi_q) | (p < 1 - hi_q)
        p_lead = p[0] if m else np.zeros(0)
    np.fill_diagonal(sep, False)
    limit = LETTERS_MAX_SYSTEMS if max_letter_systems is None else max_letter_systems
    letters, note = (compact_letters(sep), None) if m <= limit else ((), sentences.letters_omitted_note(m, limit))
    pl: tuple[float | None, ...] = tuple([None] + [float(x) for x in p_lead[1:]]) if m else ()
    names = tuple(systems[i] for i in order)
    tied = tuple(s for s, x in zip(names, pl) if x is None or x < confidence_level)
    near = () if cov is not None else _near_threshold(draws[:, order], chains, names, p, confidence_level)
    rank_low = rank_high = p_best = None
    n_rank, mc_sd, got = 0, None, None
    if draws is None and rank_draws > 0 and m:
        got = gaussian_rank_intervals(mu, cov, rank_draws, np.random.default_rng(seed), confidence_level)
        n_rank, q = rank_draws, (1 - confidence_level) / 2
        mc_sd = math.sqrt(q * (1 - q) / rank_draws)
    elif draws is not None and draws.shape[0] and m:
        got, n_rank = rank_intervals(draws, confidence_level), int(draws.shape[0])
    if got is not None:
        low, high, best = got
        rank_low = tuple(int(low[i]) for i in order)
        rank_high = tuple(int(high[i]) for i in order)
        p_best = tuple(float(best[i]) for i in order)
    return RankGroups(names, tuple(float(mu[i]) for i in order), rank_low, rank_high, p_best,
                      confidence_level, letters, pl, tied, "gaussian" if cov is not None else "draws",
                      n_rank, mc_sd, note, near)


def _near_threshold(d: np.ndarray, chains: int, names: tuple[str, ...], p: np.ndarray,
                    confidence_level: float) -> tuple[NearThreshold, ...]:
    """Draws-based decisions within :data:`NEAR_THRESHOLD_SE` Monte Carlo standard errors of their threshold.

    Screened first on the share alone (within 0.05 of a threshold: beyond that a decision
    would need fewer than ~40 effective draws to be in doubt, and the sampler's ESS check
    warns long before), then ``arviz.mcse`` of the indicator with the draws split into
    their ``chains`` chains (NUTS has imported arviz already).
    """
    n, m = d.shape
    level = confidence_level
    hi_q = (1 + level) / 2
    iu, ju = np.triu_indices(m, 1)
    share = np.maximum(p[iu, ju], 1 - p[iu, ju])
    cand = [(int(i), int(j), hi_q, "separated", "not separated")
            for i, j in zip(iu[np.abs(share - hi_q) < 0.05], ju[np.abs(share - hi_q) < 0.05])]
    cand += [(0, int(j), level, "below the leader", "tied with the leader")
             for j in range(1, m) if abs(p[0, j] - level) < 0.05]
    if not cand or chains < 1 or n % chains:
        return ()
    import arviz as az

    out = []
    for i, j, thr, yes, no in cand:
        x = (d[:, i] > d[:, j]).astype(float)
        pij = float(x.mean())
        share_ij = max(pij, 1 - pij) if yes == "separated" else pij
        se = float(np.ravel(az.mcse(x.reshape(chains, -1), method="mean"))[0])
        if abs(share_ij - thr) <= NEAR_THRESHOLD_SE * se:
            out.append(NearThreshold(names[i], names[j], yes if share_ij > thr else no, pij, se, thr))
    return tuple(out)


def rank_fit(fit, confidence_level: float = 0.95, min_rank_draws: int = 0) -> RankGroups:
    """:func:`rank_groups` of a fitted model (:class:`planner.model.Fit`), the reading every command shows.

    Laplace: the exact Gaussian from ``fit.posterior`` (mean and covariance, whatever
    covariance the fit reports), rank intervals and P(best) from
    ``max(min_rank_draws, rank_draws_needed(level))`` draws seeded with ``fit.seed``.
    NUTS: the posterior draws, split into the sampler's chains for the Monte Carlo errors.
    """
    if fit.engine == "laplace":
        n = max(int(min_rank_draws), rank_draws_needed(confidence_level))
        return rank_groups(fit.systems, fit.mean, confidence_level=confidence_level, cov=fit.posterior.cov,
                           rank_draws=n, seed=fit.seed)
    post = getattr(fit.idata, "posterior", None)
    chains = int(post.sizes.get("chain", 1)) if post is not None else 1
    return rank_groups(fit.systems, fit.mean, draws=fit.beta_draws, confidence_level=confidence_level,
                       chains=chains)


def p_better_fit(fit) -> np.ndarray:
    """``P[i, j] = P(β_i > β_j)`` of a fit: exact under Laplace (:func:`p_better_gaussian`), else the share
    of posterior draws (:func:`planner.diagnostics.p_better_from_draws`)."""
    if fit.engine == "laplace":
        return p_better_gaussian(fit.mean, fit.posterior.cov)
    return p_better_from_draws(fit.beta_draws)


__all__ = [
    "NEAR_THRESHOLD_SE",
    "RANK_BLOCK",
    "RANK_MC_SD",
    "NearThreshold",
    "RankGroups",
    "gaussian_draws",
    "gaussian_rank_intervals",
    "p_better_fit",
    "p_better_gaussian",
    "pair_z",
    "rank_draws_needed",
    "rank_fit",
    "rank_groups",
    "rank_intervals",
]
