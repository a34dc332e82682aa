"""The judge round trip, end to end: a judge batch, OpenAI batch output + error files, retry, round two — every verdict
stored once, with the orientation the requests showed, transport failures never counted as invalid."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from _judge_fixture import batch_output_line

from planner.store.study import Study, ingest, init_study, status
from planner.workflows.next_batch import BatchSelection, Output, QualityControl, next_batch
from planner.workflows.reissue import retry_failed

SYSTEMS = ["alpha", "beta", "gamma", "delta"]


@pytest.fixture
def study(tmp_path):
    prompts, responses = tmp_path / "p.jsonl", tmp_path / "r.jsonl"
    prompts.write_text("".join(json.dumps({"id": f"p{i}", "text": f"Question {i}?"}) + "\n" for i in range(30)))
    responses.write_text("".join(json.dumps({"prompt": f"p{i}", "system": s, "text": f"Answer {k} to {i}."}) + "\n"
                                 for i in range(30) for k, s in enumerate(SYSTEMS)))
    init_study(tmp_path / "st", prompts_file=prompts, responses_file=responses, seed=1)
    return tmp_path / "st"


def _expired(cid: str) -> dict:  # an error-file line
    return {"id": f"batch_req_{cid}", "custom_id": cid, "response": None,
            "error": {"code": "batch_expired", "message": "This request could not be executed before the "
                                                           "completion window expired."}}


def _jl(path: Path, rows) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def _key(study) -> dict:
    with Study.open(study) as s:
        return {it.item_id: it for it in s.items()}


def _answer(item) -> str:
    """The judge prefers the alphabetically first system — an answer checkable against the key."""
    return "[[A]]" if min(item.left, item.right) == item.left else "[[B]]"


def test_two_rounds_with_failures_and_retry(study, tmp_path):
    res = next_batch(study, BatchSelection(size=12),
                     qc=QualityControl(attention=0, repeat=0, overlap=0, acceptability=0),
                     output=Output(out=tmp_path / "r1", format="judge", judge_model="judge-x"))
    items = _key(study)  # the key as the store keeps it
    ids = [it.item_id for it in res.items]
    assert sorted(ids) == sorted(items)
    failed = ids[:3]
    out1 = _jl(tmp_path / "out1.jsonl", [batch_output_line(i, _answer(items[i])) for i in ids[3:]])
    err1 = _jl(tmp_path / "err1.jsonl", [_expired(i) for i in failed])
    r = ingest(study, [out1, err1])
    assert [f.rows for f in r.files] == [len(ids) - 3, 0] and r.files[1].unanswered == 3
    st = status(study)
    assert st.totals["invalid"] == 0 and st.unanswered == 3  # transport failures are not invalid verdicts
    retry = retry_failed(study, out=tmp_path / "retry")
    sent = [json.loads(x)["custom_id"] for x in Path(retry.files[0]).read_text().splitlines()]
    assert sent == failed  # same item ids, same order, nothing else
    out2 = _jl(tmp_path / "out2.jsonl", [batch_output_line(i, _answer(items[i])) for i in failed])
    assert ingest(study, [out2]).files[0].rows == 3
    # everything again (a re-run): nothing new, nothing double counted
    again = ingest(study, [out1, err1, out2])
    assert again.rows == 0 and status(study).unanswered == 0
    # round two: a new batch; the output file is cumulative (round one's lines too)
    res2 = next_batch(study, BatchSelection(size=8),
                      qc=QualityControl(attention=0, repeat=0, overlap=0, acceptability=0),
                      output=Output(out=tmp_path / "r2", format="judge", judge_model="judge-x"))
    items = _key(study)
    cumulative = _jl(tmp_path / "cum.jsonl", [batch_output_line(i, _answer(items[i])) for i in items])
    f = ingest(study, [cumulative]).files[0]
    assert (f.rows, f.already) == (len(res2.items), len(ids))
    with Study.open(study) as s:
        stored = list(s.judgments())
        assert len(stored) == len(items) and len({j.id for j in stored}) == len(items)
        for j in stored:  # orientation: the stored winner is the system the judge preferred
            it = items[j.item]
            winner = j.a if j.verdict == "A" else j.b
            assert winner == min(it.left, it.right), j
