"""`planner judge-server`: the local judge's stated rule, its faults, and the guide's judge and run paths on it.

The rule is checked against the Bradley–Terry–Davidson probabilities written out by hand; the
server is driven through the real ``openai`` SDK (its own exception and response types) and
through ``planner judge`` / ``planner run`` on the shipped Vicuna-80 example.
"""

from __future__ import annotations

import json
import math
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from cli.main import app
from planner.connectors.judge_server import (
    JudgeRule,
    JudgeServer,
    make_rule,
    parse_faults,
    rule_answer,
    rule_faults,
)
from planner.errors import UsageError
from planner.formats.templates import DEFAULT_PAIRWISE_TEMPLATE
from planner.workflows.judge_server import start_judge_server

ROOT = Path(__file__).resolve().parents[1]
runner = CliRunner()
TEXTS = {"Alpha answers carefully and at length, citing sources." * 2: ("q1", "alpha"),
         "Beta gives a short answer that is mostly right, with one slip." * 2: ("q1", "beta")}
A_TEXT, B_TEXT = list(TEXTS)


def _request(question: str, left: str, right: str) -> str:
    return DEFAULT_PAIRWISE_TEMPLATE.format(prompt=question, left=left, right=right, reasons="accuracy, other")


def _system_of(text):
    return TEXTS.get(text, (None, None))[1]


def _davidson(beta_left: float, beta_right: float, gamma: float, nu: float) -> tuple[float, float, float]:
    """P(left wins), P(right wins), P(tie) by hand: Davidson (1970) with a left shift gamma on the logit scale."""
    a, b = math.exp(beta_left + gamma), math.exp(beta_right)
    t = nu * math.sqrt(a * b)
    return a / (a + b + t), b / (a + b + t), t / (a + b + t)


def test_verdicts_follow_the_stated_davidson_rule():
    rule = JudgeRule(("alpha", "beta"), (100.0, -100.0), tie_rate=0.2, position=0.3, seed=5)
    answer = rule_answer(rule, _system_of)
    n = 4000   # distinct requests (the question varies), so the draws are independent
    got = {"[[A]]": 0, "[[B]]": 0, "[[C]]": 0}
    for k in range(n):
        got[answer(_request(f"Question {k}?", A_TEXT, B_TEXT)).splitlines()[-1]] += 1
    nu = 2 * 0.2 / (1 - 0.2)                                  # ties 0.2 between equals (Judge.nu)
    scale = 400 / math.log(10)                                # Elo points per logit
    p = _davidson(100 / scale, -100 / scale, 0.3, nu)
    for token, prob in zip(("[[A]]", "[[B]]", "[[C]]"), p):
        # 4.5 binomial standard deviations: a false alarm about once in 150,000 runs per token
        assert abs(got[token] / n - prob) < 4.5 * math.sqrt(prob * (1 - prob) / n), (token, got, p)
    # the same request gets the same answer, whenever it is asked
    text = _request("Same?", B_TEXT, A_TEXT)
    assert len({answer(text) for _ in range(5)}) == 1


def test_hidden_strengths_are_a_seeded_even_spread_and_stated():
    r1 = make_rule(("a", "b", "c", "d"), spread=300, seed=1)
    assert sorted(r1.elo) == [-150.0, -50.0, 50.0, 150.0] and r1 == make_rule(("a", "b", "c", "d"), spread=300, seed=1)
    assert r1.elo != make_rule(("a", "b", "c", "d"), spread=300, seed=2).elo   # another seed, another order
    r = make_rule(("a", "b", "c"), strengths="a=90,b=-30")
    assert r.elo == (70.0, -50.0, -20.0)                      # centred: mean 0 (c was 0)
    assert r.describe().startswith("hidden strengths (Elo): a +70, c -20, b -50; ties 0.15")
    with pytest.raises(UsageError, match="SYSTEM=ELO"):
        make_rule(("a", "b"), strengths="zed=5")
    with pytest.raises(UsageError, match="FAULT=RATE"):
        parse_faults("429=2")
    with pytest.raises(UsageError, match=r"sum to 1.2"):
        parse_faults("429=0.6,500=0.6")


