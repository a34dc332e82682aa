"""The store side of the annotation round trip: idempotent incremental ingest, audited edits, skipped rows, unanswered
(transport-failed) items, void/retract, annotator aliases, unknown positions, schema v1 -> v2."""

from __future__ import annotations

import hashlib
import json
import sqlite3
from pathlib import Path

import pytest

from planner.errors import DataError, UsageError
from planner.formats import readers as R
from planner.store.lifecycle import retract_file, void_batches
from planner.store.study import SCHEMA_VERSION, BatchItem, Study, ingest, init_study, status

SYSTEMS = ["s0", "s1", "s2"]


def jl(path: Path, rows) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def digest(study: Path) -> str:
    return hashlib.sha256((study / "study.sqlite").read_bytes()).hexdigest()


@pytest.fixture
def st(tmp_path):
    prompts = jl(tmp_path / "p.jsonl", [{"id": f"p{k}", "text": f"t{k}"} for k in range(4)])
    init_study(tmp_path / "st", systems=SYSTEMS, prompts_file=prompts)
    study = tmp_path / "st"
    with Study.open(study) as s:
        s.record_batch({"seed": 0}, [
            BatchItem("i1", "p0", "s0", "s1", annotator="alice"), BatchItem("i2", "p1", "s1", "s2", annotator="alice"),
            BatchItem("i3", "p2", "s2", "s0", annotator="bob"), BatchItem("i4", "p3", "s0", "s2", annotator="bob")])
    return study


@pytest.fixture
def fake_reader():
    """Register a reader that yields the records a test puts in a JSON list (skip/unanswered kinds)."""
    def read(path, **_):
        for k, rec in enumerate(json.loads(Path(path).read_text()), 1):
            yield k, rec, None
    R.register(R.Reader("test-records", read, lambda s: False, "test"))
    yield "test-records"
    R.READERS.pop("test-records", None)


def test_cumulative_exports_ingest_only_the_new(st, tmp_path):
    r1 = jl(tmp_path / "r1.jsonl", [{"item": "i1", "verdict": "left"}, {"item": "i3", "verdict": "tie"}])
    assert ingest(st, [r1]).files[0].rows == 2
    r2 = jl(tmp_path / "r2.jsonl", [{"item": "i1", "verdict": "left"}, {"item": "i3", "verdict": "tie"},
                                    {"item": "i2", "verdict": "right"}])
    f = ingest(st, [r2]).files[0]
    assert (f.rows, f.already, f.B) == (1, 2, 1)
    assert f.summary() == "1 new, 2 already stored"
    with Study.open(st) as s:
        assert sum(s.counts().totals().values()) == 3  # i1 A, i3 tie, i2 B: each once
    before = digest(st)
    assert ingest(st, [r2]).files[0].rows == 0  # the same file again: nothing changes
    assert digest(st) == before


def test_edit_refused_by_default_then_applied_and_audited(st, tmp_path):
    ingest(st, [jl(tmp_path / "r1.jsonl", [{"item": "i1", "verdict": "left", "reason": "accuracy"}])])
    edited = jl(tmp_path / "r2.jsonl", [{"item": "i1", "verdict": "right", "reason": "format"},
                                        {"item": "i2", "verdict": "tie"}])
    before = digest(st)
    with pytest.raises(DataError) as e:
        ingest(st, [edited])
    assert digest(st) == before  # refused whole: not even the new i2 row
    assert "1 stored judgment(s) changed at the source ('i1@alice' A -> B (reason 'accuracy' -> 'format'))" \
        in e.value.problems[-1]
    assert "`accept_changes`" in e.value.problems[-1] and "--accept-changes" in e.value.lines(True)[-1]
    f = ingest(st, [edited], accept_changes=True).files[0]
    assert (f.rows, f.changed, f.replaced) == (1, 1, 1)
    with Study.open(st) as s:
        audit = s.connection.execute("SELECT judgment, old_verdict, new_verdict, old_reason, new_reason FROM "
                               "judgment_edits").fetchall()
        assert audit == [("i1@alice", "A", "B", "accuracy", "format")]
        assert s.counts().totals() == {"A": 0, "B": 1, "tie": 1, "invalid": 0}
    assert status(st).edits == 1


