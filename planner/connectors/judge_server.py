"""A local OpenAI-compatible judge by a stated rule (``planner judge-server``, the live-judge demo, tests).

A standard-library HTTP server on 127.0.0.1 that answers ``POST /v1/chat/completions`` (and
``GET /v1/models``) like an OpenAI endpoint. It judges planner's default pairwise prompt by a
stated rule:

* **Who wrote what.** It reads the responses file the study was made from; each answer shown is
  matched to its system by its text (exactly, else by its first or last 64 characters, which
  survive ``--max-words`` cuts and name redaction). A request it cannot place gets an answer
  without a verdict (planner stores it as ``invalid``).
* **The verdict.** Each system has a hidden strength on the Elo scale (``--strengths``, or the
  systems in a seeded random order spread evenly over ``spread`` Elo, mean 0). The verdict is drawn
  from the Bradley–Terry–Davidson model of :class:`planner.simulation.judge.Judge`: equal systems
  tie with probability ``tie_rate``, the left answer gets ``position`` logits, and a decisive
  verdict is reversed with probability ``flip``. The draw comes from a numpy Generator seeded by
  ``(seed, SHA-256 of the request text)``, so a request gets the same answer whenever it is sent,
  in any order. An acceptability request passes with probability σ(strength + 1) (logit scale).
* **Faults** (optional, ``faults``): each distinct request draws at most one fault, with the given
  rates, from the same hash; the fault hits its *first* attempt only, so a retry — the client's
  own, or rerunning ``planner judge`` for ``context`` — is answered normally. Faults: ``429``
  (with ``Retry-After: 1``), ``500``, ``503``, ``malformed`` (a 200 whose body is not JSON),
  ``context`` (400 ``context_length_exceeded``, not retried by planner), ``refusal``
  (``message.refusal``), ``length`` (``finish_reason: "length"`` before a verdict).

Usage counts are ``len(user text) // 4`` prompt and ``len(answer) // 4 + 1`` completion tokens.
``POST /shutdown`` stops the server (it listens on the loopback interface only).
"""

from __future__ import annotations

import hashlib
import json
import math
import re
import threading
from collections.abc import Callable
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Self

import numpy as np

from planner.errors import DataError, UsageError, quote

HOST = "127.0.0.1"
FAULTS = ("429", "500", "503", "malformed", "context", "refusal", "length")
MATCH_CHARS = 64
_SIDE = re.compile(r"\[The Start of Assistant ([AB])'s Answer\]\n(.*?)\n\[The End of Assistant \1's Answer\]",
                   re.DOTALL)
_SINGLE = re.compile(r"\[The Start of the Response\]\n(.*?)\n\[The End of the Response\]", re.DOTALL)


@dataclass(frozen=True)
class JudgeRule:
    """The server's judge: hidden strengths (Elo, mean 0) per system, noise, faults; see the module docstring."""

    systems: tuple[str, ...]
    elo: tuple[float, ...]
    tie_rate: float = 0.15
    position: float = 0.3
    flip: float = 0.0
    seed: int = 0
    faults: tuple[tuple[str, float], ...] = ()

    def ranking(self) -> str:
        order = sorted(zip(self.elo, self.systems), key=lambda t: (-t[0], t[1]))
        return ", ".join(f"{s} {e:+.0f}" for e, s in order)

    def describe(self) -> str:
        faults = ", ".join(f"{f} {r:g}" for f, r in self.faults) or "none"
        return (f"hidden strengths (Elo): {self.ranking()}; ties {self.tie_rate:g} between equals, left answer "
                f"{self.position:+g} logit, flips {self.flip:g}; faults (first attempt of a request): {faults}")


