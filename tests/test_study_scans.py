"""Study.counts and Study.pair_prompt_usage (array scans, planner/store/scans.py) against the old queries.

The oracles below are the queries these methods ran before the array scans (a ``GROUP BY``
over the judgments with the orientation and outcome worked out in SQL; a
``UNION`` of judged and issued ``(a, b, prompt)`` rows folded in Python), copied
here unchanged. The study mixes every case the fast path must get right: known
and unknown positions (unknown ones alternate by storage order), all verdicts,
QC kinds that are not counted, acceptability rows (``b`` NULL), judgments on
prompts the study does not hold, prompts without a stratum, issued items, and a
gap in the storage order. Equality is exact (integer counts, sets of ids).
"""

from __future__ import annotations

import json

import numpy as np
import pytest

from planner.counts import DEFAULT_STRATUM, Counts
from planner.store import scans
from planner.store.study import COUNTED_KINDS, BatchItem, Study, init_study

SYSTEMS = ("x", "y", "z", "w")


def _oracle_counts(study: Study, by_stratum: bool, kinds=COUNTED_KINDS) -> Counts:
    strata = study.strata() if by_stratum else (DEFAULT_STRATUM,)
    sidx = {s: i for i, s in enumerate(strata)}
    pos = "coalesce(j.a_position, CASE j.seq % 2 WHEN 1 THEN 'left' ELSE 'right' END)"
    q = (f"""SELECT CASE WHEN {pos}='right' THEN j.b ELSE j.a END,
                    CASE WHEN {pos}='right' THEN j.a ELSE j.b END,
                    coalesce(p.stratum, ?),
                    CASE j.verdict WHEN 'A' THEN ({pos}='right')
                                   WHEN 'B' THEN ({pos}='left')
                                   WHEN 'tie' THEN 2 ELSE 3 END,
                    count(*)
             FROM judgments j LEFT JOIN prompts p ON p.id = j.prompt
             WHERE j.b IS NOT NULL AND j.kind IN ({','.join('?' * len(kinds))})
             GROUP BY 1, 2, 3, 4""")
    rows = study.connection.execute(q, (DEFAULT_STRATUM, *kinds)).fetchall()
    if not rows:
        return Counts.empty(study.systems, strata)
    ids = [r[0] for r in study.connection.execute("SELECT id FROM systems ORDER BY id")]
    place = {sid: i for i, sid in enumerate(ids)}
    n = np.array([r[-1] for r in rows], dtype=np.int64)
    return Counts.from_arrays(study.systems, np.repeat([place[r[0]] for r in rows], n),
                              np.repeat([place[r[1]] for r in rows], n), np.repeat([int(r[3]) for r in rows], n),
                              np.repeat([sidx[r[2]] if by_stratum else 0 for r in rows], n), strata)


def _oracle_usage(study: Study) -> dict:
    out: dict = {}
    name = dict(study.connection.execute("SELECT id, name FROM systems"))
    order = {s: i for i, s in enumerate(study.systems)}
    for x, y, prompt in study.connection.execute(
            "SELECT a, b, prompt FROM judgments WHERE b IS NOT NULL UNION "
            "SELECT left_sys, right_sys, prompt FROM items WHERE right_sys IS NOT NULL"):
        u, v = name[x], name[y]
        key = (u, v) if order[u] < order[v] else (v, u)
        out.setdefault(key, set()).add(prompt)
    return {k: frozenset(v) for k, v in out.items()}


def _same_counts(got: Counts, want: Counts) -> None:
    assert got.systems == want.systems and got.strata == want.strata
    for field in ("a", "b", "stratum", "a_wins", "b_wins", "ties", "invalid"):
        np.testing.assert_array_equal(getattr(got, field), getattr(want, field), err_msg=field)


