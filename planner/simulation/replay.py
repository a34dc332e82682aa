"""A replay pool: real judgments grouped by unordered system pair, built from records.

The file is read elsewhere (the workflow, with the same reader as ``planner
ingest``); this module takes its records. A requested comparison draws an unused
judgment of that pair in the presentation order the selection planned, from the
judgments the pool has in that order (without replacement, see
:mod:`planner.simulation.loop`); an order the pool lacks is never offered.

:func:`fixed_order` derives a pool that shows every pair in one order only (the
design of a judge run in one order, or of most published annotation files), and
:func:`order_balance` says how far a pool is from showing each pair both ways.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

import numpy as np

from planner.counts import Counts
from planner.equality import array_eq
from planner.errors import DataError
from planner.simulation.truth import Truth, truth_from_counts

__all__ = [
    "VERDICT_CODE",
    "OrderBalance",
    "ReplayPool",
    "ReplayWalk",
    "fixed_order",
    "order_balance",
    "pool_from_records",
    "replay_truth",
]

# outcome codes as in planner.counts.Counts.from_arrays (3 = invalid)
VERDICT_CODE = {"A": 0, "B": 1, "tie": 2, "invalid": 3}


@array_eq
@dataclass(frozen=True)
class ReplayPool:
    """Real judgments grouped by unordered system pair.

    ``left``/``right``/``outcome`` are per judgment (outcome codes as in
    :meth:`planner.counts.Counts.from_arrays`, 3 = invalid); ``by_pair`` maps
    ``(i, j)`` with ``i < j`` to the indices of that pair's judgments;
    ``prompt`` (optional) is each judgment's prompt as an index (its
    (prompt, pair) cluster).
    """

    systems: tuple[str, ...]
    left: np.ndarray
    right: np.ndarray
    outcome: np.ndarray
    by_pair: dict = field(repr=False)
    source: str = ""
    prompt: np.ndarray | None = field(default=None, repr=False)

    def by_order(self) -> dict:
        """``(left, right)`` → indices of the judgments shown in that order, in file order."""
        out = {}
        for (i, j), idx in self.by_pair.items():
            fwd = self.left[idx] == i
            for key, sel in (((i, j), idx[fwd]), ((j, i), idx[~fwd])):
                if sel.size:
                    out[key] = sel
        return out

    @property
    def size(self) -> int:
        return int(self.left.size)

    def counts(self) -> Counts:
        return Counts.from_arrays(self.systems, self.left, self.right, self.outcome)


def pool_from_records(records: Iterable[Mapping], source: str) -> ReplayPool:
    """A replay pool from normalized judgment records (``a``, ``b``, ``verdict``, optional ``a_position``).

    ``a`` is the system shown first unless ``"a_position": "right"`` (an unknown
    position is replayed as shown first). ``source`` names where the records come
    from (the file), in the pool and in the :class:`DataError` raised when they
    name fewer than two systems.
    """
    systems: dict[str, int] = {}
    prompts: dict[str, int] = {}
    left, right, outcome, prompt = [], [], [], []
    for rec in records:
        prompt.append(prompts.setdefault(str(rec.get("prompt", "")), len(prompts)))
        ia = systems.setdefault(rec["a"], len(systems))
        ib = systems.setdefault(rec["b"], len(systems))
        code = VERDICT_CODE[rec["verdict"]]
        if rec.get("a_position") == "right":
            ia, ib = ib, ia
            code = {0: 1, 1: 0}.get(code, code)
        left.append(ia)
        right.append(ib)
        outcome.append(code)
    if len(systems) < 2:
        raise DataError(f"{source}: a replay pool needs judgments of at least two systems")
    left_a = np.asarray(left, dtype=np.int64)
    right_a = np.asarray(right, dtype=np.int64)
    by_pair = _group_by_pair(left_a, right_a, len(systems))
    return ReplayPool(tuple(systems), left_a, right_a, np.asarray(outcome, dtype=np.int64), by_pair,
                      source, np.asarray(prompt, dtype=np.int64))


def _group_by_pair(left: np.ndarray, right: np.ndarray, m: int) -> dict:
    """``(i, j)`` with ``i < j`` → indices of that pair's judgments, in file order."""
    lo, hi = np.minimum(left, right), np.maximum(left, right)
    key = lo * m + hi
    order = np.argsort(key, kind="stable")
    by_pair = {}
    uniq, start = np.unique(key[order], return_index=True)
    bounds = list(start) + [order.size]
    for u, s0, s1 in zip(uniq, bounds[:-1], bounds[1:]):
        by_pair[(int(u // m), int(u % m))] = order[s0:s1]
    return by_pair


def fixed_order(pool: ReplayPool, rng: np.random.Generator) -> ReplayPool:
    """The pool with every pair in ONE presentation order: per pair (in sorted order) a fair coin
    from ``rng`` keeps the judgments with the first system left or those with it right; the
    other order's judgments are dropped (a pair judged in one order only keeps it)."""
    keep = []
    for (i, j) in sorted(pool.by_pair):
        idx = pool.by_pair[(i, j)]
        fwd = pool.left[idx] == i
        first_left = bool(rng.random() < 0.5)
        if not (fwd if first_left else ~fwd).any():
            first_left = not first_left
        keep.append(idx[fwd if first_left else ~fwd])
    sel = np.sort(np.concatenate(keep))
    left, right = pool.left[sel], pool.right[sel]
    return ReplayPool(pool.systems, left, right, pool.outcome[sel], _group_by_pair(left, right, len(pool.systems)),
                      f"{pool.source} (one order per pair)", None if pool.prompt is None else pool.prompt[sel])


@dataclass(frozen=True)
class OrderBalance:
    """How a pool's pairs are split between the two presentation orders.

    ``pairs``: pairs in the pool; ``one_order``: pairs shown in one order only;
    ``skewed``: pairs whose rarer order holds less than a quarter of their judgments
    (one-order pairs included); ``minority``: the rarer order's share over all pairs.
    """

    pairs: int
    one_order: int
    skewed: int
    minority: float

    def note(self) -> str | None:
        """One sentence when the orders are unbalanced (a skewed pair), else None."""
        if not self.skewed:
            return None
        what = (f"{self.one_order} of {self.pairs} pairs are judged in one presentation order only"
                if self.one_order else f"{self.skewed} of {self.pairs} pairs are judged mostly in one order")
        return (f"{what} (the rarer order holds {self.minority:.0%} of the judgments): a verdict in one order "
                "informs the pair's gap plus the position effect, so those pairs are settled only through "
                "the others; each pick is drawn in an order the pool still has")


def order_balance(pool: ReplayPool) -> OrderBalance:
    """:class:`OrderBalance` of ``pool``."""
    one = skewed = rare = 0
    for (i, _), idx in pool.by_pair.items():
        fwd = int(np.count_nonzero(pool.left[idx] == i))
        low = min(fwd, idx.size - fwd)
        one += low == 0
        skewed += low < 0.25 * idx.size
        rare += low
    return OrderBalance(len(pool.by_pair), one, skewed, rare / max(pool.size, 1))


def replay_truth(pool: ReplayPool) -> Truth:
    """The truth of a replay: the Laplace posterior mean on the whole pool, with each pair's P(order)."""
    return truth_from_counts(pool.counts())


class ReplayWalk:
    """A run's walk through a replay pool: each presentation order's judgments of a pair in a seeded
    order, drawn without replacement.

    ``rng`` depends only on (seed, repetition), so every strategy walks each order's pool in the
    same order (common random numbers, :mod:`planner.simulation.streams`).
    """

    def __init__(self, pool: ReplayPool, rng: np.random.Generator):
        self.pool = pool
        self.order = {o: rng.permutation(idx) for o, idx in sorted(pool.by_order().items())}
        self.used = {o: 0 for o in self.order}
        self.drawn: dict = {}       # (i, j) -> verdicts drawn per prompt (array over the pool's prompt codes)

    def order_capacity(self) -> dict:
        """Judgments left per presentation order ``(left, right)``, for the orders that have any."""
        return {o: self.order[o].size - n for o, n in self.used.items() if n < self.order[o].size}

    def capacity(self) -> dict:
        """Judgments left per pair, for the pairs that have any."""
        out: dict = {}
        for (a, b), n in self.order_capacity().items():
            p = (min(a, b), max(a, b))
            out[p] = out.get(p, 0) + n
        return out

    def clusters(self, icc: float | None = None):
        """What the pool's prompts tell the selection (:class:`planner.acquisition.clustering.Clustering`):
        per pair the expected information share of a random draw from what is left (its prompt's
        verdicts already drawn for the pair make the cluster it joins) and the design effect of
        what was drawn. None when the pool has no prompts."""
        from planner.acquisition.clustering import Clustering, design_effect, marginal_share

        if self.pool.prompt is None:
            return None
        base = Clustering() if icc is None else Clustering(icc=icc)
        share, deff = {}, {}
        for (i, j), drawn in self.drawn.items():
            left = [self.order[o][self.used[o]:] for o in ((i, j), (j, i)) if o in self.order]
            rest = np.concatenate(left) if left else np.zeros(0, dtype=np.int64)
            if rest.size:
                share[(i, j)] = float(np.mean(marginal_share(drawn[self.pool.prompt[rest]], base.icc)))
            deff[(i, j)] = design_effect(drawn[drawn > 0], base.icc)
        return Clustering(icc=base.icc, fresh={p: 0 for p in share}, share=share, deff=deff)

    def draw(self, pairs, left, systems) -> tuple[Counts | None, int]:
        """The next unused judgment of each pick in its planned order (``left``: the system shown first);
        a pick whose order ran dry within the batch is skipped."""
        lefts, rights, outs = [], [], []
        for (i, j), a in zip(pairs, left):
            o = (int(a), int(j if a == i else i))
            if self.used.get(o, 0) >= self.order.get(o, np.zeros(0)).size:
                continue  # the order ran dry within this batch
            idx = self.order[o][self.used[o]]
            self.used[o] += 1
            if self.pool.prompt is not None:       # verdicts drawn per prompt of the pair
                got = self.drawn.get((min(o), max(o)))
                if got is None:
                    got = self.drawn[(min(o), max(o))] = np.zeros(int(self.pool.prompt.max()) + 1)
                got[self.pool.prompt[idx]] += 1
            lefts.append(self.pool.left[idx])
            rights.append(self.pool.right[idx])
            outs.append(self.pool.outcome[idx])
        if not outs:
            return None, 0
        return Counts.from_arrays(systems, lefts, rights, outs), len(outs)
