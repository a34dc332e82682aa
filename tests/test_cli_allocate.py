"""CLI tests of `planner allocate` (CliRunner on cli.main.app)."""

from __future__ import annotations

import csv
import json

import pytest
from typer.testing import CliRunner

from cli.main import app

runner = CliRunner()


def run(*args: str):
    return runner.invoke(app, ["allocate", *args])


@pytest.fixture
def vicuna(vicuna_data):
    return str(vicuna_data / "vicuna80" / "prompts.jsonl")


def test_vicuna80_allocates_cleanly(vicuna, tmp_path):
    out = tmp_path / "chosen.csv"
    r = run("--prompts", vicuna, "--budget", "27", "--method", "equal", "--out", str(out))
    assert r.exit_code == 0, r.stderr
    # 9 categories (shared/data README), 27 / 9 = 3 each, exactly.
    for h in ("generic", "knowledge", "roleplay", "common-sense", "fermi", "counterfactual", "coding", "math",
              "writing"):
        assert h in r.stdout
    with open(out, newline="", encoding="utf-8") as fh:
        got = list(csv.DictReader(fh))
    assert len(got) == 27
    counts = {}
    for row in got:
        counts[row["stratum"]] = counts.get(row["stratum"], 0) + 1
    assert counts == {h: 3 for h in counts} and len(counts) == 9
    # weight of math: population share 3/80 over sample share 3/27 = 0.3375
    # (approx: the CSV holds repr() of the float computed as 0.0375 / 0.1111...)
    assert [float(row["weight"]) for row in got if row["stratum"] == "math"] == [pytest.approx(3 / 80 / (3 / 27))] * 3
    assert "wrote 27 prompts" in r.stderr


def test_vicuna80_json_is_one_document_and_deterministic(vicuna):
    r1 = run("--prompts", vicuna, "--budget", "30", "--json", "--seed", "7")
    r2 = run("--prompts", vicuna, "--budget", "30", "--json", "--seed", "7")
    assert r1.exit_code == 0, r1.stderr
    assert r1.stdout == r2.stdout
    doc = json.loads(r1.stdout)
    assert sum(s["allocated"] for s in doc["strata"]) == 30 == len(doc["prompts"])
    assert {"stratum", "available", "population_share", "allocated", "sample_share", "weight"} <= set(doc["strata"][0])


def test_out_refuses_overwrite_without_force(vicuna, tmp_path):
    out = tmp_path / "chosen.jsonl"
    out.write_text("keep\n", encoding="utf-8")
    r = run("--prompts", vicuna, "--budget", "5", "--out", str(out))
    assert r.exit_code == 2 and "exists; pass --force" in r.stderr
    assert out.read_text(encoding="utf-8") == "keep\n"
    r = run("--prompts", vicuna, "--budget", "5", "--out", str(out), "--force")
    assert r.exit_code == 0 and len(out.read_text(encoding="utf-8").splitlines()) == 5


@pytest.mark.parametrize("args, needle", [
    (["--budget", "0"], "--budget (0) must be an integer >= 1"),
    (["--budget", "81"], "--budget (81) must be <= 80"),
    (["--budget", "10", "--method", "target", "--target", "generic=0.5,coding=0.4"], "sum to 0.9"),
    (["--budget", "10", "--method", "target", "--target", "generic=0.5,bogus=0.5"], "unknown strata bogus"),
    (["--budget", "10", "--method", "best"], "--method ('best') must be one of"),
    (["--budget", "10", "--min-per-stratum", "2"], "--min-per-stratum (2) over 9 strata needs 18"),
    (["--budget", "10", "--contested-only"], "--contested-only needs --gap"),
])
def test_bad_options_exit_2_with_one_line(vicuna, args, needle):
    r = run("--prompts", vicuna, *args)
    assert r.exit_code == 2, r.stdout
    assert needle in r.stderr and len(r.stderr.strip().splitlines()) == 1
    assert "Traceback" not in r.stderr


def test_bad_prompt_file_exits_1_naming_file_line(tmp_path):
    f = tmp_path / "p.jsonl"
    f.write_text('{"id": "a", "text": "x", "stratum": "s"}\n{"id": "a", "text": "y", "stratum": "s"}\n',
                 encoding="utf-8")
    r = run("--prompts", str(f), "--budget", "1")
    assert r.exit_code == 1
    assert r.stderr.strip() == "error: p.jsonl:2: duplicate prompt id 'a' (first at p.jsonl:1)"


def test_no_stratum_column_is_one_stratum_or_an_error(tmp_path):
    f = tmp_path / "p.csv"
    f.write_text("id,text\np1,x\np2,y\np3,z\n", encoding="utf-8")
    r = run("--prompts", str(f), "--budget", "2")
    assert r.exit_code == 0 and "all prompts form one stratum" in r.stderr
    r = run("--prompts", str(f), "--budget", "2", "--by", "stratum")
    assert r.exit_code == 1 and "--by stratum needs one" in r.stderr


