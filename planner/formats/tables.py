"""Column tables as file bytes (edge): CSV, JSONL and Parquet, for ``planner export``.

One table = column names + rows of plain values. Non-finite floats become
empty (``None``); CSV is RFC 4180 (UTF-8, CRLF, header row) with
formula-leading text cells neutralised (:func:`planner.csvcell.neutralize_cell`)
and floats written with ``repr`` (round-trip exact); JSONL is one object per
row; Parquet needs pyarrow. Same rows → identical bytes (CSV, JSONL).
"""

from __future__ import annotations

import csv
import io
import json
import math
from collections.abc import Iterable, Sequence

from planner.csvcell import neutralize_cell

__all__ = ["ENCODERS", "csv_bytes", "jsonl_bytes", "parquet_bytes"]


def _cell(v):
    """A non-finite float is a missing value."""
    if isinstance(v, float) and not math.isfinite(v):
        return None
    return v


def csv_bytes(columns: Sequence[str], rows: Iterable[Sequence]) -> bytes:
    """RFC 4180 CSV (UTF-8, CRLF): header row, then the rows; floats by ``repr``, formulas neutralised."""
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\r\n")  # RFC 4180; a CR inside a cell is then quoted
    w.writerow(columns)
    for r in rows:
        w.writerow(["" if v is None else neutralize_cell(v) if isinstance(v, str) else repr(v)
                    if isinstance(v, float) else v for v in (_cell(x) for x in r)])
    return buf.getvalue().encode("utf-8")


def jsonl_bytes(columns: Sequence[str], rows: Iterable[Sequence]) -> bytes:
    """One JSON object per row (UTF-8, keys = columns)."""
    return "".join(json.dumps(dict(zip(columns, map(_cell, r))), ensure_ascii=False) + "\n"
                   for r in rows).encode("utf-8")


def parquet_bytes(columns: Sequence[str], rows: Iterable[Sequence]) -> bytes:
    """A Parquet file's bytes (pyarrow, imported here)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    rows = list(rows)
    table = pa.table({c: [_cell(r[k]) for r in rows] for k, c in enumerate(columns)})
    buf = io.BytesIO()
    pq.write_table(table, buf)
    return buf.getvalue()


ENCODERS = {"csv": csv_bytes, "jsonl": jsonl_bytes, "parquet": parquet_bytes}
