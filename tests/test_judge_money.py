"""Never pay twice, never pay and lose: `planner judge` under kill -9, concurrency, a read-only study, a full disk
and servers that report absurd usage: every way a paid request could be paid for twice or lost. Real
subprocesses and real SIGKILL against the loopback server of tests/fake_openai_server.py."""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import subprocess
from pathlib import Path

import pytest

pytest.importorskip("openai")

import _cli_process as proc
import _judge_fixture as _jf
from _judge_fixture import make_study

from planner.store.ledger import judge_totals, judge_totals_sentence
from planner.store.study import Study, status
from planner.workflows.judge_run import judge_batch


@pytest.fixture
def study(tmp_path):
    return make_study(tmp_path)


_batch = _jf.judge_batch_in


_opts = _jf.judge_options


def _judge_args(study, srv, *more):
    return ("judge", str(study), "--model", "judge-x", "--base-url", srv.base_url, *more)


def _jobs(study):
    with sqlite3.connect(Path(study) / "study.sqlite") as con:
        return con.execute("SELECT remote_id, status FROM judge_jobs ORDER BY rowid").fetchall()


# ------------------------------------------------------------------ 1. a job created but not recorded
def test_kill9_during_batch_create_is_found_not_paid_again(study, srv):
    """The server creates the job and never answers `create`; planner is SIGKILLed there. The rerun finds the
    job by the intent token it recorded before `create` (GET /batches) and does not submit it again."""
    _batch(study)
    srv.route_faults["POST /v1/batches"] = ["hang"]
    p = proc.start(*_judge_args(study, srv, "--batch-api", "--poll-interval", "0.05"))
    proc.wait_until(lambda: srv.hits.get("POST /v1/batches") == 1, what="create to reach the server")
    proc.kill9(p)
    assert len(srv.batches) == 1 and [s for _, s in _jobs(study)] == ["intent"]   # recorded as intended
    res = judge_batch(study, _opts(srv, transport="batch"))
    assert srv.hits["POST /v1/batches"] == 1 and srv.hits["GET /v1/batches"] >= 1   # found, not created again
    assert res.answered == 4 and res.new_judgments == 4 and status(study).judgments == 4
    assert any("found Batch API job batch_1" in n for n in res.notes)
    assert any(f"took over the lock left by planner process {p.pid}" in n for n in res.notes)
    assert _jobs(study) == [("batch_1", "completed")]


def test_kill9_mid_direct_run_pays_at_most_the_requests_in_flight(study, srv):
    """Direct judging killed with SIGKILL after 4 of 12 answers: the rerun sends only what was not cached, so
    at most the requests in flight at the kill (--concurrency 2) are paid twice."""
    _batch(study, size=12)
    srv.rule = lambda text: "timeout"   # each answer takes 0.3 s
    srv.slow_s = 0.3
    p = proc.start(*_judge_args(study, srv, "--concurrency", "2"))
    proc.wait_until(lambda: _cached(study) >= 4, what="four cached answers")
    proc.kill9(p)
    srv.rule = lambda text: None
    res = judge_batch(study, _opts(srv, concurrency=4))
    assert res.cached >= 4 and res.new_judgments == 12 and status(study).judgments == 12
    assert srv.chat_calls - 12 <= 2     # paid twice: only what was in flight at the kill


def _cached(study) -> int:
    try:
        with sqlite3.connect(f"file:{Path(study) / 'study.sqlite'}?mode=ro", uri=True, timeout=5) as con:
            return con.execute("SELECT count(*) FROM judge_cache").fetchone()[0]
    except sqlite3.OperationalError:
        return 0


def test_timeout_on_create_looks_the_job_up(study, srv):
    """A client timeout on `create` (the job was created): one line on main was a traceback; now the job is found."""
    _batch(study)
    srv.route_faults["POST /v1/batches"] = ["hang"]
    res = judge_batch(study, _opts(srv, transport="batch", timeout=1.0))
    assert srv.hits["POST /v1/batches"] == 1 and res.answered == 4 and status(study).judgments == 4


def test_create_without_answer_and_no_job_says_rerun(study, srv):
    _batch(study)
    srv.route_faults["POST /v1/batches"] = ["hang"]
    srv.route_faults["GET /v1/batches"] = ["nonjson"]
    r = proc.run(*_judge_args(study, srv, "--batch-api", "--timeout", "1"))
    assert r.returncode == 1 and "Traceback" not in r.stderr, r.stderr
    assert r.stderr.startswith("error: the Batch API") and len(r.stderr.strip().splitlines()) == 1


