"""Clustered verdicts in the selection: a pick that repeats a (prompt, pair) is worth less.

Verdicts on the same (prompt, unordered pair) — both presentation orders, several
annotators — are correlated: with intraclass correlation ``ρ`` a cluster of ``c``
verdicts carries the information of ``n_eff(c) = c / (1 + (c − 1) ρ)`` independent ones
(Kish 1965, the design effect ``1 + (c − 1) ρ``). One more verdict in a cluster of
``c`` therefore adds

    Δ(c) = n_eff(c + 1) − n_eff(c) = (1 − ρ) / ((1 + c ρ) (1 + (c − 1) ρ)),

``Δ(0) = 1`` for a fresh prompt, ``(1 − ρ) / (1 + ρ)`` for the second verdict of one.
The objective scales a pick's expected information by this share; the stopping advice
widens each pair's interval by the design effect of the verdicts it already has.

``ρ`` is an input here (:attr:`Clustering.icc`, 0.15 when nobody measured it; the
estimate from cluster-level data belongs to :mod:`planner.stats.clusters`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np

from planner.errors import UsageError


def marginal_share(size, icc: float):
    """``Δ(c)``: information of one more verdict in a cluster of ``size`` verdicts, relative to a fresh one."""
    c = np.asarray(size, dtype=float)
    return (1.0 - icc) / ((1.0 + c * icc) * (1.0 + (c - 1.0) * icc)) if icc else np.ones_like(c)


def design_effect(sizes, icc: float) -> float:
    """Kish's design effect of verdicts in clusters of ``sizes``: ``1 + (Σc² / Σc − 1) ρ`` (1 with no verdicts)."""
    c = np.asarray(sizes, dtype=float)
    n = c.sum()
    return 1.0 if n <= 0 else float(1.0 + (np.dot(c, c) / n - 1.0) * icc)


@dataclass(frozen=True)
class Clustering:
    """What the selection knows of the clusters of verdicts on (prompt, pair).

    Attributes
    ----------
    icc : float
        Intraclass correlation ``ρ`` in [0, 1) of verdicts on one (prompt, pair).
        Default 0.15: inside the range measured on the eight real replay sets
        (0.04–0.54, bench/RESULTS.md "Is the model misspecified"), near their
        lower quartile, so an unmeasured study is not discounted too hard.
    fresh : mapping {(i, j): float} or PairValues
        Picks of the pair (unordered, system indices) that open a new cluster (an
        unused prompt) before the later ones repeat one; missing: unlimited.
    share : mapping {(i, j): float} or PairValues
        Information share of the pair's picks beyond ``fresh`` (``Δ`` of the cluster
        they join, or its expectation over a random draw); missing: 1.
    deff : mapping {(i, j): float} or PairValues
        Design effect of the verdicts the pair has (``>= 1``; missing: 1), for the
        stopping advice.

    The three are held as :class:`PairValues` (arrays; a mapping given is converted).
    """

    icc: float = 0.15
    fresh: PairValues | Mapping = field(default_factory=dict)
    share: PairValues | Mapping = field(default_factory=dict)
    deff: PairValues | Mapping = field(default_factory=dict)

    def __post_init__(self):
        if not (isinstance(self.icc, (int, float)) and 0.0 <= self.icc < 1.0):
            raise UsageError(f"`icc` ({self.icc!r}) must be a number in [0, 1)", parameters=("icc",))
        for name, lo, hi in (("fresh", 0.0, np.inf), ("share", 0.0, 1.0), ("deff", 1.0, np.inf)):
            table = _table(getattr(self, name))
            bad = ~((table.values >= lo) & (table.values <= hi))
            if bad.any():
                t = int(np.argmax(bad))
                p, v = (int(table.i[t]), int(table.j[t])), table.values[t]
                raise UsageError(f"clustering {name} of pair {p!r} ({v:g}) must be in [{lo:g}, {hi:g}]",
                                 parameters=("clusters",))
            object.__setattr__(self, name, table)

    def shares(self, ci, cj) -> Shares:
        """Per candidate ``(ci, cj)``: the fresh picks and the share beyond them."""
        # __post_init__ made each a PairValues: _table returns it as it is
        return Shares(_table(self.fresh).get(ci, cj, np.inf), _table(self.share).get(ci, cj, 1.0), np.zeros(ci.size))

    def inflation(self, systems) -> np.ndarray:
        """(M, M) design effect of each pair's verdicts so far (1 where unknown)."""
        m = len(systems)
        i, j = np.triu_indices(m, 1)
        out = np.ones((m, m))
        out[i, j] = out[j, i] = _table(self.deff).get(i, j, 1.0)
        return out


