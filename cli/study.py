"""`planner init`, `planner ingest`, `planner status`: the study store commands."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from .app import app
from .common import call, message, out, print_json
from .tables import print_table


def _fmt_score(v) -> str:
    return "—" if v is None else f"{v:.3f}"


@app.command("init")
def init_cmd(
    study: Annotated[Path, typer.Argument(help="Study directory to create.")],
    systems: Annotated[str | None, typer.Option(help="Comma-separated system names (default: inferred from --responses).")] = None,
    anchor: Annotated[str | None, typer.Option(help="Reference system (one of the systems).")] = None,
    prompts: Annotated[Path | None, typer.Option(help="Prompts CSV/JSONL: id, text, optional stratum, weight, difficulty, frozen.")] = None,
    responses: Annotated[Path | None, typer.Option(help="Responses JSONL: prompt, system, text (optional acceptable).")] = None,
    reasons: Annotated[str, typer.Option(help="Comma-separated reason codes.")] = "accuracy,completeness,format,concision,safety",
    seed: Annotated[int, typer.Option(help="Study seed (used by next-batch).")] = 0,
    max_words: Annotated[int | None, typer.Option(help="Default maximum words per response shown to annotators (default: no limit).")] = None,
    json_out: Annotated[bool, typer.Option("--json", help="Print the result as one JSON document.")] = False,
) -> None:
    """Create a study: a directory with study.json and an SQLite store.

    Example: planner init my-study --prompts vicuna80/prompts.jsonl --responses vicuna80/responses.jsonl --anchor gpt-4
    """
    from planner.store.study import init_study

    names = [s for s in systems.split(",")] if systems else None
    codes = tuple(r.strip() for r in reasons.split(",") if r.strip())
    info = call(init_study, study, systems=names, anchor=anchor, prompts_file=prompts, responses_file=responses,
                reasons=codes, seed=seed, max_words=max_words)
    if json_out:
        print_json(info)
        return
    out().print(f"Created study {info.path}: {len(info.systems)} systems, {info.prompts} prompts "
                f"in {len(info.strata)} strata, {info.responses} responses.", markup=False, soft_wrap=True)
    out().print(f"Systems: {', '.join(info.systems)}" + (f" (anchor {info.anchor})" if info.anchor else ""),
                markup=False, soft_wrap=True)
    if info.missing_responses:
        message(f"note: {info.missing_responses} (prompt, system) pairs have no response")


def _parse_map(pairs: list[str] | None) -> dict[str, str]:
    from planner.errors import UsageError, quote

    out = {}
    for p in pairs or ():
        k, sep, v = p.partition("=")
        if not sep or not k.strip() or not v.strip():
            raise UsageError(f"--annotator-map {quote(p)}; expected IDENTITY=NAME, e.g. ls-user:3=alice")
        out[k.strip()] = v.strip()
    return out


@app.command("ingest")
def ingest_cmd(
    study: Annotated[Path, typer.Argument(help="Study directory.")],
    files: Annotated[list[Path], typer.Argument(help="Judgment files (JSONL, CSV, JSON exports).")],
    format: Annotated[str | None, typer.Option("--format", help="Force a reader (default: detect); see docs/formats.md.")] = None,
    baseline: Annotated[str | None, typer.Option(help="Baseline system for arena-hard-auto lines without a baseline field.")] = None,
    accept_changes: Annotated[bool, typer.Option("--accept-changes", help="Apply judgments whose verdict or reason changed at the source since they were stored (each replacement is audited). Default: refuse the file and list the changes.")] = False,
    annotator_map: Annotated[list[str] | None, typer.Option("--annotator-map", help="IDENTITY=NAME: record a source identity (e.g. ls-user:3 or an e-mail) as this study's annotator NAME. Repeatable; remembered for later ingests.")] = None,
    tie_band: Annotated[float | None, typer.Option("--tie-band", help="alpaca_eval continuous preferences: a tie when |preference - 1.5| <= this (default 0: only exactly 1.5).")] = None,
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Validate and show what would be stored; store nothing.")] = False,
    json_out: Annotated[bool, typer.Option("--json", help="Print the result as one JSON document.")] = False,
) -> None:
    """Take judgments back into a study: idempotent and incremental, all-or-nothing per file.

    Re-ingesting what is stored is a no-op (counted); a cumulative export adds
    only the new judgments; rows without a verdict are skipped and counted;
    judge requests that failed in transport leave their items unanswered (not
    invalid). A judgment changed at the source refuses the file unless
    --accept-changes.

    Example: planner ingest my-study verdicts-batch1.jsonl
    """
    from rich.table import Table

    from planner.store.study import ingest

    from .progress import Progress

    bar = Progress("ingest", unit="lines")

    def tick(k: int, done: int, total: int) -> None:
        bar.update(done, total or None, detail=files[k].name)

    amap = call(_parse_map, annotator_map)
    opts = {} if tie_band is None else {"tie_band": tie_band}
    with bar:
        res = call(ingest, study, files, format=format, dry_run=dry_run, progress=tick, baseline=baseline,
                   accept_changes=accept_changes, annotator_map=amap, reader_options=opts)
    if json_out:
        print_json(res)
        return
    t = Table(title="would be stored (dry run)" if dry_run else "ingested")
    for col in ("file", "format", "new", "already", "A", "B", "tie", "invalid", "pass", "fail", "no reason"):
        t.add_column(col, justify="left" if col in ("file", "format") else "right")
    for f in res.files:
        t.add_row(Path(f.path).name, f.format, *(f"{v:,}" for v in (f.rows, f.already, f.A, f.B, f.tie, f.invalid,
                                                                     f.passed, f.failed, f.no_reason)))
    print_table(t)
    for f in res.files:
        message(f"{Path(f.path).name}: {f.summary()}")
        for line in (*(f"annotator {a}" for a in f.aliases), *f.notes):
            message(f"  {line}")


@app.command("status")
def status_cmd(
    study: Annotated[Path, typer.Argument(help="Study directory.")],
    json_out: Annotated[bool, typer.Option("--json", help="Print the result as one JSON document.")] = False,
) -> None:
    """Issued, returned, unanswered, pending and voided items per batch; counts per pair, system and annotator.

    Example: planner status my-study
    """
    from rich.table import Table

    from planner.workflows.status import status

    st = call(status, study)
    if json_out:
        print_json(st)
        return
    c = out()
    c.print(f"{st.path}: {st.totals_sentence()}", markup=False, soft_wrap=True)
    if st.forecast is not None:
        c.print(f"  forecast: {st.forecast.sentence()}", markup=False, soft_wrap=True)
    if st.qc:
        c.print("  quality-control judgments (attention and repeat items, acceptability verdicts) are stored "
                "and used for annotator QC, not counted as evidence about the systems", markup=False, soft_wrap=True)
    extra = [f"{st.unanswered:,} unanswered item(s) (judge transport failures: rerun planner judge, or write "
             "them again with next-batch --retry-failed)"
             if st.unanswered else "", f"{st.edits:,} audited replacement(s)" if st.edits else "",
             f"{st.retracted_files:,} retracted file(s)" if st.retracted_files else ""]
    if any(extra):
        c.print("  " + "; ".join(e for e in extra if e), markup=False, soft_wrap=True)
    if st.judge:
        from planner.store.ledger import judge_totals_sentence

        for j in st.judge:
            c.print("  " + judge_totals_sentence(j), markup=False, soft_wrap=True)
    if st.batches:
        t = Table(title="batches")
        for col in ("batch", "created", "issued", "returned", "unanswered", "pending", "voided"):
            t.add_column(col, justify="right")
        for b in st.batches:
            t.add_row(str(b.id), b.created, str(b.issued), str(b.returned), str(b.unanswered), str(b.pending),
                      b.voided or "")
        print_table(t, console=c)
    t = Table(title="systems (score = (wins + ties/2) / (wins + losses + ties))")
    for col in ("system", "wins", "losses", "ties", "invalid", "score"):
        t.add_column(col, justify="left" if col == "system" else "right")
    for s in st.per_system:
        t.add_row(s.system, str(s.wins), str(s.losses), str(s.ties), str(s.invalid), _fmt_score(s.score))
    print_table(t, console=c)
    if st.pairs:
        t = Table(title="pairs (score of the first system)")
        for col in ("pair", "wins", "losses", "ties", "invalid", "score"):
            t.add_column(col, justify="left" if col == "pair" else "right")
        for p in st.pairs:
            t.add_row(f"{p.x} vs {p.y}", str(p.x_wins), str(p.y_wins), str(p.ties), str(p.invalid),
                      _fmt_score(p.score))
        print_table(t, console=c)
    if st.annotators:
        t = Table(title="annotators")
        for col in ("annotator", "judgments", "A", "B", "tie", "invalid", "pass", "fail"):
            t.add_column(col, justify="left" if col == "annotator" else "right")
        for a in st.annotators:
            t.add_row(a.annotator or "(none)", *(str(v) for v in (a.judgments, a.A, a.B, a.tie, a.invalid,
                                                                    a.passed, a.failed)))
        print_table(t, console=c)
    if st.acceptability:
        t = Table(title="acceptability")
        for col in ("system", "pass", "fail", "invalid", "pass rate"):
            t.add_column(col, justify="left" if col == "system" else "right")
        for s, v in st.acceptability.items():
            t.add_row(s, str(v["pass"]), str(v["fail"]), str(v["invalid"]), _fmt_score(v["pass_rate"]))
        print_table(t, console=c)
