"""`planner judge`'s paid steps: the room check, the cost cap, caching each answer, both transports.

The money rule these steps keep: a paid request is recorded as intended before
it is sent (a Batch API job's intent row; a direct request is its cache key)
and as answered before anything else can fail (:func:`record` writes the cache
first); a rerun finds what was already sent (the cache, the job rows, the
server's job list by intent token); the batch lock (in :mod:`planner.services.judging`)
keeps two processes off one batch.
"""

from __future__ import annotations

import datetime as _dt
import hashlib
import json
import shutil
import sqlite3
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from planner.errors import DataError, quote

if TYPE_CHECKING:
    from planner.store.ledger import Ledger

#: disk space planner wants free before a paid request: a base plus this much per request
#: (the cached answer, its line in the output file and its judgment; reasoning answers run to ~100 kB)
ROOM_BASE_BYTES = 4 * 1024 * 1024
ROOM_PER_REQUEST_BYTES = 32 * 1024


def now() -> str:
    return _dt.datetime.now(_dt.UTC).replace(microsecond=0).isoformat()


def check_room(study_path, ledger: Ledger, requests: int) -> None:
    """Refuse (one line, nothing sent) unless the study takes writes and its disk has room for the answers."""
    try:
        ledger.check_writable()
    except sqlite3.OperationalError as exc:
        raise DataError(f"the study database cannot be written ({exc}); nothing was sent") from None
    folder = Path(study_path) / "judge"
    probe = folder / ".planner-write-probe"
    try:
        folder.mkdir(exist_ok=True)
        probe.write_bytes(b"probe")
        probe.unlink()
    except OSError as exc:
        raise DataError(f"cannot write {quote(str(folder))} ({exc.strerror or exc.__class__.__name__}); "
                        "nothing was sent") from None
    need = ROOM_BASE_BYTES + requests * ROOM_PER_REQUEST_BYTES
    free = shutil.disk_usage(folder).free
    if free < need:
        raise DataError(f"the study's disk has {free / 2**20:,.1f} MiB free; judging {requests:,} request(s) "
                        f"needs about {need / 2**20:,.1f} MiB (cache, output file, ingest); free some space — "
                        "nothing was sent")


class Spend:
    """Running spend for the cost cap (used from the calling thread only).

    A request is admitted when the spend so far, plus the estimates of the
    requests in flight, plus its own estimate stay within the cap.
    """

    def __init__(self, prices, cap: float | None, spent_before: float):
        self.prices, self.cap, self.spent = prices, cap, spent_before
        self.max_completion: int | None = None
        self.in_flight: dict[str, float] = {}
        self.refused = False

    def estimate(self, request: dict) -> float:
        return self.prices.estimate(request["body"], self.max_completion)

    def admit(self, request: dict) -> bool:
        if self.cap is None:
            return True
        est = self.estimate(request)
        if self.spent + sum(self.in_flight.values()) + est > self.cap + 1e-12:
            return False
        self.in_flight[request["custom_id"]] = est
        return True

    def settle(self, custom_id: str, cost: float | None, completion: int | None) -> None:
        self.in_flight.pop(custom_id, None)
        if completion is not None:
            self.max_completion = max(self.max_completion or 0, completion)
        self.spent += cost or 0.0


@dataclass
class Tally:
    answered: int = 0
    failed: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost: float = 0.0
    estimated: int = 0
    estimated_cost: float = 0.0
    served: set = field(default_factory=set)


@dataclass
class Context:
    """What the sending steps share: the ledger, the spend, the tally, where answers are filed, and the
    requests (``custom_id`` → request line, cache key)."""

    ledger: Ledger
    spend: Spend
    tally: Tally
    batch: int
    base_url: str
    model: str
    requests: dict
    keys: dict
    lines: dict = field(default_factory=dict)
    notes: list = field(default_factory=list)

    def where(self) -> dict:
        return {"batch": self.batch, "base_url": self.base_url, "model": self.model}


def record(ctx: Context, line: dict, *, answered: bool, transport: str, on_answer=None) -> None:
    """Cache an answer the moment it arrives (own commit, before anything else); count tokens and cost.

    Without usable token counts (absent, negative, absurd) an answer costs its
    estimate, so the cost cap still binds.
    """
    from planner.connectors.pricing import usage_tokens

    cid = line["custom_id"]
    if not answered:
        ctx.tally.failed += 1
        ctx.spend.settle(cid, 0.0, None)
        ctx.lines[cid] = line
        return
    body = line["response"]["body"]
    p, c = usage_tokens(body)
    cost = ctx.spend.prices.cost(p, c)
    estimated = ctx.spend.prices.known and cost is None
    if estimated:
        cost = ctx.spend.in_flight.get(cid) or ctx.spend.estimate(ctx.requests[cid])
    ctx.ledger.put(ctx.keys[cid], line, transport=transport, prompt_tokens=p, completion_tokens=c, cost_usd=cost,
                   at=now(), **ctx.where())
    ctx.lines[cid] = line
    t = ctx.tally
    t.answered += 1
    t.prompt_tokens += p or 0
    t.completion_tokens += c or 0
    t.cost += cost or 0.0
    if p is None or c is None:
        t.estimated += 1
        t.estimated_cost += cost if estimated else 0.0
    served = body.get("model") if isinstance(body, dict) else None
    if isinstance(served, str) and served != ctx.model:
        t.served.add(served)
    ctx.spend.settle(cid, cost, c)
    if on_answer is not None:
        on_answer(line)


