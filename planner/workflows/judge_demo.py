"""The demo's loop through the live judge path: a simulated judge behind a local OpenAI-compatible server.

:func:`run_demo_live` builds the same synthetic study as ``planner demo``
(:func:`planner.workflows.demo.build_demo_files`), starts :class:`SimulatedJudgeServer`
— a standard-library HTTP server on 127.0.0.1 (free port) answering
``POST /v1/chat/completions`` like an OpenAI endpoint — and runs
:func:`planner.workflows.run.run_loop` against it: next-batch → judge (real HTTP through
the ``openai`` SDK, cache, ledger) → ingest → refit, until settled or the budget.

The simulated judge reads the two answers out of planner's default pairwise
prompt, knows which system wrote each (the demo's texts), and answers
``[[A]]``/``[[B]]``/``[[C]]`` with Bradley–Terry–Davidson probabilities from the
demo's true strengths, with ties and a left-position bias like real LLM judges
(:class:`planner.simulation.judge.Judge`). Each answer's randomness comes from a numpy
Generator seeded by ``(seed, SHA-256 of the request text)``, so the same
request gets the same answer whatever the thread order.
"""

from __future__ import annotations

import hashlib
import json
import re
import threading
from collections.abc import Callable
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Self

import numpy as np


_SIDE = re.compile(r"\[The Start of Assistant ([AB])'s Answer\]\n(.*?)\n\[The End of Assistant \1's Answer\]",
                   re.DOTALL)


class SimulatedJudgeServer:
    """``with SimulatedJudgeServer(answer) as srv: srv.base_url`` — ``answer(user_text) -> str``."""

    def __init__(self, answer: Callable[[str], str]):
        self.answer, self.calls, self._lock = answer, 0, threading.Lock()
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))) or b"{}")
                with server._lock:
                    server.calls += 1
                if self.path != "/v1/chat/completions":
                    return self._send(404, {"error": {"message": "not found", "type": "invalid_request_error",
                                                      "code": "not_found"}})
                text = "\n".join(m.get("content") or "" for m in body.get("messages", []) if m.get("role") == "user")
                reply = server.answer(text)
                self._send(200, {"id": f"chatcmpl-sim-{server.calls}", "object": "chat.completion", "created": 0,
                                 "model": body.get("model"),
                                 "choices": [{"index": 0, "finish_reason": "stop", "logprobs": None,
                                              "message": {"role": "assistant", "content": reply, "refusal": None}}],
                                 "usage": {"prompt_tokens": len(text) // 4, "completion_tokens": len(reply) // 4 + 1,
                                           "total_tokens": len(text) // 4 + len(reply) // 4 + 1}})

            def _send(self, status: int, obj: dict) -> None:
                data = json.dumps(obj).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._httpd.daemon_threads = True
        self.base_url = f"http://127.0.0.1:{self._httpd.server_address[1]}/v1"
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True)

    def __enter__(self) -> Self:
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()


def simulated_answer(truth, judge, system_of: dict[str, str], seed: int) -> Callable[[str], str]:
    """The simulated judge's ``answer(user_text)`` (see the module docstring)."""
    idx = {s: i for i, s in enumerate(truth.systems)}

    def answer(text: str) -> str:
        sides = dict(_SIDE.findall(text))
        left, right = system_of.get(sides.get("A", "")), system_of.get(sides.get("B", ""))
        if left is None or right is None:
            return "I cannot tell these responses apart.\nverdict: invalid"
        rng = np.random.default_rng([seed, int(hashlib.sha256(text.encode()).hexdigest()[:12], 16)])
        out = int(judge.judge(truth, np.array([idx[left]]), np.array([idx[right]]), rng)[0])
        return "Reason: accuracy\n" + ("[[A]]", "[[B]]", "[[C]]")[out]

    return answer


@dataclass(frozen=True)
class LiveDemoResult:
    """The study, the loop's result (:class:`planner.workflows.run.RunResult`), HTTP calls served, and the truth."""

    path: str
    systems: tuple[str, ...]
    true_elo: tuple[float, ...]
    run: object
    http_calls: int


def run_demo_live(directory, *, n_systems: int = 6, n_prompts: int = 40, budget: int = 300, batch_size: int = 30,
                  seed: int = 0, force: bool = False, progress=None) -> LiveDemoResult:
    """Build the demo study in ``directory`` and run the active loop through a local judge server."""
    from planner.model import bt
    from planner.workflows.demo import build_demo_files
    from planner.workflows.judge_run import JudgeOptions
    from planner.workflows.run import RunOptions, run_loop
    from planner.simulation import Judge, Truth
    from planner.store.study import init_study

    from planner import limits
    from planner.workflows.demo import _check_demo_target

    limits.check_int("systems", n_systems, 2, 26)
    limits.check_int("prompts", n_prompts, 4, limits.MAX_DEMO_PROMPTS)
    limits.check_seed("seed", seed)
    directory = Path(directory)
    _check_demo_target(directory, force)  # the demo's own rule: never a study, --force only on a demo directory
    if directory.exists() and any(directory.iterdir()):
        import shutil

        shutil.rmtree(directory)
    directory.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(seed)
    systems, prompts, responses = build_demo_files(directory, n_systems, n_prompts, rng)
    elo = np.linspace(150, -150, n_systems)
    truth = Truth(tuple(systems), elo / bt.ELO_SCALE)
    system_of = {}
    for ln in responses.read_text(encoding="utf-8").splitlines():
        r = json.loads(ln)
        system_of[r["text"]] = r["system"]
    study = directory / "study"
    init_study(study, prompts_file=prompts, responses_file=responses, anchor=systems[0], seed=seed)
    answer = simulated_answer(truth, Judge(tie_rate=0.15, position=0.3), system_of, seed)
    with SimulatedJudgeServer(answer) as srv:
        res = run_loop(study, JudgeOptions(model="simulated-judge", base_url=srv.base_url, concurrency=4, seed=seed),
                       RunOptions(budget=budget, batch_size=batch_size), progress=progress)
        calls = srv.calls
    return LiveDemoResult(str(study), tuple(systems), tuple(float(x) for x in elo), res, calls)
