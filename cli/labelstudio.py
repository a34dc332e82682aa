"""`planner push`, `planner pull`: talk to a Label Studio server directly (REST API)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from .app import app
from .common import call, message, print_json

_TARGETS = ("label-studio",)


def _check_target(value: str, option: str) -> None:
    if value not in _TARGETS:
        from planner.errors import UsageError, quote

        from .common import fail

        raise fail(UsageError(f"{option} ({quote(value)}): expected one of {', '.join(_TARGETS)}"))


@app.command("push")
def push_cmd(
    study: Annotated[Path, typer.Argument(help="Study directory.")],
    to: Annotated[str, typer.Option("--to", help="Where to push: label-studio.")] = "label-studio",
    batch: Annotated[int | None, typer.Option(help="Batch id (default: the latest batch that is not voided).")] = None,
    project_title: Annotated[str | None, typer.Option("--project-title", help="Title prefix of new projects (default: planner <study dir>).")] = None,
    per_annotator_projects: Annotated[bool, typer.Option("--per-annotator-projects", help="One project per --annotators name holding only that annotator's items (Label Studio community edition has no task assignment).")] = False,
    json_out: Annotated[bool, typer.Option("--json", help="Print the result as one JSON document.")] = False,
) -> None:
    """Create (or reuse) Label Studio projects for a batch and import its tasks; safe to repeat.

    Connection: LABEL_STUDIO_URL and LABEL_STUDIO_API_KEY (a Personal Access Token, or a legacy token).

    Example: planner push my-study --to label-studio --per-annotator-projects
    """
    from planner.workflows.push_pull import push

    _check_target(to, "--to")
    res = call(push, study, batch=batch, project_title=project_title, per_annotator=per_annotator_projects)
    if json_out:
        print_json(res)
        return
    for note in res.notes:
        message(f"note: {note}")
    for p in res.projects:
        message(f"project {p.id} ({p.key}, {'created' if p.created else 'reused'}): {p.imported:,} task(s) imported, "
                f"{p.already:,} already there")
    message(f"batch {res.batch} pushed to {res.url}: {res.imported:,} new task(s), {res.already:,} already there")


@app.command("pull")
def pull_cmd(
    study: Annotated[Path, typer.Argument(help="Study directory.")],
    source: Annotated[str, typer.Option("--from", help="Where to pull from: label-studio.")] = "label-studio",
    batch: Annotated[int | None, typer.Option(help="Only the projects this batch was pushed to (default: all of the study's).")] = None,
    accept_changes: Annotated[bool, typer.Option("--accept-changes", help="Apply annotations edited in Label Studio since the last pull (audited).")] = False,
    json_out: Annotated[bool, typer.Option("--json", help="Print the result as one JSON document.")] = False,
) -> None:
    """Export the study's Label Studio projects and ingest them (incremental: only new or changed annotations).

    Each export is kept as STUDY/label-studio/pull-<time>-project-<id>.json. Edited
    annotations refuse the export unless --accept-changes.

    Example: planner pull my-study --from label-studio
    """
    from planner.workflows.push_pull import pull

    _check_target(source, "--from")
    res = call(pull, study, batch=batch, accept_changes=accept_changes)
    if json_out:
        out = {k: getattr(res, k) for k in ("url", "files", "new", "already", "skipped", "changed", "replaced",
                                            "unannotated", "aliases", "notes")}
        print_json(out)
        return
    for f in res.files:
        message(f"kept {f}")
    for a in res.aliases:
        message(f"annotator {a}")
    for n in res.notes:
        message(n)
    changed = f", {res.replaced:,} replaced (audited)" if res.replaced else ""
    message(f"pulled from {res.url}: {res.new:,} new, {res.already:,} already stored, {res.skipped:,} skipped"
            f"{changed}; {res.unannotated:,} item(s) still unannotated")
