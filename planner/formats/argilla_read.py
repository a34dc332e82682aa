"""Argilla v2 exports read back into positional records.

Two shapes, both produced by the argilla 2.x SDK (``argilla.records._io``):

* ``dataset.records.to_json(path)`` -- a JSON array of
  ``{"id", "fields", "metadata", "suggestions", "responses": {question:
  [{"value", "user_id"}, ...]}, "vectors", "status", "_server_id"}``.
  **This shape does not say a response's status** (the SDK writes value and
  user only), so every response in it counts as answered: export submitted
  responses only (filter ``response.status == "submitted"``) or use the
  flattened shape.
* ``dataset.records.to_list(flatten=True)`` saved with ``json.dump`` -- one
  flat object per record: fields and metadata at top level, and per question
  ``"<q>.responses"``, ``"<q>.responses.users"``, ``"<q>.responses.status"``
  (parallel lists, or null when nobody answered).

Either shape may also come as **JSON Lines**, one record per line: the flat
records are what ``dataset.records.to_datasets()`` holds, and a Hugging Face
dataset's ``to_json(path)`` writes JSON Lines (as does pandas with
``lines=True``); the file's first character tells the two containers apart.

Records written by planner have ``id`` = item id and ``metadata.item_id``;
questions ``verdict`` (left/right/tie/invalid, or pass/fail) and ``reason``.
One positional record per (record, user): id ``argilla:<record id>:<user
id>``, annotator ``argilla-user:<user id>`` (the same in both shapes, so a
re-export in the other shape dedupes). A response whose status is not
``submitted`` (draft, discarded) and a record nobody answered are *skip*
records. Messages cite ``file.json:record <id>``.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from planner.errors import quote
from planner.formats.reading import (
    BadValue,
    Row,
    iter_json_array_indexed,
    iter_jsonl,
    sniff,
    text_id,
    where,
)
from planner.vocabulary import POSITION_VERDICTS

_VERDICTS = ", ".join(POSITION_VERDICTS)


def _value(v, what: str, at: str) -> str | None:
    if isinstance(v, list) and len(v) == 1:
        v = v[0]
    if v is None:
        return None
    if not isinstance(v, str):
        raise BadValue(f"{at}: {what} {quote(v)}; expected one label")
    return v.strip() or None


def _item(rec: dict, metadata, at: str) -> str:
    item = metadata.get("item_id") if isinstance(metadata, dict) else None
    if item is None:
        item = rec.get("id")
    if not isinstance(item, str) or not item.strip():
        raise BadValue(f"{at}: metadata.item_id {quote(item)}; expected records written by planner")
    return item.strip()


def _responses(rec: dict, at: str) -> dict:
    """``{question: [(user, value, status or None), ...]}`` from the ``to_json`` shape."""
    responses = rec.get("responses")
    if responses is None:
        return {}
    if not isinstance(responses, dict):
        raise BadValue(f"{at}: responses {quote(responses)}; expected an object of question → responses")
    out = {}
    for q, lst in responses.items():
        if not isinstance(lst, list):
            raise BadValue(f"{at}: responses.{q} {quote(lst)}; expected a list")
        rows = []
        for r in lst:
            if not isinstance(r, dict):
                raise BadValue(f"{at}: responses.{q} entry {quote(r)}; expected an object")
            status = r.get("status")
            if status is not None and not isinstance(status, str):
                raise BadValue(f"{at}: responses.{q} status {quote(status)}; expected text")
            rows.append((r.get("user_id"), r.get("value"), status))
        out[q] = rows
    return out


def _flat_responses(rec: dict, at: str) -> dict:
    """The same from the flattened shape (parallel lists per question)."""
    out = {}
    for key in rec:
        if not key.endswith(".responses"):
            continue
        q = key[: -len(".responses")]
        values, users, status = rec.get(key), rec.get(f"{key}.users"), rec.get(f"{key}.status")
        if values is None and users is None:
            continue
        if not isinstance(values, list) or not isinstance(users, list) or len(values) != len(users) or (
                status is not None and (not isinstance(status, list) or len(status) != len(values))):
            raise BadValue(f"{at}: {key} {quote(values)} with users {quote(users)}; expected parallel lists")
        out[q] = list(zip(users, values, status if status is not None else [None] * len(values)))
    return out


def _records(rid: str, item: str, by_q: dict, label: str) -> list[dict]:
    """One positional or skip record per user who answered ``verdict``."""
    if not by_q.get("verdict"):
        return [{"skip": "record without responses", "item": item, "where": label}]
    reasons = {}
    for user, value, status in by_q.get("reason", ()):
        reasons[str(user)] = (value, status)
    out: list[dict] = []
    seen: set = set()
    for user, value, status in by_q["verdict"]:
        uid = text_id(user)
        at = f"{label}: user {quote(user)}"
        if uid is None:
            raise BadValue(f"{at}: missing or blank user_id; expected the Argilla user id")
        if uid in seen:
            raise BadValue(f"{at}: two verdict responses by the same user; expected one")
        seen.add(uid)
        if status is not None and status != "submitted":
            out.append({"skip": f"{status} response", "item": item, "where": label})
            continue
        verdict = _value(value, "verdict", at)
        if verdict is None:
            out.append({"skip": "blank verdict", "item": item, "where": label})
            continue
        if verdict.lower() not in POSITION_VERDICTS:
            raise BadValue(f"{at}: verdict {quote(verdict)}; expected one of {_VERDICTS}")
        reason_value, _ = reasons.get(str(user), (None, None))
        out.append({"item": item, "verdict": verdict.lower(), "id": f"argilla:{rid}:{uid}",
                    "annotator": f"argilla-user:{uid}", "reason": _value(reason_value, "reason", at),
                    "seconds": None, "confidence": None, "where": label})
    return out


def _elements(path: Path) -> Iterator[tuple]:
    """``(line, at, record, problem)`` from a JSON array or, when the file starts with ``{``, JSON Lines."""
    if sniff(path).first_char != "{":
        yield from iter_json_array_indexed(path)
        return
    for line, rec, problem in iter_jsonl(path):
        yield line, where(path, line), rec, problem


def _read(path: Path, flat: bool) -> Iterator[Row]:
    path = Path(path)
    for line, at, rec, problem in _elements(path):
        if rec is None:   # the iterator's problem (exactly one of the two is set)
            yield line, None, problem
            continue
        rid = text_id(rec.get("id"))
        if rid is None:
            yield line, None, f"{at}: record id {quote(rec.get('id'))}; expected the Argilla record id"
            continue
        label = f"{path.name}:record {rid}"
        try:
            item = _item(rec, rec if flat else rec.get("metadata"), label)
            by_q = _flat_responses(rec, label) if flat else _responses(rec, label)
            out = _records(rid, item, by_q, label)
        except ValueError as exc:
            yield line, None, str(exc)
            continue
        for r in out:
            yield line, r, None


def read_argilla(path: Path, **_) -> Iterator[Row]:
    """Argilla v2 ``dataset.records.to_json(path)`` export, or the same records one per line (see the module
    docstring)."""
    return _read(path, flat=False)


def read_argilla_flat(path: Path, **_) -> Iterator[Row]:
    """Argilla v2 flat records (``to_list(flatten=True)``) as a JSON array or JSON Lines (see the module
    docstring)."""
    return _read(path, flat=True)
