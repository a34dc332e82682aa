"""`planner init`, `planner ingest`, `planner status` through the CLI (CliRunner on cli.main.app)."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from cli.main import app

runner = CliRunner()


def jl(path, objs):
    path.write_text("".join(json.dumps(o) + "\n" for o in objs), encoding="utf-8")
    return str(path)


SEED = [{"id": f"q{i}", "prompt": f"q{i}", "a": "m", "b": "n", "verdict": v}
        for i, v in enumerate(["A", "tie", "B", "invalid"], 1)]


def test_seed_fixture_through_cli(tmp_path):
    st = str(tmp_path / "st")
    r = runner.invoke(app, ["init", st, "--systems", "m,n"])
    assert r.exit_code == 0, r.stderr
    r = runner.invoke(app, ["status", st, "--json"])
    doc = json.loads(r.stdout)
    assert [s["score"] for s in doc["per_system"]] == [None, None]  # empty -> null, never 0
    r = runner.invoke(app, ["ingest", st, jl(tmp_path / "seed.jsonl", SEED), "--json"])
    assert r.exit_code == 0, r.stderr
    f = json.loads(r.stdout)["files"][0]
    assert (f["A"], f["B"], f["tie"], f["invalid"]) == (1, 1, 1, 1)
    r = runner.invoke(app, ["status", st, "--json"])
    doc = json.loads(r.stdout)
    # Seed fixture (the hand-counted four-verdict study): A=1 B=1 tie=1 invalid=1, score 0.500 over three
    # usable judgments
    assert doc["totals"] == {"A": 1, "B": 1, "tie": 1, "invalid": 1}
    assert doc["per_system"][0]["score"] == 0.5 and doc["pairs"][0]["invalid"] == 1
    r = runner.invoke(app, ["status", st])
    assert r.exit_code == 0 and "0.500" in r.stdout


def test_only_invalid_and_only_tie(tmp_path):
    st = str(tmp_path / "st")
    runner.invoke(app, ["init", st, "--systems", "m,n"])
    runner.invoke(app, ["ingest", st, jl(tmp_path / "i.jsonl", [SEED[3]])])
    doc = json.loads(runner.invoke(app, ["status", st, "--json"]).stdout)
    assert doc["per_system"][0]["score"] is None  # only invalid -> null
    runner.invoke(app, ["ingest", st, jl(tmp_path / "t.jsonl", [SEED[1]])])
    doc = json.loads(runner.invoke(app, ["status", st, "--json"]).stdout)
    assert doc["per_system"][0]["score"] == 0.5  # only a tie -> 0.5


def test_ingest_errors_exit_1_with_file_line(tmp_path):
    st = str(tmp_path / "st")
    runner.invoke(app, ["init", st, "--systems", "m,n"])
    bad = jl(tmp_path / "bad.jsonl", [SEED[0], dict(SEED[1], verdict="draw")])
    r = runner.invoke(app, ["ingest", st, bad])
    assert r.exit_code == 1
    assert r.stderr.splitlines()[1].strip() == "bad.jsonl:2: verdict 'draw'; expected one of A, B, tie, invalid"
    assert "Traceback" not in r.stderr and r.stdout == ""
    good = jl(tmp_path / "good.jsonl", SEED)
    assert runner.invoke(app, ["ingest", st, good]).exit_code == 0
    r = runner.invoke(app, ["ingest", st, good])  # the same file again: a counted no-op
    assert r.exit_code == 0 and "0 new, 4 already stored" in r.stderr
    r = runner.invoke(app, ["ingest", st, good, "--format", "excel"])
    assert r.exit_code == 2 and "--format ('excel') must be one of" in r.stderr


def test_dry_run(tmp_path):
    st = str(tmp_path / "st")
    runner.invoke(app, ["init", st, "--systems", "m,n"])
    r = runner.invoke(app, ["ingest", st, jl(tmp_path / "s.jsonl", SEED), "--dry-run"])
    assert r.exit_code == 0 and "dry run" in r.stdout
    doc = json.loads(runner.invoke(app, ["status", st, "--json"]).stdout)
    assert doc["judgments"] == 0


def test_init_usage_errors(tmp_path):
    r = runner.invoke(app, ["init", str(tmp_path / "a"), "--systems", "m"])
    assert r.exit_code == 2 and "--systems" in r.stderr
    r = runner.invoke(app, ["init", str(tmp_path / "b"), "--systems", "m,n", "--anchor", "z"])
    assert r.exit_code == 2 and "--anchor (z)" in r.stderr
    r = runner.invoke(app, ["status", str(tmp_path / "nothing")])
    assert r.exit_code == 1 and "not a study" in r.stderr


def test_vicuna80_readme_example(vicuna_data, tmp_path):
    st = str(tmp_path / "v")
    r = runner.invoke(app, ["init", st, "--prompts", str(vicuna_data / "vicuna80/prompts.jsonl"),
                            "--responses", str(vicuna_data / "vicuna80/responses.jsonl"), "--anchor", "gpt-4"])
    assert r.exit_code == 0, r.stderr
    assert "8 systems, 80 prompts in 9 strata, 640 responses" in r.stdout.replace("\n", " ")
    r = runner.invoke(app, ["ingest", st, str(vicuna_data / "judgments/qlora_vicuna80_gpt4.jsonl"), "--json"])
    f = json.loads(r.stdout)["files"][0]
    # ../shared/data/README.md: A 2,512 / B 1,355 / tie 600 / invalid 13
    assert (f["A"], f["B"], f["tie"], f["invalid"]) == (2512, 1355, 600, 13)
    doc = json.loads(runner.invoke(app, ["status", st, "--json"]).stdout)
    assert doc["annotators"][0]["annotator"] == "gpt-4" and doc["annotators"][0]["judgments"] == 4480
