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

from dataclasses import dataclass, field
from typing import Mapping

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
    fresh : mapping {(i, j): float}
        Picks of the pair (unordered, system indices) that open a new cluster (an
        unused prompt) before the later ones repeat one; missing: unlimited.
    share : mapping {(i, j): float}
        Information share of the pair's picks beyond ``fresh`` (``Δ`` of the cluster
        they join, or its expectation over a random draw); missing: 1.
    deff : mapping {(i, j): float}
        Design effect of the verdicts the pair has (``>= 1``; missing: 1), for the
        stopping advice.
    """

    icc: float = 0.15
    fresh: Mapping = field(default_factory=dict)
    share: Mapping = field(default_factory=dict)
    deff: Mapping = field(default_factory=dict)

    def __post_init__(self):
        if not (isinstance(self.icc, (int, float)) and 0.0 <= self.icc < 1.0):
            raise UsageError(f"`icc` ({self.icc!r}) must be a number in [0, 1)", parameters=("icc",))
        for name, lo, hi in (("fresh", 0.0, np.inf), ("share", 0.0, 1.0), ("deff", 1.0, np.inf)):
            for p, v in getattr(self, name).items():
                if not (lo <= float(v) <= hi):
                    raise UsageError(f"clustering {name} of pair {p!r} ({v!r}) must be in [{lo:g}, {hi:g}]",
                                     parameters=("clusters",))

    def shares(self, ci, cj) -> "Shares":
        """Per candidate ``(ci, cj)``: the fresh picks and the share beyond them."""
        fresh = np.array([float(self.fresh.get((i, j), np.inf)) for i, j in zip(ci.tolist(), cj.tolist())])
        share = np.array([float(self.share.get((i, j), 1.0)) for i, j in zip(ci.tolist(), cj.tolist())])
        return Shares(fresh, share, np.zeros(ci.size))

    def inflation(self, systems) -> np.ndarray:
        """(M, M) design effect of each pair's verdicts so far (1 where unknown)."""
        m = len(systems)
        out = np.ones((m, m))
        for (i, j), v in self.deff.items():
            out[i, j] = out[j, i] = float(v)
        return out


class Shares:
    """The information share of each candidate's next pick, as picks are taken."""

    def __init__(self, fresh, share, taken):
        self.fresh, self.share, self.taken = fresh, share, taken

    def subset(self, idx) -> "Shares":
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
