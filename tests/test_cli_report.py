"""`planner report STUDY` through typer's CliRunner (stdout and stderr kept apart)."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

import _report_fixture as fx
import pytest
from typer.testing import CliRunner

from cli.main import app

runner = CliRunner()
_CACHE: dict = {}


@pytest.fixture
def synth(tmp_path_factory) -> Path:
    """A small synthetic study (4 systems, 600 judgments, anchor sys-b), built once per module."""
    if "synth" not in _CACHE:
        _CACHE["synth"] = fx.synthetic_study(tmp_path_factory.getbasetemp() / "test_cli_report" / "synth",
                                             anchor="sys-b")
    return _CACHE["synth"]


def test_help_has_an_example():
    r = runner.invoke(app, ["report", "--help"])
    assert r.exit_code == 0
    assert "Example: planner report" in r.stdout


def test_tables_on_stdout_notes_on_stderr(synth):
    r = runner.invoke(app, ["report", str(synth)])
    assert r.exit_code == 0, r.stderr
    assert "leaderboard" in r.stdout and "sys-a" in r.stdout
    assert "against the anchor sys-b" in r.stdout
    assert "posterior-laplace.nc" not in r.stdout      # Laplace netcdf only on request (writing it imports arviz)
    assert "reasons: share of each system's wins / losses" in r.stdout   # fixture: reason codes given
    # fixture: true gamma 0.4 logit -> about 60% left wins, flagged (> 8 points) on stderr only
    assert "warning: position bias" in r.stderr
    assert "position bias" not in r.stdout.split("diagnostics")[0]


def test_json_is_one_document_with_the_leaderboard(synth):
    r = runner.invoke(app, ["report", str(synth), "--json"])
    assert r.exit_code == 0, r.stderr
    doc = json.loads(r.stdout)                   # exactly one JSON document on stdout
    assert [x["system"] for x in doc["leaderboard"]] == list(fx.SYNTH_SYSTEMS)
    assert {"pairs", "anchor_tests", "ties", "position", "length", "triads", "reasons", "strata",
            "model", "flags", "notes"} <= set(doc)
    assert doc["totals"]["invalid"] == 12         # every 50th of 600 judgments (fixture)
    assert doc["model"]["engine"] == "laplace"
    assert "fit" not in doc
    assert "warning:" in r.stderr


def test_plot_and_markdown_files(synth, tmp_path):
    md = tmp_path / "out" / "report.md"
    r = runner.invoke(app, ["report", str(synth), "--plot", str(tmp_path / "fig"), "--markdown", str(md),
                            "--json"])
    assert r.exit_code == 0, r.stderr
    json.loads(r.stdout)                          # --json still the only thing on stdout
    assert md.read_text(encoding="utf-8").startswith("# Report: synth")
    for name in ("strengths", "win_rates"):
        assert (tmp_path / "fig" / f"{name}.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
        ET.parse(tmp_path / "fig" / f"{name}.svg")
    assert "wrote" in r.stderr


def test_by_stratum_and_seed(synth):
    r = runner.invoke(app, ["report", str(synth), "--by-stratum", "--seed", "5", "--json", "--save-posterior"])
    assert r.exit_code == 0, r.stderr
    doc = json.loads(r.stdout)
    assert doc["model"]["by_stratum"] is True and doc["model"]["seed"] == 5
    assert doc["posterior_artifact"] == "posterior-laplace-by-stratum.nc"
    # fixture: prompts i % 4 == 0 are "hard" (25 of 100) -> stratum sizes 0.25 / 0.75
    assert doc["model"]["stratum_weights"] == {"easy": 0.75, "hard": 0.25}
    assert all(row["mean"] is not None for row in doc["strata"]["rows"])
    r = runner.invoke(app, ["report", str(synth), "--by-stratum"])
    assert r.exit_code == 0 and "strength per stratum" in r.stdout


@pytest.mark.parametrize("args, needle", [
    (["--engine", "mcmc"], "--engine"),
    (["--draws", "0"], "--draws"),
    (["--min-pass-rate", "2"], "--min-pass-rate"),
])
def test_usage_errors_exit_2(synth, args, needle):
    r = runner.invoke(app, ["report", str(synth), *args])
    assert r.exit_code == 2
    assert r.stderr.startswith("error: ") and needle in r.stderr
    assert r.stdout == ""
    assert "Traceback" not in r.stderr


def test_not_a_study_exits_1(tmp_path):
    r = runner.invoke(app, ["report", str(tmp_path / "missing")])
    assert r.exit_code == 1
    assert "not a study" in r.stderr and r.stdout == ""


def test_vicuna_report_cli(vicuna_data, tmp_path_factory):
    st = fx.vicuna_study(vicuna_data, tmp_path_factory.getbasetemp() / "test_cli_report")
    r = runner.invoke(app, ["report", str(st), "--json"])
    assert r.exit_code == 0, r.stderr
    doc = json.loads(r.stdout)
    # README: A 2,512 / B 1,355 / tie 600 / invalid 13
    assert doc["totals"] == {"A": 2512, "B": 1355, "tie": 600, "invalid": 13}
    assert doc["leaderboard"][0]["system"] == "gpt-4" and doc["tied_with_leader"] == ["gpt-4"]
    assert "groups" not in doc and doc["leaderboard"][1]["p_leader_better"] > 0.95
    assert doc["position"]["flagged"] is True
    assert "warning: position bias" in r.stderr


def test_small_nuts_cli(tmp_path):
    st = fx.synthetic_study(tmp_path / "n", n=200, reasons=False)
    r = runner.invoke(app, ["report", str(st), "--engine", "nuts", "--draws", "200", "--tune", "200", "--json"])
    assert r.exit_code == 0, r.stderr
    doc = json.loads(r.stdout)
    assert doc["model"]["engine"] == "nuts" and doc["posterior_artifact"] == "posterior-nuts.nc"
    assert doc["model"]["diagnostics"]["max_r_hat"] is not None
    assert "fitting with NUTS" in r.stderr


def test_unwritable_outputs_exit_2(synth, tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("x", encoding="utf-8")
    r = runner.invoke(app, ["report", str(synth), "--markdown", str(blocker / "report.md")])
    assert r.exit_code == 2 and "--markdown" in r.stderr and "Traceback" not in r.stderr
    r = runner.invoke(app, ["report", str(synth), "--plot", str(blocker / "fig")])
    assert r.exit_code == 2 and "--plot" in r.stderr
