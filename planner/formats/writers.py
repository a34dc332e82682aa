"""Batch writers: turn a :class:`planner.batch.assemble.Batch` into annotator-facing files.

Formats (see docs/formats.md, "Batch files"):

* ``jsonl`` (default) — one object per item: ``{"item", "prompt", "left",
  "right"}``; acceptability items ``{"item", "prompt", "response", "question"}``.
* ``csv`` — columns ``item, prompt, left, right, response, question, verdict,
  reason`` (the last two empty, to be filled in); cells that begin with
  ``= + - @``, a tab or a carriage return are prefixed with ``'`` (OWASP CSV
  injection).
* ``label-studio`` — a tasks JSON array (``data`` holds only ``item_id``,
  ``prompt``, ``left``, ``right``) and the labeling config XML
  (``<stem>.label-config.xml``). Acceptability items go to a second project:
  ``<stem>[.<annotator>].acceptability.json`` with
  ``<stem>.acceptability.label-config.xml`` (Label Studio checks every task
  against the config's ``$variables``, so the two item shapes cannot share one
  project).
* ``argilla`` — a JSON array of flat record dicts ``{"id", "prompt", "left",
  "right", "item_id"}`` (acceptability: ``prompt, response, question``) that
  ``dataset.records.log(records)`` of the argilla 2.x SDK maps by name onto the
  record id, the fields and the ``item_id`` metadata, and the dataset settings
  (``<stem>.argilla-settings.json``) in the shape ``rg.Settings.to_json``
  writes, so ``rg.Settings.from_json(path)`` loads them: text fields, the
  ``verdict`` and ``reason`` label questions, the ``item_id`` terms metadata.
  Acceptability items go to a second dataset as for Label Studio.
* ``judge`` — OpenAI-batch-style JSONL, one chat-completions request per item
  (each order of a comparison is its own item), ``custom_id`` = item id.
  ``temperature`` is 0 unless the model belongs to a family that rejects the
  parameter (:data:`NO_TEMPERATURE_MODELS`: o1, o3, o4-*, gpt-5*, ...), which
  get none; an explicit ``temperature`` is always written.

Annotator-facing files hold only item ids, prompt and response texts and the
questions: no system name, no kind (attention and repeat items look like any
other item), no expected verdict.

With annotators, every annotator gets ``<stem>.<annotator><ext>``; shared files
(configs, settings) are written once. Existing files are refused unless
``force``; all files are first written as temporary files in the target
directory and then renamed (``os.replace``) together (see
:mod:`planner.formats.staging`). Files get the mode the umask allows.

With ``redact_names`` every mention of a system name in a response text (see
:mod:`planner.blinding` for the variants matched) is replaced by
``[a model]`` in every format.
"""

from __future__ import annotations

import contextlib
import csv
import io
import json
import math
import os
import re
from collections.abc import Iterator, Sequence
from pathlib import Path

from planner.csvcell import neutralize_cell
from planner.errors import DataError, UsageError, quote
from planner.formats.annotation_tools import (
    ACCEPTABILITY_QUESTION,
    argilla_records,
    argilla_settings,
    check_reasons,
    label_studio_acceptability_config,
    label_studio_config,
    ls_tasks,
)
from planner.formats.reading import read_option_file
from planner.formats.staging import stage, write_atomically
from planner.formats.templates import (
    ACCEPTABILITY_FIELDS,
    DEFAULT_ACCEPTABILITY_TEMPLATE,
    DEFAULT_PAIRWISE_TEMPLATE,
    JUDGE_SYSTEM_MESSAGE,
    check_template,
)
from planner.limits import check_choice

FORMATS = ("jsonl", "csv", "label-studio", "argilla", "judge")
DEFAULT_EXT = {"jsonl": ".jsonl", "csv": ".csv", "label-studio": ".json", "argilla": ".json", "judge": ".jsonl"}
CSV_COLUMNS = ("item", "prompt", "left", "right", "response", "question", "verdict", "reason")
# No default judge model: the judge is a choice the user makes (and a default
# such as "gpt-4o" would put a near-copy of a compared system's name, "gpt-4",
# into the request file). Reasoning models (o1, o3, o4-mini, ...) take no
# temperature, so it is set to 0 only for other models. Matched on the name after
# any "provider/" prefix, case-insensitively.
NO_TEMPERATURE_MODELS = ("o1*", "o3*", "o4*", "o<digit>*", "gpt-5*")
_NO_TEMPERATURE_RE = re.compile(r"^(?:.*/)?(?:o\d|gpt-5)", re.IGNORECASE)
TEMPERATURE_RANGE = (0.0, 2.0)  # the chat-completions API's documented range


