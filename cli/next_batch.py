"""`planner next-batch`: choose the next comparisons and write a blinded batch."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from .app import app
from .common import call, message, out, print_json, warn
from .tables import print_table


@app.command("next-batch")
def next_batch_cmd(
    study: Annotated[Path, typer.Argument(help="Study directory.", metavar="STUDY")],
    size: Annotated[int, typer.Option(help="Planned comparisons (regular items), 1..100000; QC items come on top.")] = 50,
    strategy: Annotated[str, typer.Option(help="active | round-robin | random | anchor | swiss | arena.")] = "active",
    objective: Annotated[str, typer.Option(help="active: ranking | entropy | variance | anchor | top-k.")] = "ranking",
    top_k: Annotated[int | None, typer.Option(help="K for --objective top-k.")] = None,
    engine: Annotated[str, typer.Option(help="Posterior engine: laplace (fast) or nuts.")] = "laplace",
    seed: Annotated[int | None, typer.Option(help="Seed >= 0 (default: the study's seed + batches issued).")] = None,
    out_path: Annotated[Path | None, typer.Option("--out", help="Output file (default STUDY/batches/batch-NNN).")] = None,
    fmt: Annotated[str, typer.Option("--format", help="jsonl | csv | label-studio | argilla | judge.")] = "jsonl",
    force: Annotated[bool, typer.Option(help="Overwrite existing output files.")] = False,
    dry_run: Annotated[bool, typer.Option(help="Show the plan; write nothing.")] = False,
    attention: Annotated[float | None, typer.Option(help="Fraction of attention-check items (default: study config).")] = None,
    repeat: Annotated[float | None, typer.Option(help="Fraction of swapped repeats for self-consistency.")] = None,
    overlap: Annotated[float | None, typer.Option(help="Fraction of items shown to two annotators (kappa).")] = None,
    acceptability: Annotated[float | None, typer.Option(help="Fraction of single-response pass/fail items.")] = None,
    both_orders: Annotated[bool, typer.Option(help="Also issue every comparison in swapped order.")] = False,
    annotators: Annotated[str | None, typer.Option(help="N, or comma-separated names: one file per annotator.")] = None,
    attention_pool: Annotated[Path | None, typer.Option(help="JSONL texts for the broken side of attention items.")] = None,
    template: Annotated[Path | None, typer.Option(help="Judge prompt template file ({prompt} {left} {right} {reasons}).")] = None,
    judge_model: Annotated[str | None, typer.Option(help="Model name written in judge requests.")] = None,
    temperature: Annotated[float | None, typer.Option(help="Judge temperature 0..2 (default 0; none for o1/o3/o4/gpt-5 models).")] = None,
    redact_names: Annotated[bool, typer.Option(help="Replace system names inside responses by '[a model]'.")] = False,
    rewrite: Annotated[int | None, typer.Option(help="Write recorded batch N's files again (byte-identical); no fit.", metavar="N")] = None,
    retry_failed: Annotated[bool, typer.Option(help="Write the files for items whose judge request failed; no fit, no new batch.")] = False,
    batch: Annotated[int | None, typer.Option(help="With --retry-failed: only this batch's failed items.", metavar="N")] = None,
    max_words: Annotated[int | None, typer.Option(help="Longest response shown, in words (default: no limit; longer ones are skipped and other prompts chosen, or cut with --truncate).")] = None,
    truncate: Annotated[bool, typer.Option(help="Cut longer responses with a visible marker instead of skipping.")] = False,
    normalize_style: Annotated[str, typer.Option(help="none | markdown | full (annotator-facing text only).")] = "none",
    reuse_prompts: Annotated[bool, typer.Option(help="Let a pair that has used every prompt take one again.")] = False,
    prompts_by: Annotated[str, typer.Option(help="uniform (default) | discriminative: within a stratum prefer prompts "
                                                 "whose verdicts separate systems (stratum quotas unchanged).")] = "uniform",
    tie_margin: Annotated[float, typer.Option(help="Practical-equivalence margin in Elo (default 0: off): a pair "
                                                   "within ±margin with probability > 0.95 counts as settled (tied) "
                                                   "and gets no more comparisons.", metavar="ELO")] = 0.0,
    style_control: Annotated[bool, typer.Option("--style-control", help="Select on the strengths controlled for length and markdown style.")] = False,
    json_out: Annotated[bool, typer.Option("--json", help="Print the manifest as one JSON document.")] = False,
    for_: Annotated[str, typer.Option("--for", help="ranking (default) | humans: items where a human label is worth "
                                                    "most, drawn with known probabilities (needs --surrogate).")] = "ranking",
    surrogate: Annotated[str | None, typer.Option(help="With --for humans: the judge whose verdicts predict the humans.")] = None,
    floor: Annotated[float, typer.Option(help="With --for humans: uniform share of the probabilities, (0, 1]; 1 = uniform.")] = 0.2,
) -> None:
    """Choose the next comparisons by expected posterior-uncertainty reduction and write a blinded batch.

    Fits the Bradley–Terry–Davidson model to the judgments so far, picks system
    pairs greedily (each pick conditioned on the ones before it and on items
    still pending), chooses prompts per stratum, randomizes positions, adds QC
    items, writes the files atomically and records the key in the study.

    Example: planner next-batch my-study --size 100 --annotators 3 --format label-studio --out round1

    Lost a file? planner next-batch my-study --rewrite 3 --out round3 writes batch 3 again.
    Judge requests failed? planner next-batch my-study --retry-failed --out retry writes just those items.
    """
    from planner.workflows.next_batch import (
        BatchSelection,
        HumansDesign,
        Output,
        QualityControl,
        TextOptions,
        next_batch,
    )

    if rewrite is not None or retry_failed or batch is not None:
        _reissue(study, rewrite, retry_failed, batch, out_path, force, json_out)
        return
    result = call(next_batch, study,
                  BatchSelection(size=size, strategy=strategy, objective=objective, top_k=top_k, engine=engine, seed=seed,
                            style_control=style_control, reuse_prompts=reuse_prompts, prompts_by=prompts_by,
                            tie_margin=tie_margin),
                  qc=QualityControl(attention=attention, repeat=repeat, overlap=overlap, acceptability=acceptability,
                                    both_orders=both_orders, annotators=annotators, attention_pool=attention_pool),
                  output=Output(out=out_path, format=fmt, force=force, dry_run=dry_run, template=template,
                                judge_model=judge_model, temperature=temperature, redact_names=redact_names),
                  text=TextOptions(max_words=max_words, truncate=truncate, normalize_style=normalize_style),
                  humans=HumansDesign(for_=for_, surrogate=surrogate, floor=floor))
    for note in result.notes:
        warn(note)
    for w in result.summary.model_warnings:
        warn(w)
    if json_out:
        print_json(result)
        return
    _render(result)


def _reissue(study, rewrite, retry_failed, batch, out_path, force, json_out) -> None:
    from planner.errors import UsageError
    from planner.workflows.reissue import retry_failed as retry
    from planner.workflows.reissue import rewrite_batch

    def run():
        if rewrite is not None and retry_failed:
            raise UsageError("--rewrite and --retry-failed cannot be combined")
        if batch is not None and not retry_failed:
            raise UsageError("--batch is used only with --retry-failed (use --rewrite N to write a whole batch)")
        if rewrite is not None:
            return rewrite_batch(study, rewrite, out=out_path, force=force)
        return retry(study, out=out_path, force=force, batch=batch)

    result = call(run)
    for note in result.notes:
        warn(note)
    if json_out:
        print_json(result)
        return
    for f in result.files:
        message(f"wrote {f}")


def _render(result) -> None:
    from rich.table import Table

    b = result.summary
    head = "Planned (dry run, nothing written)" if result.dry_run else f"Batch {result.batch_id} written"
    table = Table(title=f"{head}: {b.n_items} items, {b.n_comparisons} comparisons "
                        f"({b.strategy}, objective {b.objective}, seed {b.seed})")
    table.add_column("pair")
    table.add_column("comparisons", justify="right")
    for systems, n in b.per_pair:
        table.add_row(" vs ".join(systems), str(n))
    print_table(table)
    from planner.sentences import concentration_note, objective_line

    why = concentration_note([(" vs ".join(systems), n) for systems, n in b.per_pair], b.n_comparisons)
    if why and b.for_humans is None:
        out().print(f"Why one pair: {why}.", markup=False, soft_wrap=True)
    kinds = ", ".join(f"{k} {v}" for k, v in b.kinds if v)
    out().print(f"Items by kind: {kinds}", markup=False)
    if b.per_stratum:
        strata = ", ".join(f"{k} {v}" for k, v in b.per_stratum)
        out().print(f"Comparisons by stratum: {strata}", markup=False)
    if b.for_humans is not None:
        fh = b.for_humans
        out().print(f"Drawn for human labels with known probabilities: {fh.chosen} item(s) (expected "
                    f"{fh.expected_labels:g}); planner report --surrogate {fh.surrogate} weights them by 1/π.",
                    markup=False, soft_wrap=True)
        for f in result.files:
            message(f"wrote {f}")
        return
    out().print(objective_line(b.objective, b.objective_before, b.objective_after), markup=False,
                soft_wrap=True)
    if result.settled:
        out().print(f"You can stop: {result.advice}; more comparisons buy little for this objective.",
                    markup=False)
    else:
        out().print(f"Keep going: {result.advice}.", markup=False)
    if b.forecast:
        out().print(f"Forecast: {b.forecast}.", markup=False)
    for f in result.files:
        message(f"wrote {f}")
