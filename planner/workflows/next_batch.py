"""`next-batch`: choose the next comparisons and write a blinded batch.

The data flow (each step owned by its module)::

    study (counts, pending)  ──► model.fit (Laplace or NUTS)
                             ──► acquisition.select_pairs  (which system pairs; greedy,
                                                            pending items fantasized)
                             ──► allocation.plan_strata / choose_prompts
                                                           (which stratum and prompt per pair)
                             ──► batch.assemble_batch      (positions, QC items, opaque ids)
                             ──► formats.writers           (files, atomically)
                             ──► study.record_batch        (the key; same step as the files)

``size`` is the number of planned comparisons (regular items). QC items are
added on top so that each QC kind is its requested fraction of the final
batch, and ``both_orders`` adds the swapped order of every regular item (see
:mod:`planner.batch`).

The options come as five frozen objects (:mod:`planner.workflows.next_batch_options`:
``BatchSelection``, ``QualityControl``, ``Output``, ``TextOptions``, ``HumansDesign``),
built by the CLI; :func:`options_from` builds them from flat names. The plan
itself (fit, pairs, strata, prompts) is :mod:`planner.workflows.next_batch_plan`.

Same study state + same seed → byte-identical files. The default seed is the
study's configured seed plus the number of batches already issued, so
consecutive batches differ yet are reproducible.

Outputs are checked before the fit and before anything changes (a directory
in place of a file, a missing or unwritable directory, an existing file
without ``--force``: one-line :class:`UsageError`).

Atomicity and crash recovery (:mod:`planner.formats.staging`): a journal in
the study directory names the run's token and every temporary file; the
temporaries are written next to their targets; the batch is recorded in one
transaction with the token in its manifest (``issue_token``); then the
temporaries are renamed and the journal removed. A failure before the commit
leaves neither files nor a batch. After a hard kill, the next ``next-batch``
(or ``--rewrite``/``--retry-failed``) finds the journal: when the token was
recorded it puts every file in place (renaming the temporary, or regenerating
the bytes from the study, checked against the SHA-256 in the journal), else it
removes the temporaries. A recorded batch's files can always be written again
with ``--rewrite BATCH`` (:mod:`planner.workflows.reissue`); the manifest's
``rendering`` holds everything the files depend on.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import numpy as np

from planner.errors import DataError, UsageError, quote
from planner.limits import check_optional_int
from planner.workflows.next_batch_options import (
    DEFAULT_SIZE,
    BatchSelection,
    HumansDesign,
    NextBatchResult,
    Output,
    QualityControl,
    TextOptions,
    option_objects,
    options_from,
)
from planner.workflows.next_batch_plan import PlanFit, plan_next_batch, target_shares  # noqa: F401 (re-exported)

__all__ = [
    "DEFAULT_SIZE",
    "LEGACY_DEFAULT_MAX_WORDS",
    "MAX_SIZE",
    "BatchSelection",
    "HumansDesign",
    "NextBatchResult",
    "Output",
    "QualityControl",
    "TextOptions",
    "next_batch",
    "options_from",
    "plan_next_batch",
]

MAX_SIZE = 100_000  # planned comparisons per batch; larger asks run for minutes and exhaust memory


def _model_summary(fit) -> dict:
    lo, hi = fit.interval()
    return {
        "engine": fit.engine,
        "usable_judgments": fit.n_usable,
        "invalid_judgments": fit.n_invalid,
        "strengths": {s: {"mean": round(float(m), 6), "sd": round(float(sd), 6),
                          "lo": round(float(a), 6), "hi": round(float(b), 6)}
                      for s, m, sd, a, b in zip(fit.systems, fit.mean, fit.sd, lo, hi)},
        "gamma": round(float(fit.gamma.mean), 6),
        "nu": round(float(fit.nu.mean), 6),
        "warnings": list(fit.diagnostics.warnings),
    }


#: ``planner init`` stored ``max_words: 400`` in every study config whether asked or not; that silent
#: default dropped 22 of 640 Vicuna80 answers (12 of them gpt-4's, under a judge whose longer answer
#: wins 73%). In those configs (``planner_study`` 1) it is treated as "no limit"; any other stored
#: value was chosen and is honoured. ``planner_study`` 2 configs store only what was asked for (null: no limit).
LEGACY_DEFAULT_MAX_WORDS = 400


def _word_limit(max_words: int | None, config: dict) -> int | None:
    """The word limit in force: ``--max-words`` if given, else the study's unless it is the old silent default."""
    if max_words is not None:
        return int(max_words)
    stored = config.get("max_words")
    legacy = config.get("planner_study", 1) == 1 and int(stored or 0) == LEGACY_DEFAULT_MAX_WORDS
    if stored is None or legacy:
        return None
    return int(stored)