def parse_faults(text: str | None) -> tuple[tuple[str, float], ...]:
    """``"429=0.1,context=0.02"`` → ``(("429", 0.1), ("context", 0.02))``; rates sum to at most 1."""
    if not text:
        return ()
    out = []
    for part in str(text).split(","):
        name, _, rate = part.strip().partition("=")
        try:
            r = float(rate)
        except ValueError:
            r = math.nan
        if name not in FAULTS or not 0 <= r <= 1:
            raise UsageError(f"`faults`: {quote(part.strip())} must be FAULT=RATE with FAULT one of "
                             f"{', '.join(FAULTS)} and RATE in [0, 1]", parameters=("faults",))
        out.append((name, r))
    if sum(r for _, r in out) > 1 + 1e-12:
        raise UsageError(f"`faults`: the rates sum to {sum(r for _, r in out):g}; at most 1",
                         parameters=("faults",))
    return tuple(out)


def read_responses(path) -> dict[str, tuple[str, str]]:
    """``{text: (prompt, system)}`` from a responses file (JSONL or CSV: ``prompt``, ``system``, ``text``)."""
    from planner.formats.reading import iter_table

    path = Path(path)
    if not path.is_file():
        raise DataError(f"{path}: responses file not found", parameters=("responses",))
    texts, problems = {}, []
    for line, row, problem in iter_table(path):
        if problem or row is None or not all(isinstance(row.get(k), str) and row.get(k)
                                             for k in ("prompt", "system", "text")):
            problems.append(problem or f"{path.name}:{line}: expected prompt, system and text")
            continue
        texts[row["text"]] = (row["prompt"], row["system"])
    if problems:
        raise DataError(f"{path}: {len(problems):,} row(s) are not responses", problems[:20])
    if len({s for _, s in texts.values()}) < 2:
        raise DataError(f"{path}: responses of at least two systems are needed")
    return texts


def make_rule(systems, *, strengths: str | None = None, spread: float = 400.0, seed: int = 0,
              tie_rate: float = 0.15, position: float = 0.3, flip: float = 0.0,
              faults: str | None = None) -> JudgeRule:
    """The rule for ``systems``: ``strengths`` ``"a=120,b=-40"`` (Elo; the rest 0), else a seeded spread."""
    systems = tuple(systems)
    fault_rates = check_rule_options(seed=seed, spread=spread, tie_rate=tie_rate, position=position, flip=flip,
                                     faults=faults)
    if strengths:
        elo = dict.fromkeys(systems, 0.0)
        for part in strengths.split(","):
            name, _, v = part.strip().partition("=")
            try:
                value = float(v)
            except ValueError:
                value = math.nan
            if name not in elo or not math.isfinite(value) or abs(value) > 5000:
                raise UsageError(f"`strengths`: {quote(part.strip())} must be SYSTEM=ELO with SYSTEM one of "
                                 f"{', '.join(systems)} and |ELO| <= 5000", parameters=("strengths",))
            elo[name] = value
        values = np.array([elo[s] for s in systems])
    else:
        order = np.random.default_rng(seed).permutation(len(systems))
        values = np.empty(len(systems))
        values[order] = np.linspace(spread / 2, -spread / 2, len(systems))
    values = values - values.mean()
    return JudgeRule(systems, tuple(float(x) for x in values), tie_rate, position, flip, seed, fault_rates)


def check_rule_options(*, seed, spread, tie_rate, position, flip, faults) -> tuple[tuple[str, float], ...]:
    """The rule's options checked (one-line :class:`UsageError`); returns the parsed faults."""
    from planner import limits

    limits.check_seed("seed", seed)
    limits.check_float("spread", spread, 0, 5000)
    limits.check_float("tie_rate", tie_rate, 0, 1, high_open=True)
    limits.check_float("position", position, -10, 10)
    limits.check_float("flip", flip, 0, 0.5)
    return parse_faults(faults)


def system_matcher(texts: dict[str, tuple[str, str]]) -> Callable[[str], str | None]:
    """Answer text → system: exact, else a unique first or last :data:`MATCH_CHARS` characters."""
    heads: dict[str, set] = {}
    tails: dict[str, set] = {}
    for t, (_, s) in texts.items():
        heads.setdefault(t[:MATCH_CHARS], set()).add(s)
        tails.setdefault(t[-MATCH_CHARS:], set()).add(s)

    def find(text: str) -> str | None:
        if text in texts:
            return texts[text][1]
        for table, key in ((heads, text[:MATCH_CHARS]), (tails, text[-MATCH_CHARS:])):
            hit = table.get(key, set())
            if len(hit) == 1:
                return next(iter(hit))
        return None

    return find


