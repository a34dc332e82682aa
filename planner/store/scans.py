"""Whole-table scans of the judgments as integer arrays, for the aggregates of :class:`planner.store.queries.Study`.

At Arena scale (300 systems, 1,000,000 judgments) a ``GROUP BY`` over the
judgments sorts about as many groups as there are rows (the data are sparse:
~90,000 ordered pairs x 300 prompts), and fetching one Python tuple per row is
nearly as slow. Here SQLite evaluates one integer expression per row and joins
the values into a comma-separated string (``group_concat``, in C); numpy parses
that string (``np.fromstring(..., sep=",")``) and aggregates with array
operations. Each string covers at most :data:`CHUNK_ROWS` consecutive rowids, so
it stays far below SQLite's 1,000,000,000-byte string limit whatever the size of
the study.

Expressions must never be NULL (``group_concat`` skips NULLs, which would
misalign the columns): wrap nullable columns in ``coalesce``.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from planner.counts import DEFAULT_STRATUM, Counts

#: rowids per ``group_concat`` string: about 16 MB of text for a 15-digit key
CHUNK_ROWS = 1 << 20
#: judgments (rowid span) from which :func:`split_scan` reads the table in two halves at once
SPLIT_ROWS = 100_000


def int_columns(con: sqlite3.Connection, table: str, alias: str, exprs: Sequence[str], join: str = "",
                where: str = "1", args: tuple = (), rowids: tuple[int, int] | None = None) -> list[np.ndarray]:
    """The integer ``exprs`` over the rows of ``table AS alias`` (after ``join``, filtered by ``where``).

    Returns one int64 array per expression, rows in rowid order, all the same length.
    ``args`` fill the ``?`` of ``where`` (``join`` takes none); ``rowids`` ``(lo, hi)``
    restricts the scan to those rowids (default: the whole table).
    """
    lo, hi = rowids if rowids is not None else con.execute(f"SELECT min(rowid), max(rowid) FROM {table}").fetchone()
    parts: list[list[np.ndarray]] = [[] for _ in exprs]
    cols = ", ".join(f"group_concat({e})" for e in exprs)
    q = (f"SELECT {cols} FROM {table} {alias} {join} "
         f"WHERE {alias}.rowid BETWEEN ? AND ? AND ({where})")
    for start in range(lo, hi + 1, CHUNK_ROWS) if lo is not None else ():
        bounds = (start, min(start + CHUNK_ROWS - 1, hi))
        row = con.execute(q, (*bounds, *args)).fetchone()
        if row[0] is None:
            continue
        for part, text in zip(parts, row):
            part.append(np.fromstring(text, dtype=np.int64, sep=","))
    return [np.concatenate(p) if p else np.zeros(0, dtype=np.int64) for p in parts]


def system_index(con: sqlite3.Connection) -> tuple[int, np.ndarray]:
    """``(span, index)``: ``span`` = largest system id + 1; ``index[id]`` = the system's place in id order."""
    ids = np.array([r[0] for r in con.execute("SELECT id FROM systems ORDER BY id")], dtype=np.int64)
    span = int(ids.max()) + 1 if ids.size else 1
    index = np.full(span, -1, dtype=np.int64)
    index[ids] = np.arange(ids.size)
    return span, index


#: 1 when the shown-first position is right, by the stored ``a_position``; unknown (NULL) positions
#: alternate by storage order (odd ``seq`` = left), so they carry no information about the position term
RIGHT = "(coalesce(j.a_position, CASE j.seq % 2 WHEN 1 THEN 'left' ELSE 'right' END) = 'right')"
#: the verdict relative to the stored orientation: 0 A, 1 B, 2 tie, 3 anything else (invalid)
VERDICT = "CASE j.verdict WHEN 'A' THEN 0 WHEN 'B' THEN 1 WHEN 'tie' THEN 2 ELSE 3 END"