# ------------------------------------------------------------------ direct
def send_direct_all(client, ep, todo, ctx: Context, concurrency: int, progress, stop, on_answer) -> int:
    """Send ``todo`` (``(index, request)``) as direct chat completions; returns how many were sent."""
    from planner.connectors.openai_judge import send_direct

    done = [0]

    def on_result(sent):
        record(ctx, sent.line, answered=sent.answered, transport="direct", on_answer=on_answer)
        done[0] += 1
        if progress is not None:
            progress({"phase": "direct", "done": done[0], "total": len(todo), "spent": ctx.spend.spent,
                      "answered": ctx.tally.answered, "failed": ctx.tally.failed})

    sent, refused = send_direct(client, ep, todo, concurrency=concurrency, admit=ctx.spend.admit,
                                on_result=on_result, stop=stop)
    ctx.spend.refused = refused
    return sent


# ------------------------------------------------------------------ Batch API
def _admitted(todo, ctx: Context) -> list[dict]:
    out = []
    for _, r in todo:
        if not ctx.spend.admit(r):
            ctx.spend.refused = True
            break
        out.append(r)
    return out


def _find_or_submit(client, ep, todo, ctx: Context) -> tuple[str | None, list[str] | None]:
    """``(remote id, custom ids it asks)`` of the job to poll: a recorded one, one found by an earlier
    intent's token, or a new one (intent recorded before ``create``). ``(None, None)``: nothing to send."""
    from planner.connectors.batch_api import MaybeCreated, find_job, submit

    ledger, where = ctx.ledger, ctx.where()
    jobs = ledger.open_jobs(**where)
    if jobs:
        ctx.notes.append(f"resumed Batch API job {jobs[0]} (submitted by an earlier run; not paid again)")
        return jobs[0], None
    for intent in ledger.intents(**where):
        since = _dt.datetime.fromisoformat(intent.created).timestamp() if intent.created else None
        job = find_job(client, ep, intent.token, since)
        if job is not None:
            ledger.bind_intent(intent.token, job.id, now())
            ctx.notes.append(f"found Batch API job {job.id} on the server by planner's intent record (an earlier "
                             "run was stopped while creating it); not paid again")
            return job.id, None
        ledger.drop_intent(intent.token)  # its create never reached the server
    admitted = _admitted(todo, ctx)
    if not admitted:
        return None, None
    data = "".join(json.dumps(r, sort_keys=True) for r in admitted).encode()
    sha, token = hashlib.sha256(data).hexdigest(), uuid.uuid4().hex
    ledger.add_intent(token, input_sha256=sha, requests=len(admitted), at=now(), **where)
    meta = {"planner_batch": str(ctx.batch), "planner_intent": token, "planner_input_sha256": sha}
    try:
        job = submit(client, ep, admitted, meta)
    except MaybeCreated as exc:
        job = find_job(client, ep, token, None)
        if job is None:
            raise DataError(f"{exc.message}; the job may exist on the server: run the same command again — "
                            "planner looks it up by its intent record before sending anything") from None
    ledger.bind_intent(token, job.id, now())
    return job.id, [r["custom_id"] for r in admitted]


def send_batch_job(client, ep, todo, ctx: Context, progress, stop, on_answer) -> int:
    """Submit (or resume, or find) a Batch API job, poll it, collect it; returns how many requests were sent.

    Nothing is collected when ``stop`` is set: the job is recorded and the next run resumes it.
    """
    from planner.connectors.batch_api import collect_job, file_lines, poll_job
    from planner.connectors.openai_judge import is_answer

    remote, asked = _find_or_submit(client, ep, todo, ctx)
    if remote is None:
        return 0
    sent = len(asked) if asked is not None else 0
    job = poll_job(client, ep, remote, progress=progress, stop=stop)
    if job is None:
        ctx.notes.append(f"stopped while Batch API job {remote} runs; rerun to collect it (it is not sent again)")
        return sent
    if asked is None:  # a resumed job: the requests it holds are in its input file
        got, _ = file_lines(client, ep, job.input_file_id, set(ctx.requests))
        asked = [ln["custom_id"] for ln in got]
    lines, notes = collect_job(client, ep, job, [cid for cid in dict.fromkeys(asked) if cid not in ctx.lines])
    ctx.notes.extend(notes)
    for line in lines:
        if line["custom_id"] in ctx.requests:
            record(ctx, line, answered=is_answer(line), transport="batch", on_answer=on_answer)
    ctx.ledger.finish_job(remote, job.status, now())
    if job.status != "completed":
        ctx.notes.append(f"Batch API job {remote} ended {job.status}; its unanswered requests are asked again on "
                         "rerun")
    return sent


def output_lines(ctx: Context, order: list[str]) -> list[dict]:
    """The lines to write, in request order, each naming the model asked for (``judge_model``)."""
    return [{**ctx.lines[cid], "judge_model": ctx.model} for cid in order if cid in ctx.lines]

