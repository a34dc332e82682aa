"""One scan of the judgments for `next-batch`'s plan: counts by stratum, pair-prompt usage, strata.

The plan needs :meth:`Study.counts` (by stratum), :meth:`Study.pair_prompt_usage_codes`
and, for both counts, :meth:`Study.strata`. Each of those reads the whole judgments
table (at Arena scale, 1,000,000 rows: ~1.8 s, ~1 s and ~0.3 s twice). Here one
``group_concat`` scan (:func:`planner.store.scans.int_columns`) reads every judgment
once as a single integer::

    key = ((a * span + b) * q + ord + 1) * 32 + right * 16 + verdict * 4 + counted * 2 + pairwise

(``b`` 0 for single-response judgments, ``ord + 1`` 0 for a prompt the study does not
hold, ``counted``: the kind is one of ``kinds``), and the three answers are cut from
it with array operations. Each answer equals the method's own (``tests/test_arena_scan.py``
checks them against those methods).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from planner.counts import DEFAULT_STRATUM, Counts
from planner.store import scans
from planner.store.db import connect
from planner.store.records import COUNTED_KINDS

#: judgments (rowid span) from which the scan is read in two halves at once (:func:`_scan`)
SPLIT_ROWS = 100_000


@dataclass(frozen=True)
class PlanScan:
    """What one scan gives: ``strata`` (:meth:`Study.strata`), ``judged``
    (:meth:`Study.counts` by stratum) and ``usage`` (:meth:`Study.pair_prompt_usage_codes`)."""

    strata: tuple[str, ...]
    judged: Counts
    usage: tuple


def _key_sql(span: int, q: int, kinds) -> str:
    """The scan's one integer per judgment; ``kinds`` (the library's own names) as SQL string literals,
    since :func:`planner.store.scans.int_columns` binds parameters only after its rowid bounds."""
    literals = ",".join("'" + str(k).replace("'", "''") + "'" for k in kinds)
    return (f"((j.a * {span} + coalesce(j.b, 0)) * {q} + coalesce(p.ord, -1) + 1) * 32 + {scans.RIGHT} * 16 "
            f"+ ({scans.VERDICT}) * 4 + (j.kind IN ({literals})) * 2 + (j.b IS NOT NULL)")


def plan_scan(con, systems: tuple[str, ...], kinds=COUNTED_KINDS) -> PlanScan:
    """The strata, the judged counts by stratum and the pair-prompt usage codes, from one scan."""
    span, index = scans.system_index(con)
    rows = con.execute("SELECT ord, id, coalesce(stratum, ?) FROM prompts", (DEFAULT_STRATUM,)).fetchall()
    q = max((r[0] for r in rows), default=-1) + 2   # code = ord + 1; 0: a prompt the study does not hold
    names: list = [None] * q
    for ord_, name, _ in rows:
        names[ord_ + 1] = name
    key = _scan(con, _key_sql(span, q, kinds))
    rest, low = np.divmod(key, 32)
    ab, code = np.divmod(rest, q)
    strata = _strata(con, bool(np.any(code == 0)))
    pairwise = (low & 1) == 1
    judged = _judged(systems, strata, rows, index, span, ab, code, low, pairwise & ((low & 2) == 2))
    usage = _usage(con, span, q, index, ab[pairwise] * q + code[pairwise], names)
    return PlanScan(strata, judged, usage)


def _scan(con, expr: str) -> np.ndarray:
    """``expr`` over every judgment in rowid order; a large table is read in two halves at once.

    SQLite releases the GIL while it scans, so the upper half runs in a worker thread on
    its own connection (as :mod:`planner.store.grouped` does for the report) while this
    thread reads the lower half; the halves are joined in rowid order, so the result is
    the one scan's. (The study is read with no snapshot across statements either way:
    one statement per chunk of rowids, as :func:`planner.store.scans.int_columns` does.)
    """
    from concurrent.futures import ThreadPoolExecutor

    args = ("judgments", "j", [expr], "LEFT JOIN prompts p ON p.id = j.prompt")
    lo, hi = con.execute("SELECT min(rowid), max(rowid) FROM judgments").fetchone()
    file = next((r[2] for r in con.execute("PRAGMA database_list") if r[1] == "main"), "")
    if lo is None or hi - lo < SPLIT_ROWS or not file:
        return scans.int_columns(con, *args)[0]
    mid = lo + (hi - lo) // 2

    def upper() -> np.ndarray:
        other = connect(Path(file))
        try:
            return scans.int_columns(other, *args, rowids=(mid + 1, hi))[0]
        finally:
            other.close()

    with ThreadPoolExecutor(1) as pool:
        job = pool.submit(upper)
        low = scans.int_columns(con, *args, rowids=(lo, mid))[0]
        return np.concatenate([low, job.result()])


def _strata(con, unheld: bool) -> tuple[str, ...]:
    """:meth:`Study.strata`, told whether a judgment is on a prompt the study does not hold."""
    out = [r[0] for r in con.execute(
        "SELECT coalesce(stratum, ?) FROM prompts GROUP BY 1 ORDER BY min(ord)", (DEFAULT_STRATUM,)).fetchall()]
    if DEFAULT_STRATUM not in out and (not out or unheld):
        out.append(DEFAULT_STRATUM)
    return tuple(out)


def _judged(systems, strata, rows, index, span: int, ab, code, low, keep) -> Counts:
    """:meth:`Study.counts` ``(by_stratum=True)`` from the scan's counted pairwise rows."""
    if not keep.any():
        return Counts.empty(systems, strata)
    ab, code, low = ab[keep], code[keep], low[keep]
    a, b = np.divmod(ab, span)
    right, verdict = (low & 16) == 16, (low >> 2) & 3
    a, b = index[a], index[b]
    outcome = np.where(verdict == 0, right, np.where(verdict == 1, ~right, verdict)).astype(np.int64)
    sidx = {s: i for i, s in enumerate(strata)}
    lut = np.full(max((r[0] for r in rows), default=-1) + 2, sidx.get(DEFAULT_STRATUM, -1), dtype=np.int64)
    for ord_, _, name in rows:
        lut[ord_ + 1] = sidx[name]
    return Counts.from_arrays(systems, np.where(right, b, a), np.where(right, a, b), outcome, lut[code], strata)


def _usage(con, span: int, q: int, index, judged, names) -> tuple:
    """:meth:`Study.pair_prompt_usage_codes` from the scan's pairwise ``(a * span + b) * q + code`` values."""
    codes = scans.distinct_pair_codes(np.concatenate([judged, scans.issued_pair_codes(con, span, q)]), span, q)
    return (*scans.usage_arrays(codes, span, q, index), tuple(names))
