"""CLI tests for `planner size` and `planner significance` (CliRunner on cli.main.app)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from typer.testing import CliRunner

from cli.main import app

runner = CliRunner()


def run(*args):
    return runner.invoke(app, list(args))


def test_size_human_output():
    r = run("size", "--effect", "0.04")
    assert r.exit_code == 0, r.stderr
    assert "1,225" in r.stdout  # seed figure, normal approximation
    assert "To detect 54% vs 50% with 80% power at α = 0.05 you need" in " ".join(r.stdout.split())


def test_size_json_keys():
    r = run("size", "--effect", "0.04", "--json")
    assert r.exit_code == 0
    d = json.loads(r.stdout)  # exactly one JSON document
    for k in ("effect", "win_rate", "alpha", "power", "alternative", "comparisons_normal",
              "comparisons_exact", "achieved_power_exact", "judgments"):
        assert k in d
    assert d["comparisons_normal"] == 1225 and d["win_rate"] == pytest.approx(0.54)


def test_size_budget_table_win_rate():
    d = json.loads(run("size", "--win-rate", "0.54", "--budget", "200", "--json").stdout)
    assert d["mde_normal"] == pytest.approx(0.0985, abs=5e-4)  # seed: d ~ 0.098
    assert "mde" in d
    d = json.loads(run("size", "--effect", "0.04", "--table", "--json").stdout)
    assert [row["comparisons_normal"] for row in d["rows"]] == [4904, 2178, 1225, 783, 543, 305, 194, 85, 47]
    d = json.loads(run("size", "--budget", "200", "--json").stdout)  # effect from the budget
    assert d["effect"] == pytest.approx(d["mde"])


def test_size_power_at_ties_looks_pass_rate(tmp_path):
    d = json.loads(run("size", "--effect", "0.04", "--power-at", "1225", "--json").stdout)
    assert d["power_at_exact"] == pytest.approx(0.789, abs=5e-4)  # seed: exact power at 1,225
    d = json.loads(run("size", "--effect", "0.04", "--tie-rate", "0.2", "--ties", "half", "--json").stdout)
    assert "ties count half" in d["convention"]
    d = json.loads(run("size", "--effect", "0.04", "--looks", "4", "--boundary", "pocock", "--json").stdout)
    assert d["sequential"]["constant"] == pytest.approx(2.361, abs=6e-4)  # Pocock (1977) C_P(4)
    d = json.loads(run("size", "--pass-rate", "0.8", "--precision", "0.05", "--json").stdout)
    assert d["items_normal"] == 246
    png = tmp_path / "p.svg"
    r = run("size", "--effect", "0.1", "--plot", str(png))
    assert r.exit_code == 0 and png.read_text().lstrip().startswith("<?xml")


@pytest.mark.parametrize("args,option", [
    (["--effect", "0.7"], "--effect"), (["--effect", "0"], "--effect"),
    (["--win-rate", "0.4"], "--win-rate"), (["--effect", "0.04", "--alpha", "1.5"], "--alpha"),
    (["--effect", "0.04", "--power", "0"], "--power"), (["--effect", "0.04", "--tie-rate", "1"], "--tie-rate"),
    (["--effect", "0.04", "--invalid-rate", "-0.2"], "--invalid-rate"),
    (["--effect", "0.04", "--per-prompt", "0"], "--per-prompt"), (["--effect", "0.04", "--icc", "2"], "--icc"),
    (["--effect", "0.04", "--systems", "1"], "--systems"), (["--effect", "0.04", "--design", "x"], "--design"),
    (["--effect", "0.04", "--ties", "x"], "--ties"), (["--effect", "0.04", "--alternative", "less"], "--alternative"),
    (["--budget", "3"], "--budget"), (["--effect", "0.04", "--looks", "0"], "--looks"),
    (["--effect", "0.04", "--boundary", "x"], "--boundary"), (["--effect", "0.04", "--plot", "x.pdf"], "--plot"),
    (["--pass-rate", "0.8"], "--precision"), (["--pass-rate", "0.8", "--precision", "0.6"], "--precision"),
    ([], "--effect"), (["--effect", "0.04", "--win-rate", "0.6"], "--effect"),
])
def test_size_bad_input(args, option):
    r = run("size", *args)
    assert r.exit_code == 2
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and option in lines[0] and "Traceback" not in r.stderr
    assert r.stdout == ""


def test_significance_seed():
    r = run("significance", "--wins", "54", "--losses", "46")
    assert r.exit_code == 0
    assert "[44.2%, 63.8%]" in r.stdout and "not distinguishable from 50%" in " ".join(r.stdout.split())
    d = json.loads(run("significance", "--wins", "54", "--losses", "46", "--json").stdout)
    assert d["wald"]["low"] == pytest.approx(0.4423, abs=1e-4) and d["significant"] is False
    d = json.loads(run("significance", "--wins", "61", "--losses", "39", "--look", "3", "--looks", "3",
                       "--json").stdout)
    assert d["significant"] is True and d["z_boundary"] == pytest.approx(2.004, abs=6e-4)


@pytest.mark.parametrize("args,option", [
    (["--wins", "-1", "--losses", "3"], "--wins"), (["--wins", "1", "--losses", "3", "--ties", "-2"], "--ties"),
    (["--wins", "1", "--losses", "3", "--confidence", "1"], "--confidence"),
    (["--wins", "1", "--losses", "3", "--ties-convention", "x"], "--ties-convention"),
    (["--wins", "1", "--losses", "3", "--look", "5", "--looks", "3"], "--look"),
])
def test_significance_bad_input(args, option):
    r = run("significance", *args)
    assert r.exit_code == 2
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and option in lines[0]


@pytest.mark.parametrize("argv", [["--help"], ["size", "--effect", "0.04"]])
def test_no_heavy_imports(argv):
    # `planner --help` and `planner size` must not import pymc/arviz/pytensor/matplotlib.
    code = ("import sys\nsys.argv = ['planner'] + " + repr(argv) + "\nfrom cli.main import app\n"
            "try:\n    app()\nexcept SystemExit:\n    pass\n"
            "bad = sorted({m.split('.')[0] for m in sys.modules} & {'pymc', 'arviz', 'pytensor', 'matplotlib'})\n"
            "sys.stderr.write('HEAVY=' + ','.join(bad))\n")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert r.stderr.strip().endswith("HEAVY="), r.stderr[-500:]
