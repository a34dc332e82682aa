"""Study.plan_counts (one scan, planner/store/plan_scan.py) against the methods it stands in for.

next-batch's plan used to call ``Study.counts(by_stratum=True)``,
``Study.pending_counts(by_stratum=True)`` and ``Study.pair_prompt_usage_codes()``,
each reading the judgments (and ``strata()`` twice more). ``plan_counts`` reads them
once (a large table in two halves at once, joined in rowid order); its three
answers must equal those methods' exactly, and its strata
``Study.strata()`` (including the "all" stratum appended when a judgment of any
kind, single-response ones too, is on a prompt the study does not hold). The
``mixed`` study of tests/test_study_scans.py holds every shape of judgment; the
counts are also checked against that file's oracle (the query before the array scan).
"""

from __future__ import annotations

import json

import numpy as np
import pytest
from test_study_scans import _oracle_counts, _same_counts, mixed  # noqa: F401  (the fixture)

from planner.counts import Counts
from planner.store import scans
from planner.store.study import Study, init_study


def _same_as_methods(st: Study) -> None:
    judged, pending, usage = st.plan_counts()
    _same_counts(judged, st.counts(by_stratum=True))
    _same_counts(judged, _oracle_counts(st, True))
    _same_counts(pending, st.pending_counts(by_stratum=True))
    assert judged.strata == pending.strata == st.strata()
    want = st.pair_prompt_usage_codes()
    for got_, want_ in zip(usage[:3], want[:3]):
        np.testing.assert_array_equal(got_, want_)
    assert usage[3] == want[3]


@pytest.mark.parametrize("chunk, split", [(scans.CHUNK_ROWS, scans.SPLIT_ROWS), (7, scans.SPLIT_ROWS),
                                          (scans.CHUNK_ROWS, 10), (7, 10)])
def test_plan_counts_equal_the_three_scans(mixed, monkeypatch, chunk, split):  # noqa: F811
    monkeypatch.setattr(scans, "CHUNK_ROWS", chunk)   # 7: many strings, some empty (a gap in seq)
    monkeypatch.setattr(scans, "SPLIT_ROWS", split)   # 10: two halves, the upper one in a worker thread
    with Study.open(mixed) as st:
        _same_as_methods(st)
        judged, pending, usage = st.plan_counts()
        assert judged.usable.sum() > 100 and pending.usable.sum() == 2   # not degenerate: i1, i2 pending
        assert usage[0].size > 10


def _study(tmp_path, judgments: list[tuple]) -> Study:
    """Two strata, every prompt in one; ``judgments`` rows ``(prompt, a, b, verdict, kind)``."""
    tmp_path.mkdir()
    prompts = tmp_path / "prompts.jsonl"
    prompts.write_text("".join(json.dumps({"id": f"q{i}", "text": f"question {i}", "stratum": f"s{i % 2}"}) + "\n"
                               for i in range(4)), encoding="utf-8")
    init_study(tmp_path / "st", systems=["x", "y", "z"], prompts_file=prompts)
    st = Study.open(tmp_path / "st")
    con = st.connection
    con.execute("INSERT INTO files (id, sha256, name, format, ingested) VALUES (1, 'h', 'f', 'jsonl', 't')")
    con.executemany("INSERT INTO judgments (id, prompt, a, b, verdict, kind, file) VALUES (?, ?, ?, ?, ?, ?, 1)",
                    [(f"j{k}", *row) for k, row in enumerate(judgments)])
    return st


def test_strata_all_only_when_a_judgment_is_on_a_prompt_not_held(tmp_path):
    held = [("q0", 0, 1, "A", "regular"), ("q1", 1, 2, "tie", "external"), ("q2", 2, 0, "B", "attention")]
    with _study(tmp_path / "a", held) as st:
        _same_as_methods(st)
        assert st.plan_counts()[0].strata == ("s0", "s1")
    # the only judgment elsewhere is a single-response one (b NULL): the scan must still see it
    with _study(tmp_path / "b", held + [("elsewhere", 0, None, "pass", "acceptability")]) as st:
        _same_as_methods(st)
        assert st.plan_counts()[0].strata == ("s0", "s1", "all")
    with _study(tmp_path / "c", held + [("elsewhere", 1, 0, "A", "attention")]) as st:   # not counted, still seen
        _same_as_methods(st)
        assert st.plan_counts()[0].strata == ("s0", "s1", "all")


def test_plan_counts_of_an_empty_study(tmp_path):
    init_study(tmp_path / "st", systems=["p", "q"])
    with Study.open(tmp_path / "st") as st:
        judged, pending, usage = st.plan_counts()
        _same_counts(judged, Counts.empty(("p", "q"), ("all",)))
        _same_counts(pending, Counts.empty(("p", "q"), ("all",)))
        assert all(a.size == 0 for a in usage[:3])
        _same_as_methods(st)
