"""Nothing lost, nothing paid twice when `planner run` (and the Batch API path of `planner judge`) is killed
with SIGKILL: while a round's batch is issued (staged, recorded, files not yet in place), mid-judging, right
after a round's ingest, while a Batch API job is polled and while its output file is downloaded.

Each kill point is deterministic: either the loopback server (tests/fake_openai_server.py) holds a chosen
request until the test has killed planner, or planner itself, started through :data:`STALL`, stops at a
chosen function (before or after its n-th call) and says so in a marker file; the test waits for the marker
or the request, then sends SIGKILL. After the kill the same command is run again to completion and every
invariant is checked against the study's SQLite, the ledger and the server's own count of what it answered."""

from __future__ import annotations

import contextlib
import hashlib
import sqlite3
import subprocess
import sys
import threading
from pathlib import Path

import pytest

pytest.importorskip("openai")

import _cli_process as proc
import _judge_fixture as _jf
from _judge_fixture import make_study
from fake_openai_server import _user_text, judge_text

from planner.services.batch_round import RunOptions
from planner.services.judging import batch_requests
from planner.store.ledger import judge_totals
from planner.store.study import Study
from planner.workflows.judge_run import judge_batch
from planner.workflows.run import run_loop

PRICE_IN, PRICE_OUT = 1.0, 2.0   # USD per 1M tokens: every answer's cost is known to the last digit

#: ``python -c STALL TARGET N WHEN MARKER cli-args...``: the CLI, with ``module:Class.attr`` wrapped so that
#: its N-th call (WHEN ``before`` or ``after`` it runs) writes MARKER and then waits to be killed
STALL = r"""
import importlib, sys, time
from pathlib import Path
target, n, when, marker = sys.argv[1], int(sys.argv[2]), sys.argv[3], Path(sys.argv[4])
mod, _, path = target.partition(":")
owner = importlib.import_module(mod)
*outer, attr = path.split(".")
for name in outer:
    owner = getattr(owner, name)
original, calls = getattr(owner, attr), []
def stall():
    marker.write_text("stalled")
    time.sleep(3600)
def wrapped(*a, **k):
    calls.append(1)
    if len(calls) == n and when == "before":
        stall()
    out = original(*a, **k)
    if len(calls) == n and when == "after":
        stall()
    return out
setattr(owner, attr, wrapped)
sys.argv = ["planner", *sys.argv[5:]]
from cli.main import main
main()
"""


def _start_stalled(tmp_path, target: str, n: int, when: str, *args: str) -> tuple[subprocess.Popen, Path]:
    marker = tmp_path / f"stalled-{target.replace(':', '-')}-{n}-{when}"
    p = subprocess.Popen([sys.executable, "-c", STALL, target, str(n), when, str(marker), *args], cwd=proc.ROOT,
                         env=proc.env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                         start_new_session=True)
    return p, marker


def _wait_marker(p: subprocess.Popen, marker: Path) -> None:
    proc.wait_until(lambda: marker.exists() or p.poll() is not None, what=f"planner to stall ({marker.name})")
    assert marker.exists(), p.communicate()[1]


@pytest.fixture
def study(tmp_path):
    return make_study(tmp_path)


def _run_args(study, srv, budget: int, *more: str, concurrency: int = 1) -> tuple[str, ...]:
    return ("run", str(study), "--judge-model", "judge-x", "--base-url", srv.base_url, "--budget", str(budget),
            "--batch-size", "4", "--until", "budget", "--concurrency", str(concurrency), "--price-in", str(PRICE_IN),
            "--price-out", str(PRICE_OUT), *more)


def _rerun(study, srv, budget: int, transport: str = "direct", both_orders: bool = False):
    """The same `planner run` again, in process (its RunResult is checked), to completion."""
    judge = _jf.judge_options(srv, concurrency=1, price_in=PRICE_IN, price_out=PRICE_OUT, transport=transport)
    return run_loop(study, judge, RunOptions(budget=budget, batch_size=4, until="budget", both_orders=both_orders))


