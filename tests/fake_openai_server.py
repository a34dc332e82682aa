"""A local OpenAI-compatible HTTP server for the judge tests (stdlib, one thread, 127.0.0.1, free port).

Implements what planner uses, in the shapes of the OpenAI API reference and of
the installed ``openai`` SDK's types (``openai.types.chat.ChatCompletion``,
``openai.types.FileObject``, ``openai.types.Batch``, batch output/error lines
as in the Batch API guide):

* ``POST /v1/chat/completions``
* ``POST /v1/files`` (multipart: ``purpose``, ``file``), ``GET /v1/files/{id}``,
  ``GET /v1/files/{id}/content``
* ``POST /v1/batches``, ``GET /v1/batches/{id}`` (each retrieve advances
  ``validating → in_progress → completed``)

The judge is deterministic: each response carries ``quality=<number>`` and the
judge prefers the higher one with Bradley–Terry probability
``1 / (1 + exp(-(q_left - q_right)))``, the draw taken from a hash of the request
text (same text, same answer). Faults are injected per request:

* ``server.script``: a list of fault names consumed by successive chat
  requests (``None`` = answer normally);
* ``server.rule(text) -> fault | None``: a fault chosen from the request text
  (used for batch lines too).

Fault names: ``429`` (with ``Retry-After: <server.retry_after>``), ``500``,
``503``, ``timeout`` (sleeps ``server.slow_s`` before answering), ``malformed``
(200 with a non-JSON body), ``refusal`` (``message.refusal`` set),
``length`` (``finish_reason: "length"``, no verdict), ``context`` (400
``context_length_exceeded``), ``expired`` (batch only: ``batch_expired``
error line), ``batch_fail`` (rule on the first line: the batch fails validation).
"""

from __future__ import annotations

import hashlib
import json
import math
import re
import threading
import time
from email.parser import BytesParser
from email.policy import HTTP
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

QUALITY = re.compile(r"quality=(-?\d+(?:\.\d+)?)")


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


def _user_text(body: dict) -> str:
    return "\n".join(m.get("content") or "" for m in body.get("messages", []) if m.get("role") == "user")