def test_skip_and_unanswered_records(st, tmp_path, fake_reader):
    f = tmp_path / "recs.json"
    f.write_text(json.dumps([
        {"item": "i1", "verdict": "left"}, {"skip": "blank", "item": "i2"}, {"skip": "cancelled"},
        {"item": "i3", "unanswered": "batch_expired", "id": "judge:i3"},
        {"item": "i4", "unanswered": "HTTP 429 rate_limit_exceeded", "id": "judge:i4"}]))
    res = ingest(st, [f], format=fake_reader).files[0]
    assert (res.rows, res.skipped, res.unanswered) == (1, {"blank": 1, "cancelled": 1}, 2)
    assert "2 skipped (blank 1, cancelled 1), 2 unanswered" in res.summary()
    with Study.open(st) as s:
        assert [i.item_id for i in s.unanswered_items()] == ["i3", "i4"]
        assert s.counts().totals()["invalid"] == 0  # transport failures are not invalid verdicts
        b = s.batches()[0]
        assert (b.issued, b.returned, b.unanswered, b.pending) == (4, 1, 2, 3)
    retry = tmp_path / "retry.json"  # the retried request's output lands normally
    retry.write_text(json.dumps([{"item": "i3", "verdict": "right", "id": "judge:i3"}]))
    assert ingest(st, [retry], format=fake_reader).files[0].B == 1
    with Study.open(st) as s:
        assert [i.item_id for i in s.unanswered_items()] == ["i4"]
    unknown = tmp_path / "unk.json"
    unknown.write_text(json.dumps([{"item": "nope", "unanswered": "500"}]))
    with pytest.raises(DataError) as e:
        ingest(st, [unknown], format=fake_reader)
    assert "unknown item 'nope'" in e.value.problems[0]


def test_void_batch_stops_pending_and_undo(st, tmp_path):
    ingest(st, [jl(tmp_path / "r.jsonl", [{"item": "i1", "verdict": "left"}])])
    with Study.open(st) as s:
        assert int(s.pending_counts().ties.sum()) == 3
    res = void_batches(st, [1], reason="vendor gone")
    assert (res.batches, res.pending_items) == ((1,), 3)
    with Study.open(st) as s:
        assert int(s.pending_counts().ties.sum()) == 0
        b = s.batches()[0]
        assert (b.pending, b.void_reason) == (0, "vendor gone") and b.voided
    # a late verdict for a voided batch still counts
    assert ingest(st, [jl(tmp_path / "late.jsonl", [{"item": "i2", "verdict": "tie"}])]).files[0].tie == 1
    assert void_batches(st, [1], undo=True).batches == (1,)
    with Study.open(st) as s:
        assert int(s.pending_counts().ties.sum()) == 2
    with pytest.raises(UsageError, match="batch 9 does not exist"):
        void_batches(st, [9])
    assert void_batches(st, older_than_days=0).batches == (1,)


def test_retract_and_restore(st, tmp_path):
    keep = ingest(st, [jl(tmp_path / "keep.jsonl", [{"item": "i1", "verdict": "left"}])])
    wrong = jl(tmp_path / "wrong.jsonl", [{"item": "i2", "verdict": "right"}, {"item": "i3", "verdict": "left"}])
    ingest(st, [wrong])
    assert keep.files[0].rows == 1
    res = retract_file(st, "wrong.jsonl")
    assert res.judgments == 2
    with Study.open(st) as s:
        assert sum(s.counts().totals().values()) == 1
        assert s.connection.execute("SELECT count(*) FROM retracted_judgments").fetchone()[0] == 2
    with pytest.raises(DataError) as e:  # re-ingesting it says how to restore instead
        ingest(st, [wrong])
    assert "retracted at" in e.value.problems[0] and "--undo" in e.value.lines(True)[1]
    assert retract_file(st, str(wrong), undo=True).judgments == 2  # by path: hashed
    with Study.open(st) as s:
        assert sum(s.counts().totals().values()) == 3
    with pytest.raises(UsageError, match="never ingested"):
        retract_file(st, "nothing.jsonl")
    st_ = status(st)
    assert st_.retracted_files == 0 and st_.files == 2