# ------------------------------------------------------------------ 2. two processes, one batch
def test_two_judges_on_one_batch_pay_once(study, srv):
    """Two `planner judge` processes on one batch: the second is refused naming the first (pid, host, since)."""
    _batch(study)
    srv.rule = lambda text: "timeout"    # every answer takes 0.4 s: the first process is still at work
    srv.slow_s = 0.4
    first = proc.start(*_judge_args(study, srv, "--concurrency", "1"))
    proc.wait_until(lambda: srv.chat_calls >= 1, what="the first process to send")
    second = proc.run(*_judge_args(study, srv, "--concurrency", "1"))
    _out, err = first.communicate(timeout=60)
    assert first.returncode == 0, err
    assert second.returncode == 1 and "Traceback" not in second.stderr
    line = second.stderr.strip()
    assert line.startswith("error: batch 1 is in use by planner process ") and f"process {first.pid} " in line
    assert "since 20" in line and os.uname().nodename in line
    assert srv.chat_calls == 4 and status(study).judgments == 4   # each request paid once


def test_two_runs_on_one_study_spend_one_budget(study, srv):
    srv.rule = lambda text: "timeout"
    srv.slow_s = 0.3
    args = ("run", str(study), "--judge-model", "judge-x", "--base-url", srv.base_url, "--budget", "8",
            "--batch-size", "4", "--until", "budget", "--concurrency", "1")
    first = proc.start(*args)
    proc.wait_until(lambda: srv.chat_calls >= 1, what="the first loop to send")
    second = proc.run(*args)
    first.communicate(timeout=120)
    assert second.returncode == 1 and "the study's `planner run` loop is in use by planner process" in second.stderr
    assert first.returncode == 0 and srv.chat_calls == status(study).judgments <= 8


# ------------------------------------------------------------------ 3. paid, then lost
@pytest.fixture
def read_only_db(study):
    """A study with a batch whose database file is then made read-only for real: immutable (root ignores
    file modes) or chmod a-w."""
    _batch(study)
    db = Path(study) / "study.sqlite"
    if os.geteuid() == 0:
        if shutil.which("chattr") is None or subprocess.run(["chattr", "+i", str(db)], check=False).returncode:
            pytest.skip("root, and the file system takes no immutable flag")
        yield study
        subprocess.run(["chattr", "-i", str(db)], check=True)
    else:
        db.chmod(0o444)
        yield study
        db.chmod(0o644)


def test_read_only_study_pays_nothing(read_only_db, srv):
    """A study whose database cannot be written: refused before the first request (main sent and paid 4)."""
    for more in ((), ("--batch-api",)):
        r = proc.run(*_judge_args(read_only_db, srv, *more))
        assert r.returncode == 1 and "Traceback" not in r.stderr, r.stderr
        assert r.stderr.startswith("error: the study database cannot be written") and "nothing was sent" in r.stderr
    assert srv.total_calls() == 0


def test_full_disk_pays_nothing_then_pays_once(tmp_path, srv):
    """A study on a full file system (a 6 MiB tmpfs filled to its last 64 KiB): refused before the first paid
    request (main paid, then lost the answers and paid again on the rerun); with room again, each request is
    paid exactly once."""
    if os.geteuid() != 0 or shutil.which("unshare") is None:
        pytest.skip("needs root to mount a small tmpfs")
    study = make_study(tmp_path)
    _batch(study)
    script = ('mount -t tmpfs -o size=6m tmpfs "$0" && cp -a "$1" "$0/st" && cd "$2" || exit 99\n'
              'head -c $(( $(df --output=avail -B1 "$0" | tail -1) - 65536 )) /dev/zero > "$0/filler"\n'
              '"$3" -m cli judge "$0/st" --model judge-x --base-url "$4"; echo "RC1=$?"\n'
              'rm "$0/filler"; "$3" -m cli judge "$0/st" --model judge-x --base-url "$4"; echo "RC2=$?"')
    mnt = tmp_path / "mnt"
    mnt.mkdir()
    r = subprocess.run(["unshare", "-m", "sh", "-c", script, str(mnt), str(study), str(proc.ROOT),
                        proc.sys.executable, srv.base_url], env=proc.env(), capture_output=True, text=True,
                       timeout=180, check=False)
    if r.returncode == 99:
        pytest.skip(f"no privilege to mount a tmpfs here: {r.stderr[-200:]}")
    assert "RC1=1" in r.stdout and "RC2=0" in r.stdout and "Traceback" not in r.stderr, (r.stdout, r.stderr)
    first = r.stderr.split("\n")[0]
    assert first.startswith("error: the study's disk has") and "nothing was sent" in first
    assert srv.chat_calls == 4    # the refused run paid nothing; the second paid each request once


