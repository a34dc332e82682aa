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