# ------------------------------------------------------------ file layout
def _annotator_path(path: Path, annotator: str | None, extra: str = "") -> Path:
    """``<stem>[.<annotator>][<extra>]<ext>``."""
    parts = [path.stem]
    if annotator is not None:
        parts.append(annotator)
    if extra:
        parts.append(extra)
    return path.with_name(".".join(parts) + path.suffix)


def _shared_path(path: Path, name: str) -> Path:
    return path.with_name(f"{path.stem}.{name}")


def _groups(batch) -> list[tuple[str | None, list]]:
    out: dict[str | None, list] = {}
    for it in batch.items:
        out.setdefault(it.annotator, []).append(it)
    return list(out.items())


def _jsonl(records: Sequence[dict]) -> bytes:
    return "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records).encode("utf-8")


def _json(obj) -> bytes:
    return (json.dumps(obj, ensure_ascii=False, indent=2) + "\n").encode("utf-8")


# ------------------------------------------------------------------ formats
def _records_jsonl(items) -> list[dict]:
    out = []
    for it in items:
        if it.is_pairwise:
            out.append({"item": it.item_id, "prompt": it.prompt, "left": it.left_text, "right": it.right_text})
        else:
            out.append({"item": it.item_id, "prompt": it.prompt, "response": it.left_text,
                        "question": ACCEPTABILITY_QUESTION})
    return out


def _csv_bytes(items) -> bytes:
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\r\n")
    w.writerow(CSV_COLUMNS)
    for rec in _records_jsonl(items):
        row = [rec.get(c, "") or "" for c in CSV_COLUMNS]
        w.writerow([neutralize_cell(str(v)) for v in row])
    return buf.getvalue().encode("utf-8")


def check_temperature(temperature) -> float | None:
    """``--temperature``: None, or a finite number in :data:`TEMPERATURE_RANGE`."""
    if temperature is None:
        return None
    lo, hi = TEMPERATURE_RANGE
    try:
        t = float(temperature)
    except (TypeError, ValueError, OverflowError):
        t = math.nan
    if isinstance(temperature, bool) or not math.isfinite(t) or not lo <= t <= hi:
        raise UsageError(f"`temperature` ({quote(temperature)}) must be a number from {lo:g} to {hi:g}",
                         parameters=('temperature',))
    return t


def judge_temperature(model: str, temperature: float | None = None) -> float | None:
    """The ``temperature`` written for ``model``: explicit, else 0, else none for families that reject it."""
    if temperature is not None:
        return check_temperature(temperature)
    return None if _NO_TEMPERATURE_RE.match(model.strip()) else 0


def judge_requests(items, *, reasons: Sequence[str], template: str | None = None,
                   acceptability_template: str | None = None, model: str | None = None,
                   temperature: float | None = None) -> list[dict]:
    """OpenAI-batch-style requests, one per item, ``custom_id`` = item id.

    ``temperature``: see :func:`judge_temperature` (explicit value, else 0,
    else none for models that reject the parameter).
    """
    codes = ", ".join(check_reasons(reasons))
    pair_t = check_template(template if template is not None else DEFAULT_PAIRWISE_TEMPLATE)
    acc_t = check_template(acceptability_template if acceptability_template is not None
                           else DEFAULT_ACCEPTABILITY_TEMPLATE, allowed=ACCEPTABILITY_FIELDS,
                           required=("prompt", "response"), option="acceptability_template")
    if not isinstance(model, str) or not model.strip():
        raise UsageError("`judge_model` is required with `format` judge (the judge's model name, e.g. gpt-4o)",
                         parameters=('judge_model', 'format'))
    temp = judge_temperature(model, temperature)
    out = []
    for it in items:
        if it.is_pairwise:
            content = pair_t.format(prompt=it.prompt, left=it.left_text, right=it.right_text, reasons=codes)
        else:
            content = acc_t.format(prompt=it.prompt, response=it.left_text, reasons=codes)
        out.append({"custom_id": it.item_id, "method": "POST", "url": "/v1/chat/completions",
                    "body": {"model": model,
                             **({} if temp is None else {"temperature": temp}),
                             "messages": [{"role": "system", "content": JUDGE_SYSTEM_MESSAGE},
                                          {"role": "user", "content": content}]}})
    return out