def test_unplaceable_answers_get_no_verdict_and_cut_texts_are_placed():
    rule = JudgeRule(("alpha", "beta"), (0.0, 0.0))
    from planner.connectors.judge_server import system_matcher as matcher

    answer = rule_answer(rule, matcher(TEXTS))
    assert answer(_request("Q?", "someone else's text", B_TEXT)).endswith("verdict: invalid")
    cut = A_TEXT[:80] + " [… cut at 10 words]"               # next-batch --max-words --truncate keeps the head
    assert answer(_request("Q?", cut, B_TEXT)).splitlines()[-1] in ("[[A]]", "[[B]]", "[[C]]")


def test_faults_hit_the_first_attempt_only_through_the_openai_sdk():
    openai = pytest.importorskip("openai")
    rule = JudgeRule(("alpha", "beta"), (0.0, 0.0), faults=(("429", 1.0),))
    with JudgeServer(rule_answer(rule, _system_of), rule_faults(rule)) as srv:
        client = openai.OpenAI(api_key="none", base_url=srv.base_url, max_retries=0)
        msgs = [{"role": "user", "content": _request("Q?", A_TEXT, B_TEXT)}]
        with pytest.raises(openai.RateLimitError) as info:
            client.chat.completions.create(model="m", messages=msgs)
        assert info.value.response.headers["retry-after"] == "1"
        ok = client.chat.completions.create(model="m", messages=msgs)      # the retry: answered
        assert ok.choices[0].message.content.splitlines()[-1] in ("[[A]]", "[[B]]", "[[C]]")
        assert ok.usage.prompt_tokens == len(msgs[0]["content"]) // 4
        assert [m.id for m in client.models.list()] == ["any"]
    rates = parse_faults("context=0.3,refusal=0.2")
    fault = rule_faults(JudgeRule(("a", "b"), (0.0, 0.0), seed=9, faults=rates))
    drawn = [fault(f"request {k}", 1) for k in range(3000)]
    assert all(fault(f"request {k}", 2) is None for k in range(50))
    for name, rate in rates:   # 4.5 binomial standard deviations again
        assert abs(drawn.count(name) / 3000 - rate) < 4.5 * math.sqrt(rate * (1 - rate) / 3000)


def _example(tmp_path):
    assert runner.invoke(app, ["example", "vicuna80", str(tmp_path / "ex")]).exit_code == 0
    st = tmp_path / "st"
    r = runner.invoke(app, ["init", str(st), "--prompts", str(tmp_path / "ex/vicuna80/prompts.jsonl"),
                            "--responses", str(tmp_path / "ex/vicuna80/responses.jsonl")])
    assert r.exit_code == 0, r.output
    return st


