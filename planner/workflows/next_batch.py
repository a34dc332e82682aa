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

The options come as five frozen objects (:mod:`planner.services.batch_options`:
``BatchSelection``, ``QualityControl``, ``Output``, ``TextOptions``, ``HumansDesign``),
built by the CLI; :func:`options_from` builds them from flat names. This workflow
checks them, opens the study, plans (:func:`planner.services.batch_plan.plan_batch`:
fit, pairs, strata, prompts, assembly) and issues the plan
(:func:`planner.services.batch_issue.issue_batch`: files, journal, record).

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

from dataclasses import replace

from planner.limits import MAX_BATCH_SIZE as MAX_SIZE
from planner.services.batch_choice import PlanFit, plan_next_batch, target_shares
from planner.services.batch_options import (
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
from planner.services.batch_plan import LEGACY_DEFAULT_MAX_WORDS, PlanOptions

__all__ = [
    "DEFAULT_SIZE",
    "LEGACY_DEFAULT_MAX_WORDS",
    "MAX_SIZE",
    "BatchSelection",
    "HumansDesign",
    "NextBatchResult",
    "Output",
    "PlanFit",
    "QualityControl",
    "TextOptions",
    "next_batch",
    "options_from",
    "plan_next_batch",
    "target_shares",
]


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
    reuse : :class:`planner.services.batch_choice.PlanFit`
        An earlier result's ``plan_fit``: its fit is used instead of fitting again when it was made on
        the same judgments, engine, seed and style control.

    Every option object defaults to its class's defaults; the values are
    checked (one-line :class:`planner.errors.UsageError`) before the study
    is opened, the outputs before the fit.
    """
    from planner.formats.writers import check_temperature
    from planner.services.batch_issue import issue_batch, prepare_output, read_template
    from planner.services.batch_plan import plan_batch, qc_rates
    from planner.store.study import Study

    sel, qc, output, text, humans = option_objects(selection=selection, qc=qc, output=output, text=text, humans=humans)
    options = PlanOptions(sel, qc, text, humans, format=output.format, redact_names=output.redact_names)
    check_temperature(output.temperature)
    read_template(output.template)   # a missing or undecodable template: refused before the study is opened

    with Study.open(study_path) as study:
        rates = qc_rates(study.config, options.annotators, qc)
        prepared = prepare_output(study, output, annotators=options.annotators,
                                  acceptability=rates["acceptability"] > 0)
        plan = plan_batch(study, options, reuse=reuse)
        if prepared.notes:
            plan = replace(plan, notes=prepared.notes + plan.notes)
        if output.dry_run:
            return NextBatchResult(None, (), plan.to_manifest(), plan.settled, plan.advice, plan.notes, True,
                                   plan.items, plan.plan_fit)
        issued = issue_batch(study, plan, output, prepared)
    return NextBatchResult(issued.batch_id, issued.files, dict(issued.manifest), plan.settled, plan.advice,
                           plan.notes, False, plan.items, plan.plan_fit)