def completion(body: dict, fault: str | None = None, n: int = 0) -> dict:
    text = _user_text(body)
    answer = judge_text(text)
    finish, refusal = "stop", None
    if fault == "refusal":
        answer, refusal = None, "I can't help with comparing these responses."
    elif fault == "length":
        answer, finish = "Both responses address the question, but the first one", "length"
    return {"id": f"chatcmpl-{n}", "object": "chat.completion", "created": 1_700_000_000 + n,
            "model": body.get("model"), "system_fingerprint": "fp_fake",
            "choices": [{"index": 0, "finish_reason": finish, "logprobs": None,
                         "message": {"role": "assistant", "content": answer, "refusal": refusal}}],
            "usage": {"prompt_tokens": len(text) // 4 + 20, "completion_tokens": 12,
                      "total_tokens": len(text) // 4 + 32}}


def _error(code: str, message: str, type_: str = "invalid_request_error") -> dict:
    return {"error": {"message": message, "type": type_, "param": None, "code": code}}


class FakeOpenAI:
    """Start with ``with FakeOpenAI() as srv: srv.base_url``; ``srv.hits`` counts requests per route."""

    def __init__(self):
        self.script: list = []
        self.rule = lambda text: None
        self.retry_after = "2"
        self.slow_s = 1.0
        self.hits: dict[str, int] = {}
        self.bodies: list[dict] = []
        self.files: dict[str, dict] = {}
        self.batches: dict[str, dict] = {}
        self.lock = threading.Lock()
        self._n = 0
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self.server.daemon_threads = True
        self.base_url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"
        self._thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self.server.shutdown()
        self.server.server_close()

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

    def chat(self, body: dict):
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
        if fault == "timeout":
            time.sleep(self.slow_s)
        if fault == "malformed":
            return 200, {}, b'{"id": "chatcmpl-broken", "choices": [tr'
        return 200, {}, completion(body, fault, n)

    def new_file(self, data: bytes, purpose: str, name: str) -> dict:
        with self.lock:
            fid = f"file-{len(self.files) + 1}"
            self.files[fid] = {"data": data, "meta": {"id": fid, "object": "file", "bytes": len(data),
                                                      "created_at": 1_700_000_000, "filename": name,
                                                      "purpose": purpose, "status": "processed"}}
        return self.files[fid]["meta"]

    def new_batch(self, req: dict) -> dict:
        bid = f"batch_{len(self.batches) + 1}"
        job = {"id": bid, "object": "batch", "endpoint": req.get("endpoint"), "errors": None,
               "input_file_id": req.get("input_file_id"), "completion_window": req.get("completion_window"),
               "status": "validating", "output_file_id": None, "error_file_id": None,
               "created_at": 1_700_000_000, "request_counts": {"total": 0, "completed": 0, "failed": 0},
               "metadata": req.get("metadata")}
        self.batches[bid] = job
        return job

    def advance(self, job: dict) -> dict:
        if job["status"] == "validating":
            job["status"] = "in_progress"
        elif job["status"] == "in_progress":
            self._run_batch(job)
        return job

    def _run_batch(self, job: dict) -> None:
        lines = [json.loads(x) for x in self.files[job["input_file_id"]]["data"].decode().splitlines() if x.strip()]
        out, err = [], []
        if lines and self.rule(_user_text(lines[0]["body"])) == "batch_fail":
            job.update(status="failed", errors={"object": "list", "data": [
                {"code": "invalid_request", "message": "The batch failed validation", "line": 1, "param": None}]})
            return
        for k, ln in enumerate(lines):
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
                out.append({"id": f"batch_req_{k}", "custom_id": cid, "error": None, "response": {
                    "status_code": 200, "request_id": f"req_{k}", "body": completion(ln["body"], fault, k)}})
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
                for k, v in (headers or {}).items():
                    self.send_header(k, v)
                self.end_headers()
                try:
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):  # the client timed out and left
                    pass

            def _count(self, route: str) -> None:
                with fake.lock:
                    fake.hits[route] = fake.hits.get(route, 0) + 1

            def do_POST(self):
                raw = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                if self.path == "/v1/chat/completions":
                    self._count("POST /v1/chat/completions")
                    status, headers, payload = fake.chat(json.loads(raw))
                    return self._send(status, payload, headers)
                if self.path == "/v1/files":
                    self._count("POST /v1/files")
                    msg = BytesParser(policy=HTTP).parsebytes(
                        b"Content-Type: " + self.headers["Content-Type"].encode() + b"\r\n\r\n" + raw)
                    parts = {p.get_param("name", header="content-disposition"): p for p in msg.iter_parts()}
                    data = parts["file"].get_payload(decode=True)
                    purpose = parts["purpose"].get_payload(decode=True).decode()
                    return self._send(200, fake.new_file(data, purpose, parts["file"].get_filename() or "f"))
                if self.path == "/v1/batches":
                    self._count("POST /v1/batches")
                    return self._send(200, fake.new_batch(json.loads(raw)))
                self._send(404, _error("not_found", f"no route {self.path}"))

            def do_GET(self):
                m = re.fullmatch(r"/v1/(files|batches)/([\w-]+)(/content)?", self.path)
                if not m:
                    return self._send(404, _error("not_found", f"no route {self.path}"))
                kind, oid, content = m.groups()
                self._count(f"GET /v1/{kind}" + ("/content" if content else ""))
                if kind == "batches":
                    job = fake.batches.get(oid)
                    return self._send(200, fake.advance(job)) if job else self._send(404, _error("not_found", oid))
                f = fake.files.get(oid)
                if f is None:
                    return self._send(404, _error("not_found", oid))
                return self._send(200, f["data"] if content else f["meta"])

        return Handler
