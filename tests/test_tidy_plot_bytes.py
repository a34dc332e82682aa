"""Same inputs, same plot bytes (reproducibility): `simulate --plot` and `size --plot` write identical
PNG and SVG files on a second run. matplotlib salts its SVG element ids at random and stamps a date
unless told otherwise (the report's plots already fixed both; these two did not before)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _run(*args):
    got = subprocess.run([sys.executable, "-m", "cli", *args], capture_output=True, text=True, cwd=ROOT,
                         env={**os.environ, "MPLBACKEND": "Agg"})
    assert got.returncode == 0, got.stderr


@pytest.mark.parametrize("ext", [".svg", ".png"])
def test_simulate_plot_is_byte_identical_on_a_second_run(tmp_path, ext):
    files = []
    for i in range(2):
        f = tmp_path / f"sim{i}{ext}"
        _run("simulate", "--systems", "4", "--budget", "40", "--batch", "10", "--reps", "2", "--seed", "1",
             "--strategies", "random,round-robin", "--plot", str(f))
        files.append(f.read_bytes())
    assert files[0] == files[1] and len(files[0]) > 1000


@pytest.mark.parametrize("ext", [".svg", ".png"])
def test_size_plot_is_byte_identical_on_a_second_run(tmp_path, ext):
    files = []
    for i in range(2):
        f = tmp_path / f"size{i}{ext}"
        _run("size", "--effect", "0.1", "--plot", str(f))
        files.append(f.read_bytes())
    assert files[0] == files[1] and len(files[0]) > 1000
