"""The OpenAI Batch API for the judge: upload, create, find, poll, download — every answer checked.

Every call goes through :func:`api_call`: a total deadline of ``timeout`` seconds
(:func:`planner.connectors.guard.within`), retries with backoff for 408/409/429/5xx,
timeouts and connection resets — except ``create``, which is not idempotent —
and one-line :class:`~planner.errors.DataError` for everything else (401/403, 404,
a server without a Batch API, an answer that is not the JSON the API returns).
The SDK's raw responses are parsed here (bounded, cleaned), never trusted as
typed objects: a poll answered with HTML, a job id that is a number, request
counts of 10**30 are errors or clamped values, not tracebacks.

Finding a job again (:func:`find_job`): planner sends ``metadata`` with every
job it creates — ``planner_batch``, ``planner_intent`` (a random token recorded
in the study *before* the job is created) and ``planner_input_sha256``. When a
create may have reached the server without its answer reaching planner (a kill,
a timeout), the next run lists the organisation's batches (``GET /batches``,
newest first, ``after`` cursor, at most :data:`MAX_LIST_PAGES` pages of 100, back
to :data:`LOOKBACK_S` before the intent) and adopts the job carrying its token,
instead of paying for the requests again.
"""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass

import numpy as np

from planner.connectors.guard import Deadline, within
from planner.connectors.openai_judge import (
    FATAL_STATUS,
    MAX_ANSWER_BYTES,
    RETRY_STATUS,
    Endpoint,
    OffOrigin,
    backoff,
    error_line,
    fatal_connection,
    message_of,
    oversized_body,
    parse_json,
    retry_after,
)
from planner.errors import DataError, quote

TERMINAL = frozenset({"completed", "failed", "expired", "cancelled"})
STATUSES = TERMINAL | {"validating", "in_progress", "finalizing", "cancelling"}
MAX_LIST_PAGES = 10
LOOKBACK_S = 2 * 24 * 3600
MAX_COUNT = 10 ** 9  # request counts above this are not a batch planner sent


class MaybeCreated(DataError):
    """``create`` got no answer: the job may exist on the server (look it up by its intent token)."""


@dataclass(frozen=True)
class Job:
    """A Batch API job as planner reads it (validated; counts clamped to [0, 10**9])."""

    id: str
    status: str
    input_file_id: str | None
    output_file_id: str | None
    error_file_id: str | None
    completed: int
    failed: int
    total: int
    errors: tuple[str, ...]
    metadata: dict
    created_at: float | None


def _count(v) -> int:
    return min(max(v, 0), MAX_COUNT) if isinstance(v, int) and not isinstance(v, bool) else 0


def _file_id(v) -> str | None:
    return v if isinstance(v, str) and 0 < len(v) <= 200 and v.isprintable() else None


def parse_job(obj, what: str) -> Job:
    """A :class:`Job` from the JSON of a batch object; a DataError naming ``what`` when it is not one."""
    if not isinstance(obj, dict) or _file_id(obj.get("id")) is None:
        raise DataError(f"the Batch API {what}: the answer is not a batch object (no string `id`)")
    status = obj.get("status")
    if status not in STATUSES:
        raise DataError(f"the Batch API {what}: batch {quote(obj['id'])} has status {quote(status)}; expected "
                        f"one of {', '.join(sorted(STATUSES))}")
    counts = obj["request_counts"] if isinstance(obj.get("request_counts"), dict) else {}
    errs = obj.get("errors", {}).get("data") if isinstance(obj.get("errors"), dict) else None
    errors = tuple(f"{e.get('code')}: {e.get('message')}" for e in (errs if isinstance(errs, list) else [])[:2]
                   if isinstance(e, dict) and isinstance(e.get("code"), str))
    meta = obj["metadata"] if isinstance(obj.get("metadata"), dict) else {}
    created = obj.get("created_at")
    created = float(created) if isinstance(created, (int, float)) and not isinstance(created, bool) \
        and abs(created) < 1e12 else None
    return Job(obj["id"], status, _file_id(obj.get("input_file_id")), _file_id(obj.get("output_file_id")),
               _file_id(obj.get("error_file_id")), _count(counts.get("completed")), _count(counts.get("failed")),
               _count(counts.get("total")), errors, meta, created)


