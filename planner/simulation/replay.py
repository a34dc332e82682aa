"""A replay pool: real judgments grouped by unordered system pair, built from records.

The file is read elsewhere (the workflow, with the same reader as ``planner
ingest``); this module takes its records. A requested comparison draws an unused
judgment of that pair (without replacement, see :mod:`planner.simulation.loop`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterable, Mapping

import numpy as np

from planner.counts import Counts
from planner.equality import array_eq
from planner.errors import DataError
from planner.simulation.truth import Truth, truth_from_counts

__all__ = ["ReplayPool", "VERDICT_CODE", "pool_from_records", "replay_truth"]

# outcome codes as in planner.counts.Counts.from_arrays (3 = invalid)
VERDICT_CODE = {"A": 0, "B": 1, "tie": 2, "invalid": 3}


@array_eq
@dataclass(frozen=True)
class ReplayPool:
    """Real judgments grouped by unordered system pair.

    ``left``/``right``/``outcome`` are per judgment (outcome codes as in
    :meth:`planner.counts.Counts.from_arrays`, 3 = invalid); ``by_pair`` maps
    ``(i, j)`` with ``i < j`` to the indices of that pair's judgments.
    """

    systems: tuple[str, ...]
    left: np.ndarray
    right: np.ndarray
    outcome: np.ndarray
    by_pair: dict = field(repr=False)
    source: str = ""

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
    left, right, outcome = [], [], []
    for rec in records:
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
                      source)


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


def replay_truth(pool: ReplayPool) -> Truth:
    """The truth of a replay: the Laplace posterior mean on the whole pool, with each pair's P(order)."""
    return truth_from_counts(pool.counts())
