"""Send judge requests to an OpenAI-compatible endpoint (OpenAI, Azure, vLLM, Ollama, LM Studio …).

Two transports, both returning one **OpenAI-batch-output-shaped line** per request
(``{"id", "custom_id", "response": {"status_code", "request_id", "body"}, "error"}``)
so that :func:`planner.formats.judge.read_judge_rows` and ingest treat every
answer and every failure alike:

* :func:`send_direct` — chat completions, at most ``concurrency`` requests in
  flight (threads). Retries 408/409/429/5xx, timeouts, connection errors and
  malformed 200 bodies with exponential backoff and jitter
  (``min(backoff_max, backoff_base * 2**attempt) * (0.5 + u/2)``, ``u`` from a
  numpy Generator seeded by ``(seed, request index)``), honouring a
  ``Retry-After``/``retry-after-ms`` header when the server sends one. A final
  failure becomes a failed line (HTTP status + error body, or ``error``
  ``timeout``/``connection_error``/``malformed_response``): the item stays
  unanswered, never invalid. 401/403 (credentials) and 404 (model or endpoint)
  stop the run with a :class:`planner.errors.DataError`.
* :func:`submit_job` / :func:`poll_job` / :func:`collect_job` — the Batch API:
  upload the JSONL (``purpose="batch"``), create the batch
  (``completion_window="24h"``), poll with a growing interval bounded by
  ``poll_interval``, then download the output **and** error files; requests
  missing from both (a failed or cancelled batch) get failed lines.

The ``openai`` package is an optional extra, imported only here and only when a
client is made.
"""

from __future__ import annotations

import email.utils
import json
import os
import threading
import time
from collections.abc import Callable, Iterable
from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor, wait
from dataclasses import dataclass, field

import numpy as np

from planner.errors import DataError, UsageError, quote

DEFAULT_BASE_URL = "https://api.openai.com/v1"
RETRY_STATUS = frozenset({408, 409, 429, 500, 502, 503, 504})
FATAL_STATUS = {401: "refused the credentials", 403: "refused the credentials",
                404: "has no such model or endpoint"}
TERMINAL = frozenset({"completed", "failed", "expired", "cancelled"})
INSTALL_HINT = "pip install 'planner[judge]'"


@dataclass(frozen=True)
class Endpoint:
    """Where and how to send requests.

    ``base_url`` None: ``$OPENAI_BASE_URL`` or the OpenAI API. ``api_key_env``
    names the environment variable holding the key (never stored or printed;
    local servers without keys get a placeholder). ``timeout`` seconds per HTTP
    request; ``max_attempts`` tries per request; ``backoff_base``/``backoff_max``
    seconds; ``poll_interval`` the largest pause between Batch API polls;
    ``seed`` seeds the jitter; ``sleep`` is injectable for tests.
    """

    base_url: str | None = None
    api_key_env: str = "OPENAI_API_KEY"
    timeout: float = 120.0
    max_attempts: int = 6
    backoff_base: float = 1.0
    backoff_max: float = 60.0
    poll_interval: float = 30.0
    seed: int = 0
    sleep: Callable[[float], None] = field(default=time.sleep, compare=False, repr=False)

    @property
    def url(self) -> str:
        return (self.base_url or os.environ.get("OPENAI_BASE_URL") or DEFAULT_BASE_URL).rstrip("/")


def make_client(ep: Endpoint):
    """An ``openai.OpenAI`` client without the SDK's own retries (ours honour Retry-After and are seeded)."""
    try:
        import openai
    except ImportError:
        raise UsageError(f"planner judge needs the openai package: {INSTALL_HINT}") from None
    key = os.environ.get(ep.api_key_env)
    if not key:
        if ep.base_url is None and not os.environ.get("OPENAI_BASE_URL"):
            raise UsageError(f"no API key: set the environment variable {ep.api_key_env} (or name another "
                             "one with `api_key_env`)", parameters=('api_key_env',))
        key = "not-needed"  # local servers (vLLM, Ollama, LM Studio) accept any key
    return openai.OpenAI(api_key=key, base_url=ep.url, timeout=ep.timeout, max_retries=0)


# ------------------------------------------------------------------ output lines
def ok_line(custom_id: str, body: dict, request_id: str | None) -> dict:
    return {"id": f"planner_req_{custom_id}", "custom_id": custom_id,
            "response": {"status_code": 200, "request_id": request_id, "body": body}, "error": None}