# ------------------------------------------------------------------ one call
def api_call(ep: Endpoint, what: str, fn: Callable, *, retry: bool = True, stop: threading.Event | None = None,
             parse: bool = True, if_404: str | None = None):
    """``fn()`` (an SDK call returning a raw response) within ``ep.timeout``; its JSON (``parse``) or bytes.

    Transient failures are retried (``retry``) up to ``ep.max_attempts`` tries;
    a ``create`` that got no answer raises :class:`MaybeCreated`; ``if_404`` is
    the message for a 404 (the route does not exist there).
    """
    import openai

    rng = np.random.default_rng([ep.seed, 7919])
    tries = ep.max_attempts if retry else 1
    for attempt in range(tries):
        hint = None
        try:
            raw = within(ep.timeout, fn)
            return parse_json(raw.content) if parse else raw
        except (Deadline, openai.APITimeoutError):
            err = f"no complete answer within {ep.timeout:g} s"
            if not retry:
                raise MaybeCreated(f"the Batch API {what}: {err}") from None
        except openai.APIStatusError as exc:
            status = exc.status_code
            body = exc.body if isinstance(exc.body, dict) and "error" in exc.body else {"error": exc.body}
            msg = message_of(body)
            err = f"HTTP {status}" + (f": {quote(msg)}" if msg else "")
            if status == 404 and if_404:
                raise DataError(f"{if_404} (HTTP 404 on {what.partition('(')[2].rstrip(')')})") from None
            if status in FATAL_STATUS:
                raise DataError(f"the Batch API {what}: the endpoint {FATAL_STATUS[status]} ({err})") from None
            if not (status in RETRY_STATUS or status >= 500):
                raise DataError(f"the Batch API {what}: {err}") from None
            hint = retry_after(exc.response.headers)
        except (openai.APIConnectionError, OffOrigin) as exc:
            fatal = fatal_connection(exc, ep.url)
            if fatal is not None:
                raise fatal from None
            err = "the connection failed"
            if not retry:
                raise MaybeCreated(f"the Batch API {what}: {err}") from None
        except openai.APIError as exc:
            raise DataError(f"the Batch API {what}: the answer is not what the API returns "
                            f"({exc.__class__.__name__})") from None
        if attempt == tries - 1 or (stop is not None and stop.is_set()):
            break
        if hint is not None and hint > ep.max_retry_after:
            err += f"; the server asked to wait {hint:,.0f} s (Retry-After), more than {ep.max_retry_after:g} s"
            break
        ep.pause(backoff(ep, attempt, rng, hint), stop)
    raise DataError(f"the Batch API {what}: {err} (after {attempt + 1} tries); run the command again later")


# ------------------------------------------------------------------ submit, find, poll
def submit(client, ep: Endpoint, requests: list[dict], metadata: dict[str, str]) -> Job:
    """Upload the requests as JSONL and create a 24 h batch carrying ``metadata``."""
    data = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in requests).encode("utf-8")
    got = api_call(ep, "upload (POST /files)", lambda: client.files.with_raw_response.create(
        file=("planner-judge-requests.jsonl", data), purpose="batch"),
        if_404=f"the endpoint {ep.url} has no Batch API; chat-completions-only servers (vLLM, Ollama, llama.cpp) "
               "have none: send the requests directly, without the Batch API")
    if not isinstance(got, dict) or _file_id(got.get("id")) is None:
        raise DataError("the Batch API upload (POST /files): the answer is not a file object (no string `id`)")
    created = api_call(ep, "create (POST /batches)", lambda: client.batches.with_raw_response.create(
        input_file_id=got["id"], endpoint="/v1/chat/completions", completion_window="24h", metadata=metadata),
        retry=False)
    return parse_job(created, "create (POST /batches)")


def find_job(client, ep: Endpoint, intent: str, since: float | None) -> Job | None:
    """The job whose ``metadata.planner_intent`` is ``intent``, among the newest batches (see the module)."""
    after = None
    for _ in range(MAX_LIST_PAGES):
        query = {"limit": 100} | ({"after": after} if after else {})
        page = api_call(ep, "list (GET /batches)", lambda q=query: client.batches.with_raw_response.list(**q))
        data = page.get("data") if isinstance(page, dict) else None
        if not isinstance(data, list):
            raise DataError("the Batch API list (GET /batches): the answer is not a list of batches")
        oldest = None
        for obj in data:
            if isinstance(obj, dict) and isinstance(obj.get("metadata"), dict) \
                    and obj["metadata"].get("planner_intent") == intent:
                return parse_job(obj, "list (GET /batches)")
            if isinstance(obj, dict) and isinstance(obj.get("created_at"), (int, float)):
                oldest = obj["created_at"] if oldest is None else min(oldest, obj["created_at"])
        last = data[-1].get("id") if data and isinstance(data[-1], dict) else None
        if page.get("has_more") is not True or not isinstance(last, str) or last == after:
            return None
        if since is not None and oldest is not None and oldest < since - LOOKBACK_S:
            return None
        after = last
    return None


def retrieve(client, ep: Endpoint, remote_id: str, stop=None) -> Job:
    what = f"poll (GET /batches/{remote_id})"
    return parse_job(api_call(ep, what, lambda: client.batches.with_raw_response.retrieve(remote_id), stop=stop),
                     what)


