"""`planner export`: the unblinded judgments, pair counts and posterior as files for pandas/R."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from .app import app
from .common import call, message, print_json


@app.command("export")
def export_cmd(
    study: Annotated[Path, typer.Argument(help="Study directory.")],
    out: Annotated[Path, typer.Option("--out", help="Output directory (created if missing).")],
    format: Annotated[str, typer.Option("--format", help="csv, jsonl or parquet (parquet needs pip install 'planner[parquet]').")] = "csv",
    engine: Annotated[str, typer.Option("--engine", help="Posterior to export: laplace, nuts (adds draws) or none.")] = "laplace",
    seed: Annotated[int, typer.Option(help="Seed of the posterior fit/draws.")] = 0,
    draws: Annotated[int, typer.Option(help="Posterior draws (at most 100,000).")] = 1000,
    force: Annotated[bool, typer.Option("--force", help="Overwrite existing files.")] = False,
    json_out: Annotated[bool, typer.Option("--json", help="Print the result as one JSON document.")] = False,
) -> None:
    """Write the unblinded per-judgment table, the pair counts and the posterior summary for analysts.

    Files: judgments, pairs, posterior (+ posterior.json; draws with --engine nuts). See docs/formats.md.

    Example: planner export my-study --out my-study-export --format csv
    """
    from planner.workflows.export import export_study

    res = call(export_study, study, out, format=format, engine=None if engine == "none" else engine, seed=seed,
               draws=draws, force=force)
    if json_out:
        print_json(res.to_dict())
        return
    message(f"exported {res.judgments:,} judgments and {res.pairs:,} pair rows to {out}: "
            + ", ".join(Path(f).name for f in res.files))
