"""A damaged study in every command that opens one: one line naming the file, exit 1, no traceback,
study.sqlite and study.json byte-for-byte unchanged.

The damage classes are what users' disks and editors actually produce: a file
overwritten with garbage, a copy cut short, a zero-length file, a missing file,
another program's SQLite database, a study.json edited into the wrong JSON type,
malformed JSON, missing keys, a value of the wrong type, a page in the middle of
the database overwritten.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import sqlite3

import pytest
from _report_fixture import synthetic_study
from typer.testing import CliRunner

from cli.main import app

runner = CliRunner()


@pytest.fixture(scope="module")
def base_study(tmp_path_factory):
    return synthetic_study(tmp_path_factory.mktemp("base") / "st", n=120, n_prompts=12)


def _digest(study):
    h = {}
    for name in ("study.sqlite", "study.json"):
        p = study / name
        h[name] = hashlib.sha256(p.read_bytes()).hexdigest() if p.is_file() else p.exists()
    return h


def _rng_bytes(n, seed):
    import numpy as np

    return np.random.default_rng(seed).integers(0, 256, n, dtype=np.uint8).tobytes()


def _other_sqlite(db):
    db.unlink()
    con = sqlite3.connect(db)
    con.execute("CREATE TABLE meta (key TEXT, value TEXT)")
    con.execute("INSERT INTO meta VALUES ('schema_version', '1')")
    con.commit()
    con.close()


DAMAGE = {
    "garbage": (lambda db, cfg: db.write_bytes(_rng_bytes(8192, 1)), "study.sqlite: not a planner study database"),
    "truncated": (lambda db, cfg: db.write_bytes(db.read_bytes()[:3000]), "study.sqlite: not a planner study database"),
    "truncated-pages": (lambda db, cfg: db.write_bytes(db.read_bytes()[:8192]), "truncated"),
    "zero-length": (lambda db, cfg: db.write_bytes(b""), "the file is empty"),
    "missing-db": (lambda db, cfg: db.unlink(), "not a study"),
    "missing-json": (lambda db, cfg: cfg.unlink(), "not a study"),
    "db-is-directory": (lambda db, cfg: (db.unlink(), db.mkdir()), "not a study"),
    "other-sqlite": (lambda db, cfg: _other_sqlite(db), "not a planner study database (no table"),
    "middle-page": (lambda db, cfg: db.write_bytes(db.read_bytes()[:100] + _rng_bytes(4000, 2)
                                                   + db.read_bytes()[4100:]), "study.sqlite"),
    "json-list": (lambda db, cfg: cfg.write_text("[1, 2]"), "study.json: holds a JSON list, not an object"),
    "json-malformed": (lambda db, cfg: cfg.write_text('{"systems": ['), "study.json: malformed JSON"),
    "json-nul": (lambda db, cfg: cfg.write_bytes(b"\0" * 64), "study.json: malformed JSON"),
    "json-latin1": (lambda db, cfg: cfg.write_bytes(b'{"a": "\xe9"}'), "study.json: not UTF-8"),
    "json-missing-keys": (lambda db, cfg: cfg.write_text("{}"), "key 'systems' is missing"),
    "json-seed-string": (lambda db, cfg: cfg.write_text(json.dumps({**json.loads(cfg.read_text()), "seed": "x"})),
                         "key 'seed' is 'x'; expected an integer >= 0"),
    "json-qc-list": (lambda db, cfg: cfg.write_text(json.dumps({**json.loads(cfg.read_text()), "qc": [1]})),
                     "key 'qc'"),
    "json-deep": (lambda db, cfg: cfg.write_text("[" * 100_000 + "]" * 100_000), "study.json"),
    "json-huge-int": (lambda db, cfg: cfg.write_text('{"seed": ' + "9" * 5000 + "}"), "study.json"),
}

COMMANDS = {
    "status": ["status", "S"],
    "report": ["report", "S"],
    "decide": ["decide", "S", "--candidate", "sys-a", "--baseline", "sys-b"],
    "next-batch-dry": ["next-batch", "S", "--dry-run"],
    "next-batch": ["next-batch", "S", "--size", "4"],
    "ingest": ["ingest", "S", "VERDICTS"],
    "allocate": ["allocate", "--study", "S", "--budget", "4"],
    "simulate": ["simulate", "--from-study", "S", "--reps", "1", "--budget", "10", "--batch", "5",
                 "--strategies", "random"],
}


@pytest.mark.parametrize("damage", sorted(DAMAGE))
@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_damaged_study_is_one_line_and_untouched(base_study, tmp_path, damage, command):
    study = tmp_path / "st"
    shutil.copytree(base_study, study)
    verdicts = tmp_path / "v.jsonl"
    verdicts.write_text(json.dumps({"id": "x1", "prompt": "p1", "a": "sys-a", "b": "sys-b", "verdict": "A"}) + "\n")
    fn, expected = DAMAGE[damage]
    fn(study / "study.sqlite", study / "study.json")
    before = _digest(study)
    args = [str(study) if a == "S" else str(verdicts) if a == "VERDICTS" else a for a in COMMANDS[command]]
    r = runner.invoke(app, args)
    lines = r.stderr.strip().splitlines()
    assert r.exit_code == 1, (r.exit_code, r.stderr, r.exception)
    assert len(lines) == 1 and lines[0].startswith("error: "), r.stderr
    assert expected in lines[0]
    assert "Traceback" not in r.stderr and "None" not in lines[0]
    assert len(lines[0]) < 400
    assert _digest(study) == before
    assert not (study / "batches").exists()


def test_study_open_never_creates_a_database(tmp_path):
    from planner.errors import DataError
    from planner.store.db import connect as _connect
    from planner.store.study import Study

    with pytest.raises(DataError, match="cannot open the study database"):
        _connect(tmp_path / "nope.sqlite")
    assert not (tmp_path / "nope.sqlite").exists()
    (tmp_path / "study.json").write_text('{"planner_study": 1, "systems": ["a", "b"]}')
    with pytest.raises(DataError, match="not a study"):
        Study.open(tmp_path)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["study.json"]


def test_undamaged_copy_still_opens(base_study, tmp_path):
    """The checks must not refuse a real study (including its WAL-mode header)."""
    study = tmp_path / "st"
    shutil.copytree(base_study, study)
    r = runner.invoke(app, ["status", str(study), "--json"])
    assert r.exit_code == 0, r.stderr
    assert sum(json.loads(r.stdout)["totals"].values()) > 0
    os.sync()