def poll_job(client, ep: Endpoint, remote_id: str, *, progress: Callable[[dict], None] | None = None,
             stop: threading.Event | None = None) -> Job | None:
    """Retrieve the batch until it is completed, failed, expired or cancelled (None when ``stop`` is set).

    The pause starts at 1 s (or ``poll_interval`` if smaller) and doubles up to
    ``poll_interval``; it wakes when ``stop`` is set.
    """
    pause = min(1.0, ep.poll_interval)
    while True:
        job = retrieve(client, ep, remote_id, stop)
        if progress is not None:
            progress({"phase": "batch", "remote_id": job.id, "status": job.status, "completed": job.completed,
                      "failed": job.failed, "total": job.total})
        if job.status in TERMINAL:
            return job
        if stop is not None and stop.is_set():
            return None
        ep.pause(pause, stop)
        if stop is not None and stop.is_set():
            return None
        pause = min(ep.poll_interval, pause * 2)


# ------------------------------------------------------------------ download, collect
_CUSTOM_ID = re.compile(rb'"custom_id"\s*:\s*"([^"\\]{1,200})"')


def _line(raw: bytes, over: int) -> dict | None:
    """One line of a batch file as an object (None: not a JSON object with a string custom_id).

    A line cut at :data:`MAX_ANSWER_BYTES` (``over`` bytes dropped) keeps its ``custom_id`` and becomes an
    answer without a verdict: it was answered and paid for, but nothing that large is kept.
    """
    if over:
        m = _CUSTOM_ID.search(raw[:4096])
        if m is None:
            return None
        return {"id": None, "custom_id": m.group(1).decode("utf-8", "replace"), "error": None,
                "response": {"status_code": 200, "request_id": None, "body": oversized_body(len(raw) + over)}}
    obj = parse_json(raw)
    return obj if isinstance(obj, dict) and isinstance(obj.get("custom_id"), str) else None


def _read_lines(client, file_id: str, keep) -> tuple[list[dict], int]:
    """Stream a batch file line by line; at most :data:`MAX_ANSWER_BYTES` of any line is held in memory."""
    out, bad = [], 0
    buf, over = bytearray(), 0

    def emit() -> None:
        nonlocal bad
        if not bytes(buf).strip() and not over:
            return
        obj = _line(bytes(buf), over)
        if obj is None:
            bad += 1
        elif keep is None or obj["custom_id"] in keep:
            out.append(obj)

    with client.files.with_streaming_response.content(file_id) as resp:
        for chunk in resp.iter_bytes():
            while chunk:
                nl = chunk.find(b"\n")
                part, chunk = (chunk, b"") if nl < 0 else (chunk[:nl], chunk[nl + 1:])
                room = MAX_ANSWER_BYTES - len(buf)
                buf += part[:max(room, 0)]
                over += max(len(part) - max(room, 0), 0)
                if nl >= 0:
                    emit()
                    buf, over = bytearray(), 0
    emit()
    return out, bad


def file_lines(client, ep: Endpoint, file_id: str | None, keep=None) -> tuple[list[dict], int]:
    """``(lines with a string custom_id, lines that were not JSON objects)`` of a batch output, error or
    input file; with ``keep`` only the lines of those custom ids are kept (a hostile file cannot fill memory)."""
    if not file_id:
        return [], 0
    return api_call(ep, f"download (GET /files/{file_id}/content)",
                    lambda: _read_lines(client, file_id, keep), parse=False)


def _same(a: dict, b: dict) -> bool:
    strip = lambda d: json.dumps({k: v for k, v in d.items() if k != "id"}, sort_keys=True)  # noqa: E731
    return strip(a) == strip(b)


def collect_job(client, ep: Endpoint, job: Job, custom_ids: Iterable[str]) -> tuple[list[dict], list[str]]:
    """Output and error lines of a finished batch, one per request, and notes.

    A request in neither file gets a failed line; a ``custom_id`` given by two
    *different* lines (two answers, or an answer and an error) gets a failed line
    ``batch_conflict`` and a note — never the first one silently.
    """
    ids = list(custom_ids)
    notes: list[str] = []
    out, bad_o = file_lines(client, ep, job.output_file_id, set(ids))
    err, bad_e = file_lines(client, ep, job.error_file_id, set(ids))
    if bad_o + bad_e:
        notes.append(f"Batch API job {job.id}: {bad_o + bad_e} line(s) of its files were not JSON objects with a "
                     "custom_id; their requests count as unanswered")
    by_id: dict[str, list[dict]] = {}
    for ln in out + err:
        by_id.setdefault(ln["custom_id"], []).append(ln)
    why = f"batch_{job.status}" if job.status != "completed" else "batch_missing"
    msg = "; ".join(job.errors) or f"the batch ended {job.status} without an answer for this request"
    lines, conflicts = [], []
    for cid in ids:
        got = by_id.get(cid)
        if not got:
            lines.append(error_line(cid, why, msg))
        elif all(_same(got[0], g) for g in got[1:]):
            lines.append(got[0])
        else:
            conflicts.append(cid)
            lines.append(error_line(cid, "batch_conflict", f"the Batch output holds {len(got)} different lines "
                                    "for this request; none is used"))
    if conflicts:
        notes.append(f"Batch API job {job.id}: {len(conflicts)} request(s) have conflicting lines in its output "
                     f"(e.g. {quote(conflicts[0])}); none of them is used and they count as unanswered")
    return lines, notes