def _check_options(size, strategy, objective, top_k, engine, fmt, normalize_style, seed=None):
    from planner.acquisition import OBJECTIVES, STRATEGIES
    from planner.batch.textnorm import NORMALIZE_STYLES
    from planner.formats.writers import FORMATS

    if isinstance(size, bool) or not isinstance(size, (int, np.integer)) or not 1 <= size <= MAX_SIZE:
        raise UsageError(f"`size` ({quote(size)}) must be a whole number from 1 to {MAX_SIZE:,}",
                         parameters=('size',))
    if seed is not None and (isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0):
        raise UsageError(f"`seed` ({quote(seed)}) must be a whole number >= 0", parameters=('seed',))
    public = [s for s in STRATEGIES if s != "oracle"]
    if strategy not in public:
        raise UsageError(f"`strategy` ({strategy!r}) must be one of {', '.join(public)}", parameters=('strategy',))
    if objective not in OBJECTIVES:
        raise UsageError(f"`objective` ({objective!r}) must be one of {', '.join(OBJECTIVES)}",
                         parameters=('objective',))
    if objective == "top-k" and (top_k is None or top_k < 1):
        raise UsageError("`objective` top-k needs `top_k` K with K >= 1", parameters=('objective', 'top_k'))
    if engine not in ("laplace", "nuts"):
        raise UsageError(f"`engine` ({engine!r}) must be one of 'laplace' or 'nuts'", parameters=('engine',))
    if fmt not in FORMATS:
        raise UsageError(f"`format` ({fmt!r}) must be one of {', '.join(FORMATS)}", parameters=('format',))
    if normalize_style not in NORMALIZE_STYLES:
        raise UsageError(f"`normalize_style` ({normalize_style!r}) must be one of {', '.join(NORMALIZE_STYLES)}",
                         parameters=('normalize_style',))


def _annotator_names(annotators) -> list[str] | None:
    if annotators is None:
        return None
    if isinstance(annotators, int) or (isinstance(annotators, str) and annotators.strip().isdigit()):
        n = int(annotators)
        if n < 1:
            raise UsageError(f"`annotators` ({n}) must be >= 1 or a comma-separated list of names",
                             parameters=('annotators',))
        return [f"a{i + 1}" for i in range(n)]
    from planner.names import annotator_name_problem

    names = [a.strip() if isinstance(a, str) else a
             for a in (annotators.split(",") if isinstance(annotators, str) else annotators)]
    names = [a for a in names if a]
    if not names:
        raise UsageError("`annotators` must be a number or a comma-separated list of names",
                         parameters=('annotators',))
    for a in names:   # before any path is built from a name ('../../evil' would leave the output folder)
        if annotator_name_problem(a):
            raise UsageError(f"`annotators`: {quote(a)} {annotator_name_problem(a)}", parameters=('annotators',))
    return names


def _read_template(template) -> str | None:
    from planner.formats.reading import read_option_file

    if template is None:
        return None
    try:
        return read_option_file(template, "template", "a template file")
    except UnicodeDecodeError as exc:
        raise UsageError(f"`template`: {quote(str(Path(template)))} is not UTF-8 ({exc.reason} at byte {exc.start})",
                         parameters=('template',)) from None


def _qc_rates(config, names, attention, repeat, overlap, acceptability, notes) -> dict[str, float]:
    qc = dict(config.get("qc", {}))
    rates = {k: (v if v is not None else float(qc.get(k, 0.0)))
             for k, v in (("attention", attention), ("repeat", repeat), ("overlap", overlap),
                          ("acceptability", acceptability))}
    if (names is None or len(names) < 2) and rates["overlap"] > 0 and overlap is None:
        # the study's default overlap rate does not apply to a single annotator: silently 0 (a note on
        # every single-annotator batch was noise); an explicit --overlap is refused in batch.py
        rates["overlap"] = 0.0
    return rates


