"""A reader that goes away (`planner status STUDY | head -1`) is not a data error.

The README's exit codes: 1 means the data failed validation. A closed pipe exits 141 (what a
shell reports for a program killed by SIGPIPE, 128 + 13), prints no traceback and no
"Exception ignored" line. The pipe's read end is closed before the command starts, so the
first write fails every time (no race with a `head` that may or may not have exited yet).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import _report_fixture as fx
import pytest

ROOT = Path(__file__).resolve().parents[1]


def run_into_closed_pipe(*args: str) -> subprocess.CompletedProcess:
    read, write = os.pipe()
    os.close(read)
    try:
        return subprocess.run([sys.executable, "-m", "cli", *args], cwd=ROOT, stdout=write,
                              stderr=subprocess.PIPE, text=True, timeout=120)
    finally:
        os.close(write)


@pytest.fixture(scope="module")
def study(tmp_path_factory) -> Path:
    return fx.synthetic_study(tmp_path_factory.mktemp("pipe") / "synth", n=200)


@pytest.mark.parametrize("args", [
    ("status",),                      # rich tables (rich's own broken-pipe handling exits 1)
    ("report", "--json"),             # one JSON document written by print_json
], ids=["status-table", "report-json"])
def test_a_closed_pipe_exits_141_without_a_traceback(study, args):
    r = run_into_closed_pipe(args[0], str(study), *args[1:])
    assert r.returncode == 141, r.stderr
    assert "Traceback" not in r.stderr and "Exception ignored" not in r.stderr
    assert "BrokenPipe" not in r.stderr


def test_a_command_without_a_study_too():
    r = run_into_closed_pipe("size", "--effect", "0.04")
    assert r.returncode == 141, r.stderr
    assert "Traceback" not in r.stderr


def test_exit_code_documented():
    from cli.pipes import EXIT_BROKEN_PIPE

    assert EXIT_BROKEN_PIPE == 141
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert "141" in readme and "closed pipe" in readme
    r = subprocess.run([sys.executable, "-m", "cli", "--help"], cwd=ROOT, capture_output=True, text=True)
    assert "141" in r.stdout


def test_only_our_own_closed_output_counts():
    """EPIPE from elsewhere (a judge endpoint's socket) is not a closed pipe: stdout must be the one."""
    probe = "import sys; from cli.pipes import output_closed; sys.exit(3 if output_closed() else 4)"
    read, write = os.pipe()
    try:
        healthy = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, stdout=write, timeout=60)
    finally:
        os.close(write)
        os.close(read)
    assert healthy.returncode == 4
    read, write = os.pipe()
    os.close(read)
    try:
        closed = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, stdout=write, timeout=60)
    finally:
        os.close(write)
    assert closed.returncode == 3
