"""`planner example`: write the real example data planner ships into a directory."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from .app import app
from .common import call, out, print_json


@app.command("example")
def example_cmd(
    name: Annotated[str | None, typer.Argument(help="Example to write (vicuna80); omit to list the examples.")] = None,
    directory: Annotated[Path | None, typer.Argument(help="Directory to write it into (created if missing).")] = None,
    force: Annotated[bool, typer.Option("--force", help="Replace files there that differ from the example's.")] = False,
    json_out: Annotated[bool, typer.Option("--json", help="Print the result as one JSON document.")] = False,
) -> None:
    """Write the real data the docs use: prompts, responses and verdicts, with their provenance.

    vicuna80: the 80 Vicuna questions in 9 strata, the answers of 8 systems, GPT-4's verdicts on
    every pair in both orders (4,480) and 3 crowd votes per question and pair (6,720); MIT-licensed
    (QLoRA, PRD), provenance in DIR/README.md. Writing again is safe: identical files are left alone.

    Example: planner example vicuna80 ex
    """
    from planner.workflows.example import EXAMPLES, write_example

    if name is None:
        if json_out:
            print_json({"examples": [{"name": e.name, "title": e.title} for e in EXAMPLES.values()]})
            return
        for e in EXAMPLES.values():
            out().print(f"{e.name}: {e.title} (planner example {e.name} DIR)", markup=False, soft_wrap=True)
        return
    res = call(write_example, name, directory if directory is not None else Path(name), force=force,
               _flags={"directory": "DIR", "name": "NAME"})
    if json_out:
        print_json(res)
        return
    c = out()
    done = f"{res.written} file(s) written" + (f", {len(res.files) - res.written} unchanged"
                                                if res.written < len(res.files) else "")
    c.print(f"{res.title}: {done} in {res.directory}", markup=False, soft_wrap=True)
    width = max(len(f.path) for f in res.files)
    for f in res.files:
        rows = f"{f.rows:>6,} rows" if f.rows else " " * 11
        c.print(f"  {f.path:<{width}}  {rows}  {f.what}", markup=False, soft_wrap=True)
    d = res.directory
    c.print(f"Next: planner init my-study --prompts {d}/vicuna80/prompts.jsonl "
            f"--responses {d}/vicuna80/responses.jsonl", markup=False, soft_wrap=True)