def test_annotator_identity_learned_from_the_plan(st, tmp_path):
    rows = [{"item": "i1", "verdict": "left", "annotator": "ls-user:1", "id": "ls:1:1"},
            {"item": "i2", "verdict": "tie", "annotator": "ls-user:1", "id": "ls:2:2"},
            {"item": "i3", "verdict": "left", "annotator": "bob@example.org", "id": "ls:3:3"},
            {"item": "i4", "verdict": "left", "annotator": "ls-user:9", "id": "ls:4:4"}]
    res = ingest(st, [jl(tmp_path / "ls.jsonl", rows)]).files[0]
    # bob@example.org carries the name bob; ls-user:9 judged only bob's item too, but two identities are
    # never one annotator by guesswork: ls-user:9 keeps its own name and the note says how to map it
    assert set(res.aliases) == {"ls-user:1 -> alice", "bob@example.org -> bob"}
    assert any("ls-user:9" in n and "--annotator-map" in n for n in res.notes)
    with Study.open(st) as s:
        got = dict(s.connection.execute("SELECT id, annotator FROM judgments"))
        assert got == {"ls:1:1": "alice", "ls:2:2": "alice", "ls:3:3": "bob", "ls:4:4": "ls-user:9"}
        src = dict(s.connection.execute("SELECT id, source_annotator FROM judgments"))
        assert src["ls:1:1"] == "ls-user:1" and src["ls:3:3"] == "bob@example.org"
    # an identity that judged items planned for two people is kept as it is, and said so
    with Study.open(st) as s:
        s.record_batch({"seed": 1}, [BatchItem("j1", "p0", "s1", "s2", annotator="alice"),
                                     BatchItem("j2", "p1", "s2", "s0", annotator="bob")])
    two = [{"item": "j1", "verdict": "left", "annotator": "ls-user:5", "id": "ls:5:5"},
           {"item": "j2", "verdict": "left", "annotator": "ls-user:5", "id": "ls:6:6"}]
    res = ingest(st, [jl(tmp_path / "two.jsonl", two)]).files[0]
    assert res.aliases == () and "ls-user:5 judged items planned for alice, bob" in res.notes[0]
    res = ingest(st, [jl(tmp_path / "map.jsonl", [{"item": "j1", "verdict": "left", "annotator": "ls-user:7",
                                                     "id": "ls:7:7"}])], annotator_map={"ls-user:7": "carol"})
    with Study.open(st) as s:
        assert s.connection.execute("SELECT annotator FROM judgments WHERE id = 'ls:7:7'").fetchone()[0] == "carol"


def test_unknown_position_stored_null_and_balanced_in_counts(st, tmp_path, fake_reader):
    f = tmp_path / "o.json"
    f.write_text(json.dumps([{"id": f"x{k}", "prompt": "p0", "a": "s0", "b": "s1", "verdict": "A",
                              "a_position": None} for k in range(4)]))
    ingest(st, [f], format=fake_reader)
    with Study.open(st) as s:
        assert s.connection.execute("SELECT count(*) FROM judgments WHERE a_position IS NULL").fetchone()[0] == 4
        c = s.counts()
        # s0 won all four; unknown positions alternate between the two cells, two each
        cells = {(int(a), int(b)): (int(x), int(y)) for a, b, x, y in zip(c.a, c.b, c.a_wins, c.b_wins)}
        assert cells == {(0, 1): (2, 0), (1, 0): (0, 2)}


def test_file_changed_while_being_read_is_refused(st, tmp_path, monkeypatch):
    f = jl(tmp_path / "r.jsonl", [{"item": "i1", "verdict": "left"}, {"item": "i2", "verdict": "left"}])
    real = R.READERS["positions"].read

    def growing(path, **kw):
        for k, row in enumerate(real(path, **kw)):
            if k == 0:
                with open(path, "a", encoding="utf-8") as fh:  # another process appends meanwhile
                    fh.write(json.dumps({"item": "i3", "verdict": "left"}) + "\n")
            yield row
    monkeypatch.setitem(R.READERS, "positions", R.Reader("positions", growing, R.READERS["positions"].detect, ""))
    before = digest(st)
    with pytest.raises(DataError) as e:
        ingest(st, [f])
    assert "changed while it was being read" in e.value.problems[-1]
    assert digest(st) == before


def test_status_explains_quality_control_in_the_totals(st, tmp_path):
    with Study.open(st) as s:
        s.record_batch({"seed": 2}, [BatchItem("q1", "p0", "s0", "s1", kind="attention", annotator="alice"),
                                     BatchItem("q2", "p0", "s1", "s0", kind="repeat", annotator="alice",
                                               link="i1")])
    ingest(st, [jl(tmp_path / "r.jsonl", [{"item": "i1", "verdict": "left"}, {"item": "q1", "verdict": "left"},
                                          {"item": "q2", "verdict": "right"}])])
    r = status(st)
    assert (r.judgments, r.counted, r.qc) == (3, 1, {"attention": 1, "repeat": 1})
    assert r.counted + sum(r.qc.values()) == r.judgments == sum(a.judgments for a in r.annotators)
    assert r.totals_sentence() == ("3 judgments from 1 file(s): 1 counted (A 1 / B 0 / tie 0 / invalid 0) "
                                   "+ 1 attention, 1 repeat quality-control")