def _uniform(seed: int, text: str, salt: str) -> float:
    h = hashlib.sha256(f"{seed}:{salt}:".encode() + text.encode("utf-8", "surrogatepass")).digest()
    return int.from_bytes(h[:8], "big") / 2.0 ** 64


def rule_answer(rule: JudgeRule, system_of: Callable[[str], str | None]) -> Callable[[str], str]:
    """The judge's ``answer(user_text) -> str`` for ``rule`` (see the module docstring)."""
    from planner.model import bt
    from planner.simulation.judge import Judge
    from planner.simulation.truth import Truth

    truth = Truth(rule.systems, np.asarray(rule.elo) / bt.ELO_SCALE)
    judge = Judge(tie_rate=rule.tie_rate, position=rule.position, flip=rule.flip)
    idx = {s: i for i, s in enumerate(rule.systems)}

    def answer(text: str) -> str:
        rng = np.random.default_rng([rule.seed, int(hashlib.sha256(text.encode("utf-8", "surrogatepass"))
                                                    .hexdigest()[:12], 16)])
        single = _SINGLE.search(text)
        if single is not None and not _SIDE.search(text):
            s = system_of(single.group(1))
            if s not in idx:
                return "I cannot tell who wrote this response."
            ok = rng.random() < 1.0 / (1.0 + math.exp(-(truth.strengths[idx[s]] + 1.0)))
            return "The response answers the question.\n[[PASS]]" if ok else "Reason: accuracy\n[[FAIL]]"
        sides = dict(_SIDE.findall(text))
        left, right = system_of(sides.get("A", "")), system_of(sides.get("B", ""))
        if left not in idx or right not in idx:
            return "I cannot tell these responses apart.\nverdict: invalid"
        out = int(judge.judge(truth, np.array([idx[left]]), np.array([idx[right]]), rng)[0])
        return "Reason: accuracy\n" + ("[[A]]", "[[B]]", "[[C]]")[out]

    return answer


def rule_faults(rule: JudgeRule) -> Callable[[str, int], str | None]:
    """``fault(user_text, attempt)``: the request's fault on its first attempt (``attempt`` 1), else None."""
    def fault(text: str, attempt: int) -> str | None:
        if attempt != 1 or not rule.faults:
            return None
        u, acc = _uniform(rule.seed, text, "fault"), 0.0
        for name, rate in rule.faults:
            acc += rate
            if u < acc:
                return name
        return None

    return fault


def user_text(body: dict) -> str:
    """The user messages of a chat-completions body, joined (what the judge reads)."""
    msgs = body.get("messages") if isinstance(body, dict) else None
    return "\n".join(m.get("content") or "" for m in msgs or () if isinstance(m, dict) and m.get("role") == "user"
                     and isinstance(m.get("content"), str))


