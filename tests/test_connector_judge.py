"""`planner judge` against a local OpenAI-compatible server (tests/fake_openai_server.py): both transports,
retries honouring Retry-After, transport failures → unanswered (never invalid), the response cache, resume
after a crash or Ctrl-C with nothing paid twice, the cost cap, --both-orders, the CLI."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

pytest.importorskip("openai")

import _judge_fixture as _jf
from _judge_fixture import make_study
from fake_openai_server import judge_text

from planner.errors import DataError, UsageError
from planner.services.judging import JudgeOptions
from planner.store.ledger import judge_totals
from planner.store.study import Study, status
from planner.workflows.judge_run import judge_batch

NO_QC = _jf.NO_QC


@pytest.fixture
def study(tmp_path):
    return make_study(tmp_path)


def _batch(study, size=8, **kw):
    return _jf.judge_batch_in(study, size, **kw)


def _opts(srv, **kw) -> JudgeOptions:
    kw.setdefault("delays", [])
    kw.setdefault("poll_interval", 30.0)
    return _jf.judge_options(srv, **kw)


_requests = _jf.batch_requests_of


def _judgments(study) -> dict[str, object]:
    with Study.open(study) as s:
        return {j.item: j for j in s.judgments()}


def _check_orientation(study, reqs: dict[str, dict], judged: dict) -> int:
    """Every stored verdict says what the fake judge said about the text it was shown (key from the study)."""
    with Study.open(study) as s:
        key = {it.item_id: it for it in s.items()}
    n = 0
    for cid, j in judged.items():
        said = judge_text(reqs[cid]["body"]["messages"][1]["content"])
        shown_winner = key[cid].left if said.endswith("[[A]]") else key[cid].right
        stored_winner = j.a if j.verdict == "A" else j.b
        assert stored_winner == shown_winner, cid
        assert j.a_position == ("left" if j.a == key[cid].left else "right")
        n += 1
    return n


# ------------------------------------------------------------------ direct transport
def test_direct_round_trip_orientation_and_ledger(study, srv):
    _batch(study, size=10)
    reqs = _requests(study)
    res = judge_batch(study, _opts(srv, concurrency=3, price_in=2.5, price_out=10.0))
    assert (res.requests, res.sent, res.answered, res.failed, res.new_judgments) == (10, 10, 10, 0, 10)
    assert srv.chat_calls == 10
    assert _check_orientation(study, reqs, _judgments(study)) == 10
    # tokens: the fake's usage is len(user text)//4 + 20 prompt tokens and 12 completion tokens per answer
    exp_p = sum(len(r["body"]["messages"][1]["content"]) // 4 + 20 for r in reqs.values())
    assert (res.prompt_tokens, res.completion_tokens) == (exp_p, 120)
    assert res.cost_usd == pytest.approx((exp_p * 2.5 + 120 * 10.0) / 1e6, rel=1e-12)  # float sums only
    assert judge_totals(study) == [{"model": "judge-x", "answers": 10, "prompt_tokens": exp_p,
                                    "completion_tokens": 120, "cost_usd": pytest.approx(res.cost_usd),
                                    "estimated_answers": 0}]
    from planner.store.study import status

    assert [dict(j) for j in status(study).judge] == judge_totals(study)  # status shows the same totals
    from typer.testing import CliRunner

    from cli.main import app
    from planner.store.ledger import judge_totals_sentence

    line = judge_totals_sentence(judge_totals(study)[0])
    assert line.startswith("judge judge-x: 10 answers, ") and line.endswith(f"${res.cost_usd:,.4f}")
    shown = CliRunner().invoke(app, ["status", str(study)])
    assert shown.exit_code == 0 and line in " ".join(shown.stdout.split())  # the same sentence in status
    # the judge's answers are from this study's key: alpha (quality 3) beats delta (-1.5) nearly always
    again = judge_batch(study, _opts(srv))
    assert (again.judged_before, again.sent, srv.chat_calls) == (10, 0, 10)  # a rerun costs nothing


def test_retries_honour_retry_after_and_count_hits(study, srv):
    _batch(study, size=3)
    srv.script = ["429", "503", "500"]  # the first request fails three times, then answers
    delays: list[float] = []
    res = judge_batch(study, _opts(srv, concurrency=1, delays=delays))
    assert res.answered == 3 and res.failed == 0
    assert srv.chat_calls == 3 + 3
    assert len(delays) == 3
    assert 2.0 <= delays[0] <= 2.2              # Retry-After: 2, plus at most 10 % jitter
    assert 1.0 <= delays[1] <= 2.0              # backoff_base 1 s * 2**1, jitter factor in [0.5, 1]
    assert 2.0 <= delays[2] <= 4.0              # * 2**2
    # the jitter is seeded: the same run again waits exactly as long
    import numpy as np

    from planner.connectors.openai_judge import Endpoint, backoff
    rng = np.random.default_rng([0, 0])
    assert delays == [backoff(Endpoint(), 0, rng, 2.0), backoff(Endpoint(), 1, rng, None),
                      backoff(Endpoint(), 2, rng, None)]


_prompt_faults = _jf.faults_by_item


def test_transport_failures_unanswered_answers_without_verdict_invalid(study, srv):
    _batch(study, size=8)
    faults = _prompt_faults(study, srv, {0: "context", 1: "500", 2: "malformed", 3: "refusal", 4: "length",
                                         5: "timeout"})
    srv.slow_s = 1.0
    res = judge_batch(study, _opts(srv, concurrency=4, max_attempts=2, timeout=0.4))
    assert (res.answered, res.failed) == (4, 4)     # refusal and length cut-off are answers
    st = status(study)
    assert st.unanswered == 4 and st.totals["invalid"] == 2
    judged = _judgments(study)
    assert {judged[c].verdict for c, f in faults.items() if f in ("refusal", "length")} == {"invalid"}
    assert not {c for c, f in faults.items() if f in ("context", "500", "malformed", "timeout")} & set(judged)
    # hits: context 1 (not retried), 500/malformed/timeout 2 each, the rest 1
    assert srv.chat_calls == 1 + 2 + 2 + 2 + 4
    srv.rule = lambda text: None
    before = srv.chat_calls
    res2 = judge_batch(study, _opts(srv))
    assert (res2.sent, res2.answered, srv.chat_calls - before) == (4, 4, 4)   # only the failed ones again
    st = status(study)
    assert st.unanswered == 0 and st.totals["invalid"] == 2 and len(_judgments(study)) == 8


def test_credentials_refused_stops_with_one_line(study, srv, monkeypatch):
    _batch(study, size=2)
    import planner.connectors.openai_judge as oj

    monkeypatch.setitem(oj.FATAL_STATUS, 500, "failed hard")
    srv.script = ["500"]
    with pytest.raises(DataError, match=r"^the endpoint failed hard \(HTTP 500"):
        judge_batch(study, _opts(srv, concurrency=1))
    assert status(study).judgments == 0


# ------------------------------------------------------------------ cache, crash, Ctrl-C
class Crash(Exception):
    pass


def test_cache_rerun_after_crash_before_ingest_costs_nothing(study, srv):
    _batch(study, size=6)
    seen = []

    def crash_at_last(line):
        seen.append(line["custom_id"])
        if len(seen) == 6:
            raise Crash()

    with pytest.raises(Crash):
        judge_batch(study, _opts(srv, concurrency=1), on_answer=crash_at_last)
    assert status(study).judgments == 0 and srv.chat_calls == 6     # all paid, none stored yet
    res = judge_batch(study, _opts(srv, concurrency=1))
    assert (res.cached, res.sent, res.new_judgments, srv.chat_calls) == (6, 0, 6, 6)


def test_resume_after_crash_mid_run_pays_nothing_twice(study, srv):
    _batch(study, size=10)
    n = [0]

    def crash_after_4(line):
        n[0] += 1
        if n[0] == 4:
            raise Crash()

    with pytest.raises(Crash):
        judge_batch(study, _opts(srv, concurrency=1), on_answer=crash_after_4)
    assert srv.chat_calls == 4
    res = judge_batch(study, _opts(srv, concurrency=3))
    assert (res.cached, res.sent, res.new_judgments) == (4, 6, 10)
    assert srv.chat_calls == 10                      # each request paid exactly once
    assert _check_orientation(study, _requests(study), _judgments(study)) == 10


def test_ctrl_c_finishes_requests_in_flight(study, srv):
    import threading

    _batch(study, size=12)
    stop = threading.Event()
    got = []

    def interrupt_at_3(line):
        got.append(line)
        if len(got) == 3:
            stop.set()

    res = judge_batch(study, _opts(srv, concurrency=4), stop=stop, on_answer=interrupt_at_3)
    assert res.interrupted and 3 <= res.answered <= 6 and res.not_sent == 12 - res.sent
    assert res.answered == res.sent == res.new_judgments == status(study).judgments   # in flight: kept
    res2 = judge_batch(study, _opts(srv, concurrency=4))
    assert res2.sent == 12 - res.sent and srv.chat_calls == 12


def test_cost_cap_stops_before_exceeding(study, srv):
    from planner.connectors.pricing import Prices

    _batch(study, size=10)
    reqs = list(_requests(study).values())
    prices = Prices(1000.0, 1000.0)  # USD per 1M tokens: a request costs ~$0.27 at the fake's usage
    # the first estimate (chars/3 prompt tokens + 400 completion tokens, nothing seen yet) is ~$0.74
    first = prices.estimate(reqs[0]["body"])
    res = judge_batch(study, _opts(srv, concurrency=1, price_in=1000.0, price_out=1000.0, max_cost=first * 0.9))
    assert (res.sent, res.stopped_by_cost, srv.chat_calls) == (0, True, 0)
    assert "--max-cost: 10 request(s) not sent" in res.notes[0]
    opts = _opts(srv, concurrency=1, price_in=1000.0, price_out=1000.0, max_cost=1.5)
    res = judge_batch(study, opts)
    assert res.stopped_by_cost and 2 <= res.sent < 10 and res.spent_usd <= 1.5
    nxt = reqs[res.sent]["body"]
    assert res.spent_usd + prices.estimate(nxt, 12) > 1.5   # the cap binds: the next one would exceed it
    res2 = judge_batch(study, opts)                          # a rerun knows the spend: sends nothing more
    assert (res2.sent, res2.stopped_by_cost, srv.chat_calls) == (0, True, res.sent)
    assert res2.spent_usd == pytest.approx(res.spent_usd)
    with pytest.raises(UsageError, match="`max_cost` needs the model's prices"):
        judge_batch(study, _opts(srv, max_cost=1.0))


def test_dry_run_sends_nothing(study, srv):
    _batch(study, size=4)
    res = judge_batch(study, _opts(srv, price_in=1.0, price_out=1.0, dry_run=True))
    assert res.dry_run and res.not_sent == 4 and res.estimated_usd > 0 and srv.total_calls() == 0
    assert status(study).judgments == 0


# ------------------------------------------------------------------ Batch API
def test_batch_api_output_and_error_files(study, srv):
    _batch(study, size=8)
    faults = _prompt_faults(study, srv, {0: "expired", 1: "context", 2: "refusal"})
    events = []
    res = judge_batch(study, _opts(srv, transport="batch", poll_interval=0.01), progress=events.append)
    assert (res.sent, res.answered, res.failed) == (8, 6, 2)
    assert events[-1]["status"] == "expired" and events[-1]["total"] == 8
    assert srv.hits["POST /v1/files"] == 1 and srv.hits["POST /v1/batches"] == 1
    st = status(study)
    assert st.unanswered == 2 and st.totals["invalid"] == 1
    with Study.open(study) as s:
        jobs = s.connection.execute("SELECT status, finished IS NOT NULL FROM judge_jobs").fetchall()
        assert jobs == [("expired", 1)]
    reqs = _requests(study)
    assert _check_orientation(study, reqs, {c: j for c, j in _judgments(study).items()
                                            if faults.get(c) != "refusal"}) == 5
    srv.rule = lambda text: None
    res2 = judge_batch(study, _opts(srv, transport="batch", poll_interval=0.01))
    assert (res2.sent, res2.answered) == (2, 2) and srv.hits["POST /v1/batches"] == 2
    assert status(study).unanswered == 0


def test_batch_api_interrupted_poll_resumes_same_job(study, srv):
    import threading

    _batch(study, size=5)
    stop = threading.Event()
    res = judge_batch(study, _opts(srv, transport="batch", poll_interval=0.01), stop=stop,
                      progress=lambda ev: stop.set())
    assert res.interrupted and res.sent == 5 and res.answered == 0 and status(study).judgments == 0
    assert any("rerun to collect" in n for n in res.notes)
    res2 = judge_batch(study, _opts(srv, transport="batch", poll_interval=0.01))
    assert res2.answered == 5 and srv.hits["POST /v1/batches"] == 1       # resumed, not paid again
    assert any("resumed Batch API job batch_1" in n for n in res2.notes)
    assert status(study).judgments == 5


def test_batch_that_fails_validation_leaves_items_unanswered(study, srv):
    _batch(study, size=4)
    srv.rule = lambda text: "batch_fail"
    res = judge_batch(study, _opts(srv, transport="batch", poll_interval=0.01))
    assert res.failed == 4 and status(study).unanswered == 4 and status(study).judgments == 0


# ------------------------------------------------------------------ model families, both orders
def test_model_override_drops_temperature_for_o_series(study, srv):
    _batch(study, size=2)
    judge_batch(study, _opts(srv, model="o3-mini"))
    assert {b["model"] for b in srv.bodies} == {"o3-mini"}
    assert all("temperature" not in b for b in srv.bodies)
    judge_batch(study, _opts(srv, model="gpt-4o"))  # already judged: nothing sent
    assert len(srv.bodies) == 2


def test_both_orders_needs_swapped_items(study, srv):
    _batch(study, size=3)
    with pytest.raises(UsageError, match="next-batch `both_orders`"):
        judge_batch(study, _opts(srv, both_orders=True))
    _batch(study, size=3, both_orders=True)
    res = judge_batch(study, _opts(srv, both_orders=True))
    assert res.requests == 6 and res.answered == 6
    judged = _judgments(study)
    with Study.open(study) as s:
        items = [it for it in s.items() if it.item_id in judged]
    assert Counter(it.kind for it in items) == Counter({"regular": 3, "swap": 3})
    by_id = {it.item_id: it for it in items}
    for it in items:
        if it.kind == "swap":  # the same comparison shown the other way round, both judged
            orig = by_id[it.link]
            assert (it.prompt, it.left, it.right) == (orig.prompt, orig.right, orig.left)
            assert {judged[it.item_id].a, judged[orig.item_id].a} == {it.left, it.right}


# ------------------------------------------------------------------ CLI
def test_cli_judge_json_and_errors(study, srv, monkeypatch):
    from typer.testing import CliRunner

    from cli.main import app

    _batch(study, size=3)
    monkeypatch.setenv("PLANNER_TEST_KEY", "sk-secret-never-stored-4711")
    r = CliRunner().invoke(app, ["judge", str(study), "--model", "judge-x", "--base-url", srv.base_url,
                                 "--api-key-env", "PLANNER_TEST_KEY", "--json"])
    assert r.exit_code == 0, r.output
    doc = json.loads(r.stdout)
    assert doc["answered"] == 3 and doc["new_judgments"] == 3
    for p in Path(study).rglob("*"):
        if p.is_file():
            assert b"sk-secret-never-stored-4711" not in p.read_bytes(), p
    r = CliRunner().invoke(app, ["judge", str(study), "--base-url", srv.base_url])
    assert r.exit_code == 2 and "--model is required" in r.stderr
    r = CliRunner().invoke(app, ["judge", str(study), "--model", "m", "--concurrency", "0"])
    assert r.exit_code == 2 and r.stderr.startswith("error: --concurrency (0) must be")
    assert "Traceback" not in r.output


def test_missing_openai_is_a_usage_error(study, srv, monkeypatch):
    _batch(study, size=1)
    monkeypatch.setitem(sys.modules, "openai", None)   # import openai → ImportError
    with pytest.raises(UsageError, match=r"pip install 'planner\[judge\]'"):
        judge_batch(study, _opts(srv))


@pytest.mark.parametrize("args", [["--help"], ["judge", "--help"], ["run", "--help"]])
def test_help_does_not_import_openai(args):
    code = (f"import sys\nfrom cli.main import app\ntry:\n    app({args!r})\nexcept SystemExit:\n    pass\n"
            "print('openai' in sys.modules, file=sys.stderr)")
    out = subprocess.run([sys.executable, "-c", code], check=False, capture_output=True, text=True,
                         env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])})
    assert out.stderr.strip().splitlines()[-1] == "False", out.stderr


# ------------------------------------------------------------------ schema v3, Ctrl-C handler
def test_v2_study_gets_the_v3_tables_on_open(study):
    import sqlite3

    con = sqlite3.connect(Path(study) / "study.sqlite")
    con.executescript("DROP TABLE judge_cache; DROP TABLE judge_jobs; "
                      "UPDATE meta SET value = '2' WHERE key = 'schema_version';")
    con.close()
    assert judge_totals(study) == []                   # opening migrates v2 -> v3
    with Study.open(study) as s:
        assert s.connection.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()[0] == "3"
        assert s.connection.execute("SELECT count(*) FROM judge_jobs").fetchone()[0] == 0


def test_first_ctrl_c_sets_the_flag_second_interrupts():
    import signal

    from planner.services.judging import graceful_interrupt

    before = signal.getsignal(signal.SIGINT)
    with graceful_interrupt() as stop:
        signal.raise_signal(signal.SIGINT)
        assert stop.is_set()
        with pytest.raises(KeyboardInterrupt):
            signal.raise_signal(signal.SIGINT)
    assert signal.getsignal(signal.SIGINT) is before
