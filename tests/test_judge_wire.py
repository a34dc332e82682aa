"""`planner judge` against hostile OpenAI-compatible servers on loopback, each a way a
real endpoint misbehaves:
keys echoed back, redirects to another host, the served model name, unbounded waits and Ctrl-C, connection
refused, Batch API failures, hostile bodies, conflicting Batch lines, huge answers, reasoning models."""

from __future__ import annotations

import json
import signal
import socket
import sqlite3
import time
from pathlib import Path

import pytest

pytest.importorskip("openai")

import _cli_process as proc
import _judge_fixture as _jf
from _judge_fixture import make_study
from _loopback import second_host
from fake_openai_server import FakeOpenAI, judge_text

from planner.errors import DataError
from planner.services.batch_round import RunOptions
from planner.services.judging import JudgeOptions
from planner.store.study import Study, status
from planner.workflows.judge_run import judge_batch
from planner.workflows.run import run_loop

KEY = proc.KEY


@pytest.fixture
def study(tmp_path):
    return make_study(tmp_path)


@pytest.fixture
def key(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    return KEY


_batch = _jf.judge_batch_in


_opts = _jf.judge_options


def _args(study, srv, *more):
    return ("judge", str(study), "--model", "judge-x", "--base-url", srv.base_url, *more)


_requests = _jf.batch_requests_of
_faults_by_item = _jf.faults_by_item


def _leaks(data: str | bytes, secret: str = KEY, run: int = 8) -> list[str]:
    """Runs of ``run`` characters of ``secret`` found in ``data`` (a partial echo counts)."""
    text = data.decode("utf-8", "replace") if isinstance(data, bytes) else data
    return sorted({secret[i:i + run] for i in range(len(secret) - run + 1) if secret[i:i + run] in text})


def _study_leaks(study) -> dict[str, list[str]]:
    out = {}
    for p in Path(study).rglob("*"):
        if p.is_file():
            found = _leaks(p.read_bytes())
            if found:
                out[str(p)] = found
    with sqlite3.connect(Path(study) / "study.sqlite") as con:
        for table in ("failures", "judge_cache", "judgments"):
            rows = json.dumps(con.execute(f"SELECT * FROM {table}").fetchall())
            if _leaks(rows):
                out[table] = _leaks(rows)
    return out


# ------------------------------------------------------------------ 8. keys echoed by a server
def test_key_echoed_in_a_401_is_not_printed(study, srv):
    _batch(study)
    srv.script = ["echo401"]
    r = proc.run(*_args(study, srv, "--concurrency", "1"))
    assert r.returncode == 1 and r.stderr.startswith("error: the endpoint refused the credentials (HTTP 401")
    assert _leaks(r.stderr + r.stdout) == [] and "***" in r.stderr, r.stderr


def test_key_echoed_in_400_429_bodies_and_answers_is_stored_nowhere(study, srv, key):
    _batch(study)
    _faults_by_item(study, srv, {0: "echo400", 1: "echo429", 2: "echo_answer"})
    res = judge_batch(study, _opts(srv, max_attempts=2))
    assert (res.answered, res.failed) == (2, 2)
    with sqlite3.connect(Path(study) / "study.sqlite") as con:
        errors = [e for (e,) in con.execute("SELECT error FROM failures")]
    assert len(errors) == 2 and all("***" in e for e in errors)
    assert _study_leaks(study) == {} and _leaks(json.dumps(res.to_dict())) == []


# ------------------------------------------------------------------ 9. redirects
@pytest.fixture
def other_host():
    with second_host(FakeOpenAI) as s:
        yield s


def test_redirect_to_another_host_is_refused(study, srv, other_host):
    _batch(study)
    srv.script = ["redirect"]
    srv.redirect_to = other_host.base_url + "/chat/completions"
    r = proc.run(*_args(study, srv, "--concurrency", "1"))
    assert r.returncode == 1 and "Traceback" not in r.stderr, r.stderr
    port = other_host.server.server_address[1]
    assert f"redirected a request to http://127.0.0.2:{port}, another host" in r.stderr
    assert other_host.total_calls() == 0 and status(study).judgments == 0   # nothing went there


# ------------------------------------------------------------------ 12. the model asked for
def test_verdicts_are_filed_under_the_requested_model(study, srv):
    _batch(study)
    srv.serve_as = "judge-x-2024-08-06"
    res = judge_batch(study, _opts(srv))
    assert res.new_judgments == 4 and any("answered as judge-x-2024-08-06" in n for n in res.notes)
    with sqlite3.connect(Path(study) / "study.sqlite") as con:
        got = set(con.execute("SELECT annotator, source_annotator FROM judgments"))
    assert got == {("judge-x", "judge-x-2024-08-06")}
    assert [j["model"] for j in status(study).judge] == ["judge-x"]


# ------------------------------------------------------------------ 13. bounded waits, Ctrl-C, refused
def test_huge_retry_after_fails_the_request_at_once(study, srv):
    _batch(study)
    srv.script = ["429"]
    srv.retry_after = "1000000000"
    t0 = time.monotonic()
    r = proc.run(*_args(study, srv, "--concurrency", "1"), timeout=60)
    assert time.monotonic() - t0 < 30 and r.returncode == 0, r.stderr
    assert status(study).judgments == 3 and status(study).unanswered == 1
    out = next((Path(study) / "judge").glob("*.output.jsonl")).read_text()
    assert "asked to wait 1,000,000,000 s" in out and "retry_after_too_long" in out


def test_dribbled_body_is_cut_off_by_the_timeout(study, srv):
    """A 200 answer sent one byte every 20 ms (~12 s a body) with --timeout 1: each try ends after ~1 s."""
    _batch(study)
    srv.rule = lambda text: "dribble"
    srv.dribble_s = 0.02
    t0 = time.monotonic()
    res = judge_batch(study, _opts(srv, concurrency=4, timeout=1.0, max_attempts=2))
    took = time.monotonic() - t0
    assert res.failed == 4 and res.answered == 0 and took < 6, took   # 2 tries of 1 s each, 4 in parallel
    out = Path(res.output).read_text()
    assert out.count('"code": "timeout"') == 4 and "no complete answer within 1 s" in out


def test_ctrl_c_wakes_a_retry_sleep_and_exits_130(study, srv):
    _batch(study)
    srv.script = ["429"] * 4
    srv.retry_after = "100"     # under the cap: honoured, so every request sleeps 100 s
    p = proc.start(*_args(study, srv, "--concurrency", "4"))
    proc.wait_until(lambda: srv.chat_calls == 4, what="four 429s")
    time.sleep(0.5)
    took, _, err = proc.interrupt(p)
    assert took < 10 and p.returncode == 130, err
    assert "interrupted" in err and "Traceback" not in err


def test_second_ctrl_c_stops_at_once(study, srv):
    _batch(study)
    srv.rule = lambda text: "timeout"
    srv.slow_s = 40
    p = proc.start(*_args(study, srv, "--concurrency", "2", "--timeout", "60"))
    proc.wait_until(lambda: srv.chat_calls == 2, what="two requests in flight")
    p.send_signal(signal.SIGINT)
    time.sleep(0.5)
    took, _, err = proc.interrupt(p)
    assert took < 10 and p.returncode == 130 and "Traceback" not in err, err


def _closed_port() -> str:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{s.getsockname()[1]}/v1"


def test_connection_refused_fails_at_once_and_costs_no_budget(study, srv):
    """The guide's Ollama line with nothing listening: main retried silently for minutes and exited 0."""
    _batch(study)
    t0 = time.monotonic()
    r = proc.run("judge", str(study), "--model", "judge-x", "--base-url", _closed_port(), timeout=60)
    assert time.monotonic() - t0 < 15 and r.returncode == 1 and "connection refused" in r.stderr, r.stderr
    dead = JudgeOptions(model="judge-x", base_url=_closed_port())
    t0 = time.monotonic()
    with pytest.raises(DataError, match="connection refused"):
        run_loop(study, dead, RunOptions(budget=12, batch_size=4, until="budget"))
    assert time.monotonic() - t0 < 15
    res = run_loop(study, _opts(srv, concurrency=4), RunOptions(budget=12, batch_size=4, until="budget"))
    assert res.judgments_used == status(study).judgments == srv.chat_calls <= 12


def test_unanswered_items_are_not_counted_as_used(study, srv):
    _batch(study)   # a batch for another judge model's budget does not count here
    srv.rule = lambda text: "context" if "Question 1?" in text or "Question 2?" in text else None
    res = run_loop(study, _opts(srv, model="judge-y"), RunOptions(budget=20, batch_size=6, until="budget"))
    st = status(study)
    with Study.open(study) as s:
        issued = sum(b.issued for b in s.batches() if b.manifest["rendering"].get("judge_model") == "judge-y")
        failed = sum(b.unanswered for b in s.batches() if b.manifest["rendering"].get("judge_model") == "judge-y")
    assert failed > 0 and res.judgments_used == issued - failed == st.judgments
    assert any("unanswered (not counted as used)" in n for n in res.notes)


# ------------------------------------------------------------------ 14. no tracebacks from Batch API servers
@pytest.mark.parametrize("route, faults, says", [
    ("GET /v1/files/content", ["404"], "download (GET /files/file-2/content): the endpoint has no such model"),
    ("GET /v1/batches/{id}", ["500"] * 6, "poll (GET /batches/batch_1): HTTP 500"),
    ("GET /v1/batches/{id}", ["nonjson"], "poll (GET /batches/batch_1): the answer is not a batch object"),
    ("POST /v1/files", ["429"] * 6, "upload (POST /files): HTTP 429"),
    ("POST /v1/files", ["401"], "upload (POST /files): the endpoint refused the credentials (HTTP 401"),
])
def test_batch_api_failures_are_one_line(study, srv, key, route, faults, says):
    _batch(study)
    srv.route_faults[route] = list(faults)
    with pytest.raises(DataError) as e:
        judge_batch(study, _opts(srv, transport="batch"))
    assert says in e.value.message and "\n" not in e.value.message and _leaks(e.value.message) == []
    srv.route_faults.clear()
    res = judge_batch(study, _opts(srv, transport="batch"))   # the job (if created) is resumed, not paid again
    assert res.answered == 4 and srv.hits["POST /v1/batches"] == 1


def test_a_poll_that_fails_once_is_retried(study, srv):
    _batch(study)
    srv.route_faults["GET /v1/batches/{id}"] = ["500", "500"]
    res = judge_batch(study, _opts(srv, transport="batch"))
    assert res.answered == 4


def test_batch_api_against_a_chat_only_server(study, srv):
    _batch(study)
    srv.batch_api = False
    r = proc.run(*_args(study, srv, "--batch-api"))
    assert r.returncode == 1 and "Traceback" not in r.stderr and len(r.stderr.strip().splitlines()) == 1
    assert "has no Batch API; chat-completions-only servers" in r.stderr and "(HTTP 404 on POST /files)" in r.stderr


def test_hostile_direct_bodies(study, srv):
    """JSON nested 100k deep (retried, then unanswered), counts over 2**63, lone surrogates: no traceback."""
    _batch(study)
    faults = _faults_by_item(study, srv, {0: "deep", 1: "usage_huge", 2: "surrogate"})
    res = judge_batch(study, _opts(srv, max_attempts=2))
    assert (res.answered, res.failed) == (3, 1)
    judged = {j.item for j in Study.open(study).judgments()}
    assert next(c for c, f in faults.items() if f == "deep") not in judged


@pytest.mark.parametrize("args, says", [
    (["--seed", "-1"], "--seed (-1) must be an integer in [0, 2**63 - 1]"),
    (["--base-url", "http://[::1"], "--base-url ('http://[::1') is not a URL"),
    (["--base-url", "http://"], "--base-url ('http://') has no host"),
    (["--base-url", "http://user:pw@localhost/v1"], "must not carry credentials"),
])
def test_bad_judge_options_are_usage_errors(study, args, says):
    _batch(study)
    r = proc.run("judge", str(study), "--model", "judge-x", *args)
    assert r.returncode == 2 and r.stderr.startswith("error: ") and says in r.stderr, r.stderr
    assert "Traceback" not in r.stderr and "pw@" not in r.stderr


# ------------------------------------------------------------------ 17. other silent acceptances
def test_conflicting_batch_lines_are_flagged_not_first_wins(study, srv):
    _batch(study)
    faults = _faults_by_item(study, srv, {0: "dup_conflict"})
    res = judge_batch(study, _opts(srv, transport="batch"))
    (cid,) = faults
    assert (res.answered, res.failed) == (3, 1) and cid not in {j.item for j in Study.open(study).judgments()}
    assert any("conflicting lines" in n and cid in n for n in res.notes)
    out = Path(res.output).read_text()
    assert "batch_conflict" in out


@pytest.mark.parametrize("transport", ["direct", "batch"])
def test_a_50_mb_answer_is_capped(study, srv, transport):
    _batch(study)
    (cid,) = _faults_by_item(study, srv, {1: "huge"})
    res = judge_batch(study, _opts(srv, transport=transport))
    assert res.answered == 4
    judged = {j.item: j for j in Study.open(study).judgments()}
    assert judged[cid].verdict == "invalid"   # answered (and paid) without a usable verdict
    assert Path(res.output).stat().st_size < 100_000
    with sqlite3.connect(Path(study) / "study.sqlite") as con:
        assert con.execute("SELECT max(length(response)) FROM judge_cache").fetchone()[0] < 10_000


def test_reasoning_models_verdict_after_the_thinking(study, srv):
    """DeepSeek-R1/QwQ-style answers whose thinking names the other verdict token first."""
    _batch(study, size=6)
    faults = _faults_by_item(study, srv, {0: "think", 1: "think_open", 2: "reasoning_content", 3: "think",
                                          4: "think_open", 5: "reasoning_content"})
    res = judge_batch(study, _opts(srv))
    assert res.answered == 6
    reqs = _requests(study)
    with Study.open(study) as s:
        key = {it.item_id: it for it in s.items()}
        judged = {j.item: j for j in s.judgments()}
    for cid in faults:
        said = judge_text(reqs[cid]["body"]["messages"][1]["content"])
        winner = key[cid].left if said.endswith("[[A]]") else key[cid].right
        assert judged[cid].verdict != "invalid" and (judged[cid].a if judged[cid].verdict == "A"
                                                      else judged[cid].b) == winner, cid
