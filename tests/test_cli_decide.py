"""`planner decide` through the CLI: exit codes 0/3/4 (and 1/2), tables, --json, sequential notes."""

from __future__ import annotations

import json

import pytest
from _decide_fixture import build_study
from typer.testing import CliRunner

from cli.main import app

runner = CliRunner()


@pytest.fixture(scope="module")
def studies(tmp_path_factory):
    root = tmp_path_factory.mktemp("decide")
    return {
        # wins overall (720/1,400) but loses coding 70/200
        "regress": build_study(root, "regress", {"chat": (330, 270, 0), "coding": (70, 130, 0),
                                                 "math": (320, 280, 0)}),
        "few": build_study(root, "few", {"chat": (600, 400, 0), "coding": (12, 8, 0)}),
        "pass": build_study(root, "pass", {"chat": (360, 240, 40), "coding": (130, 70, 10)}),
        "acc": build_study(root, "acc", {"chat": (360, 240, 0), "coding": (130, 70, 0)},
                           acceptability={"new": (10, 30), "old": (35, 5)}),
    }


def run(*args):
    return runner.invoke(app, ["decide", *map(str, args)])


def test_regress_exit_3(studies):
    r = run(studies["regress"], "--candidate", "new", "--baseline", "old")
    assert r.exit_code == 3, r.stderr
    assert "regress" in r.stdout and "coding" in r.stdout
    assert "Release gate: REGRESS" in r.stdout
    assert "Holm–Bonferroni across 3 strata" in r.stdout
    assert "not a p-value" in r.stdout


def test_undecided_exit_4_names_budget(studies):
    r = run(studies["few"], "--candidate", "new", "--baseline", "old")
    assert r.exit_code == 4, r.stderr
    assert "coding is undecided — about" in r.stdout and "more comparisons there" in r.stdout


def test_pass_exit_0_and_json(studies):
    r = run(studies["pass"], "--candidate", "new", "--baseline", "old")
    assert r.exit_code == 0, r.stderr
    assert "Release gate: PASS" in r.stdout
    r = run(studies["pass"], "--candidate", "new", "--baseline", "old", "--json")
    assert r.exit_code == 0
    doc = json.loads(r.stdout)  # exactly one JSON document on stdout
    assert doc["verdict"] == "pass" and doc["exit_code"] == 0
    assert [s["verdict"] for s in doc["strata"]] == ["pass", "pass"]
    assert {"win_rate", "ci_low", "ci_high", "p_posterior", "more_comparisons"} <= set(doc["strata"][0])
    assert doc["multiplicity"].startswith("Holm")


def test_json_keeps_gate_exit_code(studies):
    r = run(studies["regress"], "--candidate", "new", "--baseline", "old", "--json")
    assert r.exit_code == 3 and json.loads(r.stdout)["verdict"] == "regress"


def test_acceptability_gate_exit_3(studies):
    r = run(studies["acc"], "--candidate", "new", "--baseline", "old")
    assert r.exit_code == 3, r.stderr
    assert "Acceptability: fail" in r.stdout


def test_sequential_look_note(studies):
    r = run(studies["pass"], "--candidate", "new", "--baseline", "old", "--look", "1", "--looks", "3")
    assert r.exit_code in (0, 4)
    assert "look 1 of 3" in r.stdout and "obrien-fleming" in r.stdout


@pytest.mark.parametrize("args,code,needle", [
    (["--candidate", "nope", "--baseline", "old"], 2, "expected one of new, old, ref"),
    (["--candidate", "old", "--baseline", "old"], 2, "must be different systems"),
    (["--candidate", "new", "--baseline", "old", "--margin", "0.5"], 2, "--margin (0.5) must be in [0, 0.5)"),
    (["--candidate", "new", "--baseline", "old", "--confidence", "1"], 2, "--confidence (1) must be in (0, 1)"),
    (["--candidate", "new", "--baseline", "old", "--mode", "better"], 2, "--mode ('better')"),
    (["--candidate", "new", "--baseline", "old", "--look", "4", "--looks", "3"], 2, "--look (4)"),
])
def test_bad_options(studies, args, code, needle):
    r = run(studies["pass"], *args)
    assert r.exit_code == code
    assert needle in r.stderr and "Traceback" not in r.stderr and r.stdout == ""


def test_not_a_study(tmp_path):
    r = run(tmp_path / "nothing", "--candidate", "a", "--baseline", "b")
    assert r.exit_code == 1 and "not a study" in r.stderr


def test_help_documents_exit_codes():
    r = runner.invoke(app, ["decide", "--help"])
    assert r.exit_code == 0
    text = " ".join(r.stdout.split())
    assert "0 pass; 3 regress" in text and "4 undecided" in text and "Example: planner decide" in text