def test_contested_only_and_frozen_first(tmp_path):
    prompts = tmp_path / "p.jsonl"
    prompts.write_text("".join(json.dumps({"id": f"p{i}", "text": "t", "stratum": "s", "frozen": i == 3}) + "\n"
                               for i in range(6)), encoding="utf-8")
    pw = tmp_path / "pw.jsonl"
    scores = {"p0": (5, 9), "p1": (7, 7), "p2": (6, 7), "p3": (1, 9), "p4": (4, 8), "p5": (8, 8)}
    pw.write_text("".join(json.dumps({"prompt": p, "system": sys, "score": v}) + "\n"
                          for p, vs in scores.items() for sys, v in zip(("x", "y"), vs)), encoding="utf-8")
    r = run("--prompts", str(prompts), "--budget", "3", "--pointwise", str(pw), "--frozen-first", "--json")
    assert r.exit_code == 0, r.stderr
    # frozen p3 first, then the smallest gaps: p1 (0) and p5 (0) before p2 (1)
    assert next(c["prompt"] for c in json.loads(r.stdout)["prompts"]) == "p3"
    assert sorted(c["prompt"] for c in json.loads(r.stdout)["prompts"][1:]) == ["p1", "p5"]
    r = run("--prompts", str(prompts), "--budget", "4", "--pointwise", str(pw), "--contested-only", "--gap", "1")
    assert r.exit_code == 2 and "--budget (4) must be <= 3" in r.stderr  # only p1, p2, p5 have gap <= 1


def test_neyman_with_pilot(tmp_path):
    prompts = tmp_path / "p.jsonl"
    prompts.write_text("".join(json.dumps({"id": f"{h}{i}", "text": "t", "stratum": h}) + "\n"
                               for h in "xy" for i in range(10)), encoding="utf-8")
    pilot = tmp_path / "pilot.jsonl"
    # x: verdicts A, B on one pair -> y = 1, 0, S = sqrt(0.5); y: A, tie -> 1, 0.5, S = sqrt(0.125).
    # S ratio 2:1, equal N -> budget 9 splits 6 : 3.
    recs = [("x0", "A"), ("x1", "B"), ("y0", "A"), ("y1", "tie")]
    pilot.write_text("".join(json.dumps({"id": f"j{k}", "prompt": p, "a": "s1", "b": "s2", "verdict": v}) + "\n"
                             for k, (p, v) in enumerate(recs)), encoding="utf-8")
    r = run("--prompts", str(prompts), "--budget", "9", "--method", "neyman", "--pilot", str(pilot), "--json")
    assert r.exit_code == 0, r.stderr
    assert [s["allocated"] for s in json.loads(r.stdout)["strata"]] == [6, 3]


def test_study_input(vicuna_data, tmp_path):
    from planner.store.study import init_study

    path = tmp_path / "study"
    init_study(path, prompts_file=vicuna_data / "vicuna80" / "prompts.jsonl",
               responses_file=vicuna_data / "vicuna80" / "responses.jsonl")
    r = run("--study", str(path), "--budget", "18", "--method", "neyman", "--json")
    assert r.exit_code == 0, r.stderr
    doc = json.loads(r.stdout)
    assert sum(s["allocated"] for s in doc["strata"]) == 18
    assert any("fell back to proportional" in n for n in doc["notes"])  # no judgments yet

    from planner.store.study import ingest

    ingest(path, [vicuna_data / "judgments" / "qlora_vicuna80_gpt4.jsonl"])
    r = run("--study", str(path), "--budget", "18", "--method", "neyman", "--json")
    doc = json.loads(r.stdout)
    assert r.exit_code == 0 and doc["notes"] == []
    # every category has GPT-4 verdicts with both outcomes, so every S_h is in (0, 0.5]
    # (a half-tie score in [0, 1] has SD at most 0.5, up to the n/(n-m) small-sample factor)
    assert all(0 < s["sd"] <= 0.55 for s in doc["strata"])


def test_missing_files_and_bad_out(tmp_path, vicuna):
    r = run("--prompts", str(tmp_path / "nope.csv"), "--budget", "1")
    assert r.exit_code == 2 and f"--prompts ({tmp_path / 'nope.csv'}): no such file" in r.stderr
    r = run("--prompts", vicuna, "--budget", "1", "--out", str(tmp_path / "x.txt"))
    assert r.exit_code == 2 and "must end in .csv or .jsonl" in r.stderr
    r = run("--budget", "1")
    assert r.exit_code == 2 and "exactly one of --prompts FILE or --study STUDY" in r.stderr


def test_allocate_out_feeds_init(vicuna, tmp_path):
    # the chosen prompts are a prompts file `planner init` accepts (id, text, stratum, weight)
    from planner.store.study import Study, init_study

    for name in ("chosen.csv", "chosen.jsonl"):
        out = tmp_path / name
        r = run("--prompts", vicuna, "--budget", "27", "--method", "equal", "--out", str(out))
        assert r.exit_code == 0, r.stderr
        st = tmp_path / f"study-{out.suffix[1:]}"
        init_study(st, prompts_file=out, systems=["a", "b"])
        with Study.open(st) as s:
            prompts = list(s.prompts())
        assert len(prompts) == 27 and all(p.text for p in prompts)
        assert len({p.stratum for p in prompts}) == 9