def http_failure_line(custom_id: str, status: int, body, request_id: str | None) -> dict:
    if not isinstance(body, dict):
        body = {"error": {"message": str(body)[:200] if body is not None else f"HTTP {status}"}}
    return {"id": f"planner_req_{custom_id}", "custom_id": custom_id,
            "response": {"status_code": int(status), "request_id": request_id, "body": body}, "error": None}


def error_line(custom_id: str, code: str, message: str) -> dict:
    return {"id": f"planner_req_{custom_id}", "custom_id": custom_id, "response": None,
            "error": {"code": code, "message": message}}


def is_answer(line: dict) -> bool:
    """A line the reader takes as an answer (cacheable): HTTP 200 with a well-formed chat completion."""
    from planner.formats.judge import classify

    return classify(line)[0] == "answer" and line.get("error") is None


def retry_after(headers) -> float | None:
    """Seconds from ``retry-after-ms`` or ``Retry-After`` (seconds or an HTTP date), else None."""
    if headers is None:
        return None
    try:
        ms = headers.get("retry-after-ms")
        if ms is not None:
            return max(0.0, float(ms) / 1000)
        ra = headers.get("retry-after")
        if ra is None:
            return None
        try:
            return max(0.0, float(ra))
        except ValueError:
            when = email.utils.parsedate_to_datetime(ra)
            return max(0.0, when.timestamp() - time.time())
    except (TypeError, ValueError, OverflowError):
        return None


def backoff(ep: Endpoint, attempt: int, rng: np.random.Generator, hint: float | None) -> float:
    """Seconds to wait before try ``attempt + 1``: ``Retry-After`` (+ up to 10 % jitter) or jittered 2**k."""
    u = float(rng.random())
    if hint is not None:
        return min(hint, 3600.0) * (1.0 + 0.1 * u)
    return min(ep.backoff_max, ep.backoff_base * 2.0 ** attempt) * (0.5 + 0.5 * u)


# ------------------------------------------------------------------ direct chat completions
@dataclass(frozen=True)
class Sent:
    """One request's outcome: the output line, whether it is an answer, tries and HTTP calls made."""

    custom_id: str
    line: dict
    answered: bool
    attempts: int


def _try_once(client, body: dict):
    """``(line_maker, retryable, hint)`` for one HTTP call; ``line_maker(custom_id)`` builds the line."""
    import openai

    rest = {k: v for k, v in body.items() if k not in ("model", "messages")}
    try:
        raw = client.chat.completions.with_raw_response.create(model=body["model"], messages=body["messages"],
                                                               extra_body=rest or None)
    except openai.APITimeoutError:
        return (lambda cid: error_line(cid, "timeout", "the request timed out")), True, None
    except openai.APIStatusError as exc:
        status = exc.status_code
        if status in FATAL_STATUS:
            raise DataError(f"the endpoint {FATAL_STATUS[status]} (HTTP {status}"
                            f"{': ' + quote(_message(exc.body)) if _message(exc.body) else ''})") from None
        hint = retry_after(exc.response.headers)
        body_ = exc.body if isinstance(exc.body, dict) and "error" in exc.body else {"error": exc.body}
        rid = exc.request_id
        return ((lambda cid: http_failure_line(cid, status, body_, rid)),
                status in RETRY_STATUS or status >= 500, hint)
    except openai.APIConnectionError as exc:
        text = str(exc) or "connection error"
        return (lambda cid: error_line(cid, "connection_error", text)), True, None
    try:
        parsed = json.loads(raw.text)
    except ValueError:
        parsed = None
    rid = raw.headers.get("x-request-id")
    line = ok_line("?", parsed, rid) if isinstance(parsed, dict) else None
    if line is None or not is_answer(line):
        return (lambda cid: error_line(cid, "malformed_response", "the endpoint's answer is not a chat "
                                       "completion")), True, None
    return (lambda cid: ok_line(cid, parsed, rid)), False, None


def _message(body) -> str | None:
    if isinstance(body, dict):
        err = body.get("error", body)
        if isinstance(err, dict) and isinstance(err.get("message"), str):
            return err["message"]
    return None


def send_one(client, ep: Endpoint, index: int, request: dict, stop: threading.Event | None = None) -> Sent:
    """Send one batch-request line ``{"custom_id", "body"}`` with retries; never raises for transport."""
    rng = np.random.default_rng([ep.seed, index])
    cid = request["custom_id"]
    for attempt in range(ep.max_attempts):
        make, retryable, hint = _try_once(client, request["body"])
        line = make(cid)
        last = attempt == ep.max_attempts - 1 or (stop is not None and stop.is_set())
        if not retryable or last:
            return Sent(cid, line, line.get("error") is None and line["response"]["status_code"] == 200,
                        attempt + 1)
        ep.sleep(backoff(ep, attempt, rng, hint))
    raise AssertionError("unreachable")  # pragma: no cover


