"""Output paths are checked before any work and before the study changes: a bad
--out never costs a fit or a half-written study.

``report`` caches its fit in the study (an artifact); before this check a bad
``--plot``/``--markdown`` stored the fit and only then refused. The positive
control shows a good run *does* change study.sqlite, so the byte-identity
assertions below can fail.
"""

from __future__ import annotations

import hashlib
import shutil

import pytest
from _report_fixture import synthetic_study
from typer.testing import CliRunner

from cli.main import app

runner = CliRunner()


@pytest.fixture(scope="module")
def base(tmp_path_factory):
    return synthetic_study(tmp_path_factory.mktemp("out") / "st", n=120, n_prompts=12)


def _digest(study):
    return tuple(hashlib.sha256((study / n).read_bytes()).hexdigest() for n in ("study.sqlite", "study.json"))


@pytest.fixture
def study(base, tmp_path):
    s = tmp_path / "st"
    shutil.copytree(base, s)
    return s


def _bad_paths(tmp_path):
    f = tmp_path / "a-file"
    f.write_text("x")
    d = tmp_path / "a-dir"
    d.mkdir()
    return f, d


def test_good_report_run_changes_the_study(study, tmp_path):
    """Positive control: the fit is cached in study.sqlite by a successful report (asked for with
    --save-posterior: a Laplace report writes no netcdf by default)."""
    before = _digest(study)
    r = runner.invoke(app, ["report", str(study), "--markdown", str(tmp_path / "r.md"), "--save-posterior"])
    assert r.exit_code == 0, r.stderr
    assert _digest(study) != before


@pytest.mark.parametrize("kind", ["plot-is-file", "plot-under-file", "plot-file-is-dir", "markdown-is-dir",
                                  "markdown-under-file", "markdown-proc"])
def test_report_bad_output_refused_before_the_fit(study, tmp_path, kind):
    f, d = _bad_paths(tmp_path)
    (d / "strengths.png").mkdir()  # a directory where report would write a figure
    opt = {"plot-is-file": ["--plot", str(f)], "plot-under-file": ["--plot", str(f / "figs")],
           "plot-file-is-dir": ["--plot", str(d)], "markdown-is-dir": ["--markdown", str(d)],
           "markdown-under-file": ["--markdown", str(f / "r.md")],
           "markdown-proc": ["--markdown", "/proc/planner-test/r.md"]}[kind]
    before = _digest(study)
    r = runner.invoke(app, ["report", str(study), *opt])
    lines = r.stderr.strip().splitlines()
    assert r.exit_code == 2, r.stderr
    assert len(lines) == 1 and opt[0] in lines[0] and "Traceback" not in r.stderr
    assert _digest(study) == before


@pytest.mark.parametrize("kind", ["dir", "under-file", "proc", "missing-parent"])
def test_allocate_out_checked_first(study, tmp_path, kind):
    f, d = _bad_paths(tmp_path)
    out = {"dir": d, "under-file": f / "x.csv", "proc": "/proc/planner-test/x.csv",
           "missing-parent": tmp_path / "no" / "x.csv"}[kind]
    r = runner.invoke(app, ["allocate", "--study", str(study), "--budget", "4", "--out", str(out)])
    assert r.exit_code == 2 and "--out" in r.stderr, r.stderr
    assert len(r.stderr.strip().splitlines()) == 1


@pytest.mark.parametrize("cmd", [["size", "--effect", "0.1"],
                                 ["simulate", "--reps", "1", "--budget", "10", "--batch", "5", "--strategies", "random"]])
@pytest.mark.parametrize("kind", ["dir", "under-file", "suffix"])
def test_plot_checked_before_compute(tmp_path, cmd, kind):
    f, d = _bad_paths(tmp_path)
    plot = {"dir": d, "under-file": f / "p.png", "suffix": tmp_path / "p.pdf"}[kind]
    r = runner.invoke(app, [*cmd, "--plot", str(plot)])
    assert r.exit_code == 2 and "--plot" in r.stderr, r.stderr
    assert len(r.stderr.strip().splitlines()) == 1 and r.stdout == ""
