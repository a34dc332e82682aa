"""`judge-server`: a local OpenAI-compatible judge to try `planner judge` and `planner run` without an account.

The server and its rule (who wrote what, the verdict's model, injected faults) are
:mod:`planner.connectors.judge_server`; this command reads the responses file, makes the rule from
the options, binds the server on 127.0.0.1, and stops a running one (``POST /shutdown``).
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from planner.connectors.judge_server import (
    HOST,
    JudgeRule,
    JudgeServer,
    check_rule_options,
    make_rule,
    read_responses,
    rule_answer,
    rule_faults,
    system_matcher,
)
from planner.errors import DataError


@dataclass(frozen=True)
class ServerStart:
    """A bound server (not yet serving) and the rule it judges by."""

    server: JudgeServer
    rule: JudgeRule
    responses: int


def start_judge_server(responses, *, port: int = 0, strengths: str | None = None, spread: float = 400.0,
                       seed: int = 0, tie_rate: float = 0.15, position: float = 0.3, flip: float = 0.0,
                       faults: str | None = None) -> ServerStart:
    """Read the responses, make the rule, bind the server on 127.0.0.1:``port``; the caller serves it."""
    from planner import limits

    limits.check_int("port", port, 0, 65535)
    check_rule_options(seed=seed, spread=spread, tie_rate=tie_rate, position=position, flip=flip, faults=faults)
    texts = read_responses(responses)
    systems = tuple(dict.fromkeys(s for _, s in texts.values()))
    rule = make_rule(systems, strengths=strengths, spread=spread, seed=seed, tie_rate=tie_rate,
                     position=position, flip=flip, faults=faults)
    server = JudgeServer(rule_answer(rule, system_matcher(texts)), rule_faults(rule), port=port)
    return ServerStart(server, rule, len(texts))


def stop_judge_server(port: int, *, timeout: float = 5.0) -> None:
    """Ask the judge server on 127.0.0.1:``port`` to stop (``POST /shutdown``)."""
    import urllib.error
    import urllib.request

    from planner import limits

    limits.check_int("port", port, 1, 65535)
    req = urllib.request.Request(f"http://{HOST}:{port}/shutdown", data=b"", method="POST")
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r:
            ok = json.loads(r.read() or b"{}").get("stopped") is True
    except (urllib.error.URLError, OSError, ValueError) as exc:
        raise DataError(f"no judge server answers on {HOST}:{port} ({getattr(exc, 'reason', exc)})",
                        parameters=("port",)) from None
    if not ok:
        raise DataError(f"the server on {HOST}:{port} is not a planner judge-server", parameters=("port",))
