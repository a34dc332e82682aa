"""`planner judge`: send a recorded judge batch to an OpenAI-compatible endpoint and ingest the answers."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from .app import app
from .common import call, err, message, out, print_json, warn


def judge_progress(disable: bool = False):
    """A progress callback for :func:`planner.workflows.judge_run.judge_batch` that prints one status line on stderr."""
    from .progress import due

    console = err()
    state: dict[str, str | None] = {"last": None}
    tick = due()

    def show(ev: dict) -> None:
        if disable:
            return
        if ev.get("phase") == "batch":
            line = (f"Batch API job {ev['remote_id']}: {ev['status']} · {ev['completed']}/{ev['total']} done"
                    + (f", {ev['failed']} failed" if ev.get("failed") else ""))
        else:
            line = (f"judged {ev['done']}/{ev['total']} · answered {ev['answered']}, failed {ev['failed']}"
                    + (f" · spent ${ev['spent']:.4f}" if ev.get("spent") else ""))
        if line != state["last"]:
            state["last"] = line
            if console.is_terminal:
                console.print(line, markup=False, end="\r")
            elif ev.get("phase") == "batch" or ev["done"] == ev["total"] or tick():
                console.print(line, markup=False)

    return show


@app.command("judge")
def judge_cmd(
    study: Annotated[Path, typer.Argument(help="Study directory.", metavar="STUDY")],
    model: Annotated[str, typer.Option(help="Judge model name (body.model), e.g. gpt-4o.")] = "",
    batch: Annotated[int | None, typer.Option(help="Batch to judge (default: the newest live batch).", metavar="N")] = None,
    base_url: Annotated[str | None, typer.Option(help="OpenAI-compatible endpoint (default $OPENAI_BASE_URL or OpenAI).")] = None,
    api_key_env: Annotated[str, typer.Option(help="Environment variable holding the API key (never stored).")] = "OPENAI_API_KEY",
    batch_api: Annotated[bool, typer.Option("--batch-api", help="Send through the Batch API (upload, create, poll, download).")] = False,
    concurrency: Annotated[int, typer.Option(help="Direct chat completions in flight at once.")] = 4,
    both_orders: Annotated[bool, typer.Option(help="Require each comparison in both positions (batch written with --both-orders).")] = False,
    price_in: Annotated[float | None, typer.Option(help="USD per 1M prompt tokens.")] = None,
    price_out: Annotated[float | None, typer.Option(help="USD per 1M completion tokens.")] = None,
    max_cost: Annotated[float | None, typer.Option(help="Stop before the study's spend on this model exceeds USD.")] = None,
    timeout: Annotated[float, typer.Option(help="Seconds per HTTP request, body included (a total deadline).")] = 120.0,
    poll_interval: Annotated[float, typer.Option(help="Longest pause between Batch API polls, seconds.")] = 30.0,
    seed: Annotated[int, typer.Option(help="Seed of the retry jitter (0 <= seed <= 2**63 - 1).")] = 0,
    dry_run: Annotated[bool, typer.Option(help="Count requests, cached answers and (with --price-in/--price-out) the estimated cost; send nothing.")] = False,
    json_out: Annotated[bool, typer.Option("--json", help="Print the result as one JSON document.")] = False,
) -> None:
    """Send a batch's judge requests to an OpenAI-compatible endpoint (OpenAI, Azure, vLLM, Ollama …) and ingest.

    Answers are cached in the study as they arrive: rerunning after Ctrl-C or a
    crash sends only what is missing (nothing is paid twice). Failed requests
    leave their items unanswered; rerun to ask again. Needs
    pip install 'planner[judge]'.

    Example: planner judge my-study --model gpt-4o-mini --concurrency 8 --price-in 0.15 --price-out 0.6 --max-cost 2

    Local server: planner judge my-study --model llama3 --base-url http://localhost:11434/v1
    """
    from planner.services.judging import JudgeOptions, graceful_interrupt
    from planner.workflows.judge_run import judge_batch

    opts = call(JudgeOptions, model=model, base_url=base_url, api_key_env=api_key_env,
                transport="batch" if batch_api else "direct", concurrency=concurrency, both_orders=both_orders,
                price_in=price_in, price_out=price_out, max_cost=max_cost, timeout=timeout,
                poll_interval=poll_interval, seed=seed, dry_run=dry_run)
    with graceful_interrupt() as stop:
        result = call(judge_batch, study, opts, batch=batch, progress=judge_progress(json_out), stop=stop)
    for note in result.notes:
        warn(note)
    if json_out:
        print_json(result)
    else:
        render_judge(result)
    raise typer.Exit(judge_exit_code(result))


def judge_exit_code(r) -> int:
    """130 after Ctrl-C (as a shell reports an interrupted command); 1 when nothing sent was answered."""
    if r.interrupted:
        return 130
    if r.sent and not r.answered:
        message(f"error: none of the {r.sent} request(s) sent was answered; check the endpoint, then run the same "
                "command again (nothing answered is lost or paid twice)")
        return 1
    return 0


def render_judge(r) -> None:
    o = out()
    head = "Dry run (nothing sent)" if r.dry_run else f"Batch {r.batch_id} judged by {r.model}"
    o.print(f"{head}: {r.requests} request(s); {r.judged_before} already judged, {r.cached} from the cache, "
            f"{r.sent} sent ({r.answered} answered, {r.failed} failed), {r.not_sent} not sent.", markup=False)
    if r.estimated_usd is not None and r.dry_run:
        o.print(f"Estimated cost of the requests to send: ${r.estimated_usd:.4f}.", markup=False)
    elif r.dry_run:
        o.print("No cost estimate: give --price-in and --price-out (USD per 1M tokens; planner ships no price "
                "list).", markup=False)
    tokens = f"{r.prompt_tokens:,} prompt + {r.completion_tokens:,} completion tokens"
    cost = f", ${r.cost_usd:.4f}" if r.cost_usd is not None else ""
    spent = f" (study total for {r.model}: ${r.spent_usd:.4f})" if r.spent_usd is not None else ""
    if not r.dry_run:
        o.print(f"This run: {tokens}{cost}{spent}.", markup=False)
    if r.ingest:
        o.print(f"Ingested: {r.ingest}.", markup=False)
    if r.interrupted:
        message("interrupted: what arrived is cached and stored; rerun the same command to continue")
    if r.output:
        message(f"wrote {r.output}")
