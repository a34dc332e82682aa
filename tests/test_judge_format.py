"""Judge outputs (planner/formats/judge.py): verdict parser and the output reader."""

from __future__ import annotations

import json

import _batch_fixture as fx
import numpy as np
import pytest

from planner.batch.assemble import assemble_batch
from planner.errors import DataError, UsageError
from planner.formats.judge import parse_judge_verdict, read_judge_outputs
from planner.formats.writers import write_batch

# (description, judge text, expected (verdict, reason))
CASES = [
    ("MT-bench A", "A is more accurate.\nReason: correctness\n[[A]]", ("left", "correctness")),
    ("MT-bench B", "[[B]]", ("right", None)),
    ("MT-bench C is a tie", "Both fine. [[C]]", ("tie", None)),
    ("lower case and spaces", "[[ b ]]", ("right", None)),
    ("position words", "[[left]]", ("left", None)),
    ("tie word", "[[Tie]]", ("tie", None)),
    ("repeated same token", "[[A]] ... final: [[A]]", ("left", None)),
    ("two different tokens: ambiguous", "Either [[A]] or [[B]].", ("invalid", None)),
    ("final verdict line", "Some analysis.\nVerdict: right", ("right", None)),
    ("final verdict line, bold", "Analysis.\n**Final verdict:** left.", ("left", None)),
    ("final verdict letter", "x\nverdict: C", ("tie", None)),
    ("verdict line not last: ignored", "verdict: left\nmore text", ("invalid", None)),
    ("bracket and final line agree", "[[B]]\nVerdict: right", ("right", None)),
    ("bracket and final line disagree", "[[A]]\nVerdict: right", ("invalid", None)),
    ("bare word", "left", ("left", None)),
    ("bare letter", "B", ("right", None)),
    ("explicit invalid", "Verdict: invalid\nReason: other", ("invalid", "other")),
    ("acceptability pass", "Fine.\n[[PASS]]", ("pass", None)),
    ("acceptability fail with reason", "Reason: safety\n[[FAIL]]", ("fail", "safety")),
    ("pass and fail: ambiguous", "[[PASS]] [[FAIL]]", ("invalid", None)),
    ("reason code, bold and punctuated", "**Reason:** helpfulness.\n[[A]]", ("left", "helpfulness")),
    ("two reasons: none kept", "Reason: style\nReason: safety\n[[B]]", ("right", None)),
    ("prose only", "Assistant A is better.", ("invalid", None)),
    ("single bracket", "[A]", ("invalid", None)),
    ("empty", "", ("invalid", None)),
    ("None", None, ("invalid", None)),
]


@pytest.mark.parametrize("desc,text,expected", CASES, ids=[c[0] for c in CASES])
def test_parse_judge_verdict(desc, text, expected):
    assert parse_judge_verdict(text) == expected


def _openai_line(cid, content, status=200):
    return json.dumps({"id": "batch_req_1", "custom_id": cid,
                       "response": {"status_code": status, "request_id": "r",
                                    "body": {"choices": [{"index": 0, "message": {"role": "assistant",
                                                                                  "content": content}}]}},
                       "error": None})


def test_read_openai_batch_and_plain_lines(tmp_path):
    p = tmp_path / "out.jsonl"
    lines = [
        _openai_line("it-1", "Reason: correctness\n[[A]]"),
        "",
        json.dumps({"custom_id": "it-2", "response": None,
                    "error": {"code": "rate_limit", "message": "slow down"}}),
        _openai_line("it-3", "x", status=500),
        json.dumps({"custom_id": "it-4", "content": "[[C]]"}),
        json.dumps({"custom_id": "it-5", "output": "Verdict: right"}),
        json.dumps({"custom_id": "it-6", "verdict": "left"}),
        json.dumps({"custom_id": "it-7", "content": None}),
    ]
    p.write_text("\n".join(lines) + "\n", encoding="utf-8")
    got = list(read_judge_outputs(p))
    assert [(n, i, v, r) for n, i, v, r, _ in got] == [
        (1, "it-1", "left", "correctness"), (3, "it-2", "invalid", None), (4, "it-3", "invalid", None),
        (5, "it-4", "tie", None), (6, "it-5", "right", None), (7, "it-6", "left", None),
        (8, "it-7", "invalid", None)]
    assert "rate_limit" in got[1][4]


