"""Study.report_scan (one scan of the judgments, planner/store/report_scan.py) against the queries it replaces.

The report read its judgment-level figures from a ``GROUP BY`` over the judgments joined
twice to the responses (planner/store/grouped.py up to commit b1b322f, copied below as
the oracle with the report's own folding of its rows) and its counts from
``Study.counts(by_stratum=True)``. The study here holds every case: responses of known
lengths (some equal, one system without responses), reasons (real, blank, whitespace),
QC kinds (attention, repeat, acceptability with ``b`` NULL), a kind outside the
vocabulary, judgments on a prompt the study does not hold, unknown positions, and a gap
in the storage order. Equality is exact (integer tallies, the same rows).
"""

from __future__ import annotations

import json
import sqlite3

import numpy as np
import pytest
from test_study_scans import _oracle_counts, _same_counts

from planner import diagnostics as dg
from planner.store import scans
from planner.store.study import COUNTED_KINDS, DB_NAME, Study, init_study

SYSTEMS = ("x", "y", "z", "w")


def _old_grouped(db_path) -> list[tuple]:
    """planner.store.grouped.grouped_judgments as of b1b322f: ``(a, b, verdict, kind, reason, sign, n)``."""
    con = sqlite3.connect(str(db_path))
    try:
        names = dict(con.execute("SELECT id, name FROM systems").fetchall())
        rows = con.execute(
            """SELECT j.a, j.b, (ra.length > rb.length) - (ra.length < rb.length), j.verdict, j.kind, j.reason,
                      count(*)
               FROM judgments j
               LEFT JOIN responses ra ON ra.prompt = j.prompt AND ra.system = j.a
               LEFT JOIN responses rb ON rb.prompt = j.prompt AND rb.system = j.b
               GROUP BY 1, 2, 3, 4, 5, 6""").fetchall()
    finally:
        con.close()
    return [(names[a], None if b is None else names[b], v, kind, reason, sign, int(n))
            for a, b, sign, v, kind, reason, n in rows]


def _old_figures(groups, systems):
    """The report's folding of the grouped rows (planner/workflows/report.py ``_judgment_figures``, b1b322f)."""
    totals = {"A": 0, "B": 0, "tie": 0, "invalid": 0}
    kinds: dict[str, int] = {}
    for _a, b, v, kind, _r, _s, n in groups:
        kinds[kind] = kinds.get(kind, 0) + n
        if b is not None and kind in COUNTED_KINDS:
            totals[v] += n
    ranking = [g for g in groups if g[1] is not None and g[3] not in dg.NON_RANKING_KINDS]
    has_lengths = any(s is not None for *_, s, _n in groups)
    length = dg.length_bias_counts((v, sign, n) for _a, _b, v, _k, _r, sign, n in ranking) if has_lengths else None
    reasons = dg.reason_shares_counts(((a, b, v, r, n) for a, b, v, _k, r, _s, n in ranking), systems)
    return totals, dict(sorted(kinds.items())), length, reasons


@pytest.fixture
def rich(tmp_path):
    """Four systems, six prompts (one without a stratum), responses for x, y, z (w has none), 600 judgments."""
    rng = np.random.default_rng(17)
    prompts = tmp_path / "prompts.jsonl"
    prompts.write_text("".join(json.dumps({"id": f"q{i}", "text": f"question {i}",
                                           **({"stratum": "s1" if i % 2 else "s2"} if i < 5 else {})}) + "\n"
                               for i in range(6)), encoding="utf-8")
    responses = tmp_path / "responses.jsonl"
    responses.write_text("".join(json.dumps({"prompt": f"q{i}", "system": s,
                                             "text": "word " * int(rng.integers(1, 4))}) + "\n"
                                 for i in range(6) for s in ("x", "y", "z")), encoding="utf-8")
    init_study(tmp_path / "st", systems=list(SYSTEMS), prompts_file=prompts, responses_file=responses)
    with Study.open(tmp_path / "st") as st:
        con = st.connection
        con.execute("INSERT INTO files (id, sha256, name, format, ingested) VALUES (1, 'h', 'f', 'jsonl', 't')")
        rows = []
        kinds = ["regular", "external", "swap", "overlap", "attention", "repeat", "acceptability", "pilot"]
        for k in range(600):
            a, b = rng.choice(4, size=2, replace=False)
            kind = kinds[k % 8]
            verdict = str(rng.choice(["A", "B", "tie", "invalid"]))
            if kind == "acceptability":
                b, verdict = None, str(rng.choice(["pass", "fail", "invalid"]))
            reason = [None, None, "accuracy", "format", "", "  ", "accuracy "][int(rng.integers(7))]
            position = [None, "left", "right"][int(rng.integers(3))]
            prompt = f"q{rng.integers(6)}" if k % 13 else "elsewhere"
            annotator = None if k % 3 else f"ann{k % 2}"
            rows.append((k + 1 + (70 if k >= 300 else 0), f"j{k}", prompt, int(a), None if b is None else int(b),
                         verdict, position, kind, reason, annotator))
        con.executemany("INSERT INTO judgments (seq, id, prompt, a, b, verdict, a_position, kind, reason, annotator, "
                        "file) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 1)", rows)
    return tmp_path / "st"


@pytest.mark.parametrize("chunk, split", [(scans.CHUNK_ROWS, scans.SPLIT_ROWS), (7, 10)])
def test_report_scan_equals_the_old_queries(rich, monkeypatch, chunk, split):
    # chunk 7 / split 10: many strings, some empty (the gap in seq), two halves read at once
    monkeypatch.setattr(scans, "CHUNK_ROWS", chunk)
    monkeypatch.setattr(scans, "SPLIT_ROWS", split)
    with Study.open(rich) as st:
        scan = st.report_scan()
        _same_counts(scan.judged, st.counts(by_stratum=True))
        _same_counts(scan.judged, _oracle_counts(st, True))
        totals, kinds, length, reasons = _old_figures(_old_grouped(rich / DB_NAME), st.systems)
        assert scan.totals == totals and scan.kinds == kinds
        assert "pilot" in kinds and "acceptability" in kinds           # not degenerate
        assert dg.length_bias_counts(scan.length_rows) == length
        assert length.n > 50 and length.n_equal > 0 and length.n_missing > 0
        got = dg.reason_shares_counts(scan.reason_rows, st.systems, (scan.no_reason_wins, scan.no_reason_losses))
        assert got == reasons
        assert 0 < reasons.n_without_reason < reasons.n_decisive
        named = st.connection.execute("SELECT count(*) FROM judgments WHERE annotator IS NOT NULL").fetchone()[0]
        assert scan.annotated == named == 200


def test_report_scan_without_responses_or_judgments(tmp_path):
    init_study(tmp_path / "st", systems=["p", "q"])
    with Study.open(tmp_path / "st") as st:
        scan = st.report_scan()
        assert scan.totals == {"A": 0, "B": 0, "tie": 0, "invalid": 0} and scan.kinds == {}
        assert scan.length_rows is None and scan.reason_rows == ()
        assert scan.no_reason_wins == scan.no_reason_losses == (0, 0)


def test_sparse_length_lookup_equals_the_dense_one(rich, monkeypatch):
    from planner.store import report_scan

    with Study.open(rich) as st:
        dense = st.report_scan().length_rows
        monkeypatch.setattr(report_scan, "DENSE_LENGTHS", 0)   # sorted keys and a binary search instead
        assert st.report_scan().length_rows == dense
