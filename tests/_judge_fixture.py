"""A small synthetic study whose responses carry the fake judge's quality markers (see fake_openai_server)."""

from __future__ import annotations

import json
from pathlib import Path

from planner.store.study import init_study

#: BT strengths the fake judge uses (``quality=`` markers): clearly separated, alpha best.
QUALITY = {"alpha": 3.0, "beta": 1.5, "gamma": 0.0, "delta": -1.5}


def make_study(tmp_path: Path, n_prompts: int = 30, name: str = "st") -> Path:
    prompts, responses = tmp_path / "p.jsonl", tmp_path / "r.jsonl"
    prompts.write_text("".join(json.dumps({"id": f"p{i}", "text": f"Question {i}?"}) + "\n"
                               for i in range(n_prompts)))
    responses.write_text("".join(json.dumps({"prompt": f"p{i}", "system": s, "text": f"Answer {i}. quality={q}"})
                                 + "\n" for i in range(n_prompts) for s, q in QUALITY.items()))
    init_study(tmp_path / name, prompts_file=prompts, responses_file=responses, seed=1)
    return tmp_path / name


def batch_output_line(cid: str, text: str, model: str = "judge-x") -> dict:
    """An OpenAI Batch API output line answered by ``model`` (shape validated in test_judge_format)."""
    body = {"id": f"chatcmpl-{cid}", "object": "chat.completion", "created": 1, "model": model,
            "choices": [{"index": 0, "finish_reason": "stop", "logprobs": None,
                         "message": {"role": "assistant", "content": text, "refusal": None}}],
            "usage": {"prompt_tokens": 10, "completion_tokens": 2, "total_tokens": 12}}
    return {"id": f"batch_req_{cid}", "custom_id": cid, "response": {"status_code": 200, "request_id": cid,
                                                                     "body": body}, "error": None}


#: no QC items: every item of a test batch is a plain comparison sent to the judge
NO_QC = {"attention": 0, "repeat": 0, "overlap": 0, "acceptability": 0}


def judge_batch_in(study, size: int = 4, model: str = "judge-x", **kw):
    """Write a judge batch of ``size`` comparisons (no QC items) for ``model``; the next_batch result."""
    from planner.workflows.next_batch import next_batch, options_from

    return next_batch(study, **options_from(size=size, format="judge", judge_model=model, **{**NO_QC, **kw}))


def judge_options(srv, **kw):
    """JudgeOptions against the loopback server ``srv``: model judge-x, no real pauses, fast Batch API polls."""
    from planner.services.judging import JudgeOptions

    delays = kw.pop("delays", None)
    return JudgeOptions(**{"model": "judge-x", "base_url": srv.base_url, "poll_interval": 0.01,
                           "sleep": delays.append if delays is not None else (lambda s: None), **kw})


def batch_requests_of(study, batch_id=None) -> dict[str, dict]:
    """custom_id -> request, re-read from the batch file planner wrote (the newest batch, or ``batch_id``)."""
    from planner.store.study import Study

    with Study.open(study) as s:
        info = [b for b in s.batches() if batch_id is None or b.id == batch_id][-1]
    return {r["custom_id"]: r for f in info.manifest["files"]
            for r in map(json.loads, Path(f).read_text().splitlines())}


def faults_by_item(study, srv, faults: dict[int, str]) -> dict[str, str]:
    """Give the k-th request of the newest batch the fault ``faults[k]`` (by its text); item id -> fault."""
    reqs = batch_requests_of(study)
    ids = list(reqs)
    chosen = {ids[k]: f for k, f in faults.items()}
    texts = {reqs[cid]["body"]["messages"][1]["content"]: f for cid, f in chosen.items()}
    srv.rule = texts.get
    return chosen