def test_malformed_lines_name_file_and_line(tmp_path):
    p = tmp_path / "bad.jsonl"
    p.write_text(_openai_line("it-1", "[[A]]") + "\n{not json\n", encoding="utf-8")
    gen = read_judge_outputs(p)
    assert next(gen)[1] == "it-1"
    with pytest.raises(DataError, match=rf"{p.name}:2: not valid JSON"):
        next(gen)
    p.write_text('{"content": "[[A]]"}\n', encoding="utf-8")
    with pytest.raises(DataError, match=r"bad.jsonl:1: custom_id missing; expected the item id"):
        list(read_judge_outputs(p))
    p.write_text('[1, 2]\n', encoding="utf-8")
    with pytest.raises(DataError, match=":1: expected a JSON object"):
        list(read_judge_outputs(p))
    p.write_bytes(b'{"custom_id": "it-1", "content": "\xff"}\n')
    with pytest.raises(DataError, match=":1: not UTF-8"):
        list(read_judge_outputs(p))
    with pytest.raises(UsageError):
        list(read_judge_outputs(tmp_path / "missing.jsonl"))


def test_round_trip_requests_to_position_verdicts(tmp_path):
    """Write judge requests, answer each as a judge preferring the longer side, read back."""
    batch = assemble_batch(fx.planned(2), prompt_text=fx.prompts(), response_text=fx.responses(),
                           rng=np.random.default_rng(0), both_orders=True, acceptability=0.2)
    (req_path,) = write_batch(batch, tmp_path / "req.jsonl", "judge", reasons=("correctness", "other"),
                              judge_model="judge-model-x")
    by_id = {it.item_id: it for it in batch.items}
    out_lines = []
    for line in req_path.read_text(encoding="utf-8").splitlines():
        req = json.loads(line)
        it = by_id[req["custom_id"]]
        if it.kind == "acceptability":
            answer = "Reason: other\n[[FAIL]]"
        else:
            answer = "Reason: correctness\n" + ("[[A]]" if len(it.left_text) >= len(it.right_text) else "[[B]]")
        out_lines.append(_openai_line(req["custom_id"], answer))
    out = tmp_path / "out.jsonl"
    out.write_text("\n".join(out_lines) + "\n", encoding="utf-8")
    got = {i: (v, r) for _, i, v, r, _ in read_judge_outputs(out)}
    assert set(got) == set(by_id)
    for item_id, (verdict, reason) in got.items():
        it = by_id[item_id]
        if it.kind == "acceptability":
            assert (verdict, reason) == ("fail", "other")
        else:
            longer = "left" if len(it.left_text) >= len(it.right_text) else "right"
            assert (verdict, reason) == (longer, "correctness")


def test_registry_rows_form(tmp_path):
    from planner.formats.judge import read_judge_rows

    p = tmp_path / "out.jsonl"
    line = json.loads(_openai_line("it-1", "Reason: style\n[[B]]"))
    line["response"]["body"]["model"] = "judge-x"
    p.write_text(json.dumps(line) + "\n{bad\n" + json.dumps({"custom_id": "it-2", "content": "??"}) + "\n",
                 encoding="utf-8")
    rows = list(read_judge_rows(p))
    assert rows[0] == (1, {"item": "it-1", "verdict": "right", "reason": "style", "id": "judge:it-1",
                           "annotator": "judge-x", "seconds": None, "confidence": None}, None)
    assert rows[1][1] is None and rows[1][2].startswith(f"{p.name}:2: not valid JSON")  # name, not full path
    assert rows[2][1]["verdict"] == "invalid"  # unparseable text: invalid, counted


def test_round_trip_with_real_gpt4_judgments(tmp_path, vicuna_data):
    """Vicuna-80 batch in both orders -> judge requests -> answers taken from the released GPT-4
    judgments for the same (prompt, first system, second system) -> read back -> through the key,
    the oriented verdicts equal the released ones."""
    import itertools

    ptext, resp, strata, systems = fx.vicuna(vicuna_data)
    released = {}
    for line in (vicuna_data / "judgments" / "qlora_vicuna80_gpt4.jsonl").read_text(encoding="utf-8").splitlines():
        r = json.loads(line)
        released[(r["prompt"], r["a"], r["b"])] = r["verdict"]
    pids = sorted(ptext)
    planned = [(pids[(3 * n + r) % 80], a, b, strata[pids[(3 * n + r) % 80]])
               for n, (a, b) in enumerate(itertools.combinations(systems, 2)) for r in range(3)]
    batch = assemble_batch(planned, prompt_text=ptext, response_text=resp, rng=np.random.default_rng(2),
                           both_orders=True)
    (req,) = write_batch(batch, tmp_path / "req.jsonl", "judge", reasons=("correctness", "other"),
                         judge_model="judge-model-x")
    by_id = {it.item_id: it for it in batch.items}
    answer = {"A": "[[A]]", "B": "[[B]]", "tie": "[[C]]", "invalid": "error"}
    lines = []
    for line in req.read_text(encoding="utf-8").splitlines():
        it = by_id[json.loads(line)["custom_id"]]
        lines.append(_openai_line(it.item_id, answer[released[(it.prompt_id, it.left_system, it.right_system)]]))
    out = tmp_path / "out.jsonl"
    out.write_text("\n".join(lines) + "\n", encoding="utf-8")
    back = {"left": "A", "right": "B", "tie": "tie", "invalid": "invalid"}
    n = 0
    for _, item_id, verdict, _, _ in read_judge_outputs(out):
        it = by_id.pop(item_id)
        assert back[verdict] == released[(it.prompt_id, it.left_system, it.right_system)]
        n += 1
    assert not by_id and n == 2 * len(planned)  # 28 pairs x 3 prompts x 2 orders


