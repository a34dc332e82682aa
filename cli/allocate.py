"""`planner allocate`: stratified allocation of a prompt budget."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from .app import app
from .common import call, message, print_json
from .tables import print_table


@app.command("allocate")
def allocate(
    budget: Annotated[int, typer.Option(help="Number of prompts to choose (1 to 1,000,000).")],
    prompts: Annotated[Path | None, typer.Option(
        help="Prompts file (CSV or JSONL: id, text, optional stratum, weight, difficulty, frozen).")] = None,
    study: Annotated[Path | None, typer.Option(help="Study directory (instead of --prompts).")] = None,
    by: Annotated[str | None, typer.Option(
        help="Stratify by 'stratum' or 'difficulty' (default: stratum; one stratum when absent).")] = None,
    method: Annotated[str, typer.Option(
        help="proportional | frequency (weight column) | equal | neyman | target.")] = "proportional",
    target: Annotated[str | None, typer.Option(
        help="Target shares for --method target, e.g. common=0.4,factual=0.3,ambiguous=0.2,adversarial=0.1.")] = None,
    min_per_stratum: Annotated[int, typer.Option(help="At least this many prompts per stratum.")] = 0,
    with_replacement: Annotated[bool, typer.Option(
        "--with-replacement", help="Allow more prompts from a stratum than it has (reuses them).")] = False,
    frozen_first: Annotated[bool, typer.Option(
        "--frozen-first", help="Frozen prompts take the first places of their stratum.")] = False,
    pointwise: Annotated[Path | None, typer.Option(
        help='Pointwise scores (JSONL/CSV {"prompt","system","score"}): contested prompts first.')] = None,
    contested_only: Annotated[bool, typer.Option(
        "--contested-only", help="Keep only prompts whose pointwise scores differ by at most --gap.")] = False,
    gap: Annotated[float | None, typer.Option(help="Largest pointwise score gap kept by --contested-only.")] = None,
    pilot: Annotated[Path | None, typer.Option(
        help="Pilot judgments (normalized JSONL) giving Neyman's S_h.")] = None,
    seed: Annotated[int, typer.Option(help="Random seed for the within-stratum draw (0 to 2**63-1).")] = 0,
    out_file: Annotated[Path | None, typer.Option(
        "--out", help="Write the chosen prompts here (.csv or .jsonl).")] = None,
    force: Annotated[bool, typer.Option("--force", help="Overwrite --out if it exists.")] = False,
    json_: Annotated[bool, typer.Option("--json", help="Print the result as one JSON document.")] = False,
) -> None:
    """Spread a prompt budget over strata (largest remainder) and choose the prompts, with sampling weights.

    Example: planner allocate --prompts prompts.jsonl --budget 40 --method equal --out chosen.csv
    """
    from planner.limits import check_input_file, check_output_file
    from planner.workflows.allocate import allocate_files

    for name, path in (("--prompts", prompts), ("--pointwise", pointwise), ("--pilot", pilot)):
        call(check_input_file, name, path)
    call(check_output_file, "--out", out_file)
    result = call(allocate_files, budget=budget, prompts=prompts, study=study, by=by, method=method,
                  target=target, min_per_stratum=min_per_stratum, with_replacement=with_replacement,
                  frozen_first=frozen_first, pointwise=pointwise, contested_only=contested_only, gap=gap,
                  pilot=pilot, seed=seed, out=out_file, force=force)
    for note in result.notes:
        message(f"note: {note}")
    if json_:
        print_json(result)
        return
    from rich.table import Table

    table = Table(title=f"Allocation of {result.budget} prompts ({result.method}, by {result.by})")
    for col in ("stratum", "available", "population share", "allocated", "sample share", "weight"):
        if col == "stratum":
            table.add_column(col, no_wrap=True)
        else:
            table.add_column(col, justify="right")
    for s in result.strata:
        table.add_row(s.stratum, str(s.available), f"{s.population_share:.3f}", str(s.allocated),
                      f"{s.sample_share:.3f}", "—" if s.weight is None else f"{s.weight:.3f}")
    table.add_row("total", str(sum(s.available for s in result.strata)), "1.000", str(result.budget),
                  "1.000", "", style="bold")
    print_table(table)
    if result.out:
        message(f"wrote {len(result.prompts)} prompts to {result.out}")
