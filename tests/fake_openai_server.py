"""A local OpenAI-compatible HTTP server for the judge tests (stdlib, threads, loopback, free port).

Implements what planner uses, in the shapes of the OpenAI API reference and of
the installed ``openai`` SDK's types (``openai.types.chat.ChatCompletion``,
``openai.types.FileObject``, ``openai.types.Batch``, batch output/error lines
as in the Batch API guide):

* ``POST /v1/chat/completions``
* ``POST /v1/files`` (multipart: ``purpose``, ``file``), ``GET /v1/files/{id}``,
  ``GET /v1/files/{id}/content``
* ``POST /v1/batches``, ``GET /v1/batches/{id}`` (each retrieve advances
  ``validating → in_progress → completed``), ``GET /v1/batches`` (newest first,
  ``limit`` and the ``after`` cursor, ``has_more``: the API's cursor paging)

The judge is deterministic: each response carries ``quality=<number>`` and the
judge prefers the higher one with Bradley–Terry probability
``1 / (1 + exp(-(q_left - q_right)))``, the draw taken from a hash of the request
text (same text, same answer). Faults are injected per chat request:

* ``server.script``: a list of fault names consumed by successive chat
  requests (``None`` = answer normally);
* ``server.rule(text) -> fault | None``: a fault chosen from the request text
  (used for batch lines too);

and per route (Batch API and files): ``server.route_faults["POST /v1/batches"]
= ["hang", ...]`` consumed by successive calls of that route (``GET
/v1/batches/{id}`` is the poll, ``GET /v1/files/content`` the download).

Chat faults: ``429`` (with ``Retry-After: <server.retry_after>``), ``500``,
``503``, ``timeout`` (sleeps ``server.slow_s`` before answering), ``malformed``
(200 with a non-JSON body), ``refusal``, ``length`` (cut off, no verdict),
``context`` (400 ``context_length_exceeded``), ``echo401``/``echo400``/``echo429``
(the error message repeats the ``Authorization`` header's key, and its first
and last characters the way OpenAI's "Incorrect API key provided" does),
``echo_answer`` (an answer whose text holds the key), ``redirect`` (307 to
``server.redirect_to``), ``dribble`` (a 200 body sent one byte every
``server.dribble_s`` s), ``deep`` (a 200 body nested 100,000 levels deep),
``usage_huge`` (10**30 tokens), ``usage_2_62`` (2**62 tokens), ``usage_none``,
``usage_negative``, ``surrogate`` (content with a lone ``\\ud800`` escape),
``think``/``think_open``/``reasoning_content`` (a reasoning model's answer: the
thinking weighs the *other* verdict token, then the final verdict follows —
``<think>…</think>answer``; ``…</think>answer`` as when the chat template
opened the tag; the thinking in ``message.reasoning_content``, as vLLM's
``--reasoning-parser deepseek_r1`` and DeepSeek's API return it), ``huge``
(a 50 MB answer). Batch lines: ``expired``, ``context``, ``batch_fail`` (rule on
the first line: the batch fails validation), ``dup_conflict`` (the output file
holds the line twice with different verdicts), ``huge``. Route faults: ``404``,
``401``, ``429``, ``500``, ``nonjson`` (a 200 HTML page), ``hang`` (the call
takes effect — a create creates the job — then the answer never comes until
``server.release`` is set). ``server.batch_api = False``: every Batch API and
files route answers 404, as chat-only servers (vLLM, Ollama, llama.cpp) do.
``server.serve_as``: the ``model`` the answers name (a dated snapshot, as OpenAI
answers), default the requested one.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
import time
from email.parser import BytesParser
from email.policy import HTTP
from http.server import BaseHTTPRequestHandler

from _loopback import LoopbackServer, write_body

QUALITY = re.compile(r"quality=(-?\d+(?:\.\d+)?)")
OTHER = {"[[A]]": "[[B]]", "[[B]]": "[[A]]", "[[PASS]]": "[[FAIL]]", "[[FAIL]]": "[[PASS]]"}


def judge_text(content: str) -> str:
    """The fake judge's answer to one user message (MT-bench tokens, as planner's template asks)."""
    qs = [float(q) for q in QUALITY.findall(content)]
    if "[The Start of the Response]" in content:  # acceptability
        return "Fine.\n[[PASS]]" if qs and qs[0] >= 0 else "Reason: accuracy\n[[FAIL]]"
    left = qs[0] if len(qs) > 0 else -5.0
    right = qs[1] if len(qs) > 1 else -5.0
    p_left = 1.0 / (1.0 + math.exp(-(left - right)))
    u = int(hashlib.sha256(content.encode()).hexdigest()[:8], 16) / 2 ** 32
    return "Reason: accuracy\n[[A]]" if u < p_left else "Reason: accuracy\n[[B]]"


def reasoning(answer: str) -> str:
    """A reasoning model's thinking before ``answer``: it weighs the other verdict token first."""
    final = answer.rsplit("\n", 1)[-1]
    return (f"Okay, let me compare the two responses. At first glance {OTHER.get(final, '[[C]]')} looks right: "
            f"the second one is longer.\nWait — the first one is more accurate. So the verdict should be {final}.")