def completion(body: dict, reply: str | None, n: int, *, finish: str = "stop", refusal: str | None = None) -> dict:
    """A ``chat.completion`` object (the shape of ``openai.types.chat.ChatCompletion``)."""
    text = user_text(body)
    done = len(reply or refusal or "") // 4 + 1
    return {"id": f"chatcmpl-local-{n}", "object": "chat.completion", "created": 0, "model": body.get("model"),
            "choices": [{"index": 0, "finish_reason": finish, "logprobs": None,
                         "message": {"role": "assistant", "content": reply, "refusal": refusal}}],
            "usage": {"prompt_tokens": len(text) // 4, "completion_tokens": done,
                      "total_tokens": len(text) // 4 + done}}


def _error(status: int, code: str, message: str, kind: str = "invalid_request_error") -> tuple[int, dict]:
    return status, {"error": {"message": message, "type": kind, "param": None, "code": code}}


def fault_response(fault: str, body: dict, n: int) -> tuple[int, dict | bytes, dict]:
    """``(status, body, headers)`` of an injected fault."""
    if fault == "429":
        return (*_error(429, "rate_limit_exceeded", "Rate limit reached (injected)", "requests"), {"Retry-After": "1"})
    if fault in ("500", "503"):
        return (*_error(int(fault), "server_error", "The server had an error (injected)", "server_error"), {})
    if fault == "malformed":
        return 200, b"<html>upstream hiccup (injected)</html>", {}
    if fault == "context":
        return (*_error(400, "context_length_exceeded", "This model's maximum context length was exceeded "
                        "(injected)"), {})
    if fault == "refusal":
        return 200, completion(body, None, n, refusal="I can't help with comparing these responses."), {}
    return 200, completion(body, "Both responses address the question, but the first one", n, finish="length"), {}


class JudgeServer:
    """``with JudgeServer(answer, fault) as srv: srv.base_url`` — a threaded server on 127.0.0.1.

    ``answer(user_text) -> str`` judges a request; ``fault(user_text, attempt) -> name | None``
    injects a fault (``attempt`` counts the requests with that text, from 1). ``port`` 0 takes a
    free port. The socket is bound when the object is made, so a client can connect (and queue)
    before :meth:`serve_forever` runs.
    """

    def __init__(self, answer: Callable[[str], str], fault: Callable[[str, int], str | None] | None = None,
                 *, port: int = 0):
        self.answer, self.fault = answer, fault
        self.calls, self._lock = 0, threading.Lock()
        self._seen: dict[object, int] = {}
        try:
            self._httpd = ThreadingHTTPServer((HOST, port), _handler(self))
        except OSError as exc:
            raise UsageError(f"`port` ({port}) cannot be used on {HOST}: {exc.strerror or exc}",
                             parameters=("port",)) from None
        self._httpd.daemon_threads = True
        self.port = self._httpd.server_address[1]
        self.base_url = f"http://{HOST}:{self.port}/v1"
        self._thread: threading.Thread | None = None

    def serve_forever(self) -> None:
        self._httpd.serve_forever()

    def respond(self, body: dict) -> tuple[int, dict | bytes, dict]:
        text = user_text(body)
        with self._lock:
            self.calls += 1
            n = self.calls
            key = hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()
            self._seen[key] = attempt = self._seen.get(key, 0) + 1
        fault = self.fault(text, attempt) if self.fault is not None else None
        if fault is not None:
            return fault_response(fault, body, n)
        return 200, completion(body, self.answer(text), n), {}

    def stop(self) -> None:
        """Stop serving (from another thread, e.g. the ``/shutdown`` handler)."""
        threading.Thread(target=self._httpd.shutdown, daemon=True).start()

    def close(self) -> None:
        self._httpd.server_close()

    def __enter__(self) -> Self:
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()


def _handler(server: JudgeServer):
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args):
            pass

        def do_GET(self):
            if self.path.rstrip("/") == "/v1/models":
                return self._send(200, {"object": "list", "data": [
                    {"id": "any", "object": "model", "created": 0, "owned_by": "planner judge-server"}]})
            self._send(*_error(404, "not_found", f"no route GET {self.path[:80]}"))

        def do_POST(self):
            raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            if self.path == "/shutdown":
                self._send(200, {"stopped": True})
                return server.stop()
            if self.path != "/v1/chat/completions":
                return self._send(*_error(404, "not_found", f"this local judge answers POST /v1/chat/completions "
                                          f"only (no {self.path[:80]}; drop --batch-api)"))
            try:
                body = json.loads(raw or b"{}")
            except ValueError:
                body = None
            if not isinstance(body, dict):
                return self._send(*_error(400, "invalid_json", "the request body is not a JSON object"))
            self._send(*server.respond(body))

        def _send(self, status: int, obj, headers: dict | None = None) -> None:
            data = obj if isinstance(obj, bytes) else json.dumps(obj).encode()
            self.send_response(status)
            self.send_header("Content-Type", "text/html" if isinstance(obj, bytes) else "application/json")
            self.send_header("Content-Length", str(len(data)))
            for k, v in (headers or {}).items():
                self.send_header(k, v)
            self.end_headers()
            self.wfile.write(data)

    return Handler
