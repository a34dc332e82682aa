"""Label Studio exports: full JSON, JSON_MIN and CSV, read back into positional records.

The three export types of the same project give the same judgments with the
same ids, so a cumulative re-export in any type dedupes in the store:

* judgment id ``ls:<task id>:<annotation id>``;
* item = the task's ``data.item_id`` (planner writes it; JSON_MIN and CSV put
  the task data keys at top level, so ``item_id`` is a column there);
* annotator = the Label Studio identity: the e-mail when the export gives one,
  else the username, else ``ls-user:<numeric user id>``; an expanded
  ``completed_by`` (``{"id", "email", ...}``) also gives ``identities``: the
  user's other identities (``ls-user:2``), so the store knows the UI export's
  ids and ``pull``'s e-mails as one annotator;
* ``lead_time`` → seconds; the Choices named ``verdict`` and ``reason``.

What carries no verdict is a *skip* record, counted by the store: a cancelled
(skipped) annotation, a task without annotations, an annotation without a
``verdict`` choice. Labels in messages and records' ``where`` are
``export.json:task 17`` (LS exports are often one line) or ``export.csv:row 3``.

Shapes follow Label Studio's own converter (label-studio-sdk
``converter/converter.py`` ``annotation_result_from_task`` / ``get_data`` /
``convert_to_json_min``, ``converter/exports/csv2.py``, ``utils.get_annotator``):
JSON_MIN and CSV drop cancelled annotations and write one row per remaining
annotation (a task without any annotation gives one row with
``annotation_id`` empty).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

from planner.errors import quote
from planner.formats.reading import (
    BadValue,
    Row,
    iter_csv,
    iter_json_array_indexed,
    opt_float,
    text_id,
)
from planner.vocabulary import POSITION_VERDICTS

_VERDICTS = ", ".join(POSITION_VERDICTS)
_FLOAT_INT = re.compile(r"^\d+\.0+$")


def ls_annotator(v) -> str | None:
    """Label Studio identity from ``completed_by`` / ``annotator``: e-mail, else username, else ``ls-user:<id>``."""
    if isinstance(v, dict):
        for key in ("email", "username"):
            s = v.get(key)
            if isinstance(s, str) and s.strip():
                return s.strip()
        v = v.get("id")
    if isinstance(v, bool):
        return None
    if isinstance(v, int):
        return f"ls-user:{v}"
    if isinstance(v, float) and v.is_integer():
        return f"ls-user:{int(v)}"
    if isinstance(v, str) and v.strip():
        s = v.strip()
        if s.isdigit() or _FLOAT_INT.match(s):
            return f"ls-user:{int(float(s))}"
        return s
    return None


def ls_identities(v) -> tuple[str, ...]:
    """Every identity an expanded ``completed_by`` gives beside :func:`ls_annotator`'s (the username, the
    numeric id), so an export naming users by id only (the UI's) reads as the same annotators."""
    if not isinstance(v, dict):
        return ()
    first = ls_annotator(v)
    out = []
    for key in ("email", "username"):
        s = v.get(key)
        if isinstance(s, str) and s.strip() and s.strip() != first:
            out.append(s.strip())
    uid = v.get("id")
    if isinstance(uid, int) and not isinstance(uid, bool) and f"ls-user:{uid}" != first:
        out.append(f"ls-user:{uid}")
    return tuple(out)


def _ls_id(v) -> str | None:
    """A task or annotation id as text (CSV gives ``17`` or ``17.0``)."""
    if isinstance(v, float) and v.is_integer():
        v = int(v)
    if isinstance(v, str) and _FLOAT_INT.match(v.strip()):
        v = v.strip().split(".")[0]
    return text_id(v)


def _choice(value, field: str, at: str) -> str | None:
    """One choice as text from a Choices value (string, list of one string); raises ValueError otherwise."""
    if value is None:
        return None
    if isinstance(value, dict) and "choices" in value:
        value = value["choices"]
    if isinstance(value, list) and len(value) == 1:
        value = value[0]
    if isinstance(value, list) and not value:
        return None
    if not isinstance(value, str):
        raise BadValue(f"{at}: {field} {quote(value)}; expected one choice")
    return value.strip() or None


def _verdict(value, at: str) -> str:
    v = value.lower()
    if v not in POSITION_VERDICTS:
        raise BadValue(f"{at}: verdict {quote(value)}; expected one of {_VERDICTS}")
    return v


NOT_PUSHED = "task planner did not push"   # the skip cause of a task outside ``items``


def _item_of(data, tid: str, at: str, items=None) -> str | None:
    """The task's ``data.item_id``; None for a task outside ``items`` (when given: planner's own items)."""
    item = data.get("item_id") if isinstance(data, dict) else None
    if isinstance(item, str) and item.strip() and (items is None or item.strip() in items):
        return item.strip()
    if items is not None:
        return None
    raise BadValue(f"{at}: data.item_id {quote(item)}; expected tasks written by planner (data.item_id)")


def _not_pushed(label: str) -> dict:
    return {"skip": NOT_PUSHED, "where": label}


def _results(ann: dict, at: str) -> dict:
    """``{from_name: value}`` of the ``verdict`` and ``reason`` results of one annotation."""
    result = ann.get("result")
    if result is None:
        return {}
    if not isinstance(result, list):
        raise BadValue(f"{at}: result {quote(result)}; expected a list of results")
    out = {}
    for res in result:
        if not isinstance(res, dict):
            raise BadValue(f"{at}: result entry {quote(res)}; expected an object")
        name = res.get("from_name")
        if name not in ("verdict", "reason"):
            continue
        value = res.get("value")
        if not isinstance(value, dict) or not isinstance(value.get("choices"), list):
            raise BadValue(f"{at}: {name} value {quote(value)}; expected {{\"choices\": [...]}}")
        if name in out:
            raise BadValue(f"{at}: two {name} results; expected one")
        out[name] = _choice(value, name, at)
    return out


def _annotation(ann, item: str, tid: str, label: str) -> dict:
    """One full-export annotation → positional or skip record (ValueError with a message otherwise)."""
    if not isinstance(ann, dict):
        raise BadValue(f"{label}: annotation {quote(ann)}; expected an object")
    aid = _ls_id(ann.get("id"))
    at = f"{label}: annotation {aid if aid is not None else quote(ann.get('id'))}"
    if aid is None:
        raise BadValue(f"{at}: missing or blank id; expected the annotation id")
    cancelled = ann.get("was_cancelled")
    if cancelled not in (None, True, False):
        raise BadValue(f"{at}: was_cancelled {quote(cancelled)}; expected true or false")
    if cancelled:
        return {"skip": "cancelled annotation", "item": item, "where": label}
    choices = _results(ann, at)
    if choices.get("verdict") is None:
        return {"skip": "annotation without a verdict", "item": item, "where": label}
    completed_by = ann.get("completed_by")
    annotator = ls_annotator(completed_by)
    if annotator is None and completed_by is not None:
        raise BadValue(f"{at}: completed_by {quote(completed_by)}; expected a user id or user object")
    rec = {"item": item, "verdict": _verdict(choices["verdict"], at), "id": f"ls:{tid}:{aid}",
           "annotator": annotator, "reason": choices.get("reason"),
           "seconds": opt_float(ann.get("lead_time"), "lead_time", at), "confidence": None, "where": label}
    also = ls_identities(completed_by)
    if also:
        rec["identities"] = also
    return rec


def _json_tasks(path: Path) -> Iterator[tuple]:
    """The objects of a JSON / JSON_MIN export with their task ids: ``(line, obj, tid, label)``,
    or ``(line, None, None, problem)`` for an unreadable element or a missing task id."""
    for line, at, obj, problem in iter_json_array_indexed(path):
        if problem:
            yield line, None, None, problem
            continue
        tid = _ls_id(obj.get("id"))
        if tid is None:
            yield line, None, None, f"{at}: task id {quote(obj.get('id'))}; expected a Label Studio task id"
            continue
        yield line, obj, tid, f"{path.name}:task {tid}"


def read_label_studio(path: Path, items=None, **_) -> Iterator[Row]:
    """Label Studio full JSON export (a list of tasks; the file the LS UI downloads as "JSON").

    Per task: ``data.item_id`` → item; each annotation is one judgment (see
    the module docstring for ids, annotator and skip records). Drafts and
    predictions are not judgments and are not read. With ``items`` (the item
    ids planner issued: ``pull`` passes them), a task that is not one of them
    (imported by hand into planner's project) is a skip record, not an error.
    """
    for line, task, tid, label in _json_tasks(Path(path)):
        if task is None:
            yield line, None, label
            continue
        try:
            item = _item_of(task.get("data"), tid, label, items)
            if item is None:
                yield line, _not_pushed(label), None
                continue
            anns = task.get("annotations", task.get("completions"))
            if anns is not None and not isinstance(anns, list):
                raise BadValue(f"{label}: annotations {quote(anns)}; expected a list")
        except ValueError as exc:
            yield line, None, str(exc)
            continue
        if not anns:
            yield line, {"skip": "task without annotations", "item": item, "where": label}, None
            continue
        for ann in anns:
            try:
                yield line, _annotation(ann, item, tid, label), None
            except ValueError as exc:
                yield line, None, str(exc)


def _flat_row(row: dict, label: str, tid: str, items=None) -> dict:
    """One JSON_MIN / CSV row (task data + annotation columns) → positional or skip record."""
    item = _item_of(row, tid, label, items)
    if item is None:
        return _not_pushed(label)
    aid = _ls_id(row.get("annotation_id"))
    if row.get("annotation_id") in (None, "") :
        return {"skip": "task without annotations", "item": item, "where": label}
    at = f"{label}: annotation {aid if aid is not None else quote(row.get('annotation_id'))}"
    if aid is None:
        raise BadValue(f"{at}: annotation_id {quote(row.get('annotation_id'))}; expected the annotation id")
    verdict = _choice(row.get("verdict"), "verdict", at)
    if verdict is None:
        return {"skip": "annotation without a verdict", "item": item, "where": label}
    raw = row.get("annotator")
    annotator = ls_annotator(raw)
    if annotator is None and raw not in (None, ""):
        raise BadValue(f"{at}: annotator {quote(raw)}; expected a user id or e-mail")
    return {"item": item, "verdict": _verdict(verdict, at), "id": f"ls:{tid}:{aid}", "annotator": annotator,
            "reason": _choice(row.get("reason"), "reason", at),
            "seconds": opt_float(row.get("lead_time"), "lead_time", at), "confidence": None, "where": label}


def read_label_studio_min(path: Path, items=None, **_) -> Iterator[Row]:
    """Label Studio JSON_MIN export: one object per annotation, task data keys at top level.

    Keys used: ``id`` (task id), ``item_id``, ``annotation_id``, ``annotator``
    (user id, or e-mail), ``verdict``, ``reason``, ``lead_time``.
    """
    for line, row, tid, label in _json_tasks(Path(path)):
        if row is None:
            yield line, None, label
            continue
        try:
            yield line, _flat_row(row, label, tid, items), None
        except ValueError as exc:
            yield line, None, str(exc)


def read_label_studio_csv(path: Path, items=None, **_) -> Iterator[Row]:
    """Label Studio CSV export: same columns as JSON_MIN (``id`` = task id, ``item_id``, ``annotation_id``,
    ``annotator``, ``verdict``, ``reason``, ``lead_time``, ...); rows cited as ``export.csv:row N``."""
    path = Path(path)
    for line, row, problem in iter_csv(path, rows=True):
        if row is None:   # the iterator's problem (exactly one of the two is set)
            yield line, None, problem
            continue
        label = f"{path.name}:row {line}"
        tid = _ls_id(row.get("id"))
        if tid is None:
            yield line, None, f"{label}: task id {quote(row.get('id'))}; expected a Label Studio task id"
            continue
        try:
            yield line, _flat_row(row, label, tid, items), None
        except ValueError as exc:
            yield line, None, str(exc)
