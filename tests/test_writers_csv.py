"""Every CSV planner writes neutralises formula cells; every written file respects the umask.

CSV writers: batch files (``next-batch --format csv``, planner/formats/writers.py)
and ``allocate --out x.csv`` (planner/workflows/allocate.py ``write_prompts``). The rule
(OWASP "CSV Injection"): a cell beginning with ``=``, ``+``, ``-``, ``@``, tab or
carriage return gets a leading ``'``.
"""

from __future__ import annotations

import csv
import io
import json
import os
import stat
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from cli.main import app
from planner.batch.assemble import assemble_batch
from planner.csvcell import CSV_DANGEROUS
from planner.formats.writers import FORMATS, write_batch
from planner.workflows.allocate import allocate_files

REASONS = ("correctness", "other")
HOSTILE = ["=HYPERLINK(\"http://x\",\"y\")", "+1+1", "-2+3", "@SUM(A1)", "\tindent", "\rcarriage"]


def _rows(path: Path) -> list[dict]:
    return list(csv.DictReader(io.StringIO(path.read_text(encoding="utf-8"), newline="")))


def _hostile_batch():
    prompts = {f"p{k}": HOSTILE[k] + " prompt" for k in range(len(HOSTILE))}
    responses = {}
    for k, pid in enumerate(prompts):
        responses[(pid, "s1")] = HOSTILE[k] + " left words here"
        responses[(pid, "s2")] = HOSTILE[(k + 1) % len(HOSTILE)] + " right words"
    planned = [(pid, "s1", "s2") for pid in prompts]
    return assemble_batch(planned, prompt_text=prompts, response_text=responses, rng=np.random.default_rng(0),
                          acceptability=0.3)


def test_batch_csv_neutralises_every_formula_cell(tmp_path):
    (path,) = write_batch(_hostile_batch(), tmp_path / "b.csv", "csv", reasons=REASONS)
    rows = _rows(path)
    cells = [v for r in rows for v in r.values() if v]
    assert len(rows) >= len(HOSTILE)
    assert not any(v.startswith(CSV_DANGEROUS) for v in cells)
    assert sum(v.startswith("'") for v in cells) >= 2 * len(HOSTILE)  # prompt and responses of each row
    # the text behind the quote is intact
    assert any(v == "'" + HOSTILE[0] + " prompt" for v in cells)


def _prompts_file(tmp_path: Path) -> Path:
    path = tmp_path / "prompts.jsonl"
    with open(path, "w", encoding="utf-8") as fh:
        fh.writelines(json.dumps({"id": f"{h[:1]}id{k}", "text": f"t{k}", "stratum": f"{h[:1]}s{k % 2}",
                                 "weight": 1.0 + k}) + "\n" for k, h in enumerate(HOSTILE * 2))
    return path


def test_allocate_out_csv_neutralises_ids_and_strata(tmp_path):
    out = tmp_path / "chosen.csv"
    allocate_files(budget=8, prompts=_prompts_file(tmp_path), out=out, seed=0)
    rows = _rows(out)
    assert len(rows) == 8
    for r in rows:
        for key in ("id", "stratum"):   # allocate --out writes a prompts file (id, text, ...) that init reads
            assert not r[key].startswith(CSV_DANGEROUS), r
        assert r["id"].startswith("'") == (r["id"][1:2] in {c for c in "=+-@\t\r"})
    assert any(r["id"].startswith("'=") for r in rows) or any(r["stratum"].startswith("'=") for r in rows)
    # numbers stay numbers
    assert all(float(r["weight"]) > 0 for r in rows)


def test_allocate_cli_out_csv(tmp_path):
    out = tmp_path / "c.csv"
    r = CliRunner().invoke(app, ["allocate", "--prompts", str(_prompts_file(tmp_path)), "--budget", "4",
                                 "--out", str(out)])
    assert r.exit_code == 0, r.stderr
    assert all(not v.startswith(CSV_DANGEROUS) for row in _rows(out) for v in row.values())


@pytest.fixture
def umask():
    def set_(mask):
        old = os.umask(mask)
        saved.append(old)
    saved: list[int] = []
    yield set_
    if saved:
        os.umask(saved[0])


@pytest.mark.parametrize("mask,mode", [(0o022, 0o644), (0o077, 0o600), (0o002, 0o664)])
@pytest.mark.parametrize("fmt", FORMATS)
def test_batch_files_get_the_umask_mode(tmp_path, umask, mask, mode, fmt):
    umask(mask)
    paths = write_batch(_hostile_batch(), tmp_path / "b", fmt, reasons=REASONS, judge_model="judge-x")
    assert paths
    for p in paths:
        assert stat.S_IMODE(p.stat().st_mode) == mode, (p.name, oct(p.stat().st_mode))
    assert sorted(x.name for x in tmp_path.iterdir()) == sorted(p.name for p in paths)  # no temporaries left


@pytest.mark.parametrize("mask,mode", [(0o022, 0o644), (0o077, 0o600)])
def test_allocate_out_gets_the_umask_mode(tmp_path, umask, mask, mode):
    umask(mask)
    out = tmp_path / "chosen.jsonl"
    allocate_files(budget=4, prompts=_prompts_file(tmp_path), out=out, seed=0)
    assert stat.S_IMODE(out.stat().st_mode) == mode
    assert sorted(x.name for x in tmp_path.iterdir()) == ["chosen.jsonl", "prompts.jsonl"]


def test_allocate_out_onto_a_directory_with_force_is_a_usage_error(tmp_path):
    from planner.errors import UsageError

    (tmp_path / "d.csv").mkdir()
    with pytest.raises(UsageError, match=r"`out`: .* is a directory"):
        allocate_files(budget=4, prompts=_prompts_file(tmp_path), out=tmp_path / "d.csv", force=True, seed=0)
    r = CliRunner().invoke(app, ["allocate", "--prompts", str(tmp_path / "prompts.jsonl"), "--budget", "4",
                                 "--out", str(tmp_path / "d.csv"), "--force"])
    assert r.exit_code == 2 and "Traceback" not in r.output
