"""Presentation orders of the candidate pairs: which orders are available, and which one a pick takes.

A judgment of pair ``(i, j)`` shown with ``i`` on the left informs ``β_i − β_j + γ``; shown
the other way, ``β_i − β_j − γ`` (γ: the position effect, :mod:`planner.model.bt`). The
sign ``s = +1`` (``i`` left) or ``−1`` (``j`` left) is therefore part of a pick's design
vector ``x = e_i − e_j + s e_γ``.

Where both orders can be issued the pick takes the order its pair has been shown in
less often so far (judged + pending + earlier picks of the batch), a seeded coin
breaking an exact balance: the pair's own verdicts then identify ``β_i − β_j`` whatever
γ is. Where only one order is left (a replay pool, existing data reused, a judge that
sees one order) the pick takes that order, and the objective sees that its verdict
informs ``β_i − β_j ± γ`` only.
"""

from __future__ import annotations

import numpy as np

from planner.counts import Counts
from planner.errors import UsageError


def ordered_counts(counts: Counts | None, m: int, *, all_fields: bool) -> np.ndarray:
    """``(M, M)`` judgments per presentation order: entry ``[a, b]`` counts ``a`` shown left of ``b``."""
    mat = np.zeros((m, m), dtype=np.int64)
    if counts is None or counts.n_cells == 0:
        return mat
    n = counts.usable + (counts.invalid if all_fields else 0)
    np.add.at(mat, (counts.a, counts.b), n)
    return mat


def order_capacities(order_capacity, ci, cj) -> tuple[np.ndarray, np.ndarray] | None:
    """Per candidate: judgments left with ``ci`` shown left, and with ``cj`` left (inf: unlimited).

    ``order_capacity`` maps ``(left, right)`` to a count. A pair named in it in one order
    only cannot be shown in the other; a pair not named at all is unrestricted.
    """
    if order_capacity is None:
        return None
    fwd, bwd = np.full(ci.size, np.inf), np.full(ci.size, np.inf)
    index = dict(zip(zip(ci.tolist(), cj.tolist()), range(ci.size)))
    named = np.zeros(ci.size, dtype=bool)
    seen_f, seen_b = np.zeros(ci.size, dtype=bool), np.zeros(ci.size, dtype=bool)
    for p, n in order_capacity.items():
        left, right = int(p[0]), int(p[1])
        if n is None or n < 0:
            raise UsageError(f"order capacity of {p!r} ({'missing' if n is None else n}) must be >= 0",
                             parameters=("order_capacity",))
        t = index.get((min(left, right), max(left, right)))
        if t is None:
            continue
        named[t] = True
        if left < right:
            fwd[t], seen_f[t] = float(n), True
        else:
            bwd[t], seen_b[t] = float(n), True
    fwd[named & ~seen_f] = 0.0
    bwd[named & ~seen_b] = 0.0
    return fwd, bwd


class Orders:
    """Which order each candidate's next pick takes, as picks are made.

    ``shown_f``/``shown_b``: times each candidate ``(ci, cj)`` has been shown with
    ``ci`` / ``cj`` on the left (judged + pending); ``cap_f``/``cap_b`` the picks each
    order may still take (inf: unlimited); ``coin`` the seeded tie-break of an exact
    balance (True: ``ci`` left).
    """

    def __init__(self, shown_f, shown_b, cap_f, cap_b, coin):
        self.shown_f, self.shown_b = shown_f.astype(float), shown_b.astype(float)
        self.cap_f, self.cap_b = cap_f.astype(float), cap_b.astype(float)
        self.coin = coin

    @classmethod
    def build(cls, ci, cj, ordered: np.ndarray, caps, rng: np.random.Generator) -> Orders:
        """From the ``ordered`` counts (:func:`ordered_counts`) and :func:`order_capacities`.

        The coins come from a child of ``rng`` (``Generator.spawn``): the caller's own stream of
        draws (the batch's prompts, positions and ids after the selection) is left as it was.
        """
        inf = np.full(ci.size, np.inf)
        cap_f, cap_b = caps if caps is not None else (inf, inf)
        coin = rng.spawn(1)[0].random(ci.size) < 0.5
        return cls(ordered[ci, cj], ordered[cj, ci], cap_f, cap_b, coin)

    def subset(self, idx) -> Orders:
        return Orders(self.shown_f[idx], self.shown_b[idx], self.cap_f[idx], self.cap_b[idx], self.coin[idx])

    def signs(self, idx=None) -> np.ndarray:
        """+1 where the next pick shows ``ci`` left, −1 where ``cj``."""
        sl = slice(None) if idx is None else idx
        f_ok, b_ok = self.cap_f[sl] > 0, self.cap_b[sl] > 0
        fwd = np.where(self.shown_f[sl] == self.shown_b[sl], self.coin[sl], self.shown_f[sl] < self.shown_b[sl])
        fwd = np.where(f_ok & b_ok, fwd, f_ok)
        return np.where(fwd, 1.0, -1.0)

    def free(self, idx=None) -> np.ndarray:
        """Whether each candidate can still be shown both ways."""
        sl = slice(None) if idx is None else idx
        return (self.cap_f[sl] > 0) & (self.cap_b[sl] > 0)

    def total(self) -> np.ndarray:
        return self.cap_f + self.cap_b

    def take(self, t: int, sign: float) -> None:
        """One pick of candidate ``t`` in order ``sign``."""
        if sign > 0:
            self.shown_f[t] += 1
            self.cap_f[t] -= 1
        else:
            self.shown_b[t] += 1
            self.cap_b[t] -= 1

    def assign(self, ci, cj, pairs) -> list[int]:
        """The left system of each of ``pairs`` (unordered, in pick order), taking each pick in turn."""
        index = {(int(i), int(j)): t for t, (i, j) in enumerate(zip(ci, cj))}
        left = []
        for p in pairs:
            t = index[(int(p[0]), int(p[1]))]
            s = float(self.signs(np.array([t]))[0])
            self.take(t, s)
            left.append(int(ci[t]) if s > 0 else int(cj[t]))
        return left