@dataclass(frozen=True, eq=False)
class PairValues:
    """One number per system pair, as arrays: ``values[t]`` belongs to pair ``(i[t], j[t])`` (either order)."""

    i: np.ndarray
    j: np.ndarray
    values: np.ndarray

    def __len__(self) -> int:
        return int(self.values.size)

    def __getitem__(self, pair) -> float:
        got = self.get(np.array([int(pair[0])]), np.array([int(pair[1])]), np.nan)[0]
        if np.isnan(got):
            raise KeyError(pair)
        return float(got)

    def get(self, ci, cj, default: float) -> np.ndarray:
        """The value of each pair ``(ci[t], cj[t])`` (``default`` where the table has none)."""
        out = np.full(np.size(ci), default, dtype=float)
        if not self.values.size or not np.size(ci):
            return out
        m = int(max(self.i.max(), self.j.max(), np.max(ci), np.max(cj))) + 1
        code = np.minimum(self.i, self.j) * m + np.maximum(self.i, self.j)
        order = np.argsort(code, kind="stable")
        code = code[order]
        want = np.minimum(ci, cj) * m + np.maximum(ci, cj)
        pos = np.minimum(np.searchsorted(code, want), code.size - 1)
        hit = code[pos] == want
        out[hit] = self.values[order][pos[hit]]
        return out


def _table(mapping) -> PairValues:
    """A :class:`PairValues` of a ``{(i, j): value}`` mapping (or the table itself)."""
    if isinstance(mapping, PairValues):
        return mapping
    keys = np.array(list(mapping.keys()), dtype=np.int64).reshape(-1, 2)
    vals = np.fromiter((np.nan if v is None else float(v) for v in mapping.values()), dtype=float,
                       count=len(mapping))
    return PairValues(keys[:, 0].copy(), keys[:, 1].copy(), vals)


class Shares:
    """The information share of each candidate's next pick, as picks are taken."""

    def __init__(self, fresh, share, taken):
        self.fresh, self.share, self.taken = fresh, share, taken

    def subset(self, idx) -> Shares:
        return Shares(self.fresh[idx], self.share[idx], self.taken[idx].copy())

    def now(self, idx=None) -> np.ndarray:
        sl = slice(None) if idx is None else idx
        return np.where(self.taken[sl] < self.fresh[sl], 1.0, self.share[sl])

    def take(self, t: int) -> None:
        self.taken[t] += 1

    def spend(self, ci, cj, pairs) -> None:
        """Count ``pairs`` (unordered, picked before the greedy) as taken."""
        index = {(int(i), int(j)): t for t, (i, j) in enumerate(zip(ci, cj))}
        for p in pairs:
            self.take(index[(int(p[0]), int(p[1]))])


def from_pair_usage(pair_i, pair_j, judgments, clusters, fresh, icc: float | None = None) -> Clustering:
    """The :class:`Clustering` of a study's pairs from their counts (arrays aligned per pair ``(i, j)``).

    ``judgments``: verdicts judged or pending per pair; ``clusters``: the prompts they are on
    (the pair's used prompts); ``fresh``: prompts the pair has not used. Every verdict is taken to
    sit in a cluster of the pair's mean size ``c̄ = judgments / clusters`` (Kish's ``Σc²/Σc`` is at
    least that): the design effect is ``1 + (c̄ − 1) ρ``, and a pick beyond the fresh prompts
    repeats a cluster of ``c̄`` verdicts (share ``Δ(c̄)``).
    """
    icc = Clustering().icc if icc is None else icc
    n = np.asarray(judgments, dtype=float)
    k = np.maximum(np.asarray(clusters, dtype=float), 1.0)
    size = np.where(n > 0, n / k, 0.0)
    i, j = np.asarray(pair_i, dtype=np.int64), np.asarray(pair_j, dtype=np.int64)
    return Clustering(icc=icc, fresh=PairValues(i, j, np.asarray(fresh, dtype=float)),
                      share=PairValues(i, j, marginal_share(np.maximum(size, 1.0), icc)),
                      deff=PairValues(i, j, 1.0 + np.maximum(size - 1.0, 0.0) * icc))