def send_direct(client, ep: Endpoint, requests: Iterable[tuple[int, dict]], *, concurrency: int,
                admit: Callable[[dict], bool], on_result: Callable[[Sent], None],
                stop: threading.Event | None = None) -> tuple[int, bool]:
    """Send ``(index, request)`` pairs with at most ``concurrency`` in flight.

    ``admit(request)`` is asked before each send (the cost cap; ``request`` is
    the batch line). A refusal while requests are in flight waits for them (their
    real cost replaces their estimate) and asks again; a refusal with nothing in
    flight stops sending. ``on_result`` runs in the calling thread for every
    outcome, in completion order (write the cache there). ``stop`` set (Ctrl-C)
    sends nothing more; requests in flight finish. An exception from
    ``on_result`` (a crash) stops sending, waits for the requests in flight and
    re-raises. Returns ``(sent, refused_by_admit)``.
    """
    it = iter(requests)
    pending: set = set()
    sent, refused, held = 0, False, None
    with ThreadPoolExecutor(max_workers=concurrency, thread_name_prefix="judge") as pool:
        try:
            while True:
                while len(pending) < concurrency and not refused and not (stop and stop.is_set()):
                    nxt, held = (held or next(it, None)), None
                    if nxt is None:
                        break
                    if not admit(nxt[1]):
                        held, refused = (nxt, False) if pending else (None, True)
                        break
                    pending.add(pool.submit(send_one, client, ep, nxt[0], nxt[1], stop))
                    sent += 1
                if not pending:
                    return sent, refused
                done, pending = wait(pending, return_when=FIRST_COMPLETED)
                for f in done:
                    on_result(f.result())
        except BaseException:
            if stop is not None:
                stop.set()
            for f in pending:
                f.cancel()
            raise


# ------------------------------------------------------------------ Batch API
def submit_job(client, requests: list[dict], *, metadata: dict | None = None) -> str:
    """Upload the requests as JSONL and create a 24 h batch; returns the remote batch id."""
    data = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in requests).encode("utf-8")
    f = client.files.create(file=("planner-judge-requests.jsonl", data), purpose="batch")
    job = client.batches.create(input_file_id=f.id, endpoint="/v1/chat/completions", completion_window="24h",
                                metadata=metadata)
    return job.id


def poll_job(client, ep: Endpoint, remote_id: str, *, progress: Callable[[dict], None] | None = None,
             stop: threading.Event | None = None):
    """Retrieve the batch until it is completed, failed, expired or cancelled (None when ``stop`` is set).

    The pause starts at 1 s (or ``poll_interval`` if smaller) and doubles up to ``poll_interval``.
    """
    pause = min(1.0, ep.poll_interval)
    while True:
        job = client.batches.retrieve(remote_id)
        counts = job.request_counts
        if progress is not None:
            progress({"phase": "batch", "remote_id": remote_id, "status": job.status,
                      "completed": getattr(counts, "completed", 0) or 0, "failed": getattr(counts, "failed", 0) or 0,
                      "total": getattr(counts, "total", 0) or 0})
        if job.status in TERMINAL:
            return job
        if stop is not None and stop.is_set():
            return None
        ep.sleep(pause)
        pause = min(ep.poll_interval, pause * 2)


def file_lines(client, file_id: str | None) -> list[dict]:
    if not file_id:
        return []
    text = client.files.content(file_id).text
    out = []
    for n, ln in enumerate(text.splitlines(), 1):
        if not ln.strip():
            continue
        try:
            obj = json.loads(ln)
        except ValueError:
            raise DataError(f"batch file {file_id}:{n}: not valid JSON; expected OpenAI batch output lines") from None
        if isinstance(obj, dict) and isinstance(obj.get("custom_id"), str):
            out.append(obj)
    return out


def collect_job(client, job, custom_ids: Iterable[str]) -> list[dict]:
    """Output and error lines of a finished batch; a failed line for every request in neither."""
    lines = file_lines(client, job.output_file_id) + file_lines(client, job.error_file_id)
    seen = {ln["custom_id"] for ln in lines}
    why = f"batch_{job.status}" if job.status != "completed" else "batch_missing"
    errors = getattr(getattr(job, "errors", None), "data", None) or []
    msg = "; ".join(f"{e.code}: {e.message}" for e in errors[:2] if getattr(e, "code", None)) or \
        f"the batch ended {job.status} without an answer for this request"
    lines += [error_line(cid, why, msg) for cid in custom_ids if cid not in seen]
    return lines
