"""Send judge requests to an OpenAI-compatible endpoint (OpenAI, Azure, vLLM, Ollama, LM Studio …).

Both transports return one **OpenAI-batch-output-shaped line** per request
(``{"id", "custom_id", "response": {"status_code", "request_id", "body"}, "error"}``)
so that :func:`planner.formats.judge.read_judge_rows` and ingest treat every
answer and every failure alike. This module holds the client and the direct
transport; :mod:`planner.connectors.batch_api` the Batch API.

:func:`send_direct` — chat completions, at most ``concurrency`` requests in
flight (threads). Each HTTP call has a **total** deadline of ``timeout`` seconds
(:func:`planner.connectors.guard.within`: a body dribbled byte by byte is cut
off) and an answer larger than :data:`MAX_ANSWER_BYTES` is not read further
(kept as an answer without a verdict: it was paid for). 408/409/429/5xx,
timeouts, connection resets and malformed 200 bodies are retried with
exponential backoff and jitter (``min(backoff_max, backoff_base * 2**attempt) *
(0.5 + u/2)``, ``u`` from a numpy Generator seeded by ``(seed, request
index)``), or after the server's ``Retry-After``/``retry-after-ms`` — unless it
asks for more than ``max_retry_after`` seconds: that request fails at once with
a message. Pauses wake when ``stop`` is set (Ctrl-C). A final failure becomes a
failed line: the item stays unanswered, never invalid.

Fatal — the command stops with one line, after storing what arrived:
401/403 (credentials), 404 (model or endpoint), connection refused, a host
name that does not resolve, and a redirect to another origin (the client
refuses to send the key, the prompts and the responses to any host but the
endpoint's).

Everything a server sends is cleaned before it is kept or printed
(:func:`planner.connectors.guard.clean`: keys redacted, lone surrogates
replaced). The ``openai`` package is an optional extra, imported only when a
client is made.
"""

from __future__ import annotations

import email.utils
import hashlib
import json
import os
import socket
import threading
import time
from collections.abc import Callable, Iterable
from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from typing import TypeVar

import numpy as np

from planner.connectors.guard import Deadline, check_url, clean, origin, redact, register, within
from planner.errors import DataError, UsageError, quote

E = TypeVar("E", bound=BaseException)
DEFAULT_BASE_URL = "https://api.openai.com/v1"
RETRY_STATUS = frozenset({408, 409, 429, 500, 502, 503, 504})
FATAL_STATUS = {401: "refused the credentials", 403: "refused the credentials",
                404: "has no such model or endpoint"}
INSTALL_HINT = "pip install 'planner[judge]'"
#: the longest ``Retry-After`` planner honours (seconds); a request asked to wait longer fails at once
MAX_RETRY_AFTER_S = 300.0
#: the largest answer read (bytes of the HTTP body, or of one Batch output line); a larger one is an
#: answer without a verdict (it was paid for): judge verdicts take a few kB, reasoning models some 100 kB
MAX_ANSWER_BYTES = 4 * 1024 * 1024