def render_batch(batch, path: str | os.PathLike, format: str = "jsonl", *, reasons: Sequence[str],
                 template: str | None = None, acceptability_template: str | None = None,
                 judge_model: str | None = None, temperature: float | None = None,
                 redact_names: Sequence[str] | None = None) -> list[tuple[Path, bytes]]:
    """The files a batch becomes, as ``(path, bytes)`` pairs, without writing anything.

    Parameters
    ----------
    batch : planner.batch.assemble.Batch
    path : path-like
        The ``--out`` path; a missing extension gets the format's default.
        Per-annotator files are ``<stem>.<annotator><ext>``.
    format : {"jsonl", "csv", "label-studio", "argilla", "judge"}
    reasons : sequence of str
        The study's reason codes (Label Studio / Argilla choices, judge prompt).
    template, acceptability_template : str, optional
        ``str.format`` templates for judge requests (text, not a path);
        placeholders ``{prompt} {left} {right} {reasons}`` and
        ``{prompt} {response} {reasons}``.
    judge_model : str, optional
        Required for ``format="judge"``.
        ``body.model`` of judge requests.
    temperature : float, optional
        Explicit judge ``temperature`` (see :func:`judge_temperature`).
    redact_names : sequence of str, optional
        System names whose mentions in response texts become ``[a model]``.
    """
    check_choice("format", format, FORMATS)
    codes = check_reasons(reasons)
    path = Path(path)
    if not path.suffix:
        path = path.with_name(path.name + DEFAULT_EXT[format])
    if format == "judge":  # validate templates even for an empty group
        judge_requests([], reasons=codes, template=template, acceptability_template=acceptability_template,
                       model=judge_model, temperature=temperature)
    if redact_names:
        from dataclasses import replace

        from planner.blinding import redact_items

        batch = replace(batch, items=redact_items(batch.items, redact_names))
    files: list[tuple[Path, bytes]] = []
    groups = _groups(batch)
    any_acc = any(not it.is_pairwise for it in batch.items)
    any_pair = any(it.is_pairwise for it in batch.items)
    for annotator, items in groups:
        target = _annotator_path(path, annotator)
        pair = [it for it in items if it.is_pairwise]
        acc = [it for it in items if not it.is_pairwise]
        if format == "jsonl":
            files.append((target, _jsonl(_records_jsonl(items))))
        elif format == "csv":
            files.append((target, _csv_bytes(items)))
        elif format == "judge":
            files.append((target, _jsonl(judge_requests(items, reasons=codes, template=template,
                                                        acceptability_template=acceptability_template,
                                                        model=judge_model, temperature=temperature))))
        elif format == "label-studio":
            if pair or not acc:
                files.append((target, _json(ls_tasks(pair))))
            if acc:
                files.append((_annotator_path(path, annotator, "acceptability"), _json(ls_tasks(acc))))
        else:  # argilla
            if pair or not acc:
                files.append((target, _json(argilla_records(pair))))
            if acc:
                files.append((_annotator_path(path, annotator, "acceptability"), _json(argilla_records(acc))))
    if format == "label-studio":
        if any_pair or not any_acc:
            files.append((_shared_path(path, "label-config.xml"), label_studio_config(codes).encode("utf-8")))
        if any_acc:
            files.append((_shared_path(path, "acceptability.label-config.xml"),
                          label_studio_acceptability_config(codes).encode("utf-8")))
    elif format == "argilla":
        if any_pair or not any_acc:
            files.append((_shared_path(path, "argilla-settings.json"), _json(argilla_settings(codes))))
        if any_acc:
            files.append((_shared_path(path, "acceptability.argilla-settings.json"),
                          _json(argilla_settings(codes, acceptability=True))))
    return files


