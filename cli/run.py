"""`planner run`: the active loop unattended (next-batch → judge → ingest → refit) until settled or budget."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Annotated

import typer

from .app import app
from .common import call, err, fail, message, out, print_json, warn

STOP_TEXT = {
    "settled": "the ranking is settled",
    "budget": "the judgment budget is reached",
    "cost": "the cost cap is reached",
    "interrupted": "interrupted (Ctrl-C); rerun the same command to continue",
    "exhausted": "no comparison is left to issue",
    "no-answers": "the judge answered nothing in the last round",
    "waiting": "annotators have not finished the round yet; rerun the same command to keep waiting",
}


def run_progress(disable: bool = False):
    """Progress lines on stderr: one per round, and the judge's progress within a round."""
    from .judge import judge_progress

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
    timeout: Annotated[float, typer.Option(help="Seconds per HTTP request, body included (a total deadline).")] = 120.0,
    poll_interval: Annotated[float, typer.Option(help="Longest pause between Batch API polls, seconds.")] = 30.0,
    annotators_via: Annotated[str | None, typer.Option("--annotators-via", help="label-studio: humans annotate instead of a judge; each round is pushed to Label Studio ($LABEL_STUDIO_URL, $LABEL_STUDIO_API_KEY) and waited for.")] = None,
    annotators: Annotated[str | None, typer.Option(help="With --annotators-via: annotator names, comma-separated (as next-batch --annotators).")] = None,
    per_annotator_projects: Annotated[bool, typer.Option("--per-annotator-projects", help="With --annotators-via: one Label Studio project per annotator.")] = False,
    wait_timeout: Annotated[float, typer.Option(help="With --annotators-via: seconds to wait for a round's annotations before stopping (rerun to keep waiting).")] = 3600.0,
    poll: Annotated[float, typer.Option(help="With --annotators-via: seconds between polls of Label Studio.")] = 30.0,
    json_out: Annotated[bool, typer.Option("--json", help="Print the result as one JSON document.")] = False,
) -> None:
    """Run the active loop unattended: next-batch → judge → ingest → refit, until settled, budget or cost cap.

    Progress (round, judgments, spend, expected uncertainty left, current
    top-3) goes to stderr. Ctrl-C finishes the current step cleanly; rerunning
    the same command continues where it stopped, and nothing already answered
    is paid again. Needs pip install 'planner[judge]'.

    Example: planner run my-study --judge-model gpt-4o-mini --budget 500 --batch-size 40 --price-in 0.15 --price-out 0.6 --max-cost 5
    """
    from planner.services.batch_round import RunOptions
    from planner.services.judging import JudgeOptions, graceful_interrupt
    from planner.workflows.run import run_loop

    if annotators_via is not None:
        ropts = call(RunOptions, budget=budget, batch_size=batch_size, until=until, both_orders=both_orders,
                     strategy=strategy, objective=objective)
        _run_humans(study, annotators_via, annotators, per_annotator_projects, wait_timeout, poll, ropts, json_out)
        return

    opts = call(JudgeOptions, model=judge_model, base_url=base_url, api_key_env=api_key_env,
                transport="batch" if batch_api else "direct", concurrency=concurrency, price_in=price_in,
                price_out=price_out, max_cost=max_cost, timeout=timeout, poll_interval=poll_interval,
                _flags={"model": "--judge-model"})
    ropts = call(RunOptions, budget=budget, batch_size=batch_size, until=until, both_orders=both_orders,
                 strategy=strategy, objective=objective)
    with graceful_interrupt() as stop:
        result = call(run_loop, study, opts, ropts, progress=run_progress(json_out), stop=stop)
    _render(result, json_out)


def _run_humans(study, via, annotators, per_annotator, wait_timeout, poll, ropts, json_out) -> None:
    from planner.errors import UsageError, quote
    from planner.services.judging import graceful_interrupt
    from planner.workflows.run_humans import HumanOptions, run_humans_loop

    if via != "label-studio":
        raise fail(UsageError(f"--annotators-via ({quote(via)}) must be label-studio"))
    names = tuple(a.strip() for a in (annotators or "").split(",") if a.strip())
    human = call(HumanOptions, annotators=names, per_annotator=per_annotator, timeout=wait_timeout, poll=poll,
                 _flags={"per_annotator": "--per-annotator-projects"})
    console = err()

    def show(ev: dict) -> None:
        if json_out:
            return
        if ev.get("phase") == "waiting":
            console.print(f"batch {ev['batch']}: waiting for {ev['waiting']} item(s) ({ev['seconds']:.0f} s)",
                          markup=False)
        elif ev.get("phase") == "round":
            console.print(f"round {ev['round']} (batch {ev['batch']}) · judgments {ev['used']}/{ev['budget']} · "
                          f"top-3: {', '.join(ev['top3'])}", markup=False)

    with graceful_interrupt() as stop:
        result = call(run_humans_loop, study, ropts, human, progress=show, stop=stop)
    _render(result, json_out)


#: stops that are not a success: Ctrl-C (130, as a shell reports it) and a round nobody answered (1)
EXIT_CODES = {"interrupted": 130, "no-answers": 1}


def _render(result, json_out: bool) -> None:
    """Notes on stderr, then one JSON document or the plain summary (both kinds of run); the exit code."""
    for note in result.notes:
        warn(note)
    if json_out:
        print_json(result)
        if result.stopped in EXIT_CODES:
            raise typer.Exit(EXIT_CODES[result.stopped])
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
    if result.stopped in EXIT_CODES:
        raise typer.Exit(EXIT_CODES[result.stopped])
