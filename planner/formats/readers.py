"""Readers: turn any supported input file into rows in planner's one vocabulary.

Nothing read from a user file is ever executed or unpickled: JSON goes through
:mod:`planner.formats.jsonsafe` (strict: duplicated keys with different
values, lone surrogates, huge integers and deep nesting are refused), CSV
through :mod:`csv`. JSONL and CSV are streamed line by line; the JSON-array
formats (Label Studio, alpaca_eval, Argilla) are read whole and decoded one
element at a time, and an array that does not end properly (a truncated
export) is a problem, never "the first elements".

Every reader is a generator of ``(line, record, problem)`` triples: ``line`` is
the 1-based line number (JSONL, JSON arrays) or data-row number (CSV), and
exactly one of ``record`` (a dict) and ``problem`` (a one-line string naming
where, the value -- quoted, at most ~80 characters, "missing" for an absent
one -- and what is allowed) is not ``None``. A record is one of (the reader →
store contract):

*oriented* (data collected outside planner)::

    {"id": str, "prompt": str, "a": system, "b": system,
     "verdict": "A"|"B"|"tie"|"invalid", "a_position": "left"|"right"|None,
     "annotator"?, "reason"?, "seconds"?, "confidence"?, "prompt_text"?}

  ``a_position: None`` means the position is unknown (never guessed).

*positional* (verdicts on items of a planner batch)::

    {"item": str, "verdict": "left"|"right"|"tie"|"invalid"|"pass"|"fail",
     "id"?, "annotator"?, "identities"?, "reason"?, "seconds"?, "confidence"?}

  ``identities``: other identities of the same user as ``annotator`` when the
  file names them (Label Studio's expanded ``completed_by``: the e-mail is the
  annotator, ``ls-user:<id>`` another identity of the same person).

*skip* -- a row that carries no verdict (blank CSV verdict, cancelled Label
Studio annotation, task without annotation, draft Argilla response)::

    {"skip": "<why>", "item"?: str}

*unanswered* -- a judge request that failed in transport (see
:mod:`planner.formats.judge`)::

    {"item": str, "unanswered": "<error, <= 80 chars>", "id": "judge:<custom_id>", "annotator": model or None}

Any record may carry ``"where"``: the label the store uses in its messages
instead of ``file:line`` (``export.json:task 17``, ``sheet.csv:row 3``).

The study (:func:`planner.store.study.ingest`) validates names against its store and
translates positional rows back to systems with the batch key.

Extending: register a :class:`Reader` in :data:`READERS` (name → reader). Its
``detect(sniff)`` gets a :class:`Sniff` of the file's head and returns True when
it recognises the file; detection tries readers in registry order, so add
specific formats before general ones (see :func:`register`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from planner.errors import DataError, quote
from planner.formats import jsonsafe
from planner.formats.argilla_read import read_argilla, read_argilla_flat
from planner.formats.external import read_alpaca_eval, read_arena_hard, read_mt_bench
from planner.formats.label_studio import (
    read_label_studio,
    read_label_studio_csv,
    read_label_studio_min,
)
from planner.formats.reading import (
    Row,
    Sniff,
    extras,
    iter_csv,
    iter_table,
    opt_str,
    sniff,
    where,
)
from planner.limits import check_choice
from planner.vocabulary import POSITION_VERDICTS

ORIENTED_VERDICTS = {"a": "A", "b": "B", "tie": "tie", "invalid": "invalid"}
_POSITIONS_EXPECTED = "expected one of left, right, tie, invalid (pass, fail for acceptability items)"

# kept for callers of the old private names
_where, _opt_str, _extras = where, opt_str, extras


# ---------------------------------------------------------------------- readers
def read_positions(path: Path, **_) -> Iterator[Row]:
    """Position verdicts for a planner batch (JSONL or CSV).

    Row: ``{"item", "verdict": left|right|tie|invalid|pass|fail, "id"?,
    "reason"?, "annotator"?, "seconds"?, "confidence"?}`` (labels are matched
    case-insensitively; anything else is an error, never guessed). A row whose
    verdict is blank (empty cell, JSON null or "") is a *skip* record
    ``{"skip": "blank verdict", "item"}``: a partly filled sheet stores its
    filled rows. CSV records carry ``where`` = ``sheet.csv:row N``.
    """
    path = Path(path)
    is_csv = sniff(path).first_char != "{"
    for line, row, problem in iter_table(path, rows=True):
        if row is None:   # the iterator's problem (exactly one of the two is set)
            yield line, None, problem
            continue
        at = f"{path.name}:row {line}" if is_csv else where(path, line)
        item_raw = row.get("item")
        item = item_raw.strip() if isinstance(item_raw, str) and item_raw.strip() else None
        verdict = row.get("verdict")
        if item is None:
            yield line, None, f"{at}: item {quote(item_raw)}; expected the item id from the batch file"
            continue
        if verdict is None or (isinstance(verdict, str) and not verdict.strip()):
            rec = {"skip": "blank verdict", "item": item}
            if is_csv:
                rec["where"] = at
            yield line, rec, None
            continue
        v = verdict.strip().lower() if isinstance(verdict, str) else None
        if v not in POSITION_VERDICTS:
            yield line, None, f"{at}: verdict {quote(verdict)}; {_POSITIONS_EXPECTED}"
            continue
        jid = row.get("id")
        if jid is not None and (not isinstance(jid, (str, int)) or isinstance(jid, bool) or not str(jid).strip()):
            yield line, None, f"{at}: id {quote(jid)}; expected a non-blank text id (or no id)"
            continue
        try:
            rec = extras(row, at, {"item": item, "verdict": v, "id": opt_str(jid)})
        except ValueError as exc:
            yield line, None, str(exc)
            continue
        if is_csv:
            rec["where"] = at
        yield line, rec, None


def _text(row: dict, key: str):
    v = row.get(key)
    return v.strip() if isinstance(v, str) and v.strip() else None


def _check_normalized(at: str, line: int, row: dict) -> Row:
    """Full checks of one normalized row (CSV rows and anything off the JSONL fast path)."""
    verdict = row.get("verdict")
    v = ORIENTED_VERDICTS.get(verdict.strip().lower()) if isinstance(verdict, str) else None
    jid, prompt, a, b = (_text(row, k) for k in ("id", "prompt", "a", "b"))
    pos = row.get("a_position") or "left"
    if v is None:
        return line, None, f"{at}: verdict {quote(verdict)}; expected one of A, B, tie, invalid"
    if pos not in ("left", "right", "unknown"):
        return line, None, f"{at}: a_position {quote(pos)}; expected left, right or unknown"
    if None in (jid, prompt, a, b):
        missing = [k for k, x in zip(("id", "prompt", "a", "b"), (jid, prompt, a, b)) if x is None]
        shown = ", ".join(f"{k} {quote(row.get(k))}" for k in missing)
        return line, None, f"{at}: {shown}; expected id, prompt, a, b as non-blank text"
    try:
        rec = extras(row, at, {"id": jid, "prompt": prompt, "a": a, "b": b, "verdict": v,
                               "a_position": None if pos == "unknown" else pos})
    except ValueError as exc:
        return line, None, str(exc)
    if rec["annotator"] is None:
        judge = row.get("judge")
        rec["annotator"] = opt_str(judge) if isinstance(judge, str) else None
    return line, rec, None


_EXACT = {"A": "A", "B": "B", "tie": "tie", "invalid": "invalid"}
_FAST_KEYS = frozenset({"id", "prompt", "a", "b", "verdict", "judge", "annotator", "reason"})


def read_normalized(path: Path, **_) -> Iterator[Row]:
    """Normalized labelled judgments (JSONL, or CSV with the same columns).

    Row: ``{"id", "prompt", "a", "b", "verdict": A|B|tie|invalid, "a_position"?:
    left|right|unknown (default left; unknown = not known, stored as such),
    "judge"?, "annotator"?, "reason"?, "seconds"?, "confidence"?}``.
    ``annotator`` defaults to ``judge``. Verdict labels are matched
    case-insensitively; anything else is an error.

    JSONL rows in the common shape (only the keys above minus ``a_position``,
    ``seconds``, ``confidence``; exact labels; non-blank text fields) take a
    fast path that reuses the parsed dict; every other row goes through the
    full checks. Both paths use the strict decoder of :mod:`.jsonsafe`.
    """
    path = Path(path)
    if sniff(path).first_char != "{":
        for line, row, problem in iter_csv(path, rows=True):
            if row is None:   # the iterator's problem (exactly one of the two is set)
                yield line, None, problem
                continue
            out = _check_normalized(f"{path.name}:row {line}", line, row)
            if out[1] is not None:
                out[1]["where"] = f"{path.name}:row {line}"
            yield out
        return
    yield from _normalized_jsonl(path)


def _normalized_jsonl(path: Path) -> Iterator[Row]:
    scan, exact, str_, fast_keys = jsonsafe._SCAN, _EXACT, str, _FAST_KEYS
    surrogate = jsonsafe._SURROGATE_ESCAPE.search
    line_no = 0
    try:
        with jsonsafe._OPEN(path, encoding="utf-8-sig", newline=None) as f:
            for line_no, text in enumerate(f, 1):
                try:
                    if "\\u" in text and surrogate(text) is not None:
                        raise ValueError
                    row, end = scan(text, 0)
                    if end != len(text) - 1 and end != len(text) and text[end:].strip():
                        raise ValueError
                    if (row.keys() <= fast_keys and row["verdict"] in exact and type(row["id"]) is str_
                            and type(row["prompt"]) is str_ and type(row["a"]) is str_ and type(row["b"]) is str_
                            and row["id"].strip() and row["prompt"].strip() and row["a"].strip()
                            and row["b"].strip()):
                        ann = row.get("annotator") or row.get("judge")
                        reason = row.get("reason")
                        if (ann is None or type(ann) is str_) and (reason is None or type(reason) is str_):
                            row["annotator"] = ann
                            row["a_position"] = "left"
                            yield line_no, row, None
                            continue
                except (StopIteration, ValueError, KeyError, AttributeError, TypeError, RecursionError):
                    if not text.strip():
                        continue
                    try:
                        row = jsonsafe.loads(text)
                    except jsonsafe.JSONProblem as exc:
                        yield line_no, None, f"{where(path, line_no)}: {exc}; expected one JSON object per line"
                        continue
                if not isinstance(row, dict):
                    yield line_no, None, f"{where(path, line_no)}: not a JSON object; expected one per line"
                    continue
                yield _check_normalized(where(path, line_no), line_no, row)
    except UnicodeDecodeError as exc:
        yield line_no + 1, None, f"{where(path, line_no + 1)}: not UTF-8 text ({exc.reason}); expected a UTF-8 file"
    except OSError as exc:
        yield line_no + 1, None, f"{path.name}: cannot read the file ({exc.strerror or exc.__class__.__name__})"


# --------------------------------------------------------------------- registry
@dataclass(frozen=True)
class Reader:
    """A registered input format.

    Attributes
    ----------
    name : str
        The ``--format`` value.
    read : callable
        ``read(path, **options) -> iterator of (line, record, problem)``.
    detect : callable
        ``detect(Sniff) -> bool``.
    description : str
    """

    name: str
    read: Callable[..., Iterator[Row]]
    detect: Callable[[Sniff], bool]
    description: str


READERS: dict[str, Reader] = {}


def register(reader: Reader, *, before: str | None = None) -> None:
    """Add a reader; ``before`` puts it ahead of an existing one in detection order."""
    if before is None or before not in READERS:
        READERS[reader.name] = reader
        return
    items = list(READERS.items())
    READERS.clear()
    for name, r in items:
        if name == before:
            READERS[reader.name] = reader
        READERS[name] = r


def _array_keys(s: Sniff, *keys: str) -> bool:
    """A JSON array whose first element has ``keys`` (or, when it is too big to parse in the head, whose head
    mentions them)."""
    if s.first_char != "[":
        return False
    if s.first_record is not None:
        return set(keys) <= s.keys
    return all(f'"{k}"' in s.head for k in keys)


def _is_argilla_flat(s: Sniff) -> bool:
    """Flat Argilla records: a JSON array or JSON Lines whose first record has ``<question>.responses``."""
    if s.first_char not in ("[", "{"):
        return False
    if s.first_record is not None:
        return any(k.endswith(".responses") for k in s.keys)
    return s.first_char == "[" and '.responses"' in s.head


def _is_argilla(s: Sniff) -> bool:
    """Nested Argilla records (``to_json``): a JSON array, or JSON Lines, of ``{"fields", "responses", ...}``."""
    if s.first_char == "{":
        return {"fields", "responses"} <= s.keys
    return _array_keys(s, "fields", "responses")


register(Reader("label-studio", read_label_studio, lambda s: _array_keys(s, "annotations", "data"),
                "Label Studio full JSON export"))
register(Reader("label-studio-min", read_label_studio_min,
                lambda s: _array_keys(s, "item_id", "annotation_id", "annotator"),
                "Label Studio JSON_MIN export"))
register(Reader("label-studio-csv", read_label_studio_csv,
                lambda s: s.header is not None and {"item_id", "annotation_id", "annotator"} <= set(s.header),
                "Label Studio CSV export"))
register(Reader("argilla", read_argilla, _is_argilla,
                "Argilla v2 dataset.records.to_json(path) export (JSON array or JSON Lines)"))
register(Reader("argilla-flat", read_argilla_flat, _is_argilla_flat,
                "Argilla v2 flat records (to_list(flatten=True), to_datasets().to_json()): JSON array or JSON Lines"))
register(Reader("alpaca-eval", read_alpaca_eval, lambda s: _array_keys(s, "preference", "generator_1"),
                "alpaca_eval annotations (JSON array)"))
register(Reader("mt-bench", read_mt_bench, lambda s: {"g1_winner", "model_1"} <= s.keys,
                "FastChat MT-bench pairwise judgments (JSONL)"))
register(Reader("arena-hard", read_arena_hard, lambda s: "games" in s.keys and "model" in s.keys,
                "arena-hard-auto judgment lines (JSONL)"))
register(Reader("positions", read_positions, lambda s: {"item", "verdict"} <= s.keys,
                "position verdicts for a planner batch (JSONL or CSV)"))
register(Reader("normalized", read_normalized, lambda s: {"a", "b", "verdict"} <= s.keys,
                "normalized labelled judgments (JSONL or CSV)"))


def detect_format(path: Path, format: str | None = None) -> Reader:
    """The reader for ``path``: ``format`` when given, else the first that detects it."""
    if format is not None:
        check_choice("format", format, READERS)
        return READERS[format]
    s = sniff(Path(path))
    for r in READERS.values():
        if r.detect(s):
            return r
    seen = ", ".join(sorted(s.keys)[:8]) or s.head[:40].strip() or None
    raise DataError(f"{Path(path).name}:1: cannot tell the format (saw {quote(seen)}); expected one of "
                    f"{', '.join(READERS)} — pass `format`", parameters=('format',))


def _read_judge(path: Path, **options) -> Iterator[Row]:
    """LLM-judge outputs keyed by ``custom_id`` (parser in :mod:`planner.formats.judge`, imported lazily)."""
    from planner.formats.judge import read_judge_rows

    return read_judge_rows(path, **options)


register(Reader("judge", _read_judge, lambda s: "custom_id" in s.keys,
                "LLM-judge outputs keyed by custom_id (OpenAI batch output or error file, JSONL)"),
         before="positions")

__all__ = ["READERS", "Reader", "detect_format", "read_normalized", "read_positions", "register"]