@contextlib.contextmanager
def _ro(study):
    """A read-only connection, closed on exit: a connection left open while planner opens and closes the file
    in this process loses its POSIX locks, and a `planner status` may then take the WAL away under it."""
    con = sqlite3.connect(f"file:{Path(study) / 'study.sqlite'}?mode=ro", uri=True, timeout=10)
    try:
        yield con
    finally:
        con.close()


def _sql(study, statement: str) -> None:
    with contextlib.closing(sqlite3.connect(Path(study) / "study.sqlite", timeout=10)) as con, con:
        con.execute(statement)


def _cost(text: str) -> float:
    """What the fake server bills for one answer to ``text`` (its usage: len // 4 + 20 prompt, 12 completion)."""
    return ((len(text) // 4 + 20) * PRICE_IN + 12 * PRICE_OUT) / 1e6


def _served(srv) -> list[str]:
    """The request text of every request the server answered (or began to answer), in order."""
    with srv.lock:
        return [_user_text(b) for b in srv.bodies]


def check_invariants(study, srv, *, in_flight: int = 0, used: int | None = None) -> None:
    """Nothing lost, nothing paid twice, after a kill and a rerun to completion.

    * every issued item has at most one judge judgment, oriented as the batch recorded it: the stored
      winner is the system the server's verdict picked for the request text planner sent for that item;
    * each request was answered by the server once, but for at most ``in_flight`` requests in flight at
      the kill (paid, the answer lost with the process, asked again);
    * the ledger's spend is the server's bill for the distinct requests, each once;
    * the budget counts each judgment once (``used``: RunResult.judgments_used == the stored judgments);
    * no staging journal or temporary is left; ``planner status`` reads the study.
    """
    reqs = {}
    with _ro(study) as con:
        batch_ids = [r[0] for r in con.execute("SELECT id FROM batches WHERE voided IS NULL ORDER BY id")]
        rows = con.execute("SELECT j.item, j.a, j.b, j.verdict, j.a_position, i.left_sys, i.right_sys "
                           "FROM judgments j JOIN items i ON i.id = j.item WHERE j.id LIKE 'judge:%'").fetchall()
        n_items = con.execute("SELECT count(*) FROM items").fetchone()[0]
        n_cache = con.execute("SELECT count(*) FROM judge_cache").fetchone()[0]
    with Study.open(study) as s:   # the requests as planner sends them, rendered from the study
        for info in s.batches():
            if info.id in batch_ids:
                reqs.update({r["custom_id"]: r for r in batch_requests(s, info, "judge-x")})
    items = [r[0] for r in rows]
    assert len(items) == len(set(items)), "an item stored twice"
    for item, a, b, verdict, a_pos, left, right in rows:
        assert a_pos in ("left", "right") and {a, b} == {left, right}
        assert (a == left) == (a_pos == "left"), f"{item}: a_position disagrees with the batch"
        text = reqs[item]["body"]["messages"][1]["content"]
        shown_winner = left if judge_text(text).endswith("[[A]]") else right
        stored_winner = a if verdict == "A" else b
        assert verdict in ("A", "B") and stored_winner == shown_winner, f"{item}: the verdict flipped"
    served = _served(srv)
    assert len(served) - len(set(served)) <= in_flight, "a request was paid twice"
    sent_texts = {reqs[i]["body"]["messages"][1]["content"] for i in items}
    assert sent_texts == set(served), "an answer paid for is missing from the study (or one came from nowhere)"
    (t,) = judge_totals(study)
    assert t["answers"] == n_cache == len(rows) <= n_items
    assert t["cost_usd"] == pytest.approx(sum(_cost(x) for x in set(served)), rel=1e-9, abs=1e-12)
    if used is not None:
        assert used == len(rows)
    left_over = [p.name for p in Path(study).rglob("*") if p.name.startswith(".planner-staging.")
                 or p.name.endswith(".planner.tmp")]
    assert not left_over, f"orphan journal or temporary: {left_over}"
    st = proc.run("status", str(study))
    assert st.returncode == 0 and "Traceback" not in st.stderr, st.stderr


# ------------------------------------------------------------------ 1. killed while a round's batch is issued
def _files_in_place(study, batch_id: int) -> list[bool]:
    """For each file batch ``batch_id`` recorded: is it in place with the bytes recorded ([] if none is)."""
    from planner.formats.staging import sha256

    with Study.open(study) as s:
        info = next(b for b in s.batches() if b.id == batch_id)
    paths = [Path(f) for f in info.manifest["files"]]
    if not any(p.exists() for p in paths):
        return []
    return [p.is_file() and sha256(p.read_bytes()) == digest
            for p, digest in zip(paths, info.manifest["files_sha256"], strict=True)]


@pytest.mark.parametrize("when", ["before", "after"])
@pytest.mark.parametrize("budget", [4, pytest.param(8, marks=pytest.mark.slow)])
def test_kill9_while_a_round_is_issued(tmp_path, study, srv, when, budget):
    """Killed with the round's files staged under their journal: before the batch is recorded (the rerun
    rolls the files back and plans again) or after (the rerun judges the recorded batch and puts its
    files in place). ``budget`` 4: the resumed batch uses the whole budget, so no new round follows to
    clean up on the way."""
    p, marker = _start_stalled(tmp_path, "planner.store.queries:Study.record_batch", 1, when,
                               *_run_args(study, srv, budget))
    _wait_marker(p, marker)
    proc.kill9(p)
    assert list(Path(study).glob(".planner-staging.*")), "the kill point: a journal in place"
    assert srv.total_calls() == 0
    res = _rerun(study, srv, budget)
    assert res.judgments_used == budget and res.stopped == "budget"
    said = "rolled back an interrupted run" if when == "before" else "completed batch 1's files after an " \
        "interrupted run: 1 of 1 put in place"
    assert sum(said in n for n in res.notes) == 1, res.notes
    check_invariants(study, srv, used=res.judgments_used)
    with _ro(study) as con:
        assert con.execute("SELECT count(*) FROM batches").fetchone()[0] == budget // 4
    for bid in range(1, budget // 4 + 1):   # each recorded batch's files are in place, as recorded
        assert all(_files_in_place(study, bid))


# ------------------------------------------------------------------ 2. killed mid-judging
class Hold:
    """A server rule that holds the ``k``-th chat request (1-based) until :meth:`release`."""

    def __init__(self, srv, k: int):
        self.srv, self.k, self.n, self.event = srv, k, 0, threading.Event()
        self.lock = threading.Lock()

    def __call__(self, text):
        with self.lock:
            self.n += 1
            mine = self.n == self.k
        if mine:
            self.event.wait(60)

    def reached(self) -> bool:
        return self.srv.chat_calls >= self.k

    def release(self) -> None:
        self.event.set()


def _cached(study) -> int:
    with _ro(study) as con:
        return con.execute("SELECT count(*) FROM judge_cache").fetchone()[0]


def _db_fingerprint(study) -> dict:
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in Path(study).glob("study.sqlite*")}


@pytest.mark.parametrize(("concurrency", "both"), [(1, False), pytest.param(2, False, marks=pytest.mark.slow),
                                                    pytest.param(1, True, marks=pytest.mark.slow)])
def test_kill9_mid_judging_then_a_second_run_is_refused_and_the_rerun_pays_once(study, srv, concurrency, both):
    """Round 2 of 3, its third request held by the server (two answers of the round cached, one in flight;
    with two in flight at once the fourth is answered and cached beside it): a second `planner run` is
    refused in one line without touching the study; then SIGKILL. The rerun resumes batch 2 (its cached
    answers free), finishes the budget, and only the request in flight at the kill is paid twice. With
    --both-orders each round is 8 items (4 comparisons, each in both positions), each stored as shown."""
    per = 8 if both else 4
    hold = Hold(srv, per + 3)
    srv.rule = hold
    cached = per + 2 + (concurrency - 1)
    flags = ("--both-orders",) if both else ()
    p = proc.start(*_run_args(study, srv, 3 * per, *flags, concurrency=concurrency))
    try:
        proc.wait_until(lambda: hold.reached() and _cached(study) == cached, what="round 2's third request")
    except AssertionError:
        hold.release()
        raise
    before = _db_fingerprint(study)
    second = proc.run(*_run_args(study, srv, 3 * per, *flags))
    assert second.returncode == 1 and "Traceback" not in second.stderr
    assert len(second.stderr.strip().splitlines()) == 1, second.stderr
    assert "the study's `planner run` loop is in use by planner process" in second.stderr
    assert f"process {p.pid} " in second.stderr
    assert _db_fingerprint(study) == before, "the refused run touched the study"
    assert srv.chat_calls == per + 3 + (concurrency - 1)    # the refused run sent nothing
    proc.kill9(p)
    hold.release()
    with _ro(study) as con:
        assert con.execute("SELECT count(*) FROM judge_cache").fetchone()[0] == cached
        assert con.execute("SELECT count(*) FROM batches").fetchone()[0] == 2
    res = _rerun(study, srv, 3 * per, both_orders=both)
    assert res.stopped == "budget" and res.judgments_used == 3 * per
    assert res.rounds[0].resumed and res.rounds[0].batch_id == 2
    # the rerun says it took over the dead run's lock, as `planner judge` and `push` do for theirs
    took = f"the study's `planner run` loop: took over the lock left by planner process {p.pid}"
    assert res.notes[0].startswith(took) and res.notes[0].endswith("which is no longer running"), res.notes
    assert srv.chat_calls == 3 * per + 1   # each request, and the one in flight at the kill asked again
    with _ro(study) as con:
        assert con.execute("SELECT count(*) FROM items WHERE kind = 'swap'").fetchone()[0] == (12 if both else 0)
    check_invariants(study, srv, in_flight=1, used=res.judgments_used)


# ------------------------------------------------------------------ 3. killed right after a round's ingest
def test_kill9_right_after_a_rounds_ingest(tmp_path, study, srv):
    """Killed the moment round 1's answers are stored (before round 2 is planned): the rerun asks nothing of
    round 1 again and spends exactly the rest of the budget."""
    p, marker = _start_stalled(tmp_path, "planner.store.study:ingest", 1, "after", *_run_args(study, srv, 8))
    _wait_marker(p, marker)
    proc.kill9(p)
    assert srv.chat_calls == 4
    res = _rerun(study, srv, 8)
    assert res.stopped == "budget" and res.judgments_used == 8 and not any(r.resumed for r in res.rounds)
    assert srv.chat_calls == 8
    check_invariants(study, srv, used=res.judgments_used)


def test_kill9_inside_a_rounds_ingest_transaction(tmp_path, study, srv):
    """Killed inside round 2's ingest transaction (its rows inserted, not committed): SQLite rolls the
    transaction back, the rerun resumes batch 2 from the cache (no request sent) and stores each answer once."""
    p, marker = _start_stalled(tmp_path, "planner.store.ingest:_read_rows", 2, "after", *_run_args(study, srv, 8))
    _wait_marker(p, marker)
    proc.kill9(p)
    assert srv.chat_calls == 8 and _cached(study) == 8
    with _ro(study) as con:
        assert con.execute("SELECT count(*) FROM judgments").fetchone()[0] == 4   # round 1's only
    res = _rerun(study, srv, 8)
    assert res.stopped == "budget" and res.judgments_used == 8 and res.rounds[0].resumed
    assert srv.chat_calls == 8
    check_invariants(study, srv, used=res.judgments_used)


# ------------------------------------------------------------------ 4. the Batch API: polling, downloading
def _jobs(study):
    with _ro(study) as con:
        return con.execute("SELECT remote_id, status FROM judge_jobs ORDER BY rowid").fetchall()


@pytest.mark.parametrize("route", ["GET /v1/batches/{id}", "GET /v1/files/content"])
def test_kill9_while_a_batch_job_is_polled_or_downloaded(study, srv, route):
    """`planner judge --batch-api` killed while a poll (the job still running) or the output file's download
    hangs: the rerun finds the recorded job, creates no second one, downloads once more and ingests each
    answer once."""
    _jf.judge_batch_in(study)
    srv.route_faults[route] = ["hang"] if route.endswith("content") else [None, "hang"]
    p = proc.start("judge", str(study), "--model", "judge-x", "--base-url", srv.base_url, "--batch-api",
                   "--poll-interval", "0.05", "--price-in", str(PRICE_IN), "--price-out", str(PRICE_OUT))
    proc.wait_until(lambda: not srv.route_faults[route], what=f"{route} to hang")   # the hang taken: it holds
    proc.kill9(p)
    srv.release.set()
    assert srv.hits["POST /v1/batches"] == 1 and [s for _, s in _jobs(study)] not in ([], ["intent"])
    res = judge_batch(study, _jf.judge_options(srv, transport="batch", price_in=PRICE_IN, price_out=PRICE_OUT))
    assert srv.hits["POST /v1/batches"] == 1 and len(srv.batches) == 1     # found, not created again
    assert res.answered == 4 and res.new_judgments == 4 and _jobs(study) == [("batch_1", "completed")]
    again = judge_batch(study, _jf.judge_options(srv, transport="batch", price_in=PRICE_IN, price_out=PRICE_OUT))
    assert again.sent == 0 and again.new_judgments == 0 and srv.hits["POST /v1/batches"] == 1
    check_invariants(study, srv, used=None)


def test_kill9_while_a_run_polls_its_batch_job(study, srv):
    """`planner run --batch-api` killed while round 1's job is polled: the rerun resumes batch 1 with the
    job it recorded (no second job for it), then runs round 2 with one new job; each answer stored once."""
    srv.route_faults["GET /v1/batches/{id}"] = [None, "hang"]
    p = proc.start(*_run_args(study, srv, 8, "--batch-api", "--poll-interval", "0.05"))
    proc.wait_until(lambda: not srv.route_faults["GET /v1/batches/{id}"], what="round 1's second poll to hang")
    proc.kill9(p)
    srv.release.set()
    assert srv.hits["POST /v1/batches"] == 1
    res = _rerun(study, srv, 8, transport="batch")
    assert res.stopped == "budget" and res.judgments_used == 8 and res.rounds[0].resumed
    assert srv.hits["POST /v1/batches"] == 2 and len(srv.batches) == 2     # round 1's job found, not made again
    assert [s for _, s in _jobs(study)] == ["completed", "completed"]
    check_invariants(study, srv, used=res.judgments_used)


def test_kill9_after_a_batch_job_is_downloaded_before_its_ingest(tmp_path, study, srv):
    """`planner judge --batch-api` killed with the job's answers cached but not yet ingested: the rerun
    takes them from the cache (no new job, no download of a new file) and stores each once."""
    _jf.judge_batch_in(study)
    p, marker = _start_stalled(tmp_path, "planner.store.study:ingest", 1, "before", "judge", str(study), "--model",
                               "judge-x", "--base-url", srv.base_url, "--batch-api", "--poll-interval", "0.05",
                               "--price-in", str(PRICE_IN), "--price-out", str(PRICE_OUT))
    _wait_marker(p, marker)
    proc.kill9(p)
    with _ro(study) as con:
        assert con.execute("SELECT count(*) FROM judgments").fetchone()[0] == 0 and _cached(study) == 4
    calls = srv.total_calls()
    res = judge_batch(study, _jf.judge_options(srv, transport="batch", price_in=PRICE_IN, price_out=PRICE_OUT))
    assert (res.cached, res.sent, res.new_judgments) == (4, 0, 4) and srv.total_calls() == calls
    check_invariants(study, srv, used=None)


def test_the_invariants_catch_a_flipped_verdict_a_double_payment_and_an_orphan(study, srv):
    """The checker can fail: a verdict stored against the order shown, a request the server answered twice,
    and a staging journal left behind are each caught."""
    _jf.judge_batch_in(study)
    judge_batch(study, _jf.judge_options(srv, price_in=PRICE_IN, price_out=PRICE_OUT))
    check_invariants(study, srv)
    swap = ("UPDATE judgments SET a = b, b = a, a_position = CASE a_position WHEN 'left' THEN 'right' "
            "ELSE 'left' END WHERE seq = (SELECT min(seq) FROM judgments)")
    _sql(study, swap)   # the same judgment with its systems and position swapped: its verdict now names the other
    with pytest.raises(AssertionError, match="the verdict flipped"):
        check_invariants(study, srv)
    _sql(study, swap)
    check_invariants(study, srv)
    srv.bodies.append(srv.bodies[0])
    with pytest.raises(AssertionError, match="paid twice"):
        check_invariants(study, srv)
    srv.bodies.pop()
    (Path(study) / ".planner-staging.1.json").write_text("{}")
    with pytest.raises(AssertionError, match="orphan journal"):
        check_invariants(study, srv)


class _Killed(BaseException):
    """Stands for SIGKILL in process: nothing catches it, no cleanup of planner's runs."""


def test_a_human_loop_killed_while_a_round_is_issued_completes_its_files(tmp_path, monkeypatch):
    """`planner run --annotators-via label-studio` stopped dead between recording a round's batch and putting
    its file in place (the state a SIGKILL there leaves: journal and temporary on disk, batch recorded):
    the rerun pushes and waits for that batch and puts its file in place, leaving no journal."""
    from test_run_humans import FakeLS, _annotators_at_work, _study

    from planner.formats import staging
    from planner.workflows.run_humans import HumanOptions, run_humans_loop

    study, ls, now = _study(tmp_path), FakeLS(), [0.0]
    run = RunOptions(budget=8, batch_size=8, until="budget")
    human = HumanOptions(annotators=("alice", "bob"), timeout=600, poll=30)

    def killed(self):
        self.release()   # a dead process's descriptors close, and the journal's lock with them
        raise _Killed

    with monkeypatch.context() as m:
        m.setattr(staging.Staged, "commit", killed)
        with pytest.raises(_Killed):
            run_humans_loop(study, run, human, client=ls, sleep=_annotators_at_work(study, ls, now),
                            clock=lambda: now[0])
    assert list(Path(study).glob(".planner-staging.*")) and _files_in_place(study, 1) == []
    with Study.open(study) as s:
        issued = len(s.items(1))
    # rerun with the budget that batch uses up: no later round is issued (whose issue would recover it)
    res = run_humans_loop(study, RunOptions(budget=issued, batch_size=8, until="budget"), human, client=ls,
                          sleep=_annotators_at_work(study, ls, now), clock=lambda: now[0])
    assert res.stopped == "budget" and res.judgments_used == issued and len(res.rounds) == 1
    assert res.rounds[0].resumed
    assert any("completed batch 1's files after an interrupted run" in n for n in res.notes), res.notes
    left_over = [p.name for p in Path(study).rglob("*") if p.name.startswith(".planner-staging.")
                 or p.name.endswith(".planner.tmp")]
    assert not left_over and all(_files_in_place(study, 1))
