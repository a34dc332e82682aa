"""Output files that cannot be written, and a study on a full disk: one line, the real cause, study untouched.

The faults are real (``tests/_os_faults.py``): a full tmpfs in a private mount
namespace (ENOSPC) and a ``chmod 555`` directory written by a process without
the capabilities that bypass permissions (EACCES). Each command runs as a
subprocess (``python -m cli``), so what is checked is what a user sees: the
exit code, one ``error:`` line naming the path and the system's reason, no
traceback, and the study's content unchanged (an SQL dump before and after).
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest
from _os_faults import cli, full_disk, no_write, python

from planner.store.study import DB_NAME, init_study
from planner.workflows.next_batch import BatchSelection, Output, QualityControl, next_batch

SYSTEMS = ("alpha", "beta", "gamma")


def _jl(path: Path, rows) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


@pytest.fixture
def study(tmp_path) -> Path:
    prompts = _jl(tmp_path / "p.jsonl", [{"id": f"p{i}", "text": f"Question {i}?"} for i in range(12)])
    responses = _jl(tmp_path / "r.jsonl", [{"prompt": f"p{i}", "system": s, "text": f"Answer {s} {i}."}
                                           for i in range(12) for s in SYSTEMS])
    init_study(tmp_path / "study", prompts_file=prompts, responses_file=responses, seed=1)
    next_batch(tmp_path / "study", BatchSelection(size=6, seed=2), output=Output(out=tmp_path / "b1.jsonl"),
               qc=QualityControl(attention=0, repeat=0, overlap=0, acceptability=0))
    return tmp_path / "study"


def dump(study: Path) -> str:
    """The study's content, as SQL (independent of page layout and WAL state)."""
    con = sqlite3.connect(str(study / DB_NAME))
    try:
        return "\n".join(con.iterdump())
    finally:
        con.close()


def one_error_line(r, exit_code: int, *needles: str) -> str:
    assert r.returncode == exit_code, (r.returncode, r.stderr[-2000:])
    assert "Traceback" not in r.stderr, r.stderr
    errors = [ln for ln in r.stderr.splitlines() if ln.startswith("error:")]
    assert len(errors) == 1, r.stderr
    for n in needles:
        assert n in errors[0], errors[0]
    return errors[0]


def _need(prefix):
    if prefix is None:
        pytest.skip("cannot make this fault here (needs unshare with a mount namespace / setpriv)")
    return prefix


# ------------------------------------------------------------------ ENOSPC
def test_next_batch_out_on_a_full_disk(study, tmp_path):
    before = dump(study)
    full = tmp_path / "full"
    r = cli(["next-batch", study, "--size", "4", "--out", full / "b2.jsonl"], _need(full_disk(full)))
    one_error_line(r, 1, "--out", "b2.jsonl", "No space left on device", "ENOSPC")
    assert dump(study) == before                      # no batch recorded
    assert not list(study.glob(".planner-staging.*"))  # no journal left to recover


def test_export_on_a_full_disk(study, tmp_path):
    before = dump(study)
    full = tmp_path / "full"
    r = cli(["export", study, "--out", full / "exp"], _need(full_disk(full)))
    one_error_line(r, 1, "--out", "No space left on device")
    assert dump(study) == before


def test_pull_output_on_a_full_disk(tmp_path):
    """``pull`` keeps each export in STUDY/label-studio before ingesting: that folder is on a full disk."""
    full = tmp_path / "full"
    r = python(_PULL_SCRIPT.format(tmp=str(tmp_path), target=str(full)), _need(full_disk(full)))
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout.strip().splitlines()[-1])
    assert out["error"].startswith("label-studio:") and "No space left on device" in out["error"]
    assert out["judgments"] == 0 and out["dump_unchanged"]


_PULL_SCRIPT = """
import json, sqlite3
from pathlib import Path
from test_push_pull import ALICE, FakeLS, _study
from planner.errors import PlannerError
from planner.workflows.push_pull import pull, push
tmp = Path({tmp!r})
study, key = _study(tmp, acceptability=0.0)
ls = FakeLS()
push(study, client=ls)
ls.annotate(next(iter(key)), "left", ALICE)
(study / "label-studio").symlink_to({target!r}, target_is_directory=True)
dump = lambda: "\\n".join(sqlite3.connect(str(study / "study.sqlite")).iterdump())
before = dump()
try:
    pull(study, client=ls)
    error = None
except PlannerError as exc:
    error = str(exc)
con = sqlite3.connect(str(study / "study.sqlite"))
print(json.dumps({{"error": error, "judgments": con.execute("SELECT count(*) FROM judgments").fetchone()[0],
                  "dump_unchanged": dump() == before}}))
"""


