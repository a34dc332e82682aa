"""``next-batch --rewrite`` and ``--retry-failed``: write a recorded batch's files again.

:func:`rewrite_batch` gives byte-identical files (checked against ``files_sha256``);
:func:`retry_failed` writes the files for the items whose judge request failed in
transport — same ids, positions and blinding, no fit, no new batch. The rendering
itself is :mod:`planner.services.batch_files`.
"""

from __future__ import annotations

from pathlib import Path

from planner.errors import UsageError, quote
from planner.services.batch_files import (
    RENDER_KEYS,
    batch_info,
    rebuild_items,
    recover_interrupted,
    render_items,
    render_recorded,
    rendering_of,
)


def rewrite_batch(study_path, batch_id: int, *, out=None, force: bool = False):
    """Write a recorded batch's files again (``next-batch --rewrite``); returns a ``NextBatchResult``."""
    from planner.formats.staging import check_output, sha256, write_atomically
    from planner.services.batch_options import NextBatchResult
    from planner.store.study import Study

    if out is not None:
        check_output(out, "out", exists_ok=True)
    with Study.open(study_path) as study:
        notes = recover_interrupted(study)
        info = batch_info(study, batch_id, "rewrite")
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
    infos = [batch_info(study, batch, "batch")] if batch is not None else study.batches()
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
    from planner.services.batch_options import NextBatchResult
    from planner.store.study import Study

    if out is not None:
        check_output(out, "out", force=force)
    with Study.open(study_path) as study:
        notes = recover_interrupted(study)
        failed = _unanswered(study, batch)
        if not failed:
            notes.append("no failed judge request to retry: nothing written")
            return NextBatchResult(None, (), {"retry_failed": {"items": 0, "batches": []}}, False, "",
                                   tuple(notes), False, ())
        kinds = {tuple(repr(rendering_of(info).get(k)) for k in RENDER_KEYS) for info, _ in failed}
        if len(kinds) > 1:
            raise UsageError("`retry_failed`: the failed items come from batches written with different options "
                             f"(batches {', '.join(str(i.id) for i, _ in failed)}); retry one with `batch` ID",
                             parameters=('retry_failed', 'batch'))
        items = [it for info, bis in failed for it in rebuild_items(study, info, bis)]
        rendering = rendering_of(failed[0][0])
        if out is None:
            out_dir = Path(study_path) / "batches"
            if not out_dir.is_dir():
                check_output(out_dir, "out")
                out_dir.mkdir()
            out = out_dir / ("retry-batch-" + "-".join(str(i.id) for i, _ in failed))
        files = render_items(items, rendering, out)
    targets = write_atomically(files, force=force)
    manifest = {"retry_failed": {"items": len(items), "batches": [i.id for i, _ in failed],
                                 "item_ids": [it.item_id for it in items]}, "files": [str(t) for t in targets]}
    notes.append(f"retry: {len(items)} item(s) whose judge request failed, from batch(es) "
                 f"{', '.join(str(i.id) for i, _ in failed)}; no new batch recorded")
    return NextBatchResult(None, tuple(str(t) for t in targets), manifest, False, "", tuple(notes), False,
                           tuple(items))