@pytest.fixture
def mixed(tmp_path):
    """Four systems, six prompts (two without a stratum), 400 judgments of every shape, one batch."""
    rng = np.random.default_rng(7)
    prompts = tmp_path / "prompts.jsonl"
    prompts.write_text("".join(json.dumps({"id": f"q{i}", "text": f"question {i}",
                                           **({"stratum": "s1" if i % 2 else "s2"} if i < 4 else {})}) + "\n"
                               for i in range(6)), encoding="utf-8")
    init_study(tmp_path / "st", systems=list(SYSTEMS), prompts_file=prompts)
    with Study.open(tmp_path / "st") as st:
        con = st.connection
        con.execute("INSERT INTO files (id, sha256, name, format, ingested) VALUES (1, 'h', 'f', 'jsonl', 't')")
        rows = []
        for k in range(400):
            a, b = rng.choice(4, size=2, replace=False)
            kind = ["regular", "external", "swap", "overlap", "attention", "repeat", "acceptability"][k % 7]
            verdict = str(rng.choice(["A", "B", "tie", "invalid"]))
            if kind == "acceptability":
                b, verdict = None, str(rng.choice(["pass", "fail", "invalid"]))
            position = [None, "left", "right"][int(rng.integers(3))]
            prompt = f"q{rng.integers(6)}" if k % 11 else "elsewhere"  # a prompt the study does not hold
            annotator = [None, "ann-a", "ann-b", "ann-c"][k % 4]
            rows.append((k + 1 + (50 if k >= 200 else 0), f"j{k}", prompt, int(a), None if b is None else int(b),
                         verdict, position, kind, annotator))
        con.executemany("INSERT INTO judgments (seq, id, prompt, a, b, verdict, a_position, kind, annotator, file) "
                        "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, 1)", rows)
        st.record_batch({"seed": 0}, [BatchItem("i1", "q5", "w", "x"), BatchItem("i2", "q4", "z", "y"),
                                      BatchItem("i3", "q0", "x", None, kind="acceptability")])
    return tmp_path / "st"


@pytest.mark.parametrize("chunk", [scans.CHUNK_ROWS, 7])
def test_counts_and_usage_equal_the_old_queries(mixed, monkeypatch, chunk):
    # chunk 7: the 400 judgments (storage order 1..200, 251..450) are read in 65 strings, some empty
    monkeypatch.setattr(scans, "CHUNK_ROWS", chunk)
    with Study.open(mixed) as st:
        assert "all" in st.strata()  # judgments on "elsewhere" and the prompts without a stratum
        for by_stratum in (False, True):
            _same_counts(st.counts(by_stratum=by_stratum), _oracle_counts(st, by_stratum))
        _same_counts(st.counts(by_stratum=True, kinds=("attention",)), _oracle_counts(st, True, ("attention",)))
        want = _oracle_usage(st)
        got = st.pair_prompt_usage()
        assert got == want
        assert "elsewhere" in got[("x", "y")] | got[("x", "z")] | got[("y", "z")]
        assert "q5" in got[("x", "w")] and "q4" in got[("y", "z")]  # issued, not judged: still used
        assert st.counts().usable.sum() > 100  # the fixture is not degenerate


def test_empty_study_scans(tmp_path):
    init_study(tmp_path / "st", systems=["p", "q"])
    with Study.open(tmp_path / "st") as st:
        _same_counts(st.counts(by_stratum=True), Counts.empty(("p", "q"), ("all",)))
        assert st.pair_prompt_usage() == {}


@pytest.mark.parametrize("chunk", [scans.CHUNK_ROWS, 7])
def test_judgment_arrays_are_the_counts_one_by_one(mixed, monkeypatch, chunk):
    """Study.judgment_arrays: its counts equal Study.counts; prompt and annotator codes name the same
    prompts and annotators as the stored strings (one code per string, -1 for no annotator), judgments in
    storage order."""
    monkeypatch.setattr(scans, "CHUNK_ROWS", chunk)
    with Study.open(mixed) as st:
        for by_stratum in (False, True):
            ja = st.judgment_arrays(by_stratum=by_stratum, annotators=True)
            _same_counts(ja.counts(), _oracle_counts(st, by_stratum))
        rows = st.connection.execute(f"SELECT prompt, annotator FROM judgments WHERE b IS NOT NULL AND kind IN "
                               f"({','.join('?' * len(COUNTED_KINDS))}) ORDER BY seq", COUNTED_KINDS).fetchall()
        assert ja.n == len(rows)
        prompt_of: dict = {}
        annotator_of: dict = {}
        for (prompt, annotator), pc, ac in zip(rows, ja.prompt.tolist(), ja.annotator.tolist()):
            assert prompt_of.setdefault(pc, prompt) == prompt
            assert annotator_of.setdefault(ac, annotator) == annotator
        assert len(set(prompt_of.values())) == len(prompt_of) == 7        # q0..q5 and "elsewhere"
        assert annotator_of[-1] is None and sorted(k for k in annotator_of if k >= 0) == [0, 1, 2]
        assert "elsewhere" in prompt_of.values()
        assert (st.judgment_arrays(annotators=False).annotator == -1).all()
