"""Leaderboard summaries: compact letter display, comparisons with the leader, rank intervals, P(best)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Sequence

import numpy as np

from planner.diagnostics.records import _check_level
from planner.errors import UsageError


# -------------------------------------------------------------- rank groups
@dataclass(frozen=True)
class RankGroups:
    """Leaderboard summaries that never group credibly separated systems.

    ``order``: systems by decreasing mean. ``letters`` (following ``order``):
    a compact letter display (Piepho 2004, insert-absorb): two systems share a
    letter **if and only if** the interval of their difference includes 0, so
    no letter ever holds two separated systems (earlier versions also showed
    chained "groups" of neighbours, which could hold A and C although A ≻ C;
    they are gone). ``rank_low``/``rank_high``: the (1-level)/2 and
    (1+level)/2 quantiles of each system's rank over draws (1 = best; Chatbot
    Arena's rank intervals), ``p_best``: share of draws where the system ranks
    first; all three follow ``order`` and are ``None`` without draws.

    ``p_leader_better`` (following ``order``): P(leader > system), the leader
    being ``order[0]`` (``None`` for the leader itself); from the draws, or
    the normal approximation with ``sds``. ``tied_with_leader``: systems
    (leader included) with ``p_leader_better < level`` — not credibly below
    the top (one-sided, e.g. P < 0.95). This is a comparison with the leader
    only, not a group: two systems tied with the leader may still be
    separated from each other (their letters say so).
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


def _letter(k: int) -> str:
    alphabet = "abcdefghijklmnopqrstuvwxyz"
    out = ""
    k += 1
    while k:
        k, r = divmod(k - 1, 26)
        out = alphabet[r] + out
    return out


def compact_letters(separated: np.ndarray) -> tuple[str, ...]:
    """Compact letter display for systems already in display order (best first).

    ``separated[p, q]`` is True when systems ``p`` and ``q`` are credibly
    different. Insert-absorb (H.-P. Piepho 2004, "An algorithm for a
    letter-based representation of all-pairwise comparisons", J. Comput.
    Graph. Stat. 13:456–466): start with one letter shared by all; for each
    separated pair split every letter holding both into two (one without each
    system); drop letters contained in another. Letters are then named in the
    order of their best member, so the top system gets ``a``. With more than
    26 letters they are ``aa``, ``ab``, ... and a system's letters are
    separated by commas.
    """
    m = separated.shape[0]
    cols: list[frozenset] = [frozenset(range(m))] if m else []
    for p in range(m):
        for q in range(p + 1, m):
            if not separated[p, q]:
                continue
            new = []
            for c in cols:
                if p in c and q in c:
                    new.extend([c - {p}, c - {q}])
                else:
                    new.append(c)
            new = list(dict.fromkeys(new))
            cols = [c for c in new if c and not any(c < d for d in new)]
    cols.sort(key=lambda c: (min(c), sorted(c)))
    labels: list[list[str]] = [[] for _ in range(m)]
    for k, c in enumerate(cols):
        for i in c:
            labels[i].append(_letter(k))
    sep_char = "" if len(cols) <= 26 else ","   # past z the letters are aa, ab, ...: keep them apart
    return tuple(sep_char.join(x) for x in labels)


def rank_groups(systems: Sequence[str], means: Sequence[float], sds: Sequence[float] | None = None,
                draws: np.ndarray | None = None, confidence_level: float = 0.95) -> RankGroups:
    """Letter display, comparisons with the leader, rank intervals and P(best).

    Parameters
    ----------
    systems, means : sequences of length M
        Any scale (logit or Elo), larger = better.
    sds : sequence of float, optional
        Standard errors; the difference interval between two systems is
        ``Δ ± z sqrt(sd_i² + sd_j²)`` (independent normal approximation).
    draws : ndarray (n_draws, M), optional
        Posterior draws (same scale); when given, the difference interval is
        the central ``confidence_level`` quantile interval of the drawn
        differences (keeps their correlation), and rank intervals and P(best)
        are computed. One of ``sds`` or ``draws`` is required.
    """
    from scipy.special import ndtr, ndtri

    _check_level(confidence_level)
    mu = np.asarray(means, dtype=float)
    m = mu.size
    if len(systems) != m:
        raise UsageError(f"systems ({len(systems)}) and means ({m}) must have the same length")
    if sds is None and draws is None:
        raise UsageError("rank_groups needs sds or draws")
    if draws is not None:
        draws = np.asarray(draws, dtype=float)
        if draws.ndim != 2 or draws.shape[1] != m:
            raise UsageError(f"draws shape ({draws.shape}) must be (n_draws, {m})")
    order = np.argsort(-mu, kind="stable")
    lo_q, hi_q = (1 - confidence_level) / 2, (1 + confidence_level) / 2
    z = float(ndtri(hi_q))
    # every pair's separation (central interval of the difference) for the letter display
    sep = np.zeros((m, m), dtype=bool)
    for a_ in range(m - 1):
        p_, rest = order[a_], order[a_ + 1:]
        if draws is not None:
            low, high = np.quantile(draws[:, [p_]] - draws[:, rest], [lo_q, hi_q], axis=0)
        else:
            se = np.hypot(float(sds[p_]), np.asarray(sds, dtype=float)[rest])
            low, high = mu[p_] - mu[rest] - z * se, mu[p_] - mu[rest] + z * se
        sep[a_, a_ + 1:] = sep[a_ + 1:, a_] = ~((low <= 0.0) & (0.0 <= high))
    letters = compact_letters(sep)
    rank_low = rank_high = p_best = None
    if draws is not None:
        ranks = (-draws).argsort(axis=1).argsort(axis=1) + 1     # 1 = best in that draw
        rank_low = tuple(int(np.quantile(ranks[:, i], lo_q, method="lower")) for i in order)
        rank_high = tuple(int(np.quantile(ranks[:, i], hi_q, method="higher")) for i in order)
        p_best = tuple(float((ranks[:, i] == 1).mean()) for i in order)
    p_lead: list[float | None] = [None] if m else []
    for i in order[1:]:
        if draws is not None:
            p_lead.append(float((draws[:, order[0]] > draws[:, i]).mean()))
        else:
            se = math.hypot(float(sds[order[0]]), float(sds[i]))
            p_lead.append(float(ndtr((mu[order[0]] - mu[i]) / se)) if se > 0 else float(mu[order[0]] > mu[i]))
    names = tuple(systems[i] for i in order)
    tied = tuple(s for s, p in zip(names, p_lead) if p is None or p < confidence_level)
    return RankGroups(names, tuple(float(mu[i]) for i in order), rank_low, rank_high, p_best,
                      confidence_level, letters, tuple(p_lead), tied)