def _check_tie_margin(margin) -> None:
    """``tie_margin`` is a finite number of Elo points >= 0 (checked in Elo, before the fit;
    :class:`planner.acquisition.SelectionOptions` checks it again in logits)."""
    if isinstance(margin, bool) or not isinstance(margin, (int, float)) or not 0.0 <= margin < float("inf"):
        raise UsageError(f"`tie_margin` ({margin!r}) must be a number of Elo points >= 0", parameters=("tie_margin",))


def _manifest(n_batches, seed, strategy, objective, top_k, engine, size, format, selection, fit, batch, notes):
    return {
        "batch": n_batches + 1,
        "seed": int(seed),
        "strategy": strategy,
        "objective": objective if objective != "top-k" else f"top-k={top_k}",
        "engine": engine,
        "size": int(size),
        "format": format,
        "expected_reduction": float(selection.expected_reduction),
        "objective_before": float(selection.value_before),
        "objective_after": float(selection.value_after),
        "settled": bool(selection.settled),
        "advice": selection.reason,
        "model": _model_summary(fit) if fit is not None else {"engine": "none (--for humans)", "warnings": []},
        "batch_manifest": batch.manifest.to_json(),
        "attention_expected": {it.item_id: it.expected for it in batch.items if it.kind == "attention"},
        "notes": notes,
    }


def _name_note(batch, systems, redact: bool, notes: list[str]) -> dict:
    """Count system names in response texts; a note for stderr; the manifest's ``name_mentions``."""
    from planner.blinding import mentions_note, name_mentions

    mentions = name_mentions(batch.items, systems)
    note = mentions_note(mentions, redacted=redact)
    if note:
        notes.append(note)
    return {"items": len(mentions), "mentions": sum(sum(v.values()) for v in mentions.values()),
            "first_items": list(mentions)[:10], "redacted": bool(redact and mentions)}


