"""A planned batch written and recorded on an open study: :func:`issue_batch` → :class:`IssuedBatch`.

:func:`prepare_output` runs the output's checks before anything is fitted or changed (a directory in
place of a file, a missing or unwritable directory, an existing file without ``force``, a judge
template or temperature the judge format refuses: one-line :class:`~planner.errors.UsageError`) and
completes or rolls back a run a hard kill interrupted. :func:`issue_batch` renders the plan's items
(:mod:`planner.formats.writers`), stages the files with a journal (:mod:`planner.formats.staging`),
records the batch in one transaction with the run's token, then puts the files in place.

The manifest the study stores is built here once, at the store boundary: the plan's
(:meth:`planner.services.batch_plan.BatchPlan.to_manifest`) followed by the files, their SHA-256, the
token and the ``rendering`` (everything the files depend on, so ``--rewrite`` writes them again).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path

from planner.errors import DataError, UsageError, quote
from planner.services.batch_options import Output


@dataclass(frozen=True)
class PreparedOutput:
    """The output as checked: ``out`` (None for a dry run), the judge ``template`` text and
    ``temperature`` in force, and ``notes`` (an interrupted run completed or rolled back)."""

    out: Path | None
    template: str | None
    temperature: float | None
    notes: tuple[str, ...] = ()


@dataclass(frozen=True)
class IssuedBatch:
    """A batch recorded in the study: its id, the files put in place, the manifest as recorded, and its
    notes (the plan's, after those of an interrupted run completed or rolled back first)."""

    batch_id: int
    files: tuple[str, ...]
    manifest: Mapping
    notes: tuple[str, ...] = ()


def read_template(template) -> str | None:
    """The judge prompt template file's text (None when none is given); not UTF-8 is a usage error."""
    from planner.formats.reading import read_option_file

    if template is None:
        return None
    try:
        return read_option_file(template, "template", "a template file")
    except UnicodeDecodeError as exc:
        raise UsageError(f"`template`: {quote(str(Path(template)))} is not UTF-8 ({exc.reason} at byte {exc.start})",
                         parameters=('template',)) from None


def prepare_output(study, output: Output, *, annotators=None, acceptability: bool = False) -> PreparedOutput:
    """Check ``output`` against the study before any fit (see the module docstring); for a real run also
    complete or roll back an interrupted one. ``annotators`` (names) and ``acceptability`` (an
    acceptability file is written) decide which files the batch writes."""
    from planner.formats.writers import check_temperature, judge_requests, output_paths

    if not isinstance(output, Output):
        raise UsageError(f"next_batch's output ({type(output).__name__}) must be a Output", parameters=("output",))
    temperature = check_temperature(output.temperature)
    template = read_template(output.template)
    if output.format == "judge":  # model, template, temperature: refused before the fit
        judge_requests([], reasons=study.config.get("reasons", ()), template=template, model=output.judge_model,
                       temperature=temperature)
    if output.dry_run:
        notes = ("an interrupted next-batch left files to complete or roll back; the next run without "
                 "--dry-run does it",) if _interrupted(study) else ()
        return PreparedOutput(None, template, temperature, notes)
    from planner.formats.staging import check_outputs
    from planner.services.batch_files import recover_interrupted

    out = _default_out(study.path, output.out, len(study.batches()))
    names = list(annotators) if annotators is not None else None
    check_outputs(output_paths(out, output.format, names, acceptability=acceptability), "out", force=output.force)
    return PreparedOutput(out, template, temperature, tuple(recover_interrupted(study)))


def issue_batch(study, plan, output: Output, prepared: PreparedOutput | None = None) -> IssuedBatch:
    """Render ``plan`` (a :class:`planner.services.batch_plan.BatchPlan`) as ``output`` says, stage the
    files (journaled), record the batch, put the files in place. ``prepared``: :func:`prepare_output`'s
    result when the caller checked the output before planning (else it is checked here)."""
    if output.dry_run:
        raise UsageError("a dry run issues no batch", parameters=("dry_run",))
    if plan.options.format != output.format:
        raise UsageError(f"`format` ({output.format!r}) differs from the plan's ({plan.options.format!r})",
                         parameters=("format",))
    if prepared is None:
        opts = plan.options
        prepared = prepare_output(study, output, annotators=opts.annotators,
                                  acceptability=dict(plan.rates)["acceptability"] > 0)
        if prepared.notes:
            plan = replace(plan, notes=prepared.notes + plan.notes)
    if prepared.out is None:
        raise UsageError("the output was prepared for a dry run", parameters=("dry_run",))
    rendering = _rendering(study, plan, output, prepared.out, prepared)
    return _issue(study, plan, plan.to_manifest(), rendering, prepared.out, output.force)


def _rendering(study, plan, output: Output, out: Path, prepared: PreparedOutput) -> dict:
    """Everything the files depend on (the manifest's ``rendering``; ``--rewrite`` renders from it)."""
    batch = plan.batch
    return {"format": output.format, "out": str(out.absolute()),
            "reasons": list(study.config.get("reasons", ())), "template": prepared.template,
            "acceptability_template": None, "judge_model": output.judge_model,
            "temperature": prepared.temperature,
            "redact_names": list(study.systems) if output.redact_names else None,
            "max_words": plan.max_words, "truncate": bool(plan.options.text.truncate),
            "normalize_style": plan.options.text.normalize_style,
            "attention_texts": {it.item_id: (it.right_text if it.expected == "left" else it.left_text)
                                for it in batch.items if it.kind == "attention"}}


def _interrupted(study) -> bool:
    from planner.formats.staging import journals

    return bool(journals(study.path))


def _default_out(study_path, out, n_batches: int) -> Path:
    if out is not None:
        return Path(out)
    out_dir = Path(study_path) / "batches"
    if not out_dir.is_dir():
        from planner.formats.staging import check_output

        check_output(out_dir, "out")  # the study directory must take a new directory
        out_dir.mkdir()
    return out_dir / f"batch-{n_batches + 1:03d}"


def _issue(study, plan, planned: dict, rendering: dict, out, force: bool) -> IssuedBatch:
    """Render, stage (journaled), record, put in place."""
    from planner.formats.staging import new_token, sha256, stage
    from planner.formats.writers import render_batch
    from planner.store.study import BatchItem

    batch = plan.batch
    files = render_batch(batch, out, rendering["format"], reasons=rendering["reasons"],
                         template=rendering["template"], judge_model=rendering["judge_model"],
                         temperature=rendering["temperature"], redact_names=rendering["redact_names"])
    items = [BatchItem(it.item_id, it.prompt_id, it.left_system, it.right_system, it.kind, it.annotator,
                       it.link, it.link if it.kind == "swap" else None)
             for it in batch.items]
    token = new_token()
    staged = stage(files, force=force, journal_dir=study.path, token=token, meta={"batch": planned["batch"]})
    manifest = {**planned, "files": [str(p) for p, _ in files], "files_sha256": [sha256(data) for _, data in files],
                "issue_token": token, "rendering": rendering}
    try:
        batch_id = study.record_batch(manifest, items)
    except BaseException:
        staged.abort()
        raise
    try:
        staged.commit()
    except OSError as exc:
        staged.release()
        raise DataError(f"batch {batch_id} was recorded but its files could not be put in place "
                        f"({exc.strerror or exc}); the next `planner next-batch` completes them, or run "
                        f"`planner next-batch STUDY `rewrite` {batch_id} `out` PATH`",
                        parameters=('rewrite', 'out')) from None
    return IssuedBatch(batch_id, tuple(str(p) for p, _ in files), manifest, tuple(plan.notes))
