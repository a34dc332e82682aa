"""`planner void`, `planner retract`: the batch and file lifecycle commands."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from .app import app
from .common import call, message, print_json


@app.command("void")
def void_cmd(
    study: Annotated[Path, typer.Argument(help="Study directory.")],
    batches: Annotated[list[int] | None, typer.Argument(help="Batch ids to void (see `planner status`).")] = None,
    older_than: Annotated[float | None, typer.Option("--older-than", help="Also void every batch created more than this many days ago.")] = None,
    reason: Annotated[str | None, typer.Option(help="Why (kept in the study's lifecycle log).")] = None,
    undo: Annotated[bool, typer.Option("--undo", help="Make voided batches count again.")] = False,
    json_out: Annotated[bool, typer.Option("--json", help="Print the result as one JSON document.")] = False,
) -> None:
    """Void batches that will not come back: their unreturned items stop counting as pending.

    Judgments that still arrive for their items are stored and counted. Reversible with --undo.

    Example: planner void my-study 3 --reason "vendor cancelled"
    """
    from planner.store.lifecycle import void_batches

    res = call(void_batches, study, batches or (), older_than_days=older_than, reason=reason, undo=undo)
    if json_out:
        print_json(res.to_dict())
        return
    verb = "restored" if undo else "voided"
    if not res.batches:
        message(f"nothing to do: no batch left to be {verb}")
        return
    message(f"{verb} batch(es) {', '.join(map(str, res.batches))}: {res.pending_items:,} unreturned item(s) "
            + ("count as pending again" if undo else "no longer count as pending"))


@app.command("retract")
def retract_cmd(
    study: Annotated[Path, typer.Argument(help="Study directory.")],
    file: Annotated[str, typer.Argument(help="The ingested file: its name, its sha256 (or 8+ leading hex digits) or the file itself.")],
    undo: Annotated[bool, typer.Option("--undo", help="Restore a retracted file's judgments.")] = False,
    json_out: Annotated[bool, typer.Option("--json", help="Print the result as one JSON document.")] = False,
) -> None:
    """Withdraw every judgment one ingested file stored (kept aside, audited, reversible with --undo).

    Example: planner retract my-study wrong-export.json
    """
    from planner.store.lifecycle import retract_file

    res = call(retract_file, study, file, undo=undo)
    if json_out:
        print_json(res.to_dict())
        return
    message(f"{'restored' if undo else 'retracted'} {res.file} ({res.sha256[:12]}): {res.judgments:,} judgment(s) "
            + ("count again" if undo else "no longer count"))