def judged_cells(con: sqlite3.Connection, kinds: Sequence[str], index: np.ndarray, span: int,
                 with_prompt: bool) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray | None]:
    """Pairwise judgments of ``kinds`` as ``(left, right, outcome, prompt_ord)`` arrays.

    ``left``/``right`` are system places (:func:`system_index`) as shown, ``outcome``
    0 = left won, 1 = right won, 2 = tie, 3 = invalid; ``prompt_ord`` the prompt's
    ``ord`` (-1 for a prompt the study does not hold), or None unless ``with_prompt``.
    """
    got = judged_columns(con, kinds, index, span, ["coalesce(p.ord, -1)"] if with_prompt else [],
                         "LEFT JOIN prompts p ON p.id = j.prompt" if with_prompt else "")
    return got[0], got[1], got[2], got[3] if with_prompt else None


def judged_columns(con: sqlite3.Connection, kinds: Sequence[str], index: np.ndarray, span: int,
                   extra: Sequence[str] = (), join: str = "") -> list[np.ndarray]:
    """``[left, right, outcome, *extra]`` of the pairwise judgments of ``kinds`` (see :func:`judged_cells`);
    ``extra`` are further integer expressions on ``j`` (and the tables of ``join``), never NULL."""
    exprs = [f"(j.a * {span} + j.b) * 8 + {RIGHT} * 4 + {VERDICT}", *extra]
    marks = ",".join("?" * len(kinds))
    cols = int_columns(con, "judgments", "j", exprs, join, f"j.b IS NOT NULL AND j.kind IN ({marks})", tuple(kinds))
    ab, low = np.divmod(cols[0], 8)
    return [*shown_cells(index, span, ab, low >= 4, low % 4), *cols[1:]]


def shown_cells(index: np.ndarray, span: int, ab: np.ndarray, right: np.ndarray,
                verdict: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(left, right, outcome)`` as shown, from stored ``ab = a_id * span + b_id``, ``right`` (the stored
    ``a`` was shown on the right) and ``verdict`` 0 A, 1 B, 2 tie, 3 invalid relative to ``(a, b)``;
    systems as places (``index``), outcome 0 left won, 1 right won, 2 tie, 3 invalid."""
    a, b = np.divmod(ab, span)
    a, b = index[a], index[b]
    outcome = np.where(verdict == 0, right, np.where(verdict == 1, ~right, verdict)).astype(np.int64)
    return np.where(right, b, a), np.where(right, a, b), outcome


def pair_prompt_codes(con: sqlite3.Connection, span: int, q: int) -> np.ndarray:
    """Distinct ``(min(x, y) * span + max(x, y)) * q + ord + 1`` over pairwise judgments and items.

    ``x``, ``y`` are system ids, ``ord`` the prompt's order (``-1``: a prompt the
    study does not hold, code 0 — those are read by name apart). Sorted ascending.
    """
    judged = int_columns(con, "judgments", "j", [_PAIR_PROMPT_KEY.format("j.a", "j.b", span=span, q=q)],
                         "LEFT JOIN prompts p ON p.id = j.prompt", "j.b IS NOT NULL")[0]
    return distinct_pair_codes(np.concatenate([judged, issued_pair_codes(con, span, q)]), span, q)


#: ``(x * span + y) * q + ord + 1`` of a pairwise row (``ord`` -1, code 0: a prompt the study does not hold)
_PAIR_PROMPT_KEY = "({} * {span} + {}) * {q} + coalesce(p.ord, -1) + 1"


def issued_pair_codes(con: sqlite3.Connection, span: int, q: int) -> np.ndarray:
    """``(left * span + right) * q + ord + 1`` of every issued pairwise item (rowid order, not distinct)."""
    return int_columns(con, "items", "i", [_PAIR_PROMPT_KEY.format("i.left_sys", "i.right_sys", span=span, q=q)],
                       "LEFT JOIN prompts p ON p.id = i.prompt", "i.right_sys IS NOT NULL")[0]


def usage_arrays(codes: np.ndarray, span: int, q: int, index: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(x, y, code)`` of distinct sorted pair codes (:func:`distinct_pair_codes`), the prompts the study
    does not hold (code 0) left out; ``x``, ``y`` mapped through ``index`` (system id -> place)."""
    pair, code = np.divmod(codes[codes % q != 0], q)
    x, y = np.divmod(pair, span)
    return index[x], index[y], code