# ---------------------------------------------------------- atomic writing
def output_paths(path: str | os.PathLike, format: str, annotators: Sequence[str] | None, *,
                 acceptability: bool = False) -> list[Path]:
    """The files :func:`render_batch` writes for ``path`` when every annotator gets items.

    Used to check the outputs before any work (an annotator who gets no item
    has no file; an acceptability rate of 0 writes no acceptability files).
    """
    path = Path(path)
    if not path.suffix:
        path = path.with_name(path.name + DEFAULT_EXT.get(format, ""))
    names: Sequence[str | None] = annotators or [None]   # None: the one file without an annotator
    out = [_annotator_path(path, a) for a in names]
    if format in ("label-studio", "argilla") and acceptability:
        out += [_annotator_path(path, a, "acceptability") for a in names]
    if format == "label-studio":
        out.append(_shared_path(path, "label-config.xml"))
        if acceptability:
            out.append(_shared_path(path, "acceptability.label-config.xml"))
    elif format == "argilla":
        out.append(_shared_path(path, "argilla-settings.json"))
        if acceptability:
            out.append(_shared_path(path, "acceptability.argilla-settings.json"))
    return out


@contextlib.contextmanager
def staged_files(files: Sequence[tuple[Path, bytes]], *, force: bool = False) -> Iterator[list[Path]]:
    """Write every file as a temporary file next to its target; rename all on success.

    Use it to record the batch in the study inside the ``with`` block: if the
    block raises, the temporary files are removed and no target is touched.
    Yields the target paths. (``next-batch`` uses the journaled
    :func:`planner.formats.staging.stage` instead, which survives a kill.)
    """
    staged = stage(files, force=force)
    try:
        yield [Path(p) for p, _ in files]
    except BaseException:
        staged.abort()
        raise
    try:
        staged.commit()
    except BaseException:
        staged.abort()
        raise


def write_files(files: Sequence[tuple[Path, bytes]], *, force: bool = False) -> list[Path]:
    """Write ``(path, bytes)`` pairs atomically (all temporaries first, then all renames)."""
    write_atomically(files, force=force)
    return [Path(p) for p, _ in files]


def write_batch(batch, path: str | os.PathLike, format: str = "jsonl", *, reasons: Sequence[str],
                template: str | None = None, acceptability_template: str | None = None,
                judge_model: str | None = None, force: bool = False, temperature: float | None = None,
                redact_names: Sequence[str] | None = None) -> list[Path]:
    """Render and write a batch; returns the paths written (see :func:`render_batch`).

    Raises :class:`UsageError` when a target exists and ``force`` is false,
    for an unknown format, a bad template or bad reason codes.
    """
    files = render_batch(batch, path, format, reasons=reasons, template=template,
                         acceptability_template=acceptability_template, judge_model=judge_model,
                         temperature=temperature, redact_names=redact_names)
    return write_files(files, force=force)


# ------------------------------------------------------- attention pool in
def read_attention_pool(path: str | os.PathLike) -> tuple[str, ...]:
    """Texts for the broken side of attention items (``--attention-pool FILE``).

    JSONL: one object per line with a ``text`` string (or a bare JSON string).
    Blank lines are skipped. Bad lines raise :class:`DataError` naming
    ``file:line``.
    """
    p = Path(path)
    try:
        raw = read_option_file(p, "attention_pool", "a JSONL file")
    except UnicodeDecodeError as exc:
        raise DataError(f"{p}: not UTF-8 ({exc.reason} at byte {exc.start})") from None
    texts, problems = [], []
    for n, line in enumerate(raw.split("\n"), start=1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as exc:
            problems.append(f"{p}:{n}: not valid JSON ({exc.msg})")
            continue
        text = obj.get("text") if isinstance(obj, dict) else obj
        if not isinstance(text, str) or not text.strip():
            problems.append(f"{p}:{n}: needs a non-empty \"text\" string")
            continue
        texts.append(text)
    if problems:
        raise DataError(f"{p}: {len(problems)} bad line(s) in the attention pool", problems=problems)
    if not texts:
        raise DataError(f"{p}: the attention pool is empty")
    return tuple(texts)
