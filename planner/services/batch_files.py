"""A recorded batch's files, rendered again from the study: ``--rewrite``, ``--retry-failed``, crash recovery,
the judge's and Label Studio's re-sends.

A batch's files depend only on its items (ids, key, order — in the study) and
on the manifest's ``rendering`` (format, reason codes, judge template, model
and temperature, redaction, ``max_words``/truncation, style normalization, and
the broken side of each attention item, which is not derivable from the
study). :func:`rebuild_items` turns those back into :class:`planner.batch.items.Item`
objects with the same annotator-facing texts, so a rewrite gives byte-identical
files (checked against ``files_sha256``). Each function takes an open study.
"""

from __future__ import annotations

from collections.abc import Sequence

from planner.errors import DataError, UsageError, parameters_of, quote, shown

RENDER_KEYS = ("format", "reasons", "template", "acceptability_template", "judge_model", "temperature",
                "redact_names")


def rendering_of(info) -> dict:
    """The manifest's ``rendering`` of a recorded batch (a one-line error for a batch recorded without one)."""
    r = info.manifest.get("rendering")
    if not isinstance(r, dict):
        raise DataError(f"batch {info.id} was issued by an older planner that did not store how its files were "
                        "rendered; its files cannot be written again")
    return r


def rebuild_items(study, info, items: Sequence) -> tuple:
    """:class:`planner.batch.items.Item` objects (annotator-facing texts included) for stored batch items."""
    from planner.batch.items import Item
    from planner.batch.textnorm import count_words, normalize_text, truncate_words

    r = rendering_of(info)
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


def render_items(items, rendering: dict, out):
    """``[(path, bytes)]``: ``items`` rendered as ``rendering`` says, for ``out``."""
    from planner.batch.assemble import Batch
    from planner.formats.writers import render_batch

    return render_batch(Batch(tuple(items), ()), out, rendering["format"], reasons=rendering["reasons"],
                        template=rendering.get("template"),
                        acceptability_template=rendering.get("acceptability_template"),
                        judge_model=rendering.get("judge_model"), temperature=rendering.get("temperature"),
                        redact_names=rendering.get("redact_names"))


def batch_info(study, batch_id, option: str):
    """The recorded batch ``batch_id`` (``option`` names the parameter that gave it, for the error)."""
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
    info = batch_info(study, batch_id, "rewrite")
    rendering = rendering_of(info)
    items = rebuild_items(study, info, study.items(batch_id))
    return render_items(items, rendering, out if out is not None else rendering["out"]), info


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
