"""Progress off a terminal: long commands print a line on stderr every few seconds (cli/progress.py).

A pipe, a file or a CI log used to get nothing until the end (the rich bar shows on a terminal
only). The helper prints a plain line when the count moves and the interval passed, a heartbeat
line when a step runs longer than the interval with no count (a NUTS fit), and a closing line.
"""

from __future__ import annotations

import io
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import _report_fixture as fx
import pytest
from rich.console import Console
from typer.testing import CliRunner

from cli.main import app
from cli.progress import Progress, due, interval

ROOT = Path(__file__).resolve().parents[1]
LINE = re.compile(r"^simulating: (\d+)/(\d+) runs \(\d+%\), \d+:\d\d:\d\d (elapsed|in all)")


def _console():
    buf = io.StringIO()
    return Console(file=buf, force_terminal=False, width=200), buf


def test_lines_follow_the_count_and_close_with_the_total_time():
    con, buf = _console()
    with Progress("simulating", total=4, unit="runs", terminal=False, every=0, console=con) as p:
        for k in range(1, 5):
            p.update(k)
    lines = buf.getvalue().splitlines()
    assert [LINE.match(x).group(1) for x in lines] == ["1", "2", "3", "4", "4"]
    assert lines[0].endswith("left") and lines[-1].endswith("in all")


def test_the_interval_throttles_lines():
    con, buf = _console()
    with Progress("ingest", total=1000, terminal=False, every=3600, console=con) as p:
        for k in range(1000):
            p.update(k)
    assert buf.getvalue() == ""          # nothing within the hour; no closing line without a first


def test_a_step_without_updates_still_prints_heartbeats():
    con, buf = _console()
    with Progress("fitting with NUTS", terminal=False, every=0.2, console=con):
        time.sleep(0.9)                  # 0.9 s of silence at a 0.2 s interval: at least 2 lines
    lines = buf.getvalue().splitlines()
    assert len(lines) >= 3 and all(x.startswith("fitting with NUTS: 0:00:0") for x in lines)


def test_disabled_prints_nothing():
    con, buf = _console()
    with Progress("x", total=2, terminal=False, every=0, disable=True, console=con) as p:
        p.update(1)
        p.update(2)
    assert buf.getvalue() == ""


def test_interval_from_the_environment(monkeypatch):
    monkeypatch.setenv("PLANNER_PROGRESS_SECONDS", "0.5")
    assert interval() == 0.5
    for bad in ("-1", "nan", "soon"):
        monkeypatch.setenv("PLANNER_PROGRESS_SECONDS", bad)
        assert interval() == 5.0
    tick = due(3600)
    assert not tick()
    tick = due(0)
    assert tick()


def test_simulate_in_a_pipe_prints_progress_lines():
    """The real command, stderr a pipe (not a terminal), interval 0: one line per finished run."""
    env = dict(os.environ, PLANNER_PROGRESS_SECONDS="0")
    r = subprocess.run([sys.executable, "-m", "cli", "simulate", "--systems", "4", "--budget", "100", "--batch",
                        "50", "--reps", "2", "--strategies", "active,random", "--workers", "1", "--json"],
                       cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    done = [int(m.group(1)) for m in map(LINE.match, r.stderr.splitlines()) if m]
    assert done[-1] == 4 and set(range(1, 5)) <= set(done), r.stderr
    assert r.stdout.lstrip().startswith("{")        # stdout keeps exactly the JSON document


@pytest.fixture(scope="module")
def study(tmp_path_factory) -> Path:
    return fx.synthetic_study(tmp_path_factory.mktemp("progress") / "synth", n=200)


def test_a_slow_fit_in_report_prints_heartbeats(study, monkeypatch):
    """A fit that takes longer than the interval (as NUTS does) is not silent off a terminal."""
    from planner.workflows import report as rp

    real = rp.build_report

    def slow(*a, **k):
        time.sleep(0.8)
        return real(*a, **k)

    monkeypatch.setattr(rp, "build_report", slow)
    r = CliRunner().invoke(app, ["report", str(study)], env={"PLANNER_PROGRESS_SECONDS": "0.2"})
    assert r.exit_code == 0, r.output
    assert len(re.findall(r"^report: 0:00:0\d elapsed", r.stderr, re.M)) >= 2, r.stderr
    assert "report:" not in r.stdout


def test_the_nuts_callback_counts_every_draw():
    from planner.model.nuts import PROGRESS_EVERY, _counter

    calls = []
    cb = _counter(lambda done, total: calls.append((done, total)), 2 * (30 + 45))
    for _ in range(150):
        cb(trace=None, draw=None)
    assert calls == [(k, 150) for k in range(PROGRESS_EVERY, 151, PROGRESS_EVERY)]


@pytest.mark.slow
def test_a_nuts_report_in_a_pipe_counts_draws(study):
    """The real NUTS fit (pymc) off a terminal: lines with the draws of both chains, tuning included."""
    env = dict(os.environ, PLANNER_PROGRESS_SECONDS="0")
    r = subprocess.run([sys.executable, "-m", "cli", "report", str(study), "--engine", "nuts", "--draws", "200",
                        "--tune", "200", "--chains", "2", "--json"], cwd=ROOT, env=env, capture_output=True,
                       text=True, timeout=900)
    assert r.returncode == 0, r.stderr
    counts = re.findall(r"^fitting with NUTS: ([\d,]+)/800 draws", r.stderr, re.M)
    assert counts and counts[-1] == "800", r.stderr
    assert json.loads(r.stdout)["model"]["engine"] == "nuts"
