"""Write a recorded batch's files again: ``--rewrite``, ``--retry-failed``, crash recovery.

A batch's files depend only on its items (ids, key, order — in the study) and
on the manifest's ``rendering`` (format, reason codes, judge template, model
and temperature, redaction, ``max_words``/truncation, style normalization, and
the broken side of each attention item, which is not derivable from the
study). :func:`rebuild_items` turns those back into :class:`planner.batch.items.Item`
objects with the same annotator-facing texts, so :func:`rewrite_batch` gives
byte-identical files (checked against ``files_sha256``), and
:func:`retry_failed` writes the files for the items whose judge request failed
in transport — same ids, positions and blinding, no fit, no new batch.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from planner.errors import DataError, UsageError, parameters_of, quote, shown

_RENDER_KEYS = ("format", "reasons", "template", "acceptability_template", "judge_model", "temperature",
                "redact_names")


def _rendering(info) -> dict:
    r = info.manifest.get("rendering")
    if not isinstance(r, dict):
        raise DataError(f"batch {info.id} was issued by an older planner that did not store how its files were "
                        "rendered; its files cannot be written again")
    return r


def rebuild_items(study, info, items: Sequence) -> tuple:
    """:class:`planner.batch.items.Item` objects (annotator-facing texts included) for stored batch items."""
    from planner.batch.items import Item
    from planner.batch.textnorm import count_words, normalize_text, truncate_words

    r = _rendering(info)
    style, max_words, truncate = r.get("normalize_style", "none"), r.get("max_words"), r.get("truncate", False)
    prompts = {p.id: p for p in study.prompts()}
    responses = {(x.prompt, x.system): x.text for x in study.responses()}
    broken = r.get("attention_texts") or {}
    expected = info.manifest.get("attention_expected") or {}

    def shown(prompt_id: str, system: str) -> str:
        raw = responses.get((prompt_id, system))
        if raw is None:
            raise DataError(f"batch {info.id}: the study has no response of {quote(system)} to prompt "
                            f"{quote(prompt_id)} any more")
        text = normalize_text(raw, style)
        if truncate and max_words is not None and count_words(text) > max_words:
            text = truncate_words(text, max_words)
        return text

    out = []
    for bi in items:
        p = prompts.get(bi.prompt)
        if p is None:
            raise DataError(f"batch {info.id}: prompt {quote(bi.prompt)} is no longer in the study")
        exp = expected.get(bi.item_id) if bi.kind == "attention" else None
        if bi.kind == "acceptability":
            left, right = shown(bi.prompt, bi.left), None
        elif bi.kind == "attention":
            if bi.item_id not in broken or exp not in ("left", "right"):
                raise DataError(f"batch {info.id}: attention item {bi.item_id} has no stored text")
            left = shown(bi.prompt, bi.left) if exp == "left" else broken[bi.item_id]
            right = shown(bi.prompt, bi.right) if exp == "right" else broken[bi.item_id]
        else:
            left, right = shown(bi.prompt, bi.left), shown(bi.prompt, bi.right)
        out.append(Item(bi.item_id, bi.kind, bi.prompt, p.text, bi.left, bi.right, left, right, p.stratum,
                        bi.annotator, bi.link, exp))
    return tuple(out)


def _render(items, rendering: dict, out):
    from planner.batch.assemble import Batch
    from planner.formats.writers import render_batch

    return render_batch(Batch(tuple(items), ()), out, rendering["format"], reasons=rendering["reasons"],
                        template=rendering.get("template"),
                        acceptability_template=rendering.get("acceptability_template"),
                        judge_model=rendering.get("judge_model"), temperature=rendering.get("temperature"),
                        redact_names=rendering.get("redact_names"))


def _batch_info(study, batch_id, option: str):
    if isinstance(batch_id, bool) or not isinstance(batch_id, int) or batch_id < 1:
        raise UsageError(f"{shown(option)} ({quote(batch_id)}) must be a batch id (a whole number >= 1)",
                         parameters=parameters_of(option))
    infos = {b.id: b for b in study.batches()}
    if batch_id not in infos:
        have = f"batches 1–{max(infos)}" if infos else "no batch yet"
        raise UsageError(f"{shown(option)} ({batch_id}): the study has no such batch ({have})",
                         parameters=parameters_of(option))
    return infos[batch_id]


def render_recorded(study, batch_id: int, out=None):
    """``(files, info)``: the recorded batch's files rendered for ``out`` (default: the original path)."""
    info = _batch_info(study, batch_id, "rewrite")
    rendering = _rendering(info)
    items = rebuild_items(study, info, study.items(batch_id))
    return _render(items, rendering, out if out is not None else rendering["out"]), info