def distinct_pair_codes(codes: np.ndarray, span: int, q: int) -> np.ndarray:
    """``(x * span + y) * q + code`` values with each pair unordered (``min``, ``max``), distinct, sorted."""
    ab, code = np.divmod(codes, q)
    a, b = np.divmod(ab, span)
    keys = np.sort((np.minimum(a, b) * span + np.maximum(a, b)) * q + code)
    return keys[np.r_[True, keys[1:] != keys[:-1]]] if keys.size else keys


def split_scan(con: sqlite3.Connection, expr: str, join: str = "LEFT JOIN prompts p ON p.id = j.prompt") -> np.ndarray:
    """``expr`` over every judgment (alias ``j``, after ``join``) in rowid order; a large table in two halves.

    SQLite releases the GIL while it scans, so the upper half runs in a worker thread on
    its own connection while this thread reads the lower half; the halves are joined in
    rowid order, so the result is the one scan's. (The study is read with no snapshot
    across statements either way: one statement per chunk of rowids, as
    :func:`int_columns` does.)
    """
    from concurrent.futures import ThreadPoolExecutor

    from planner.store.db import connect

    args = ("judgments", "j", [expr], join)
    lo, hi = con.execute("SELECT min(rowid), max(rowid) FROM judgments").fetchone()
    file = next((r[2] for r in con.execute("PRAGMA database_list") if r[1] == "main"), "")
    if lo is None or hi - lo < SPLIT_ROWS or not file:
        return int_columns(con, *args)[0]
    mid = lo + (hi - lo) // 2

    def upper() -> np.ndarray:
        other = connect(Path(file))
        try:
            return int_columns(other, *args, rowids=(mid + 1, hi))[0]
        finally:
            other.close()

    with ThreadPoolExecutor(1) as pool:
        job = pool.submit(upper)
        low = int_columns(con, *args, rowids=(lo, mid))[0]
        return np.concatenate([low, job.result()])


def strata_of(con: sqlite3.Connection, unheld: bool) -> tuple[str, ...]:
    """:meth:`Study.strata`, told whether a judgment is on a prompt the study does not hold."""
    out = [r[0] for r in con.execute(
        "SELECT coalesce(stratum, ?) FROM prompts GROUP BY 1 ORDER BY min(ord)", (DEFAULT_STRATUM,)).fetchall()]
    if DEFAULT_STRATUM not in out and (not out or unheld):
        out.append(DEFAULT_STRATUM)
    return tuple(out)


def prompt_span(con: sqlite3.Connection) -> int:
    """Largest prompt ``ord`` + 2: the number of prompt codes ``ord + 1`` (0: a prompt the study does not hold)."""
    return int(con.execute("SELECT coalesce(max(ord), -1) + 2 FROM prompts").fetchone()[0])


def judged_counts(systems, strata: tuple[str, ...], lut: np.ndarray, index: np.ndarray, span: int, ab: np.ndarray,
                  code: np.ndarray, right: np.ndarray, verdict: np.ndarray) -> Counts:
    """:meth:`Study.counts` ``(by_stratum=True)`` from pairwise rows cut from a scan key.

    ``ab``, ``right``, ``verdict`` as :func:`shown_cells`; ``code = ord + 1`` (0: a prompt the
    study does not hold); ``lut[code]`` the stratum place
    (:func:`planner.store.judged.stratum_lut`).
    """
    if not ab.size:
        return Counts.empty(systems, strata)
    left, right_sys, outcome = shown_cells(index, span, ab, right, verdict)
    return Counts.from_arrays(systems, left, right_sys, outcome, lut[code], strata)