# a study written by schema version 1 (planner 0.1.0), lifted to v2 on open with nothing lost
V1_SCHEMA = """
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE systems (id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE);
CREATE TABLE prompts (id TEXT PRIMARY KEY, ord INTEGER NOT NULL, text TEXT NOT NULL, stratum TEXT,
    weight REAL, difficulty REAL, frozen INTEGER NOT NULL DEFAULT 0);
CREATE TABLE responses (prompt TEXT NOT NULL REFERENCES prompts(id), system INTEGER NOT NULL REFERENCES systems(id),
    text TEXT NOT NULL, length INTEGER NOT NULL, acceptable INTEGER, PRIMARY KEY (prompt, system));
CREATE TABLE batches (id INTEGER PRIMARY KEY AUTOINCREMENT, created TEXT NOT NULL, manifest TEXT NOT NULL);
CREATE TABLE items (id TEXT PRIMARY KEY, batch INTEGER NOT NULL REFERENCES batches(id),
    prompt TEXT NOT NULL REFERENCES prompts(id), left_sys INTEGER NOT NULL REFERENCES systems(id),
    right_sys INTEGER REFERENCES systems(id), kind TEXT NOT NULL, annotator TEXT, link TEXT REFERENCES items(id),
    order_group TEXT);
CREATE INDEX items_batch ON items(batch);
CREATE TABLE files (id INTEGER PRIMARY KEY, sha256 TEXT NOT NULL UNIQUE, name TEXT NOT NULL, format TEXT NOT NULL,
    rows INTEGER NOT NULL DEFAULT 0, ingested TEXT NOT NULL);
CREATE TABLE judgments (seq INTEGER PRIMARY KEY, id TEXT NOT NULL UNIQUE, item TEXT REFERENCES items(id),
    prompt TEXT NOT NULL, a INTEGER NOT NULL REFERENCES systems(id), b INTEGER REFERENCES systems(id),
    verdict TEXT NOT NULL CHECK (verdict = 'A' OR verdict = 'B' OR verdict = 'tie' OR verdict = 'invalid'
                                 OR verdict = 'pass' OR verdict = 'fail'),
    a_position TEXT NOT NULL CHECK (a_position = 'left' OR a_position = 'right'),
    kind TEXT NOT NULL, annotator TEXT, reason TEXT, seconds REAL, confidence REAL,
    file INTEGER NOT NULL REFERENCES files(id));
CREATE UNIQUE INDEX judgments_item_annotator ON judgments(item, coalesce(annotator, '')) WHERE item IS NOT NULL;
CREATE TABLE artifacts (name TEXT PRIMARY KEY, data BLOB NOT NULL, saved TEXT NOT NULL);
INSERT INTO meta VALUES ('schema_version', '1');
INSERT INTO systems VALUES (1, 'm'), (2, 'n');
INSERT INTO prompts VALUES ('q', 0, 'text', NULL, NULL, NULL, 0);
INSERT INTO batches VALUES (1, '2026-01-01T00:00:00+00:00', '{}');
INSERT INTO items VALUES ('it', 1, 'q', 1, 2, 'regular', NULL, NULL, NULL);
INSERT INTO files VALUES (1, 'abc', 'old.jsonl', 'normalized', 2, '2026-01-01T00:00:00+00:00');
INSERT INTO judgments VALUES (1, 'j1', NULL, 'q', 1, 2, 'A', 'left', 'external', 'x', NULL, NULL, NULL, 1);
INSERT INTO judgments VALUES (2, 'j2', NULL, 'q', 2, 1, 'tie', 'right', 'external', 'x', NULL, 3.5, NULL, 1);
"""


def test_v1_study_is_migrated(tmp_path):
    study = tmp_path / "old"
    study.mkdir()
    (study / "study.json").write_text(json.dumps({  # as planner 0.1.0's init wrote it
        "planner_study": 1, "systems": ["m", "n"], "anchor": None, "reasons": ["accuracy"],
        "qc": {"attention": 0.05, "repeat": 0.05, "overlap": 0.15, "acceptability": 0.0}, "tie_convention": "half",
        "seed": 0, "max_words": 400, "created": "2026-01-01T00:00:00+00:00"}))
    con = sqlite3.connect(study / "study.sqlite")
    con.executescript(V1_SCHEMA)
    con.close()
    assert SCHEMA_VERSION == 3  # v1 -> v2 -> v3 on open
    with Study.open(study) as s:
        assert s.connection.execute("SELECT value FROM meta WHERE key='schema_version'").fetchone()[0] == "3"
        assert s.connection.execute("SELECT count(*) FROM judge_cache").fetchone()[0] == 0
        assert s.counts().totals() == {"A": 1, "B": 0, "tie": 1, "invalid": 0}
        assert [b.pending for b in s.batches()] == [1]
        assert s.connection.execute("SELECT seconds FROM judgments WHERE id = 'j2'").fetchone()[0] == 3.5
    assert void_batches(study, [1]).pending_items == 1