def _user_text(body: dict) -> str:
    return "\n".join(m.get("content") or "" for m in body.get("messages", []) if m.get("role") == "user")


def completion(body: dict, fault: str | None = None, n: int = 0, serve_as: str | None = None,
               key: str = "") -> dict:
    text = _user_text(body)
    answer = judge_text(text)
    finish, refusal, extra = "stop", None, {}
    if fault == "refusal":
        answer, refusal = None, "I can't help with comparing these responses."
    elif fault == "length":
        answer, finish = "Both responses address the question, but the first one", "length"
    elif fault == "think":
        answer = f"<think>\n{reasoning(answer)}\n</think>\n\n{answer}"
    elif fault == "think_open":
        answer = f"{reasoning(answer)}\n</think>\n\n{answer}"
    elif fault == "reasoning_content":
        extra = {"reasoning_content": reasoning(answer)}
    elif fault == "echo_answer":
        answer = f"(your key is {key})\n{answer}"
    elif fault == "huge":
        answer = "x" * (50 * 1024 * 1024) + "\n" + answer
    usage = {"prompt_tokens": len(text) // 4 + 20, "completion_tokens": 12, "total_tokens": len(text) // 4 + 32}
    if fault == "usage_huge":
        usage = {"prompt_tokens": 10 ** 30, "completion_tokens": 10 ** 30, "total_tokens": 2 * 10 ** 30}
    elif fault == "usage_2_62":
        usage = {"prompt_tokens": 2 ** 62, "completion_tokens": 12, "total_tokens": 2 ** 62 + 12}
    elif fault == "usage_negative":
        usage = {"prompt_tokens": -5, "completion_tokens": -1, "total_tokens": -6}
    out = {"id": f"chatcmpl-{n}", "object": "chat.completion", "created": 1_700_000_000 + n,
           "model": serve_as or body.get("model"), "system_fingerprint": "fp_fake",
           "choices": [{"index": 0, "finish_reason": finish, "logprobs": None,
                        "message": {"role": "assistant", "content": answer, "refusal": refusal, **extra}}],
           "usage": usage}
    if fault == "usage_none":
        del out["usage"]
    return out


def _error(code: str, message: str, type_: str = "invalid_request_error") -> dict:
    return {"error": {"message": message, "type": type_, "param": None, "code": code}}


def _echo(key: str) -> str:
    return f"Incorrect API key provided: {key[:8]}{'*' * 12}{key[-4:]}. Your key was {key}."


class FakeOpenAI(LoopbackServer):
    """Start with ``with FakeOpenAI() as srv: srv.base_url``; ``srv.hits`` counts requests per route."""

    def __init__(self, host: str = "127.0.0.1"):
        self.script: list = []
        self.rule = lambda text: None
        self.route_faults: dict[str, list] = {}
        self.retry_after = "2"
        self.slow_s = 1.0
        self.dribble_s = 0.05
        self.redirect_to = ""
        self.serve_as: str | None = None
        self.batch_api = True
        self.hits: dict[str, int] = {}
        self.bodies: list[dict] = []
        self.auth: list[str] = []
        self.files: dict[str, dict] = {}
        self.batches: dict[str, dict] = {}
        self._n = 0
        super().__init__(host)
        self.base_url = f"http://{host}:{self.port}/v1"

    @property
    def chat_calls(self) -> int:
        return self.hits.get("POST /v1/chat/completions", 0)

    def total_calls(self) -> int:
        return sum(self.hits.values())

    # ------------------------------------------------------------ behaviour
    def _next_fault(self, body: dict):
        with self.lock:
            self._n += 1
            scripted = self.script.pop(0) if self.script else None
        return scripted or self.rule(_user_text(body)), self._n

    def route_fault(self, route: str):
        with self.lock:
            faults = self.route_faults.get(route)
            return faults.pop(0) if faults else None

    def chat(self, body: dict, key: str):
        """(status, headers, payload bytes or dict) for one chat request."""
        fault, n = self._next_fault(body)
        with self.lock:
            self.bodies.append(body)
        if fault == "429":
            return 429, {"Retry-After": self.retry_after}, _error("rate_limit_exceeded", "Rate limit reached",
                                                                  "requests")
        if fault in ("500", "503"):
            return int(fault), {}, _error("server_error", "The server had an error", "server_error")
        if fault == "context":
            return 400, {}, _error("context_length_exceeded", "This model's maximum context length is 8192 tokens")
        if fault in ("echo401", "echo400", "echo429"):
            headers = {"Retry-After": "0"} if fault == "echo429" else {}
            return int(fault[4:]), headers, _error("invalid_api_key", _echo(key))
        if fault == "redirect":
            return 307, {"Location": self.redirect_to}, b""
        if fault == "timeout":
            time.sleep(self.slow_s)
        if fault == "malformed":
            return 200, {}, b'{"id": "chatcmpl-broken", "choices": [tr'
        if fault == "deep":
            return 200, {}, b'{"choices": ' + b"[" * 100_000 + b"]" * 100_000 + b"}"
        if fault == "surrogate":
            text = json.dumps(completion(body, None, n, self.serve_as))
            return 200, {}, text.replace("[[A]]", "[[A]] \\ud800").replace("[[B]]", "[[B]] \\ud800").encode()
        payload = completion(body, fault, n, self.serve_as, key)
        if fault == "dribble":
            return 200, {"X-Dribble": "1"}, json.dumps(payload).encode()
        return 200, {}, payload

    def new_file(self, data: bytes, purpose: str, name: str) -> dict:
        with self.lock:
            fid = f"file-{len(self.files) + 1}"
            self.files[fid] = {"data": data, "meta": {"id": fid, "object": "file", "bytes": len(data),
                                                      "created_at": 1_700_000_000, "filename": name,
                                                      "purpose": purpose, "status": "processed"}}
        return self.files[fid]["meta"]

    def new_batch(self, req: dict) -> dict:
        with self.lock:
            bid = f"batch_{len(self.batches) + 1}"
            job = {"id": bid, "object": "batch", "endpoint": req.get("endpoint"), "errors": None,
                   "input_file_id": req.get("input_file_id"), "completion_window": req.get("completion_window"),
                   "status": "validating", "output_file_id": None, "error_file_id": None,
                   "created_at": int(time.time()), "request_counts": {"total": 0, "completed": 0, "failed": 0},
                   "metadata": req.get("metadata")}
            self.batches[bid] = job
        return job

    def list_batches(self, query: dict) -> dict:
        limit = int(query.get("limit", 20))
        jobs = sorted(self.batches.values(), key=lambda j: int(j["id"].split("_")[1]), reverse=True)
        if "after" in query:
            ids = [j["id"] for j in jobs]
            jobs = jobs[ids.index(query["after"]) + 1:] if query["after"] in ids else []
        page = jobs[:limit]
        return {"object": "list", "data": page, "first_id": page[0]["id"] if page else None,
                "last_id": page[-1]["id"] if page else None, "has_more": len(jobs) > limit}

    def advance(self, job: dict) -> dict:
        if job["status"] == "validating":
            job["status"] = "in_progress"
        elif job["status"] == "in_progress":
            self._run_batch(job)
        return job

    def _batch_line(self, k: int, ln: dict, out: list, err: list) -> None:
        cid, fault = ln["custom_id"], self.rule(_user_text(ln["body"]))
        with self.lock:
            self.bodies.append(ln["body"])
        if fault == "expired":
            err.append({"id": f"batch_req_{k}", "custom_id": cid, "response": None,
                        "error": {"code": "batch_expired", "message": "This request could not be executed "
                                                                      "before the completion window expired."}})
        elif fault == "context":
            err.append({"id": f"batch_req_{k}", "custom_id": cid, "error": None, "response": {
                "status_code": 400, "request_id": f"req_{k}",
                "body": _error("context_length_exceeded", "maximum context length is 8192 tokens")}})
        else:
            body = completion(ln["body"], fault, k, self.serve_as)
            out.append({"id": f"batch_req_{k}", "custom_id": cid, "error": None, "response": {
                "status_code": 200, "request_id": f"req_{k}", "body": body}})
            if fault == "dup_conflict":
                other = json.loads(json.dumps(out[-1]))
                msg = other["response"]["body"]["choices"][0]["message"]
                msg["content"] = msg["content"][:-5] + OTHER.get(msg["content"][-5:], "[[C]]")
                out.append(other)

    def _run_batch(self, job: dict) -> None:
        lines = [json.loads(x) for x in self.files[job["input_file_id"]]["data"].decode().splitlines() if x.strip()]
        out, err = [], []
        if lines and self.rule(_user_text(lines[0]["body"])) == "batch_fail":
            job.update(status="failed", errors={"object": "list", "data": [
                {"code": "invalid_request", "message": "The batch failed validation", "line": 1, "param": None}]})
            return
        for k, ln in enumerate(lines):
            self._batch_line(k, ln, out, err)
        dump = lambda rows: "".join(json.dumps(r) + "\n" for r in rows).encode()
        job["output_file_id"] = self.new_file(dump(out), "batch_output", "output.jsonl")["id"] if out else None
        job["error_file_id"] = self.new_file(dump(err), "batch_output", "errors.jsonl")["id"] if err else None
        expired = any(e.get("error") and e["error"]["code"] == "batch_expired" for e in err)
        job.update(status="expired" if expired else "completed",
                   request_counts={"total": len(lines), "completed": len(out), "failed": len(err)})

    # ------------------------------------------------------------ HTTP
    def _handler(self):
        fake = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):  # quiet
                pass

            def _send(self, status: int, payload, headers=None):
                data = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
                self.send_response(status)
                ctype = "application/jsonl" if isinstance(payload, bytes) and status == 200 and \
                    self.path.endswith("/content") else "application/json"
                self.send_header("Content-Type", ctype)
                self.send_header("Content-Length", str(len(data)))
                self.send_header("x-request-id", "req_fake")
                dribble = (headers or {}).pop("X-Dribble", None)
                for k, v in (headers or {}).items():
                    self.send_header(k, v)
                self.end_headers()
                write_body(self.wfile, data, fake.dribble_s if dribble else None)

            def _count(self, route: str) -> None:
                with fake.lock:
                    fake.hits[route] = fake.hits.get(route, 0) + 1
                    fake.auth.append(self.headers.get("Authorization") or "")

            def _key(self) -> str:
                return (self.headers.get("Authorization") or "").removeprefix("Bearer ")

            def _route_fault(self, route: str) -> bool:
                """Apply the next fault of ``route`` (True: answered here); "hang" is applied by the caller."""
                fault = fake.route_fault(route)
                if fault in ("404", "401", "429", "500"):
                    code = {"404": "not_found", "401": "invalid_api_key", "429": "rate_limit_exceeded",
                            "500": "server_error"}[fault]
                    self._send(int(fault), _error(code, f"{code} ({self._key()})"), {"Retry-After": "0"})
                    return True
                if fault == "nonjson":
                    self._send(200, b"<html><body>Gateway login</body></html>")
                    return True
                self._hang = fault == "hang"
                return False

            def _wait_released(self) -> None:
                fake.release.wait()

            def do_POST(self):
                raw = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                if self.path == "/v1/chat/completions":
                    self._count("POST /v1/chat/completions")
                    status, headers, payload = fake.chat(json.loads(raw), self._key())
                    return self._send(status, payload, headers)
                if self.path in ("/v1/files", "/v1/batches") and not fake.batch_api:
                    self._count(f"POST {self.path}")
                    return self._send(404, _error("not_found", f"Invalid URL (POST {self.path})"))
                if self.path == "/v1/files":
                    self._count("POST /v1/files")
                    if self._route_fault("POST /v1/files"):
                        return None
                    msg = BytesParser(policy=HTTP).parsebytes(
                        b"Content-Type: " + self.headers["Content-Type"].encode() + b"\r\n\r\n" + raw)
                    parts = {p.get_param("name", header="content-disposition"): p for p in msg.iter_parts()}
                    data = parts["file"].get_payload(decode=True)
                    purpose = parts["purpose"].get_payload(decode=True).decode()
                    return self._send(200, fake.new_file(data, purpose, parts["file"].get_filename() or "f"))
                if self.path == "/v1/batches":
                    self._count("POST /v1/batches")
                    if self._route_fault("POST /v1/batches"):
                        return None
                    job = fake.new_batch(json.loads(raw))
                    if self._hang:
                        self._wait_released()
                    return self._send(200, job)
                self._send(404, _error("not_found", f"no route {self.path}"))

            def do_GET(self):
                path, _, qs = self.path.partition("?")
                if not fake.batch_api:
                    self._count(f"GET {path}")
                    return self._send(404, _error("not_found", f"Invalid URL (GET {path})"))
                if path == "/v1/batches":
                    self._count("GET /v1/batches")
                    if self._route_fault("GET /v1/batches"):
                        return None
                    query = dict(p.split("=", 1) for p in qs.split("&") if "=" in p)
                    return self._send(200, fake.list_batches(query))
                m = re.fullmatch(r"/v1/(files|batches)/([\w-]+)(/content)?", path)
                if not m:
                    return self._send(404, _error("not_found", f"no route {self.path}"))
                kind, oid, content = m.groups()
                route = "GET /v1/batches/{id}" if kind == "batches" else f"GET /v1/files{'/content' if content else ''}"
                self._count(f"GET /v1/{kind}" + ("/content" if content else ""))
                if self._route_fault(route):
                    return None
                if self._hang:
                    self._wait_released()
                if kind == "batches":
                    job = fake.batches.get(oid)
                    return self._send(200, fake.advance(job)) if job else self._send(404, _error("not_found", oid))
                f = fake.files.get(oid)
                if f is None:
                    return self._send(404, _error("not_found", oid))
                return self._send(200, f["data"] if content else f["meta"])

        return Handler
