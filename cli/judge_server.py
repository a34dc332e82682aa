"""`planner judge-server`: a local OpenAI-compatible judge (127.0.0.1) for `planner judge` and `planner run`."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Annotated

import typer

from .app import app
from .common import call, err, fail, message, out

DEFAULT_PORT = 39567


@app.command("judge-server")
def judge_server_cmd(
    responses: Annotated[Path | None, typer.Argument(help="The responses file the study was made from (who wrote which answer).", metavar="RESPONSES")] = None,
    port: Annotated[int, typer.Option(help="Port on 127.0.0.1 (0: any free port).")] = DEFAULT_PORT,
    strengths: Annotated[str | None, typer.Option(help="Hidden strengths as SYSTEM=ELO,... (others 0); default: a seeded spread.")] = None,
    spread: Annotated[float, typer.Option(help="Elo from the strongest to the weakest system when --strengths is not given.")] = 400.0,
    ties: Annotated[float, typer.Option(help="Tie probability between equal systems.")] = 0.15,
    position: Annotated[float, typer.Option(help="Left-answer bias, logits.")] = 0.3,
    flip: Annotated[float, typer.Option(help="Probability that a decisive verdict is reversed.")] = 0.0,
    faults: Annotated[str | None, typer.Option(help="Injected faults FAULT=RATE,...: 429, 500, 503, malformed, context, refusal, length (first attempt of a request only).")] = None,
    seed: Annotated[int, typer.Option(help="Seed of the hidden order, the verdicts and the faults.")] = 0,
    detach: Annotated[bool, typer.Option("--detach", help="Serve in the background and return once it listens (stop it with --stop).")] = False,
    stop: Annotated[bool, typer.Option("--stop", help="Stop the judge server listening on --port.")] = False,
) -> None:
    """Serve a local OpenAI-compatible judge that judges by a stated rule: hidden strengths + noise.

    Each answer is matched to its system through RESPONSES; the verdict is drawn from a
    Bradley-Terry-Davidson model of hidden Elo strengths with ties, a left-position bias and
    optional flips, seeded by the request text (the same request, the same answer). --faults
    injects transport failures and unusable answers on a request's first attempt. Listens on
    127.0.0.1 only; no key needed. Rule in full: docs/guide.md, "A judge to try locally".

    Example: planner judge-server ex/vicuna80/responses.jsonl --detach

    then: planner judge my-study --model judge-x --base-url http://127.0.0.1:39567/v1
    """
    from planner.workflows.judge_server import start_judge_server, stop_judge_server

    if stop:
        call(stop_judge_server, port)
        message(f"stopped the judge server on 127.0.0.1:{port}")
        return
    from planner.errors import UsageError

    if responses is None:
        raise fail(UsageError("RESPONSES is required (the responses file the study was made from)"))
    if detach and not hasattr(os, "fork"):
        raise fail(UsageError("`detach` is not available on this system; run the server in another terminal",
                              parameters=("detach",)))
    st = call(start_judge_server, responses, port=port, strengths=strengths, spread=spread, seed=seed,
              tie_rate=ties, position=position, flip=flip, faults=faults, _flags={"tie_rate": "--ties"})
    srv = st.server
    head = (f"judge server on {srv.base_url} ({len(st.rule.systems)} systems, {st.responses:,} responses from "
            f"{responses}; seed {seed})")
    if detach:
        pid = _fork_server(srv)
        out().print(head, markup=False, soft_wrap=True)
        out().print(f"serving in the background as process {pid}; stop it with: planner judge-server --stop "
                    f"--port {srv.port}", markup=False, soft_wrap=True)
        err().print(st.rule.describe(), markup=False, soft_wrap=True)
        return
    out().print(f"{head}; Ctrl-C stops it", markup=False, soft_wrap=True)
    err().print(st.rule.describe(), markup=False, soft_wrap=True)
    try:
        srv.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        srv.close()
    message(f"served {srv.calls:,} request(s)")


def _fork_server(srv) -> int:
    """Fork: the child (its own session, stdio on /dev/null) serves the already bound socket; the parent returns."""
    sys.stdout.flush()
    sys.stderr.flush()
    pid = os.fork()
    if pid:
        srv.close()   # the child holds its own copy of the listening socket
        return pid
    try:
        os.setsid()
        null = os.open(os.devnull, os.O_RDWR)
        for fd in (0, 1, 2):
            os.dup2(null, fd)
        srv.serve_forever()
    finally:
        os._exit(0)