def next_batch(study_path, selection: BatchSelection | None = None, *, qc: QualityControl | None = None,
               output: Output | None = None, text: TextOptions | None = None,
               humans: HumansDesign | None = None, reuse: PlanFit | None = None) -> NextBatchResult:
    """Choose the next comparisons for a study and write them as a blinded batch.

    Parameters
    ----------
    study_path : path of the study directory.
    selection : :class:`BatchSelection`
        How many comparisons, strategy, objective, engine, seed, prompt reuse.
    qc : :class:`QualityControl`
        QC rates, both orders, annotators, attention pool.
    output : :class:`Output`
        Output path and format, force, dry run, judge template/model/temperature, name redaction.
    text : :class:`TextOptions`
        ``max_words``, ``truncate``, ``normalize_style``.
    humans : :class:`HumansDesign`
        ``for_="humans"``: a batch drawn for human labels (needs ``surrogate``).
    reuse : :class:`planner.workflows.next_batch_plan.PlanFit`
        An earlier result's ``plan_fit``: its fit is used instead of fitting again when it was made on
        the same judgments, engine, seed and style control (``planner run`` plans a round once).

    Every option object defaults to its class's defaults; the values are
    checked here (one-line :class:`planner.errors.UsageError`) before the study
    is opened.
    """
    from planner.formats.writers import check_temperature, read_attention_pool
    from planner.store.study import Study

    sel, qc, output, text, humans = option_objects(selection=selection, qc=qc, output=output, text=text, humans=humans)
    _check_options(sel.size, sel.strategy, sel.objective, sel.top_k, sel.engine, output.format,
                   text.normalize_style, sel.seed)
    if humans.for_ not in ("ranking", "humans"):
        raise UsageError(f"`for` ({str(humans.for_)[:40]!r}) must be one of ranking, humans", parameters=('for',))
    if humans.for_ != "humans" and humans.surrogate is not None:
        raise UsageError("`surrogate` is used only with `for` humans", parameters=('surrogate', 'for'))
    _check_tie_margin(sel.tie_margin)
    check_optional_int("max_words", text.max_words, 1)   # before the fit: 0 or -3 is a usage error, not "no item"
    if humans.for_ == "humans":   # options of the ranked selection were silently ignored: the design uses no strengths
        for name in ("style_control", "tie_margin"):
            if getattr(sel, name):
                raise UsageError(f"`{name}` does not apply with `for` humans: that design draws items by the "
                                 "judge's residual error, not by the strengths; drop one of the two",
                                 parameters=(name, "for"))
    temperature = check_temperature(output.temperature)
    names = _annotator_names(qc.annotators)
    template_text = _read_template(output.template)
    pool = read_attention_pool(qc.attention_pool) if qc.attention_pool is not None else None

    with Study.open(study_path) as study:
        config = study.config
        notes: list[str] = []
        rates = _qc_rates(config, names, qc.attention, qc.repeat, qc.overlap, qc.acceptability, notes)
        out, n_batches = _prepare(study, study_path, output, names, rates, template_text, temperature, notes)
        seed = sel.seed if sel.seed is not None else int(config.get("seed", 0)) + n_batches
        rng = np.random.default_rng(seed)
        words = _word_limit(text.max_words, config)
        planned, selection_, fit, design, prompt_choice = _plan(study, sel, humans, seed, rng,
                                                                None if text.truncate else words, notes, reuse)
        plan_fit = None if fit is None else PlanFit.of(fit, sel, seed)
        batch = _assemble(study, planned, rates, names, pool, qc.both_orders, words, text, rng)
        if batch.skipped:
            reasons = Counter(s.reason for s in batch.skipped)
            notes.append("skipped " + "; ".join(f"{n} × {r}" for r, n in reasons.most_common()))
        mentions = _name_note(batch, study.systems, output.redact_names, notes)
        manifest = _manifest(n_batches, seed, sel.strategy, sel.objective, sel.top_k, sel.engine, sel.size,
                             output.format, selection_, fit, batch, notes)
        manifest["name_mentions"] = mentions
        if design is not None:
            manifest.update(strategy="for humans", objective="hybrid (IPW-PPI)", for_humans=design)
        if prompt_choice is not None:
            manifest["prompt_choice"] = prompt_choice
        forecast = _forecast(study)
        if forecast is not None:
            manifest["forecast"] = forecast.to_dict()
        if output.dry_run:
            return NextBatchResult(None, (), manifest, bool(selection_.settled), selection_.reason, tuple(notes),
                                   True, batch.items, plan_fit)
        rendering = {"format": output.format, "out": str(Path(out).absolute()),
                     "reasons": list(config.get("reasons", ())), "template": template_text,
                     "acceptability_template": None, "judge_model": output.judge_model,
                     "temperature": temperature,
                     "redact_names": list(study.systems) if output.redact_names else None,
                     "max_words": words, "truncate": bool(text.truncate), "normalize_style": text.normalize_style}
        batch_id, targets = _issue(study, batch, manifest, rendering, out, output.force)
    return NextBatchResult(batch_id, tuple(str(t) for t in targets), manifest, bool(selection_.settled),
                           selection_.reason, tuple(notes), False, batch.items, plan_fit)


def _forecast(study):
    """The forecast saved by ``planner plan``, updated with the judgments now (None when none is saved);
    ``resolved`` is read on the plain Laplace fit, as the forecast's loop reads it."""
    from planner.services.forecast_saved import remaining

    return remaining(study)


def _prepare(study, study_path, output: Output, names, rates, template_text, temperature,
             notes: list[str]) -> tuple:
    """Checks before the fit; ``(out, n_batches)`` after completing or rolling back an interrupted run."""
    from planner.formats.writers import output_paths
    from planner.services.batch_files import recover_interrupted

    config = study.config
    n_batches = len(study.batches())
    out = output.out
    if output.format == "judge":  # model, template, temperature: refused before the fit
        from planner.formats.writers import judge_requests

        judge_requests([], reasons=config.get("reasons", ()), template=template_text, model=output.judge_model,
                       temperature=temperature)
    if output.dry_run and _interrupted(study):
        notes.append("an interrupted next-batch left files to complete or roll back; the next run without "
                     "--dry-run does it")
    if not output.dry_run:
        out = _default_out(study_path, out, n_batches)
        from planner.formats.staging import check_outputs

        check_outputs(output_paths(out, output.format, names, acceptability=rates["acceptability"] > 0), "out",
                      force=output.force)
        notes.extend(recover_interrupted(study))
        n_batches = len(study.batches())
    return out, n_batches