def test_absurd_usage_is_clamped_and_the_study_stays_readable(study, srv):
    """10**30 tokens raised OverflowError in the ledger; 2**62 in 4 answers overflowed sum() ("database damaged")."""
    _batch(study)
    srv.script = ["usage_huge", "usage_2_62", "usage_2_62", "usage_2_62"]
    res = judge_batch(study, _opts(srv, concurrency=1, price_in=1.0, price_out=1.0))
    assert res.answered == 4 and res.new_judgments == 4
    assert any("4 answer(s) came without usable token counts" in n for n in res.notes)
    (t,) = judge_totals(study)
    assert t["answers"] == 4 and t["estimated_answers"] == 4 and t["prompt_tokens"] == 0
    assert 0 < t["cost_usd"] < 1   # four estimates at $1 per 1M tokens, not 10**24 dollars
    from typer.testing import CliRunner

    from cli.main import app

    for cmd in (["status", str(study)], ["report", str(study)]):
        r = CliRunner().invoke(app, cmd)
        assert r.exit_code == 0 and "damaged" not in r.output, r.output
    again = judge_batch(study, _opts(srv))
    assert again.sent == 0 and again.judged_before == 4


def test_ledger_damaged_by_an_older_version_stays_readable(study, srv):
    """Rows an older planner stored (2**62 tokens each) no longer make status and report fail."""
    _batch(study)
    judge_batch(study, _opts(srv))
    with sqlite3.connect(Path(study) / "study.sqlite") as con:
        con.execute("UPDATE judge_cache SET prompt_tokens = ?, completion_tokens = ?", (2 ** 62, 2 ** 62))
    (t,) = judge_totals(study)
    assert t["answers"] == 4 and t["prompt_tokens"] == 4 * 10 ** 9   # each implausible count clamped to 10**9
    from typer.testing import CliRunner

    from cli.main import app

    r = CliRunner().invoke(app, ["status", str(study)])
    assert r.exit_code == 0 and "judge judge-x: 4 answers" in r.output


def test_lone_surrogate_verdict_is_cleaned_cached_and_written(study, srv):
    """A verdict with a lone surrogate was cached, then every rerun crashed writing the output file."""
    _batch(study)
    srv.rule = lambda text: "surrogate"
    res = judge_batch(study, _opts(srv))
    assert res.answered == 4 and res.new_judgments == 4
    out = Path(res.output).read_text(encoding="utf-8")
    assert "\ufffd" in out and "\\ud800" not in out
    with sqlite3.connect(Path(study) / "study.sqlite") as con:   # what a rerun reads back from the cache
        con.execute("DELETE FROM judgments")
    again = judge_batch(study, _opts(srv))
    assert (again.sent, again.cached) == (0, 4)   # read back from the cache and written again, no crash
    assert Path(again.output).read_text(encoding="utf-8") == out


# ------------------------------------------------------------------ 6. the cost cap without usage
@pytest.mark.parametrize("fault", ["usage_none", "usage_negative"])
def test_cost_cap_binds_without_usage(study, srv, fault):
    from planner.connectors.pricing import Prices

    _batch(study, size=10)
    srv.rule = lambda text: fault
    with Study.open(study) as s:
        info = s.batches()[-1]
    body = json.loads(Path(info.manifest["files"][0]).read_text().splitlines()[0])["body"]
    est = Prices(1000.0, 1000.0).estimate(body)
    cap = est * 3.5  # room for three requests at their estimate
    res = judge_batch(study, _opts(srv, concurrency=1, price_in=1000.0, price_out=1000.0, max_cost=cap))
    assert res.stopped_by_cost and 2 <= res.sent <= 4 and res.spent_usd <= cap + 1e-9
    assert any("without usable token counts" in n and "estimate" in n for n in res.notes)
    (t,) = judge_totals(study)
    line = judge_totals_sentence(t)
    assert "no price given" not in line and "cost estimated" in line
