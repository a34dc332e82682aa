"""The same refusals through a real process: the interpreter's own exit path (typer's excepthook,
sys.exit codes, stderr encoding) must also give one line and no traceback."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _run(*args, cwd=None):
    env = dict(os.environ, PYTHONPATH=str(ROOT), NO_COLOR="1")
    return subprocess.run([sys.executable, "-m", "cli", *args], capture_output=True, text=True, env=env, check=False,
                          cwd=cwd, timeout=120)


def test_version_and_short_help():
    from planner import __version__

    r = _run("--version")
    assert r.returncode == 0 and r.stdout.strip() == f"planner {__version__}"
    r = _run("status", "-h")
    assert r.returncode == 0 and "Usage:" in r.stdout and r.stderr == ""


def test_refusals_in_a_real_process(tmp_path):
    study = tmp_path / "st"
    study.mkdir()
    (study / "study.json").write_text('{"planner_study": 1, "systems": ["a", "b"]}')
    (study / "study.sqlite").write_bytes(b"\x00garbage" * 500)
    before = (study / "study.sqlite").read_bytes()
    cases = [
        (("status", str(study)), 1, "study.sqlite: not a planner study database"),
        (("size", "--effect", "1e-300"), 2, "--effect (1e-300)"),
        (("size", "--effect", "x" * 100_000), 2, "--effect"),
        (("simulate", "--systems", "-3"), 2, "--systems (-3)"),
        (("init", str(study), "--systems", "a,b"), 2, "already holds a study"),
        (("report", str(study), "--seed", "-1"), 2, "--seed (-1)"),
    ]
    for args, code, text in cases:
        r = _run(*args)
        lines = r.stderr.strip().splitlines()
        assert r.returncode == code, (args[:2], r.stderr[-800:])
        assert len(lines) == 1 and text in lines[0] and "Traceback" not in r.stderr, (args[:2], r.stderr[:800])
        assert len(lines[0]) <= 400
    assert (study / "study.sqlite").read_bytes() == before