def _plan(study, sel: BatchSelection, humans: HumansDesign, seed: int, rng, max_words, notes: list[str],
          reuse: PlanFit | None = None) -> tuple:
    """``(planned, selection, fit, design, prompt_choice)``: ranked selection (with the prompt draws'
    record under ``--prompts-by discriminative``), or the draw for human labels."""
    design = prompt_choice = None
    if humans.for_ == "humans":
        from planner.workflows.hybrid_report import plan_for_humans

        planned, selection, design, plan_notes = plan_for_humans(study, surrogate=humans.surrogate, size=sel.size,
                                                                 rng=rng, floor=humans.floor)
        fit = None
    else:
        planned, selection, fit, plan_notes, prompt_choice = plan_next_batch(study, sel, seed=seed, rng=rng,
                                                                             max_words=max_words, reuse=reuse)
    notes.extend(plan_notes)
    return planned, selection, fit, design, prompt_choice


def _assemble(study, planned, rates, names, pool, both_orders: bool, words, text: TextOptions, rng):
    """The blinded batch of the planned comparisons (QC items, positions, ids)."""
    from planner.batch.assemble import assemble_batch

    batch = assemble_batch(planned, prompt_text={p.id: p.text for p in study.prompts()},
                           response_text=study.response_texts(), rng=rng,   # read on demand
                           attention=rates["attention"], repeat=rates["repeat"], overlap=rates["overlap"],
                           both_orders=both_orders, acceptability=rates["acceptability"], annotators=names,
                           attention_pool=pool, max_words=words, truncate=text.truncate,
                           normalize_style=text.normalize_style,
                           previous_items=[it.item_id for it in study.items()])
    if not batch.items:
        raise DataError("no item could be issued: every planned comparison was skipped "
                        f"({len(batch.skipped)} skipped; see `max_words`/`truncate`)",
                        parameters=('max_words', 'truncate'))
    return batch


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


def _issue(study, batch, manifest: dict, rendering: dict, out, force: bool):
    """Render, stage (journaled), record, put in place. Returns ``(batch_id, targets)``."""
    from planner.formats.staging import new_token, sha256, stage
    from planner.formats.writers import render_batch
    from planner.store.study import BatchItem

    rendering["attention_texts"] = {it.item_id: (it.right_text if it.expected == "left" else it.left_text)
                                    for it in batch.items if it.kind == "attention"}
    files = render_batch(batch, out, rendering["format"], reasons=rendering["reasons"],
                         template=rendering["template"], judge_model=rendering["judge_model"],
                         temperature=rendering["temperature"], redact_names=rendering["redact_names"])
    items = [BatchItem(it.item_id, it.prompt_id, it.left_system, it.right_system, it.kind, it.annotator,
                       it.link, it.link if it.kind == "swap" else None)
             for it in batch.items]
    token = new_token()
    staged = stage(files, force=force, journal_dir=study.path, token=token, meta={"batch": manifest["batch"]})
    try:
        manifest["files"] = [str(p) for p, _ in files]
        manifest["files_sha256"] = [sha256(data) for _, data in files]
        manifest["issue_token"] = token
        manifest["rendering"] = rendering
        batch_id = study.record_batch(manifest, items)
    except BaseException:
        staged.abort()
        raise
    try:
        staged.commit()
        targets = [p for p, _ in files]
    except OSError as exc:
        staged.release()
        raise DataError(f"batch {batch_id} was recorded but its files could not be put in place "
                        f"({exc.strerror or exc}); the next `planner next-batch` completes them, or run "
                        f"`planner next-batch STUDY `rewrite` {batch_id} `out` PATH`",
                        parameters=('rewrite', 'out')) from None
    return batch_id, targets
