"""`planner report`'s costs and totals: no arviz on a Laplace run, fast failure
on an empty study, judge totals shown."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import _report_fixture as fx

from planner.formats.markdown import render_markdown
from planner.store.study import init_study
from planner.workflows import report as rp

ROOT = Path(__file__).resolve().parents[1]


def _py(code: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=ROOT)


def test_laplace_report_does_not_import_arviz(tmp_path):
    st = fx.synthetic_study(tmp_path / "s", n=200, reasons=False)
    r = _py(f"import sys; from planner.workflows.report import build_report; r = build_report({str(st)!r}); "
            "print(r.posterior_artifact, 'arviz' in sys.modules, 'pymc' in sys.modules)")
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["None", "False", "False"]


def test_empty_study_fails_before_heavy_imports(tmp_path):
    init_study(tmp_path / "e", systems=["a", "b"])
    r = _py("import sys\nfrom planner.errors import UsageError\nfrom planner.workflows.report import build_report\n"
            f"try:\n    build_report({str(tmp_path / 'e')!r}, engine='nuts')\nexcept UsageError as e:\n"
            "    print('error', 'arviz' in sys.modules, 'pymc' in sys.modules)")
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["error", "False", "False"]


def test_judge_totals_in_report(tmp_path, monkeypatch):
    st = fx.synthetic_study(tmp_path / "j", n=200, reasons=False)
    r = rp.build_report(st)
    assert r.judges == () and json.loads(json.dumps(r.to_dict()))["judges"] == []
    assert "## LLM judges" not in render_markdown(r)
    row = {"model": "judge-x", "answers": 10, "prompt_tokens": 1234, "completion_tokens": 120, "cost_usd": 0.0043}
    monkeypatch.setattr("planner.store.ledger.judge_totals", lambda path: [row])
    r = rp.build_report(st)
    assert r.judges == (row,) and r.to_dict()["judges"] == [row]
    md = render_markdown(r)
    assert "## LLM judges" in md and "| judge-x | 10 | 1,234 | 120 | 0.0043 |" in md