# --------------------------------------------------------------- transport failures vs answers (never invalid)
def _completion(cid, content, *, refusal=None, finish="stop", model="gpt-4o-2024-08-06"):
    """An OpenAI batch output line whose body is a real ``ChatCompletion`` (validated below)."""
    body = {"id": f"chatcmpl-{cid}", "object": "chat.completion", "created": 1732960000, "model": model,
            "choices": [{"index": 0, "finish_reason": finish, "logprobs": None,
                         "message": {"role": "assistant", "content": content, "refusal": refusal}}],
            "usage": {"prompt_tokens": 100, "completion_tokens": 20, "total_tokens": 120},
            "system_fingerprint": "fp_1"}
    return {"id": f"batch_req_{cid}", "custom_id": cid,
            "response": {"status_code": 200, "request_id": f"req_{cid}", "body": body}, "error": None}


def _http_error(cid, status, code, message, etype="invalid_request_error"):
    return {"id": f"batch_req_{cid}", "custom_id": cid,
            "response": {"status_code": status, "request_id": f"req_{cid}",
                         "body": {"error": {"message": message, "type": etype, "param": None, "code": code}}},
            "error": None}


def _batch_error(cid, code, message):
    return {"id": f"batch_req_{cid}", "custom_id": cid, "response": None, "error": {"code": code, "message": message}}


OUTPUT = [_completion("it-1", "Reason: accuracy\n[[A]]"),
          _completion("it-2", None, refusal="I can't help with comparing these responses."),
          _completion("it-3", "Both answers are similar in quality and", finish="length"),
          _completion("it-4", "Reason: style\n[[B]]", finish="length"),
          _completion("it-5", "I think the first one, maybe.")]
ERRORS = [_batch_error("it-6", "batch_expired", "This request could not be executed before the completion "
                                                "window expired."),
          _http_error("it-7", 400, "context_length_exceeded", "This model's maximum context length is 128000 "
                                                              "tokens. However, your messages resulted in 130512 tokens."),
          _http_error("it-8", 429, "rate_limit_exceeded", "Rate limit reached for gpt-4o", "requests"),
          _http_error("it-9", 500, None, "The server had an error while processing your request.", "server_error"),
          _http_error("it-10", 503, None, "The engine is currently overloaded.", "server_error")]


def test_fixture_bodies_are_real_openai_types():
    from openai.types import BatchError
    from openai.types.chat import ChatCompletion
    from openai.types.shared import ErrorObject

    for line in OUTPUT:
        ChatCompletion.model_validate(line["response"]["body"])
    for line in ERRORS:
        if line["error"] is not None:
            BatchError.model_validate(line["error"])
        else:
            ErrorObject.model_validate(line["response"]["body"]["error"])


