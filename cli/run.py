"""`planner run`: the active loop unattended (next-batch → judge → ingest → refit) until settled or budget."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Annotated

import typer

from cli.app import app
from cli.common import call, err, message, out, print_json, warn

STOP_TEXT = {
    "settled": "the ranking is settled",
    "budget": "the judgment budget is reached",
    "cost": "the cost cap is reached",
    "interrupted": "interrupted (Ctrl-C); rerun the same command to continue",
    "exhausted": "no comparison is left to issue",
    "no-answers": "the judge answered nothing in the last round",
}


def run_progress(disable: bool = False):
    """Progress lines on stderr: one per round, and the judge's progress within a round."""
    from cli.judge import judge_progress

    inner = judge_progress(disable)
    console = err()

    def show(ev: dict) -> None:
        if disable:
            return
        if ev.get("phase") != "round":
            inner(ev)
            return
        spent = f" · spent ${ev['spent']:.4f}" if ev.get("spent") is not None else ""
        unc = ev.get("uncertainty")
        unc = f" · uncertainty left {unc:.3g}" if unc is not None and not math.isnan(unc) else ""
        console.print(f"round {ev['round']} (batch {ev['batch']}) · judgments {ev['used']}/{ev['budget']}{spent}"
                      f"{unc} · top-3: {', '.join(ev['top3'])}", markup=False)

    return show


@app.command("run")
def run_cmd(
    study: Annotated[Path, typer.Argument(help="Study directory.", metavar="STUDY")],
    judge_model: Annotated[str, typer.Option(help="Judge model name, e.g. gpt-4o.")] = "",
    budget: Annotated[int, typer.Option(help="Judgments to spend at most (items issued to this judge, QC included).")] = 0,
    batch_size: Annotated[int, typer.Option(help="Planned comparisons per round.")] = 20,
    until: Annotated[str, typer.Option(help="settled (stopping advice, budget or cost) | budget.")] = "settled",
    max_cost: Annotated[float | None, typer.Option(help="Stop before the study's spend on this judge exceeds USD.")] = None,
    price_in: Annotated[float | None, typer.Option(help="USD per 1M prompt tokens.")] = None,
    price_out: Annotated[float | None, typer.Option(help="USD per 1M completion tokens.")] = None,
    base_url: Annotated[str | None, typer.Option(help="OpenAI-compatible endpoint (default $OPENAI_BASE_URL or OpenAI).")] = None,
    api_key_env: Annotated[str, typer.Option(help="Environment variable holding the API key (never stored).")] = "OPENAI_API_KEY",
    batch_api: Annotated[bool, typer.Option("--batch-api", help="Judge each round through the Batch API.")] = False,
    concurrency: Annotated[int, typer.Option(help="Direct chat completions in flight at once.")] = 4,
    both_orders: Annotated[bool, typer.Option(help="Issue and judge every comparison in both positions.")] = False,
    strategy: Annotated[str, typer.Option(help="active | round-robin | random | anchor | swiss | arena.")] = "active",
    objective: Annotated[str, typer.Option(help="active: ranking | entropy | variance | anchor | top-k.")] = "ranking",
    timeout: Annotated[float, typer.Option(help="Seconds per HTTP request.")] = 120.0,
    poll_interval: Annotated[float, typer.Option(help="Longest pause between Batch API polls, seconds.")] = 30.0,
    json_out: Annotated[bool, typer.Option("--json", help="Print the result as one JSON document.")] = False,
) -> None:
    """Run the active loop unattended: next-batch → judge → ingest → refit, until settled, budget or cost cap.

    Progress (round, judgments, spend, expected uncertainty left, current
    top-3) goes to stderr. Ctrl-C finishes the current step cleanly; rerunning
    the same command continues where it stopped, and nothing already answered
    is paid again. Needs pip install 'planner[judge]'.

    Example: planner run my-study --judge-model gpt-4o-mini --budget 500 --batch-size 40 --price-in 0.15 --price-out 0.6 --max-cost 5
    """
    from planner.judge_run import JudgeOptions, graceful_interrupt
    from planner.run import RunOptions, run_loop

    opts = JudgeOptions(model=judge_model, base_url=base_url, api_key_env=api_key_env,
                        transport="batch" if batch_api else "direct", concurrency=concurrency,
                        price_in=price_in, price_out=price_out, max_cost=max_cost, timeout=timeout,
                        poll_interval=poll_interval)
    ropts = RunOptions(budget=budget, batch_size=batch_size, until=until, both_orders=both_orders,
                       strategy=strategy, objective=objective)
    with graceful_interrupt() as stop:
        result = call(run_loop, study, opts, ropts, progress=run_progress(json_out), stop=stop)
    for note in result.notes:
        warn(note)
    if json_out:
        print_json(result)
        return
    o = out()
    o.print(f"Stopped: {STOP_TEXT.get(result.stopped, result.stopped)}.", markup=False)
    if result.advice:
        o.print(f"Advice: {result.advice}.", markup=False)
    spent = f", ${result.spent_usd:.4f} spent" if result.spent_usd is not None else ""
    o.print(f"{len(result.rounds)} round(s) now; {result.judgments_used} of {result.budget} judgments used{spent}.",
            markup=False)
    o.print(f"Current top-3: {', '.join(result.top3)}.", markup=False)
    if result.stopped == "interrupted":
        message("rerun the same command to continue")
