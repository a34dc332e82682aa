"""`init --max-words`: not given means no limit, stored honestly as null (never a made-up cap).

``planner init`` used to store ``"max_words": 400`` whether asked or not, and
``next-batch`` had learnt to read that 400 as "no limit". New studies
(``planner_study`` 2) store what was asked for: null when nothing was, and an
explicit ``--max-words 400`` is a limit like any other. Old studies
(``planner_study`` 1) are not migrated and behave as before: their 400 is no
limit, any other stored value is honoured.

The study: 3 systems x 6 prompts; ``long-sys`` answers with 450 words (> 400),
the others with 12, so "the limit is in force" means no item shows long-sys.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from cli.main import app
from planner.store.study import Study, init_study
from planner.workflows.next_batch import BatchSelection, Output, QualityControl, next_batch

SYSTEMS = ("short-a", "short-b", "long-sys")
LONG_WORDS = 450


def _files(tmp: Path) -> tuple[Path, Path]:
    prompts, responses = tmp / "prompts.jsonl", tmp / "responses.jsonl"
    prompts.write_text("".join(json.dumps({"id": f"p{i}", "text": f"Question {i}?"}) + "\n" for i in range(6)))
    rows = []
    for i in range(6):
        for s in SYSTEMS:
            words = LONG_WORDS if s == "long-sys" else 12
            rows.append(json.dumps({"prompt": f"p{i}", "system": s, "text": " ".join(["word"] * words)}))
    responses.write_text("\n".join(rows) + "\n")
    return prompts, responses


def _shown(path: Path) -> set[str]:
    res = next_batch(path, BatchSelection(size=12), qc=QualityControl(attention=0, repeat=0, overlap=0),
                     output=Output(dry_run=True))
    return {s for it in res.items for s in (it.left_system, it.right_system)}


def _config(path: Path) -> dict:
    return json.loads((path / "study.json").read_text())


def _set_config(path: Path, **changes) -> None:
    cfg = _config(path)
    cfg.update(changes)
    (path / "study.json").write_text(json.dumps(cfg))


@pytest.fixture
def files(tmp_path):
    return _files(tmp_path)


def test_default_is_no_limit_stored_as_null(files, tmp_path):
    init_study(tmp_path / "st", prompts_file=files[0], responses_file=files[1])
    cfg = _config(tmp_path / "st")
    assert cfg["max_words"] is None and cfg["planner_study"] == 2
    with Study.open(tmp_path / "st") as st:      # the config validator accepts null
        assert st.config["max_words"] is None
    assert "long-sys" in _shown(tmp_path / "st")


def test_explicit_400_is_a_limit_in_a_new_study(files, tmp_path):
    init_study(tmp_path / "st", prompts_file=files[0], responses_file=files[1], max_words=400)
    assert _config(tmp_path / "st")["max_words"] == 400
    assert _shown(tmp_path / "st") == {"short-a", "short-b"}


@pytest.mark.parametrize("stored, long_shown", [(400, True), (300, False), (None, True)])
def test_old_studies_behave_as_before(files, tmp_path, stored, long_shown):
    # planner_study 1 (as written before this change): 400 was the silent default, read as no limit
    init_study(tmp_path / "st", prompts_file=files[0], responses_file=files[1])
    _set_config(tmp_path / "st", planner_study=1, max_words=stored)
    assert ("long-sys" in _shown(tmp_path / "st")) is long_shown


def test_cli_init_default_and_bad_value(files, tmp_path):
    runner = CliRunner()
    r = runner.invoke(app, ["init", str(tmp_path / "a"), "--prompts", str(files[0]), "--responses", str(files[1])])
    assert r.exit_code == 0, r.stderr
    assert _config(tmp_path / "a")["max_words"] is None
    r = runner.invoke(app, ["init", str(tmp_path / "b"), "--prompts", str(files[0]), "--responses", str(files[1]),
                            "--max-words", "400"])
    assert r.exit_code == 0 and _config(tmp_path / "b")["max_words"] == 400
    r = runner.invoke(app, ["init", str(tmp_path / "c"), "--systems", "a,b", "--max-words", "0"])
    assert r.exit_code == 2 and r.stderr.count("\n") == 1 and "--max-words" in r.stderr
    assert not (tmp_path / "c" / "study.json").exists()
