"""The study store: init, prompts/responses, counts, batches, artifacts, schema version."""

from __future__ import annotations

import json
import sqlite3

import numpy as np
import pytest

from planner.errors import DataError, UsageError
from planner.store.study import SCHEMA_VERSION, BatchItem, Study, half_tie_score, ingest, init_study, status


def write_jsonl(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


@pytest.fixture
def small(tmp_path):
    """Three systems, four prompts in two strata, all responses."""
    prompts = write_jsonl(tmp_path / "prompts.jsonl", [
        {"id": f"q{i}", "text": f"question {i}", "stratum": "s1" if i <= 2 else "s2", "frozen": i == 1}
        for i in range(1, 5)])
    responses = write_jsonl(tmp_path / "responses.jsonl", [
        {"prompt": f"q{i}", "system": s, "text": f"{s} answers {i}", **({"acceptable": True} if s == "x" else {})}
        for i in range(1, 5) for s in ("x", "y", "z")])
    init_study(tmp_path / "st", prompts_file=prompts, responses_file=responses, anchor="x")
    return tmp_path / "st"


def test_init_vicuna80(vicuna_data, tmp_path):
    # README of ../shared/data: 80 prompts in 9 strata, 8 systems, 640 responses
    info = init_study(tmp_path / "v", prompts_file=vicuna_data / "vicuna80/prompts.jsonl",
                      responses_file=vicuna_data / "vicuna80/responses.jsonl", anchor="gpt-4")
    assert info.prompts == 80 and info.responses == 640 and info.missing_responses == 0
    assert info.systems == ("gpt-4", "gpt-3.5-turbo", "bard", "vicuna-13b", "guanaco-7b", "guanaco-13b",
                            "guanaco-33b", "guanaco-65b")
    assert len(info.strata) == 9
    with Study.open(tmp_path / "v") as st:
        assert st.anchor == "gpt-4" and st.config["max_words"] is None and st.config["tie_convention"] == "half"
        assert st.strata()[0] == "generic"
        assert sum(p.stratum == "coding" for p in st.prompts()) == 7  # README: coding q61-67 (7)
        r = st.response("vicuna80-q1", "gpt-4")
        assert r.text.startswith("Improving your time management") and r.length == len(r.text)
        assert st.response("vicuna80-q1", "bard").acceptable is None
        assert len(st.responses()) == 640
    db = sqlite3.connect(tmp_path / "v" / "study.sqlite")
    assert db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"


def test_init_systems_given_and_errors(tmp_path):
    info = init_study(tmp_path / "a", systems=["p", "q"])
    assert info.systems == ("p", "q") and info.strata == ("all",)
    with pytest.raises(UsageError, match="already holds a study"):
        init_study(tmp_path / "a", systems=["p", "q"])
    with pytest.raises(UsageError, match="at least two"):
        init_study(tmp_path / "b", systems=["p"])
    with pytest.raises(UsageError, match="`anchor`"):
        init_study(tmp_path / "c", systems=["p", "q"], anchor="r")
    prompts = write_jsonl(tmp_path / "p.jsonl", [{"id": "q1", "text": "t"}, {"id": "q1", "text": "u"},
                                                {"id": "q2", "text": "v", "weight": "heavy"}])
    with pytest.raises(DataError) as e:
        init_study(tmp_path / "d", systems=["p", "q"], prompts_file=prompts)
    assert any("p.jsonl:2: duplicate prompt id 'q1'" in p for p in e.value.problems)
    assert any("p.jsonl:3: weight 'heavy'" in p for p in e.value.problems)
    assert not (tmp_path / "d" / "study.sqlite").exists()


def test_prompts_from_spreadsheet_csv(tmp_path):
    # BOM, CRLF, quoted comma, quoted newline, non-ASCII: what Excel/Sheets export
    csv_bytes = ("\ufeffid,text,stratum,weight,frozen\r\n"
                 "q1,\"Hello, world\",greet,2,yes\r\n"
                 "q2,\"Zwei\r\nZeilen: Grüße, 東京\",greet,,\r\n").encode("utf-8")
    (tmp_path / "p.csv").write_bytes(csv_bytes)
    init_study(tmp_path / "s", systems=["a", "b"], prompts_file=tmp_path / "p.csv")
    with Study.open(tmp_path / "s") as st:
        p = st.prompts()
    assert [x.id for x in p] == ["q1", "q2"]
    assert p[0].text == "Hello, world" and p[0].weight == 2.0 and p[0].frozen
    assert p[1].text == "Zwei\r\nZeilen: Grüße, 東京" and p[1].weight is None and not p[1].frozen


def test_counts_orientation_and_strata(small, tmp_path):
    # a_position "right" means b was shown left: the cell's left system is b and the verdict flips
    f = write_jsonl(tmp_path / "j.jsonl", [
        {"id": "1", "prompt": "q1", "a": "x", "b": "y", "verdict": "A"},
        {"id": "2", "prompt": "q3", "a": "x", "b": "y", "verdict": "A", "a_position": "right"},
        {"id": "3", "prompt": "q3", "a": "y", "b": "z", "verdict": "tie"},
        {"id": "4", "prompt": "q4", "a": "z", "b": "x", "verdict": "invalid"}])
    ingest(small, [f])
    with Study.open(small) as st:
        c = st.counts(by_stratum=True)
        assert c.strata == ("s1", "s2")
        cells = {(c.systems[a], c.systems[b], c.strata[s]): (int(w), int(l), int(t), int(i))
                 for a, b, s, w, l, t, i in zip(c.a, c.b, c.stratum, c.a_wins, c.b_wins, c.ties, c.invalid)}
        assert cells == {("x", "y", "s1"): (1, 0, 0, 0), ("y", "x", "s2"): (0, 1, 0, 0),
                         ("y", "z", "s2"): (0, 0, 1, 0), ("z", "x", "s2"): (0, 0, 0, 1)}
        pooled = st.counts()
        assert pooled.strata == ("all",) and pooled.totals() == {"A": 1, "B": 1, "tie": 1, "invalid": 1}
        usage = st.pair_prompt_usage()
        assert usage[("x", "y")] == {"q1", "q3"} and usage[("x", "z")] == {"q4"}
        j = list(st.judgments())
        assert [x.stratum for x in j] == ["s1", "s2", "s2", "s2"] and j[1].a_position == "right"


def test_record_batch_pending_and_status(small, tmp_path):
    items = [BatchItem("it1", "q1", "x", "y"), BatchItem("it2", "q3", "y", "z"),
             BatchItem("it3", "q1", "y", "x", kind="repeat", annotator="ann", link="it1"),
             BatchItem("it4", "q2", "z", None, kind="acceptability")]
    with Study.open(small) as st:
        bid = st.record_batch({"seed": 1, "strategy": "test"}, items)
        assert st.items(bid) == items
        pend = st.pending_counts()
        # regular items it1 (x,y) and it2 (y,z) are pending; repeat/acceptability are QC
        assert int(pend.ties.sum()) == 2 and int(pend.pair_matrix()[0, 1]) == 1
        assert st.pair_prompt_usage()[("x", "y")] == {"q1"}
        with pytest.raises(DataError) as e:
            st.record_batch({}, [BatchItem("it9", "q1", "x", "x"), BatchItem("it9", "nope", "w", "y")])
        probs = " | ".join(e.value.problems)
        assert "left == right" in probs and "duplicate item id" in probs and "unknown prompt" in probs
        with pytest.raises(DataError, match="already issued"):
            st.record_batch({}, [BatchItem("it1", "q1", "x", "y")])
        assert len(st.batches()) == 1  # the refused batches left nothing
    v = tmp_path / "v.jsonl"
    write_jsonl(v, [{"item": "it1", "verdict": "right", "annotator": "ann"},
                    {"item": "it4", "verdict": "pass", "annotator": "ann"}])
    ingest(small, [v])
    with Study.open(small) as st:
        b = st.batches()[0]
        assert (b.issued, b.returned, b.pending) == (4, 2, 2) and b.manifest["strategy"] == "test"
        assert int(st.pending_counts().ties.sum()) == 1
        acc = st.acceptability_counts(by_stratum=True)
        assert int(acc.passed[2, 0]) == 1 and acc.pass_rate() == [None, None, 1.0]
        j = next(x for x in st.judgments() if x.item == "it1")
        assert (j.a, j.b, j.verdict, j.batch) == ("x", "y", "B", 1)
    s = status(small)
    assert s.batches[0].pending == 2
    assert s.acceptability == {"z": {"pass": 1, "fail": 0, "invalid": 0, "pass_rate": 1.0}}
    assert [(p.x, p.y, p.x_wins, p.y_wins, p.score) for p in s.pairs] == [("x", "y", 0, 1, 0.0)]


def test_status_seed_fixture(tmp_path):
    # Seed fixture (the hand-counted four-verdict study): q1 A, q2 tie, q3 B, q4 invalid -> A=1 B=1 tie=1
    # invalid=1, score 0.500
    init_study(tmp_path / "s", systems=["m", "n"])
    empty = status(tmp_path / "s")
    assert [s.score for s in empty.per_system] == [None, None]  # empty -> null
    f = write_jsonl(tmp_path / "j.jsonl", [
        {"id": f"q{i}", "prompt": f"q{i}", "a": "m", "b": "n", "verdict": v}
        for i, v in enumerate(["A", "tie", "B", "invalid"], 1)])
    ingest(tmp_path / "s", [f])
    st = status(tmp_path / "s")
    assert st.totals == {"A": 1, "B": 1, "tie": 1, "invalid": 1}
    assert st.per_system[0].score == pytest.approx(0.5, abs=0)  # (1 + 1/2) / 3 exactly
    assert st.pairs[0].invalid == 1


def test_half_tie_score_rules():
    assert half_tie_score(0, 0, 0) is None  # only invalid / nothing usable -> null
    assert half_tie_score(0, 0, 1) == 0.5  # only a tie
    assert half_tie_score(1, 1, 1) == 0.5


def test_artifacts_and_schema_version(small):
    with Study.open(small) as st:
        assert st.load_artifact("posterior.nc") is None
        st.save_artifact("posterior.nc", b"\x00\x01data")
        st.save_artifact("posterior.nc", b"v2")
        assert st.load_artifact("posterior.nc") == b"v2"
    db = sqlite3.connect(small / "study.sqlite")
    assert db.execute("SELECT value FROM meta WHERE key='schema_version'").fetchone()[0] == str(SCHEMA_VERSION)
    db.execute("UPDATE meta SET value=? WHERE key='schema_version'", (str(SCHEMA_VERSION + 1),))
    db.commit()
    db.close()
    with pytest.raises(DataError, match="newer than this planner"):
        Study.open(small)


def test_migration_path(small, monkeypatch):
    # a study at version SCHEMA_VERSION - 1 is lifted by MIGRATIONS on open
    import planner.store.schema as ps

    monkeypatch.setattr(ps, "SCHEMA_VERSION", SCHEMA_VERSION + 1)
    monkeypatch.setitem(ps.MIGRATIONS, SCHEMA_VERSION, "CREATE TABLE extra (x INTEGER)")
    with Study.open(small) as st:
        assert st.connection.execute("SELECT value FROM meta WHERE key='schema_version'").fetchone()[0] == \
            str(SCHEMA_VERSION + 1)
        assert st.connection.execute("SELECT count(*) FROM extra").fetchone()[0] == 0


def test_not_a_study(tmp_path):
    with pytest.raises(DataError, match="not a study"):
        Study.open(tmp_path)


def test_counts_match_from_records(small, tmp_path):
    # cross-check Study.counts against Counts.from_records on the same rows
    from planner.counts import Counts

    rng = np.random.default_rng(3)
    sys_ = ["x", "y", "z"]
    rows, recs = [], []
    for k in range(200):
        a, b = rng.choice(3, 2, replace=False)
        v = ["A", "B", "tie", "invalid"][rng.integers(4)]
        pos = "right" if rng.random() < 0.3 else "left"
        rows.append({"id": str(k), "prompt": f"q{1 + k % 4}", "a": sys_[a], "b": sys_[b], "verdict": v,
                     "a_position": pos})
        left, right = (sys_[a], sys_[b]) if pos == "left" else (sys_[b], sys_[a])
        flip = {"A": "B", "B": "A"}.get(v, v) if pos == "right" else v
        recs.append((left, right, flip))
    ingest(small, [write_jsonl(tmp_path / "r.jsonl", rows)])
    want = Counts.from_records(sys_, recs)
    with Study.open(small) as st:
        got = st.counts()
    for f in ("a", "b", "a_wins", "b_wins", "ties", "invalid"):
        np.testing.assert_array_equal(getattr(got, f), getattr(want, f))