def test_the_guides_judge_and_run_paths_on_the_example(tmp_path):
    pytest.importorskip("openai")
    st = _example(tmp_path)
    srv = start_judge_server(tmp_path / "ex/vicuna80/responses.jsonl", faults="429=0.1,context=0.1").server
    with srv:
        url = srv.base_url
        r = runner.invoke(app, ["next-batch", str(st), "--size", "12", "--format", "judge", "--judge-model", "judge-x",
                                "--out", str(tmp_path / "r1")])
        assert r.exit_code == 0, r.output
        first = runner.invoke(app, ["judge", str(st), "--model", "judge-x", "--base-url", url, "--json"])
        assert first.exit_code == 0, first.output
        doc = json.loads(first.stdout)
        # 14 requests (12 comparisons + 2 QC); seed 0 draws one context_length_exceeded (not retried)
        assert (doc["requests"], doc["answered"], doc["failed"]) == (14, 13, 1)
        again = json.loads(runner.invoke(app, ["judge", str(st), "--model", "judge-x", "--base-url", url,
                                               "--json"]).stdout)
        assert (again["sent"], again["answered"], again["failed"]) == (1, 1, 0)   # rerunning judge is what works
        r = runner.invoke(app, ["run", str(st), "--judge-model", "judge-x", "--base-url", url, "--budget", "60",
                                "--batch-size", "20", "--json"])
        assert r.exit_code == 0, r.output
        run = json.loads(r.stdout)
        assert run["judgments_used"] <= 60 and run["stopped"] in ("budget", "settled")
        # the last round's context_length_exceeded items wait; the same command again asks them first
        assert runner.invoke(app, ["run", str(st), "--judge-model", "judge-x", "--base-url", url, "--budget", "60",
                                   "--batch-size", "20"]).exit_code == 0
    status = json.loads(runner.invoke(app, ["status", str(st), "--json"]).stdout)
    assert status["unanswered"] == 0 and sum(b["pending"] for b in status["batches"]) == 0


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_cli_detach_serves_in_the_background_and_stop_ends_it(tmp_path):
    assert runner.invoke(app, ["example", "vicuna80", str(tmp_path / "ex")]).exit_code == 0
    port = _free_port()
    cmd = [sys.executable, "-m", "cli", "judge-server", str(tmp_path / "ex/vicuna80/responses.jsonl"),
           "--port", str(port), "--detach", "--seed", "3"]
    t0 = time.monotonic()
    r = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT, timeout=60)
    assert r.returncode == 0, r.stderr
    assert f"judge server on http://127.0.0.1:{port}/v1 (8 systems, 640 responses" in r.stdout
    assert r.stderr.startswith("hidden strengths (Elo): ")
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=5):
            pass                                           # listening as soon as the command returned
        busy = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT, timeout=60)
        assert busy.returncode == 2 and busy.stderr.startswith(f"error: --port ({port}) cannot be used")
    finally:
        stop = subprocess.run([sys.executable, "-m", "cli", "judge-server", "--stop", "--port", str(port)],
                              capture_output=True, text=True, cwd=ROOT, timeout=60)
    assert stop.returncode == 0, stop.stderr
    for _ in range(50):
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            time.sleep(0.1)
        except OSError:
            break
    else:
        pytest.fail("the server still listens after --stop")
    assert time.monotonic() - t0 < 60
    r = subprocess.run([sys.executable, "-m", "cli", "judge-server", "--stop", "--port", str(port)],
                       capture_output=True, text=True, cwd=ROOT, timeout=60)
    assert r.returncode == 1 and r.stderr.startswith(f"error: no judge server answers on 127.0.0.1:{port}")


def test_usage_errors_are_one_line(tmp_path):
    r = runner.invoke(app, ["judge-server"])
    assert r.exit_code == 2 and r.stderr.startswith("error: RESPONSES is required")
    r = runner.invoke(app, ["judge-server", str(tmp_path / "missing.jsonl")])
    assert r.exit_code == 1 and r.stderr.count("\n") == 1 and "responses file not found" in r.stderr
    (tmp_path / "r.jsonl").write_text('{"prompt": "p", "system": "a", "text": "x"}\n', encoding="utf-8")
    r = runner.invoke(app, ["judge-server", str(tmp_path / "r.jsonl")])
    assert r.exit_code == 1 and "at least two systems" in r.stderr
    r = runner.invoke(app, ["judge-server", str(tmp_path / "r.jsonl"), "--faults", "teapot=0.1"])
    assert r.exit_code == 2 and r.stderr.startswith("error: --faults: 'teapot=0.1' must be FAULT=RATE")


def test_demo_live_judge_without_openai_writes_nothing(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "openai", None)          # as if the judge extra were not installed
    r = runner.invoke(app, ["demo", str(tmp_path / "d"), "--live-judge"])
    assert r.exit_code == 2 and "pip install 'planner[judge]'" in r.stderr
    assert not (tmp_path / "d").exists()
