"""`planner size --hybrid`: table, sentence, JSON, pilot studies and one-line errors."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from _example_data import vicuna_dir
from typer.testing import CliRunner

from cli.main import app
from planner.hybrid import budget as hb
from planner.workflows.simulate_hybrid import pilot_rho

runner = CliRunner()
DATA = vicuna_dir()   # the real Vicuna-80 files: the package's one copy, as `planner example vicuna80` writes it
BASE = ("size", "--hybrid", "--human-cost", "1", "--judge-cost", "0.05")


def run(*args):
    return runner.invoke(app, list(args))


def test_table_and_sentence_from_the_same_numbers():
    r = run(*BASE, "--effect", "0.05", "--rho", "0.7")
    assert r.exit_code == 0, r.stderr
    text = " ".join(r.stdout.split())
    p = hb.plan_for_effect(0.05, 0.7, 1.0, 0.05)
    assert p.human_n == 783 and p.hybrid.n == 486 and p.hybrid.items == 2152   # planner size --ties half: 783
    assert "humans alone need 783 human labels costing 783.00" in text
    assert (f"cheapest plan is 486 human labels and 2,152 judge labels (1,666 items judged only) costing "
            f"{p.cost:,.2f}, saving {p.saving:,.2f} ({p.saving / 783:.0%})") in text
    row = next(ln for ln in r.stdout.splitlines() if "humans + judge" in ln)
    cells = [c.strip() for c in row.split("│")[2:6]]
    assert cells == ["486", "2,152", f"{p.cost:,.2f}", f"{p.hybrid.effective_n:,.1f}"]


def test_json_and_human_only_equals_size():
    d = json.loads(run(*BASE, "--effect", "0.05", "--rho", "0.7", "--tie-rate", "0.2", "--json").stdout)
    s = json.loads(run("size", "--effect", "0.05", "--tie-rate", "0.2", "--ties", "half", "--json").stdout)
    assert d["human_only"]["n"] == s["comparisons_normal"]
    assert d["human_only"]["n_exact"] == s["comparisons_exact"]
    assert d["hybrid"]["effective_n"] >= d["human_only"]["n"]
    assert d["rho_source"] == "given" and d["use_judge"] is True


def test_width_agreement_judge_that_does_not_pay():
    r = run("size", "--hybrid", "--human-cost", "1", "--judge-cost", "0.2", "--width", "0.03", "--agreement", "0.7")
    assert r.exit_code == 0, r.stderr
    text = " ".join(r.stdout.split())
    assert "1,068 human labels" in text and "does not pay off" in text and "1.095 >= 1" in text


def test_capped_pool_and_systems():
    d = json.loads(run(*BASE, "--effect", "0.05", "--rho", "0.7", "--systems", "4", "--design", "round-robin",
                       "--max-items", "1500", "--json").stdout)
    assert d["pairs"] == 6 and d["hybrid"]["items"] <= 1500 and d["hybrid"]["capped"]
    assert d["human_only_cost_total"] == 6 * d["human_only"]["n"]


@pytest.mark.parametrize("args,msg,code", [
    (("size", "--rho", "0.5"), "--rho needs --hybrid", 2),
    ((*BASE, "--effect", "0.05"), "exactly one of --rho, --agreement, --pilot", 2),
    ((*BASE, "--effect", "0.05", "--rho", "0.5", "--agreement", "0.8"), "got --rho, --agreement", 2),
    (("size", "--hybrid", "--effect", "0.05", "--rho", "0.5", "--judge-cost", "1"), "needs --human-cost", 2),
    ((*BASE, "--rho", "0.5"), "needs a target", 2),
    ((*BASE, "--effect", "0.05", "--rho", "1.5"), "--rho (1.5) must be in [-1, 1)", 2),
    ((*BASE, "--effect", "0.05", "--rho", "0.5", "--budget", "100"), "--budget does not apply with --hybrid", 2),
    ((*BASE, "--effect", "0.05", "--rho", "0.5", "--width", "0.1"), "either --effect or --width", 2),
    (("size", "--hybrid", "--human-cost", "0", "--judge-cost", "1", "--effect", "0.05", "--rho", "0.5"),
     "--human-cost (0) must be a positive number", 2),
    ((*BASE, "--effect", "0.05", "--agreement", "1.2"), "--agreement (1.2) must be in [0, 1]", 2),
    ((*BASE, "--effect", "0.05", "--pilot", "nowhere"), "--pilot and --surrogate go together", 2),
])
def test_errors_one_line(args, msg, code):
    r = run(*args)
    assert r.exit_code == code, (r.stdout, r.stderr)
    assert r.stderr.startswith("error: ") and r.stderr.count("\n") == 1 and msg in r.stderr
    assert "None" not in r.stderr and "Traceback" not in r.stderr


def test_missing_pilot_is_a_data_error(tmp_path):
    r = run(*BASE, "--effect", "0.05", "--pilot", str(tmp_path / "none"), "--surrogate", "gpt-4")
    assert r.exit_code in (1, 2) and r.stderr.startswith("error: ") and r.stderr.count("\n") == 1


def test_size_hybrid_never_imports_pymc():
    code = ("import sys; from typer.testing import CliRunner; from cli.main import app; "
            "r = CliRunner().invoke(app, ['size', '--hybrid', '--effect', '0.05', '--rho', '0.7', "
            "'--human-cost', '1', '--judge-cost', '0.05']); assert r.exit_code == 0, r.output; "
            "print(sorted(m for m in sys.modules if m.split('.')[0] in ('pymc', 'arviz', 'pytensor')))")
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=Path(__file__).parents[1])
    assert res.returncode == 0, res.stderr
    assert res.stdout.strip() == "[]"


@pytest.fixture(scope="module")
def pilot(tmp_path_factory):
    """All GPT-4 verdicts plus the human votes on prompts q1..q20 (560 items)."""
    if not (DATA / "judgments").is_dir():
        pytest.skip(f"{DATA} absent")
    from planner.store.study import ingest, init_study

    tmp = tmp_path_factory.mktemp("pilot")
    lines = (DATA / "judgments" / "qlora_vicuna80_human.jsonl").read_text(encoding="utf-8").splitlines()
    first20 = [ln for ln in lines if int(json.loads(ln)["prompt"].rsplit("q", 1)[1]) <= 20]
    (tmp / "h.jsonl").write_text("\n".join(first20) + "\n", encoding="utf-8")
    init_study(tmp / "s", prompts_file=DATA / "vicuna80" / "prompts.jsonl",
               responses_file=DATA / "vicuna80" / "responses.jsonl")
    ingest(tmp / "s", [DATA / "judgments" / "qlora_vicuna80_gpt4.jsonl", tmp / "h.jsonl"])
    return tmp / "s", first20


def test_pilot_rho_matches_the_item_arrays(pilot):
    from planner.hybrid.items import items_from_verdicts

    study, first20 = pilot
    rows = []
    for name in ("qlora_vicuna80_gpt4.jsonl",):
        rows += [json.loads(ln) for ln in (DATA / "judgments" / name).read_text(encoding="utf-8").splitlines()]
    rows += [json.loads(ln) for ln in first20]
    systems = ("gpt-4", "gpt-3.5-turbo", "bard", "vicuna-13b", "guanaco-7b", "guanaco-13b", "guanaco-33b",
               "guanaco-65b")
    from planner.store.study import Study

    names = tuple(Study.open(study).systems)
    assert set(names) == set(systems)
    it = items_from_verdicts(names, [(r["prompt"], r["a"], r["b"], r["verdict"], r["judge"]) for r in rows], "gpt-4")
    want, used = hb.rho_from_items(it.pairs, it.y, it.yhat)
    got, n = pilot_rho(study, "gpt-4")
    assert (got, n) == (pytest.approx(want, abs=1e-12), used) and n == 560
    assert 0.2 < got < 0.6          # GPT-4 vs the MTurk crowd: a weak surrogate (guide: 65% agreement)
    d = json.loads(run(*BASE, "--effect", "0.05", "--pilot", str(study), "--surrogate", "gpt-4", "--json").stdout)
    assert d["rho"] == pytest.approx(got) and "560 pilot items" in d["rho_source"]
    r = run(*BASE, "--effect", "0.05", "--pilot", str(study), "--surrogate", "nobody")
    assert r.exit_code == 2 and "no judgments by 'nobody'" in r.stderr


def test_simulate_hybrid_replays_a_study(pilot):
    study, _ = pilot
    args = ["simulate", "--hybrid", "--from-study", str(study), "--surrogate", "gpt-4", "--money", "100",
            "--human-cost", "1", "--judge-cost", "0.001", "--reps", "3", "--json"]
    r = run(*args)
    assert r.exit_code == 0, r.stderr
    d = json.loads(r.stdout)
    assert d["rho"] == pytest.approx(pilot_rho(study, "gpt-4")[0])
    hum, hyb = d["rows"]
    assert (hum["n"], hum["N"]) == (100, 0)
    assert hyb["n"] + hyb["N"] <= 560 and hyb["cost"] <= 100 and hyb["effective_n"] > 100
    assert run(*args).stdout == r.stdout


HOSTILE = [
    ("size", "--hybrid", "--width", "1e-300", "--rho", "0.5", "--human-cost", "1", "--judge-cost", "0.05"),
    ("size", "--hybrid", "--width", "nan", "--rho", "0.5", "--human-cost", "1", "--judge-cost", "0.05"),
    (*BASE, "--effect", "0.05", "--rho", "0.5", "--confidence", "nan"),
    (*BASE, "--effect", "0.05", "--rho", "nan"),
    (*BASE, "--effect", "0.05", "--rho", "0.5", "--max-items", "-1"),
    (*BASE, "--effect", "0.05", "--rho", "0.5", "--max-items", "10"),
    ("size", "--hybrid", "--effect", "0.05", "--rho", "0.5", "--human-cost", "inf", "--judge-cost", "1"),
    ("size", "--hybrid", "--effect", "0.05", "--rho", "0.5", "--human-cost", "1", "--judge-cost", "-1"),
    (*BASE, "--effect", "0.05", "--pilot", "/proc", "--surrogate", "x"),
    (*BASE, "--effect", "0.05", "--pilot", "/nonexistent", "--surrogate", "x" * 1_000_000),
    ("simulate", "--hybrid", "--money", "1e300", "--human-cost", "1", "--judge-cost", "0.05"),
    ("simulate", "--hybrid", "--money", "2e6", "--human-cost", "1", "--judge-cost", "0.05"),
    ("simulate", "--hybrid", "--money", "100", "--human-cost", "1", "--judge-cost", "0.05", "--seed", "-1"),
    ("simulate", "--hybrid", "--money", "100", "--human-cost", "1", "--judge-cost", "0.05", "--reps", "9" * 300),
    ("simulate", "--hybrid", "--money", "100", "--human-cost", "1", "--judge-cost", "0"),
    ("simulate", "--hybrid", "--money", "100", "--human-cost", "1", "--judge-cost", "0.05", "--agreement", "nan"),
    ("simulate", "--hybrid", "--money", "x" * 1_000_000, "--human-cost", "1", "--judge-cost", "0.05"),
]


@pytest.mark.parametrize("args", HOSTILE, ids=lambda a: " ".join(x[:12] for x in a[3:]))
def test_hostile_values_one_line(args):
    r = run(*args)
    assert r.exit_code in (1, 2), (r.stdout[-300:], r.stderr[-300:])
    assert r.stderr.startswith("error: ") and r.stderr.count("\n") == 1 and len(r.stderr) <= 400
    assert "None" not in r.stderr and "Traceback" not in r.stderr


def test_a_negative_rho_is_said_to_be_planned_as_zero():
    """ρ = −0.5: the formula √(1 − ρ²) + ρ√γ would read 0.754 < 1 ("pays off"); the plan uses max(ρ, 0) = 0
    (PPI++ clips the judge's weight to [0, 1]), and the output says so instead of printing 1.000 beside ρ = −0.5."""
    r = run(*BASE, "--effect", "0.05", "--rho", "-0.5")
    assert r.exit_code == 0, r.stderr
    text = " ".join(r.stdout.split())
    assert "rho = -0.50 is negative" in text and "planned as rho = 0" in text
    assert "(given; used as 0)" in text
    assert "with rho = -0.50 the judge does not pay off" not in text
    doc = json.loads(run(*BASE, "--effect", "0.05", "--rho", "-0.5", "--json").stdout)
    assert (doc["rho"], doc["rho_used"], doc["use_judge"]) == (-0.5, 0.0, False)
    assert doc["cost_ratio_limit"] == 1.0          # (sqrt(1 - 0^2) + 0 * sqrt(0.05))^2, the ρ used
