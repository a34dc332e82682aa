"""Judge request files: validated against the `openai` package's own types; temperature by model family."""

from __future__ import annotations

import json
import typing

import _batch_fixture as fx
import numpy as np
import pytest

from planner.batch.assemble import assemble_batch
from planner.errors import UsageError
from planner.formats.writers import check_temperature, judge_temperature, write_batch

openai = pytest.importorskip("openai")
pydantic = pytest.importorskip("pydantic")

REASONS = ("correctness", "helpfulness", "style", "safety", "other")


def _batch():
    return assemble_batch(fx.planned(1), prompt_text=fx.prompts(), response_text=fx.responses(),
                          rng=np.random.default_rng(5), attention=0.1, acceptability=0.1)


def _validate_line(line: dict) -> None:
    """One batch input line: {custom_id, method, url, body}; body = chat-completions create params."""
    from openai.types import batch_create_params
    from openai.types.chat import completion_create_params as ccp

    assert set(line) == {"custom_id", "method", "url", "body"}
    assert isinstance(line["custom_id"], str) and line["custom_id"]
    assert line["method"] == "POST"
    # the batch API's endpoint Literal (openai.types.batch_create_params.BatchCreateParams.endpoint)
    endpoints = typing.get_args(typing.get_type_hints(batch_create_params.BatchCreateParams)["endpoint"])
    assert line["url"] in endpoints
    params = ccp.CompletionCreateParamsNonStreaming
    known = set(typing.get_type_hints(params))
    assert set(line["body"]) <= known, set(line["body"]) - known   # TypedDicts ignore extras: check names
    body = pydantic.TypeAdapter(params).validate_python(line["body"])
    messages = list(body["messages"])  # the adapter validates message items lazily
    assert [m["role"] for m in messages] == ["system", "user"]


@pytest.mark.parametrize("model,temperature", [
    ("gpt-4o-2024-08-06", 0), ("gpt-4.1-mini", 0), ("llama-3-70b", 0), ("gpt-5", None), ("gpt-5-mini", None),
    ("GPT-5.1", None), ("o1", None), ("o3-mini", None), ("o4-mini", None), ("openai/o3", None),
])
def test_request_lines_validate_and_temperature_follows_the_family(tmp_path, model, temperature):
    (path,) = write_batch(_batch(), tmp_path / "req", "judge", reasons=REASONS, judge_model=model)
    lines = [json.loads(x) for x in path.read_text(encoding="utf-8").splitlines()]
    assert lines
    for line in lines:
        _validate_line(line)
        assert line["body"]["model"] == model
        if temperature is None:
            assert "temperature" not in line["body"]
        else:
            assert line["body"]["temperature"] == temperature


def test_explicit_temperature_is_written_for_every_model(tmp_path):
    for model in ("gpt-4o", "gpt-5"):
        (path,) = write_batch(_batch(), tmp_path / model, "judge", reasons=REASONS, judge_model=model,
                              temperature=0.7)
        for line in map(json.loads, path.read_text(encoding="utf-8").splitlines()):
            _validate_line(line)
            assert line["body"]["temperature"] == 0.7


@pytest.mark.parametrize("bad", [-0.1, 2.5, float("nan"), float("inf"), "warm", True, 10 ** 400])
def test_bad_temperature_is_a_usage_error_naming_the_option(bad):
    with pytest.raises(UsageError, match="`temperature`") as err:
        check_temperature(bad)
    assert len(str(err.value)) < 200


def test_validator_catches_a_bad_line():
    # the check can fail: a misspelled key or a wrong role is refused
    good = {"custom_id": "it-1", "method": "POST", "url": "/v1/chat/completions",
            "body": {"model": "m", "messages": [{"role": "system", "content": "s"}, {"role": "user", "content": "u"}]}}
    _validate_line(good)
    with pytest.raises(AssertionError):
        _validate_line({**good, "body": {**good["body"], "temprature": 0}})
    with pytest.raises(pydantic.ValidationError):
        _validate_line({**good, "body": {**good["body"], "messages": [{"role": "judge", "content": "u"}]}})
    with pytest.raises(AssertionError):
        _validate_line({**good, "url": "/v1/chat/completion"})


def test_judge_temperature_rule():
    assert judge_temperature("gpt-4o") == 0
    assert judge_temperature("o1-preview") is None
    assert judge_temperature("gpt-5-nano") is None
    assert judge_temperature("gpt-5", 1.0) == 1.0
    assert judge_temperature("omni-judge") == 0   # "o" + letter is not the o-series