# ------------------------------------------------------------------ EACCES
@pytest.fixture
def read_only(tmp_path):
    d = tmp_path / "ro"
    d.mkdir(mode=0o555)
    yield d
    d.chmod(0o755)


def test_next_batch_out_in_a_read_only_directory(study, read_only):
    before = dump(study)
    r = cli(["next-batch", study, "--size", "4", "--out", read_only / "b2.jsonl"], _need(no_write()))
    one_error_line(r, 2, "--out", str(read_only), "ermission denied")
    assert dump(study) == before


def test_export_in_a_read_only_directory_and_under_proc(study, read_only):
    before = dump(study)
    r = cli(["export", study, "--out", read_only / "exp"], _need(no_write()))
    one_error_line(r, 2, "--out", "ermission denied")
    r = cli(["export", study, "--out", "/proc/planner-export"])
    one_error_line(r, 2, "--out", "/proc")
    assert dump(study) == before


def test_pull_output_in_a_read_only_directory(tmp_path):
    ro = tmp_path / "ro"
    ro.mkdir(mode=0o555)
    try:
        r = python(_PULL_SCRIPT.format(tmp=str(tmp_path), target=str(ro)), _need(no_write()))
    finally:
        ro.chmod(0o755)
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout.strip().splitlines()[-1])
    assert "label-studio" in out["error"] and "ermission denied" in out["error"]
    assert out["judgments"] == 0 and out["dump_unchanged"]


# ------------------------------------------------------------------ a name that is a path
def test_annotator_name_that_is_a_path_is_a_usage_error(study, tmp_path):
    before = dump(study)
    r = cli(["next-batch", study, "--size", "4", "--annotators", "../../evil", "--out", tmp_path / "x" / "b2.jsonl"])
    one_error_line(r, 2, "--annotators", "'../../evil'", "not a valid annotator name")
    assert dump(study) == before
    assert not (tmp_path / "evil.jsonl").exists() and not list(tmp_path.rglob("*evil*"))


# ------------------------------------------------------------------ item 15: the real cause, not "damaged"
def test_a_study_on_a_full_disk_is_not_called_damaged(study, tmp_path):
    mnt = tmp_path / "disk"
    prefix = _need(full_disk(mnt, study=study))
    f = _jl(tmp_path / "more.jsonl", [{"id": f"n{i}", "prompt": f"p{i % 12}", "a": "alpha", "b": "beta",
                                        "verdict": "A", "reason": "r" * 500} for i in range(2000)])
    for args in (["status", mnt / "study"], ["ingest", mnt / "study", f]):
        r = cli(args, prefix)
        line = one_error_line(r, 1, "disk holding the study is full")
        assert "damaged" not in line and "backup" not in line


def test_an_integer_overflow_is_not_called_damaged(study):
    """Token counts a valid int64 each, too large to add in SQLite's integers (4 x 2**62 > 2**63 - 1): the
    ledger adds them as floats and clamps each count, so the study stays readable; and an overflow SQLite
    does raise is named as such, never as damage."""
    con = sqlite3.connect(str(study / DB_NAME))
    with con:
        for i in range(4):
            con.execute("INSERT INTO judge_cache (key, custom_id, batch, base_url, model, transport, response, "
                        "prompt_tokens, completion_tokens, cost_usd, at) VALUES (?, ?, 1, 'http://127.0.0.1:9', "
                        "'m', 'direct', '{}', ?, 1, 0.0, 'now')", (f"k{i}", f"c{i}", 2 ** 62))
    con.close()
    r = cli(["status", study])
    assert r.returncode == 0, r.stderr
    assert "damaged" not in r.stderr and "backup" not in r.stderr
    con = sqlite3.connect(":memory:")
    con.execute("CREATE TABLE t (n INTEGER)")
    con.executemany("INSERT INTO t VALUES (?)", [(2 ** 62,)] * 4)
    with pytest.raises(sqlite3.Error) as raised:
        con.execute("SELECT sum(n) FROM t").fetchone()
    from planner.store.db import database_error

    text = str(database_error(raised.value))
    assert "too large to add up" in text and "not damaged" in text and "backup" not in text


def test_real_damage_still_says_restore(study):
    db = study / DB_NAME
    con = sqlite3.connect(str(db))
    con.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    con.close()
    raw = bytearray(db.read_bytes())
    page = int.from_bytes(raw[16:18], "big")
    raw[2 * page: 3 * page] = b"\xff" * page       # a b-tree page of garbage: SQLite reports "malformed"
    db.write_bytes(bytes(raw))
    r = cli(["report", study])
    one_error_line(r, 1, "damaged", "backup")