def test_output_error_and_retry_files(tmp_path):
    from planner.formats.judge import read_judge_rows
    from planner.formats.readers import detect_format

    out = tmp_path / "batch_out.jsonl"
    out.write_text("".join(json.dumps(x) + "\n" for x in OUTPUT), encoding="utf-8")
    err = tmp_path / "batch_err.jsonl"
    err.write_text("".join(json.dumps(x) + "\n" for x in ERRORS), encoding="utf-8")
    assert detect_format(out).name == detect_format(err).name == "judge"
    got = [r for _, r, p in read_judge_rows(out)]
    assert [(r["item"], r["verdict"], r["reason"]) for r in got] == [
        ("it-1", "left", "accuracy"),
        ("it-2", "invalid", None),     # refusal: the judge answered, unusably
        ("it-3", "invalid", None),     # cut off (finish_reason length) before a verdict
        ("it-4", "right", "style"),    # cut off after the verdict: the verdict stands
        ("it-5", "invalid", None)]     # unparseable
    assert {r["annotator"] for r in got} == {"gpt-4o-2024-08-06"}
    errs = [r for _, r, p in read_judge_rows(err)]
    assert [set(r) for r in errs] == [{"item", "unanswered", "id", "annotator"}] * 5
    assert [r["unanswered"] for r in errs] == [
        "batch_expired: This request could not be executed before the completion window …",
        "HTTP 400: context_length_exceeded: This model's maximum context length is 12800…",
        "HTTP 429: rate_limit_exceeded: Rate limit reached for gpt-4o",
        "HTTP 500: server_error: The server had an error while processing your request.",
        "HTTP 503: server_error: The engine is currently overloaded."]
    assert all(len(r["unanswered"]) <= 80 and "\n" not in r["unanswered"] for r in errs)
    assert errs[1]["unanswered"].startswith("HTTP 400: context_length_exceeded: ")
    assert errs[2]["unanswered"] == "HTTP 429: rate_limit_exceeded: Rate limit reached for gpt-4o"
    assert errs[0]["id"] == "judge:it-6"
    # the retry of the failed requests answers normally, under the same judgment id
    retry = tmp_path / "retry_out.jsonl"
    retry.write_text("".join(json.dumps(_completion(f"it-{k}", "[[C]]")) + "\n" for k in range(6, 11)),
                     encoding="utf-8")
    again = [r for _, r, p in read_judge_rows(retry)]
    assert [(r["id"], r["verdict"]) for r in again] == [(f"judge:it-{k}", "tie") for k in range(6, 11)]
    # the legacy tuple reader still calls a failed request invalid, with the error as raw text
    legacy = list(read_judge_outputs(err))
    assert [(i, v) for _, i, v, _, _ in legacy] == [(f"it-{k}", "invalid") for k in range(6, 11)]


@pytest.mark.parametrize("line, message", [
    ({"custom_id": "it-1", "response": {"status_code": 200, "body": {"choices": {"0": {}}}}, "error": None},
     "out.jsonl:1: response.body.choices {'0': {}}; expected a list of choice objects"),
    ({"custom_id": "it-1", "response": {"status_code": [200], "body": {}}, "error": None},
     "out.jsonl:1: response.status_code [200]; expected an HTTP status number"),
    ({"custom_id": "it-1", "response": None, "error": 5}, "out.jsonl:1: error 5; expected an error object"),
    ({"custom_id": "it-1", "response": {"status_code": 200, "body": {"choices": [{"message": {"content": 7}}]}},
      "error": None}, "out.jsonl:1: message.content 7; expected text or null"),
    ({"custom_id": "  ", "content": "[[A]]"}, "out.jsonl:1: custom_id '  '; expected the item id"),
    ({"custom_id": "it-1", "content": ["[[A]]"]}, "out.jsonl:1: content ['[[A]]']; expected the judge's text"),
])
def test_malformed_output_shapes_are_problems(tmp_path, line, message):
    from planner.formats.judge import read_judge_rows

    p = tmp_path / "out.jsonl"
    p.write_text(json.dumps(line) + "\n", encoding="utf-8")
    (_, rec, problem), = read_judge_rows(p)
    assert rec is None and problem.startswith(message)


def test_the_reader_understands_every_token_the_templates_ask_for():
    """formats/templates.py is the contract: each ``[[TOKEN]]`` a default template asks the judge to end
    with parses, through the reader, to the position verdict VERDICT_TOKENS gives it."""
    import re

    from planner.formats import templates, writers
    from planner.vocabulary import POSITION_VERDICTS

    asked = {t for tpl in (templates.DEFAULT_PAIRWISE_TEMPLATE, templates.DEFAULT_ACCEPTABILITY_TEMPLATE)
             for t in re.findall(r"\[\[(\w+)\]\]", tpl)}
    assert asked == set(templates.VERDICT_TOKENS) == {"A", "B", "C", "PASS", "FAIL"}
    for token, verdict in templates.VERDICT_TOKENS.items():
        assert verdict in POSITION_VERDICTS
        assert parse_judge_verdict(f"Because.\nReason: accuracy\n[[{token}]]") == (verdict, "accuracy")
    # one home: the writer fills the very objects the reader shares (no copy that could drift)
    assert writers.DEFAULT_PAIRWISE_TEMPLATE is templates.DEFAULT_PAIRWISE_TEMPLATE
    assert writers.DEFAULT_ACCEPTABILITY_TEMPLATE is templates.DEFAULT_ACCEPTABILITY_TEMPLATE
    assert writers.check_template is templates.check_template
