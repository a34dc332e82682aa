"""`planner demo`: the whole loop on a synthetic study, no user files needed."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from .app import app
from .common import call, message, out, print_json
from .tables import print_table


@app.command("demo")
def demo_cmd(
    directory: Annotated[Path, typer.Argument(help="Directory for the demo study (created; an existing file or study is refused).")] = Path("planner-demo"),
    systems: Annotated[int, typer.Option(help="Number of synthetic systems, 2 to 26.")] = 6,
    prompts: Annotated[int, typer.Option(help="Number of synthetic prompts (4 strata), 4 to 10,000.")] = 40,
    rounds: Annotated[int, typer.Option(help="Annotation rounds, 1 to 100.")] = 3,
    size: Annotated[int, typer.Option(help="Comparisons per round, 1 to 10,000.")] = 40,
    seed: Annotated[int, typer.Option(help="Seed of every random choice (0 to 2**63-1).")] = 0,
    force: Annotated[bool, typer.Option(help="Replace an existing demo directory (only one the demo wrote; never a study).")] = False,
    live_judge: Annotated[bool, typer.Option("--live-judge", help="Run the loop with `planner run` against a local OpenAI-compatible judge server (loopback; needs pip install 'planner[judge]'): budget = rounds x size.")] = False,
    json_out: Annotated[bool, typer.Option("--json", help="Print one JSON document on stdout.")] = False,
) -> None:
    """Run the whole loop on a synthetic study: init, next-batch, a simulated judge, ingest, ranking.

    The simulated judge knows the true strengths (evenly spread over 300 Elo)
    and, like real LLM judges, ties sometimes and prefers the left response.
    Afterwards, try `planner status DIR/study` and `planner report DIR/study`.

    Example: planner demo planner-demo --rounds 3 --size 40
    """
    from planner.workflows.demo import run_demo

    if live_judge:
        _live(directory, systems, prompts, rounds * size, size, seed, force, json_out)
        return
    result = call(run_demo, directory, n_systems=systems, n_prompts=prompts, rounds=rounds, size=size,
                  seed=seed, force=force, progress=message)
    if json_out:
        print_json(result)
        return
    from rich.table import Table

    t = Table(title=f"Demo study {result.path}: {result.judgments} judgments in {len(result.rounds)} rounds")
    for col in ("round", "items", "left", "right", "tie", "expected reduction"):
        t.add_column(col, justify="right")
    for r in result.rounds:
        t.add_row(str(r.batch), str(r.items), str(r.verdicts["left"]), str(r.verdicts["right"]),
                  str(r.verdicts["tie"]), f"{r.expected_reduction:.3f}")
    print_table(t)
    lb = Table(title="Fitted ranking (Elo relative to the mean) against the truth")
    for col in ("system", "true", "fitted", "95% interval"):
        lb.add_column(col, justify="left" if col == "system" else "right")
    order = sorted(range(len(result.systems)), key=lambda i: -result.fitted_elo[i])
    for i in order:
        lb.add_row(result.systems[i], f"{result.true_elo[i]:+.0f}", f"{result.fitted_elo[i]:+.0f}",
                   f"[{result.fitted_lo[i]:+.0f}, {result.fitted_hi[i]:+.0f}]")
    print_table(lb)
    out().print(f"Kendall tau between fitted and true order: {result.kendall_tau:.2f}; "
                f"left-position shift recovered: {result.gamma:+.2f} logit (truth +0.30).", markup=False)
    out().print(f"Next: planner status {result.path}   |   planner report {result.path}", markup=False)


def _live(directory, systems, prompts, budget, size, seed, force, json_out) -> None:
    from planner.workflows.judge_demo import run_demo_live

    from .run import run_progress

    res = call(run_demo_live, directory, n_systems=systems, n_prompts=prompts, budget=budget, batch_size=size,
               seed=seed, force=force, progress=run_progress(json_out))
    if json_out:
        print_json(res)
        return
    r = res.run
    out().print(f"Demo study {res.path}: {len(r.rounds)} round(s) through a local judge server "
                f"({res.http_calls} HTTP calls), {r.judgments_used} of {r.budget} judgments; stopped: {r.stopped}.",
                markup=False)
    true_order = [s for _, s in sorted(zip(res.true_elo, res.systems), reverse=True)][:3]
    out().print(f"Fitted top-3: {', '.join(r.top3)}; true top-3: {', '.join(true_order)}.", markup=False)
    out().print(f"Next: planner status {res.path}   |   planner report {res.path}", markup=False)