def rewrite_batch(study_path, batch_id: int, *, out=None, force: bool = False):
    """Write a recorded batch's files again (``next-batch --rewrite``); returns a ``NextBatchResult``."""
    from planner.formats.staging import check_output, sha256, write_atomically
    from planner.store.study import Study
    from planner.workflows.next_batch_options import NextBatchResult

    if out is not None:
        check_output(out, "out", exists_ok=True)
    with Study.open(study_path) as study:
        notes = recover_interrupted(study)
        info = _batch_info(study, batch_id, "rewrite")
        if info.voided:   # its items no longer count as pending: re-issuing it would send out work nobody awaits
            why = f" ({quote(info.void_reason)})" if info.void_reason else ""
            raise UsageError(f"`rewrite` ({batch_id}): batch {batch_id} was voided at {info.voided}{why}; its items "
                             "no longer count as pending, so it is not written again (restore it first with "
                             "planner void's undo)", parameters=("rewrite",))
        files, info = render_recorded(study, batch_id, out)
        items = rebuild_items(study, info, study.items(batch_id))
    issued = info.manifest.get("files_sha256")
    if issued is not None and [sha256(d) for _, d in files] != list(issued):
        notes.append(f"batch {batch_id}: the rewritten files differ from the ones issued (the study's responses "
                     "or planner's text rules changed since)")
    targets = write_atomically(files, force=force)
    m = info.manifest
    return NextBatchResult(batch_id, tuple(str(t) for t in targets), m, bool(m.get("settled")),
                           str(m.get("advice", "")), tuple(notes), False, items)


def _unanswered(study, batch: int | None) -> list[tuple]:
    """``[(BatchInfo, [BatchItem, ...]), ...]`` for batches with failed judge requests."""
    query = getattr(study, "unanswered_items", None)
    if query is None:
        raise UsageError("`retry_failed` needs a study store that tracks failed judge requests "
                         "(Study.unanswered_items); this planner's store does not yet", parameters=('retry_failed',))
    infos = [_batch_info(study, batch, "batch")] if batch is not None else study.batches()
    out = []
    for info in infos:
        if getattr(info, "voided", None):
            continue
        items = list(query(info.id))
        if items:
            out.append((info, items))
    return out


def retry_failed(study_path, *, out=None, force: bool = False, batch: int | None = None):
    """Files for the items whose judge request failed in transport (``next-batch --retry-failed``).

    Same item ids, positions and blinding as issued; nothing is fitted and no
    batch is recorded. Items of several batches go into one set of files when
    the batches were rendered alike; otherwise pick one with ``batch``.
    """
    from planner.formats.staging import check_output, write_atomically
    from planner.store.study import Study
    from planner.workflows.next_batch_options import NextBatchResult

    if out is not None:
        check_output(out, "out", force=force)
    with Study.open(study_path) as study:
        notes = recover_interrupted(study)
        failed = _unanswered(study, batch)
        if not failed:
            notes.append("no failed judge request to retry: nothing written")
            return NextBatchResult(None, (), {"retry_failed": {"items": 0, "batches": []}}, False, "",
                                   tuple(notes), False, ())
        kinds = {tuple(repr(_rendering(info).get(k)) for k in _RENDER_KEYS) for info, _ in failed}
        if len(kinds) > 1:
            raise UsageError("`retry_failed`: the failed items come from batches written with different options "
                             f"(batches {', '.join(str(i.id) for i, _ in failed)}); retry one with `batch` ID",
                             parameters=('retry_failed', 'batch'))
        items = [it for info, bis in failed for it in rebuild_items(study, info, bis)]
        rendering = _rendering(failed[0][0])
        if out is None:
            out_dir = Path(study_path) / "batches"
            if not out_dir.is_dir():
                check_output(out_dir, "out")
                out_dir.mkdir()
            out = out_dir / ("retry-batch-" + "-".join(str(i.id) for i, _ in failed))
        files = _render(items, rendering, out)
    targets = write_atomically(files, force=force)
    manifest = {"retry_failed": {"items": len(items), "batches": [i.id for i, _ in failed],
                                 "item_ids": [it.item_id for it in items]}, "files": [str(t) for t in targets]}
    notes.append(f"retry: {len(items)} item(s) whose judge request failed, from batch(es) "
                 f"{', '.join(str(i.id) for i, _ in failed)}; no new batch recorded")
    return NextBatchResult(None, tuple(str(t) for t in targets), manifest, False, "", tuple(notes), False,
                           tuple(items))


def recover_interrupted(study) -> list[str]:
    """Finish or roll back an interrupted ``next-batch`` (see :mod:`planner.formats.staging`)."""
    from planner.formats.staging import journals, recover

    if not journals(study.path):
        return []
    by_token = {b.manifest.get("issue_token"): b.id for b in study.batches() if b.manifest.get("issue_token")}

    def regenerate(batch_id: int) -> list[bytes]:
        rendered, _ = render_recorded(study, batch_id)
        return [d for _, d in rendered]

    return recover(study.path, by_token.get, regenerate)
