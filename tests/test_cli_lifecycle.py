"""`planner ingest` round-trip flags, `planner void`, `planner retract`, and `status` per batch (CliRunner)."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from cli.main import app
from planner.store.study import BatchItem, Study

runner = CliRunner()


def jl(path, objs):
    path.write_text("".join(json.dumps(o) + "\n" for o in objs), encoding="utf-8")
    return str(path)


def _study(tmp_path):
    st = str(tmp_path / "st")
    prompts = jl(tmp_path / "p.jsonl", [{"id": "p0", "text": "t0"}, {"id": "p1", "text": "t1"}])
    assert runner.invoke(app, ["init", st, "--systems", "m,n", "--prompts", prompts]).exit_code == 0
    with Study.open(st) as s:
        s.record_batch({"seed": 0}, [BatchItem("i1", "p0", "m", "n", annotator="ann"),
                                     BatchItem("i2", "p1", "n", "m", annotator="ann")])
    return st


def test_ingest_twice_edit_and_accept(tmp_path):
    st = _study(tmp_path)
    r1 = jl(tmp_path / "r1.jsonl", [{"item": "i1", "verdict": "left"}])
    r = runner.invoke(app, ["ingest", st, r1])
    assert r.exit_code == 0 and "r1.jsonl: 1 new, 0 already stored" in r.stderr
    r2 = jl(tmp_path / "r2.jsonl", [{"item": "i1", "verdict": "tie"}, {"item": "i2", "verdict": "left"}])
    r = runner.invoke(app, ["ingest", st, r2])
    assert r.exit_code == 1 and "changed at the source ('i1@ann' A -> tie)" in r.stderr
    assert "Traceback" not in r.stderr
    r = runner.invoke(app, ["ingest", st, r2, "--accept-changes", "--json"])
    assert r.exit_code == 0, r.stderr
    doc = json.loads(r.stdout)["files"][0]
    assert (doc["rows"], doc["replaced"], doc["already"]) == (1, 1, 0)
    r = runner.invoke(app, ["ingest", st, r2, "--annotator-map", "nonsense"])
    assert r.exit_code == 2 and "--annotator-map 'nonsense'; expected IDENTITY=NAME" in r.stderr


def test_void_retract_and_status(tmp_path):
    st = _study(tmp_path)
    runner.invoke(app, ["ingest", st, jl(tmp_path / "r1.jsonl", [{"item": "i1", "verdict": "left"}])])
    doc = json.loads(runner.invoke(app, ["status", st, "--json"]).stdout)
    assert [(b["issued"], b["returned"], b["unanswered"], b["pending"], b["voided"]) for b in doc["batches"]] \
        == [(2, 1, 0, 1, None)]
    r = runner.invoke(app, ["void", st, "1", "--reason", "gone"])
    assert r.exit_code == 0 and "voided batch(es) 1: 1 unreturned item(s) no longer count as pending" in r.stderr
    r = runner.invoke(app, ["status", st])
    assert r.exit_code == 0 and "voided" in r.stdout
    assert json.loads(runner.invoke(app, ["status", st, "--json"]).stdout)["batches"][0]["pending"] == 0
    r = runner.invoke(app, ["void", st, "7"])
    assert r.exit_code == 2 and "batch 7 does not exist" in r.stderr
    r = runner.invoke(app, ["retract", st, "r1.jsonl", "--json"])
    assert r.exit_code == 0 and json.loads(r.stdout)["judgments"] == 1
    assert json.loads(runner.invoke(app, ["status", st, "--json"]).stdout)["judgments"] == 0
    r = runner.invoke(app, ["retract", st, "r1.jsonl", "--undo"])
    assert r.exit_code == 0 and "restored r1.jsonl" in r.stderr
    r = runner.invoke(app, ["retract", st, "nope.jsonl"])
    assert r.exit_code == 2 and "never ingested" in r.stderr