def request_key(base_url: str, custom_id: str, body: dict) -> str:
    """The key of one request in the study's judge cache (:class:`planner.store.ledger.Ledger`): the SHA-256
    (hex) of the canonical JSON (sorted keys, no spaces, UTF-8 kept) of ``{"base_url", "custom_id", "body"}``.

    The item id is part of the key so that a ``repeat`` QC item (the same text again) is really asked
    again rather than answered from the cache.
    """
    text = json.dumps({"base_url": base_url.rstrip("/"), "custom_id": custom_id, "body": body},
                      sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class Endpoint:
    """Where and how to send requests.

    ``base_url`` None: ``$OPENAI_BASE_URL`` or the OpenAI API. ``api_key_env``
    names the environment variable holding the key (never stored or printed;
    local servers without keys get a placeholder). ``timeout`` seconds for one
    HTTP call, body included; ``max_attempts`` tries per request;
    ``backoff_base``/``backoff_max`` seconds; ``max_retry_after`` the longest
    server-requested wait honoured; ``poll_interval`` the largest pause between
    Batch API polls; ``seed`` seeds the jitter; ``sleep`` replaces the pauses
    (tests; default: wait on the stop event, so Ctrl-C wakes them).
    """

    base_url: str | None = None
    api_key_env: str = "OPENAI_API_KEY"
    timeout: float = 120.0
    max_attempts: int = 6
    backoff_base: float = 1.0
    backoff_max: float = 60.0
    max_retry_after: float = MAX_RETRY_AFTER_S
    poll_interval: float = 30.0
    seed: int = 0
    sleep: Callable[[float], None] | None = field(default=None, compare=False, repr=False)

    @property
    def url(self) -> str:
        return (self.base_url or os.environ.get("OPENAI_BASE_URL") or DEFAULT_BASE_URL).rstrip("/")

    def pause(self, seconds: float, stop: threading.Event | None) -> None:
        """Wait ``seconds``; returns early when ``stop`` is set."""
        if self.sleep is not None:
            self.sleep(seconds)
        elif stop is not None:
            stop.wait(seconds)
        else:
            time.sleep(seconds)


class OffOrigin(Exception):
    """A request was about to leave the endpoint's origin (a redirect to another host)."""


def make_client(ep: Endpoint):
    """An ``openai.OpenAI`` client without the SDK's own retries (ours honour Retry-After and are seeded)
    that refuses to send any request to another origin than the endpoint's."""
    try:
        import openai
    except ImportError:
        raise UsageError(f"planner judge needs the openai package: {INSTALL_HINT}", parameters=()) from None
    base = check_url(ep.url, "base_url")
    key = os.environ.get(ep.api_key_env)
    if not key:
        if ep.base_url is None and not os.environ.get("OPENAI_BASE_URL"):
            raise UsageError(f"no API key: set the environment variable {ep.api_key_env} (or name another "
                             "one with `api_key_env`)", parameters=('api_key_env',))
        key = "not-needed"  # local servers (vLLM, Ollama, LM Studio) accept any key
    else:
        register(key)
    home = origin(base)

    def same_origin_only(request) -> None:  # httpx calls this before every request, redirects included
        if origin(str(request.url)) != home:
            raise OffOrigin(str(request.url))

    http = openai.DefaultHttpxClient(event_hooks={"request": [same_origin_only]})
    return openai.OpenAI(api_key=key, base_url=base, timeout=ep.timeout, max_retries=0, http_client=http)


# ------------------------------------------------------------------ output lines
def ok_line(custom_id: str, body: dict, request_id: str | None) -> dict:
    return {"id": f"planner_req_{custom_id}", "custom_id": custom_id,
            "response": {"status_code": 200, "request_id": request_id, "body": body}, "error": None}


def http_failure_line(custom_id: str, status: int, body, request_id: str | None) -> dict:
    if not isinstance(body, dict):
        body = {"error": {"message": str(body)[:200] if body is not None else f"HTTP {status}"}}
    return {"id": f"planner_req_{custom_id}", "custom_id": custom_id,
            "response": {"status_code": int(status), "request_id": request_id, "body": clean(body)},
            "error": None}


def error_line(custom_id: str, code: str, message: str) -> dict:
    return {"id": f"planner_req_{custom_id}", "custom_id": custom_id, "response": None,
            "error": {"code": code, "message": redact(message)}}


def oversized_body(nbytes: int) -> dict:
    """The body kept for an answer larger than :data:`MAX_ANSWER_BYTES`: answered, no verdict (invalid)."""
    return {"object": "chat.completion", "model": None, "usage": None,
            "choices": [{"index": 0, "finish_reason": None,
                         "message": {"role": "assistant", "content": None, "refusal": None}}],
            "planner_dropped": f"the answer was larger than {MAX_ANSWER_BYTES:,} bytes ({nbytes:,} read); "
                               "not kept"}


def parse_json(data: bytes):
    """A server's JSON body, cleaned (:func:`planner.connectors.guard.clean`), or None when it is not JSON.

    Deep nesting, integers of thousands of digits and bad UTF-8 give None, never an exception.
    """
    try:
        return clean(json.loads(data.decode("utf-8", "replace")))
    except (ValueError, RecursionError):
        return None


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
        return min(hint, ep.max_retry_after) * (1.0 + 0.1 * u)
    return min(ep.backoff_max, ep.backoff_base * 2.0 ** attempt) * (0.5 + 0.5 * u)


def message_of(body) -> str | None:
    """The ``error.message`` (or ``message``) of an API error body, redacted."""
    if isinstance(body, dict):
        err = body.get("error", body)
        if isinstance(err, dict) and isinstance(err.get("message"), str):
            return redact(err["message"])
    return None


def _in_chain(exc: BaseException, kind: type[E]) -> E | None:
    """The first exception of ``kind`` in ``exc``'s chain of causes and contexts, or None."""
    seen = set()
    link: BaseException | None = exc
    while link is not None and id(link) not in seen:
        if isinstance(link, kind):
            return link
        seen.add(id(link))
        link = link.__cause__ or link.__context__
    return None


def fatal_connection(exc: BaseException, url: str) -> DataError | None:
    """The one-line error for a connection failure that no retry can fix, else None (retry it)."""
    off = _in_chain(exc, OffOrigin)
    if off is not None:
        scheme, host, port = origin(str(off))
        return DataError(f"the endpoint {url} redirected a request to {scheme}://{host}:{port}, another host; "
                         "planner does not follow it (the key, the prompts and the responses would go there)")
    if _in_chain(exc, ConnectionRefusedError) is not None:
        return DataError(f"cannot reach {url}: connection refused (is the server running and listening there?)")
    gai = _in_chain(exc, socket.gaierror)
    if gai is not None:
        return DataError(f"cannot reach {url}: the host name does not resolve ({redact(str(gai.strerror))})")
    return None


# ------------------------------------------------------------------ direct chat completions
@dataclass(frozen=True)
class Sent:
    """One request's outcome: the output line, whether it is an answer, tries made."""

    custom_id: str
    line: dict
    answered: bool
    attempts: int


def _exchange(client, body: dict) -> tuple[bytes, int, str | None]:
    """One chat completion: ``(body bytes up to the cap, bytes read, x-request-id)``; SDK errors propagate."""
    rest = {k: v for k, v in body.items() if k not in ("model", "messages")}
    with client.chat.completions.with_streaming_response.create(model=body["model"], messages=body["messages"],
                                                                extra_body=rest or None) as resp:
        buf, n = bytearray(), 0
        for chunk in resp.iter_bytes():
            n += len(chunk)
            if n > MAX_ANSWER_BYTES:
                break
            buf += chunk
        return bytes(buf), n, resp.headers.get("x-request-id")


def _try_once(client, ep: Endpoint, body: dict, abort: threading.Event | None):
    """``(line_maker, retryable, hint)`` for one HTTP call; ``line_maker(custom_id)`` builds the line."""
    import openai

    try:
        data, n, rid = within(ep.timeout, _exchange, client, body, abort=abort)
    except (Deadline, openai.APITimeoutError):
        return (lambda cid: error_line(cid, "timeout", f"no complete answer within {ep.timeout:g} s")), True, None
    except OffOrigin as exc:  # some SDK versions pass an event hook's exception through unwrapped
        fatal = fatal_connection(exc, ep.url)
        if fatal is None:     # cannot happen: a redirect off the origin is always fatal
            raise
        raise fatal from None
    except openai.APIStatusError as exc:
        status = exc.status_code
        body_ = exc.body if isinstance(exc.body, dict) and "error" in exc.body else {"error": exc.body}
        msg = message_of(body_)
        if status in FATAL_STATUS:
            raise DataError(f"the endpoint {FATAL_STATUS[status]} (HTTP {status}"
                            f"{': ' + quote(msg) if msg else ''})") from None
        hint = retry_after(exc.response.headers)
        rid = exc.request_id
        return ((lambda cid: http_failure_line(cid, status, body_, rid)),
                status in RETRY_STATUS or status >= 500, hint)
    except openai.APIConnectionError as exc:
        fatal = fatal_connection(exc, ep.url)
        if fatal is not None:
            raise fatal from None
        text = redact(str(exc.__cause__ or exc) or "connection error")
        return (lambda cid: error_line(cid, "connection_error", text)), True, None
    if n > MAX_ANSWER_BYTES:
        return (lambda cid: ok_line(cid, oversized_body(n), rid)), False, None
    parsed = parse_json(data)
    line = ok_line("?", parsed, rid) if isinstance(parsed, dict) else None
    if line is None or not is_answer(line):
        return (lambda cid: error_line(cid, "malformed_response", "the endpoint's answer is not a chat "
                                       "completion")), True, None
    return (lambda cid: ok_line(cid, parsed, rid)), False, None


def send_one(client, ep: Endpoint, index: int, request: dict, halt: threading.Event | None = None,
             abort: threading.Event | None = None) -> Sent:
    """Send one batch-request line ``{"custom_id", "body"}`` with retries; raises only for fatal errors.

    ``halt`` set: no further try (the last failure is returned); ``abort`` set: stop waiting at once.
    """
    rng = np.random.default_rng([ep.seed, index])
    cid = request["custom_id"]
    for attempt in range(ep.max_attempts):
        make, retryable, hint = _try_once(client, ep, request["body"], abort)
        line = make(cid)
        answered = line.get("error") is None and line["response"]["status_code"] == 200
        if hint is not None and hint > ep.max_retry_after and not answered:
            line = error_line(cid, "retry_after_too_long",
                              f"{_status_text(line)}the server asked to wait {hint:,.0f} s before a retry "
                              f"(Retry-After); planner waits at most {ep.max_retry_after:g} s: run again later")
            return Sent(cid, line, False, attempt + 1)
        last = attempt == ep.max_attempts - 1 or (halt is not None and halt.is_set())
        if not retryable or last:
            return Sent(cid, line, answered, attempt + 1)
        ep.pause(backoff(ep, attempt, rng, hint), halt)
    raise AssertionError("unreachable")  # pragma: no cover


def _status_text(line: dict) -> str:
    resp = line.get("response")
    return f"HTTP {resp['status_code']}: " if isinstance(resp, dict) else ""


def send_direct(client, ep: Endpoint, requests: Iterable[tuple[int, dict]], *, concurrency: int,
                admit: Callable[[dict], bool], on_result: Callable[[Sent], None],
                stop: threading.Event | None = None) -> tuple[int, bool]:
    """Send ``(index, request)`` pairs with at most ``concurrency`` in flight.

    ``admit(request)`` is asked before each send (the cost cap). A refusal while
    requests are in flight waits for them (their real cost replaces their
    estimate) and asks again; a refusal with nothing in flight stops sending.
    ``on_result`` runs in the calling thread for every outcome, in completion
    order (write the cache there). ``stop`` set (Ctrl-C) sends nothing more;
    requests in flight finish. A fatal error (:class:`DataError` from a request)
    sends nothing more, lets the requests in flight finish and report, then is
    raised. Any other exception (a crash in ``on_result``, a second Ctrl-C)
    stops waiting at once and is re-raised. Returns ``(sent, refused_by_admit)``.
    """
    it = iter(requests)
    pending: set = set()
    sent, refused, held, fatal = 0, False, None, None
    halt, abort = threading.Event(), threading.Event()
    pool = ThreadPoolExecutor(max_workers=concurrency, thread_name_prefix="judge")
    try:
        while True:
            if stop is not None and stop.is_set():
                halt.set()
            while len(pending) < concurrency and not refused and not halt.is_set():
                nxt, held = (held or next(it, None)), None
                if nxt is None:
                    break
                if not admit(nxt[1]):
                    held, refused = (nxt, False) if pending else (None, True)
                    break
                pending.add(pool.submit(send_one, client, ep, nxt[0], nxt[1], halt, abort))
                sent += 1
            if not pending:
                break
            done, pending = wait(pending, timeout=0.2, return_when=FIRST_COMPLETED)
            for f in done:
                try:
                    result = f.result()
                except DataError as exc:
                    fatal = fatal or exc
                    halt.set()
                    continue
                on_result(result)
    except BaseException:
        abort.set()
        halt.set()
        pool.shutdown(wait=False, cancel_futures=True)
        raise
    pool.shutdown(wait=True)
    if fatal is not None:
        raise fatal
    return sent, refused
