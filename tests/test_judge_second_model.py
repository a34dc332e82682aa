"""A second judge model's output for a batch another model already judged: refused, never stored as a change.

Both outputs name their judgments ``judge:<item>`` (tests/test_judge_format.py), so before this check the
second file was reported as "changed at the source", and ``--accept-changes`` would have stored the second
model's verdicts under the first model's name.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from _judge_fixture import batch_output_line, make_study
from typer.testing import CliRunner

from cli.main import app
from planner.errors import DataError
from planner.store.study import Study, ingest
from planner.workflows.next_batch import BatchSelection, Output, QualityControl, next_batch


@pytest.fixture
def batch(tmp_path):
    st = make_study(tmp_path, n_prompts=12)
    res = next_batch(st, BatchSelection(size=6, strategy="round-robin"),
                     qc=QualityControl(attention=0, repeat=0, overlap=0, acceptability=0),
                     output=Output(out=tmp_path / "b1.jsonl", format="judge", judge_model="judge-x"))
    return st, [i.item_id for i in res.items]


def _output(path: Path, items, model: str, answer: str) -> Path:
    """An OpenAI Batch API output file answered by ``model``, the same ``answer`` on every item."""
    path.write_text("".join(json.dumps(batch_output_line(c, answer, model)) + "\n" for c in items))
    return path


def _stored(st):
    with Study.open(st) as s:
        return sorted((j.id, j.annotator, j.verdict) for j in s.judgments())


def test_second_model_is_refused_and_nothing_changes(batch, tmp_path):
    st, items = batch
    ingest(st, [_output(tmp_path / "x.jsonl", items, "judge-x", "[[A]]")])
    before = _stored(st)
    assert len(before) == 6 and {a for _, a, _ in before} == {"judge-x"}
    y = _output(tmp_path / "y.jsonl", items, "judge-y", "[[B]]")
    for accept in (False, True):           # accepting changes must not relabel judge-y's verdicts as judge-x's
        with pytest.raises(DataError, match=r"nothing stored from y.jsonl"):
            ingest(st, [y], accept_changes=accept)
        assert _stored(st) == before
    # the same model's file again: already stored; the same model with other verdicts: a change, as before
    assert ingest(st, [_output(tmp_path / "x2.jsonl", items, "judge-x", "[[A]]")]).already == 6
    with pytest.raises(DataError, match="changed at the source"):
        ingest(st, [_output(tmp_path / "x3.jsonl", items, "judge-x", "[[B]]")])


def test_cli_names_both_annotators_in_one_line(batch, tmp_path):
    st, items = batch
    ingest(st, [_output(tmp_path / "x.jsonl", items, "judge-x", "[[A]]")])
    y = _output(tmp_path / "y.jsonl", items, "judge-y", "[[B]]")
    r = CliRunner().invoke(app, ["ingest", str(st), str(y)])
    assert r.exit_code == 1 and "Traceback" not in r.stderr
    assert "stored from annotator 'judge-x'; this row gives it as 'judge-y'" in r.stderr
