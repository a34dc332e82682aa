"""Readers: turn any supported input file into rows in planner's one vocabulary.

Nothing read from a user file is ever executed or unpickled: JSON goes through
:func:`json.loads` / :class:`json.JSONDecoder`, CSV through :mod:`csv`. Files are
streamed line by line (JSONL, CSV); the JSON-array formats (Label Studio,
alpaca_eval) are decoded one element at a time from the text.

Every reader is a generator of ``(line, record, problem)`` triples: ``line`` is
the 1-based line number where the row ends (CSV) or starts (JSON), and exactly
one of ``record`` (a dict) and ``problem`` (a one-line string naming the value
and what was expected) is not ``None``. A record is in one of two forms:

*oriented* (data collected outside planner)::

    {"id": str, "prompt": str, "a": system, "b": system,
     "verdict": "A"|"B"|"tie"|"invalid", "a_position": "left"|"right",
     "annotator"?, "reason"?, "seconds"?, "confidence"?, "prompt_text"?}

*positional* (verdicts on items of a planner batch)::

    {"item": str, "verdict": "left"|"right"|"tie"|"invalid"|"pass"|"fail",
     "id"?, "annotator"?, "reason"?, "seconds"?, "confidence"?}

The study (:func:`planner.study.ingest`) validates names against its store and
translates positional rows back to systems with the batch key.

Extending: register a :class:`Reader` in :data:`READERS` (name → reader). Its
``detect(sniff)`` gets a :class:`Sniff` of the file's head and returns True when
it recognises the file; detection tries readers in registry order, so add
specific formats before general ones (see :func:`register`).
"""

from __future__ import annotations

import csv
import hashlib
import json
import json.scanner
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterator

from planner.errors import DataError, UsageError

Row = tuple[int, "dict | None", "str | None"]

POSITION_VERDICTS = ("left", "right", "tie", "invalid", "pass", "fail")
ORIENTED_VERDICTS = {"a": "A", "b": "B", "tie": "tie", "invalid": "invalid"}
SNIFF_BYTES = 65536


# --------------------------------------------------------------------------- sniff
@dataclass(frozen=True)
class Sniff:
    """What detection sees of a file.

    Attributes
    ----------
    path : Path
    head : str
        The first 64 KiB decoded as UTF-8 (BOM removed, bad bytes replaced).
    first_char : str
        First non-whitespace character ("" for an empty file).
    first_record : dict or None
        The first JSONL line parsed, when the file is JSONL.
    header : tuple of str or None
        The CSV header, when the file is not JSON.
    """

    path: Path
    head: str
    first_char: str
    first_record: dict | None
    header: tuple[str, ...] | None

    @property
    def keys(self) -> set[str]:
        if self.first_record is not None:
            return set(self.first_record)
        return set(self.header or ())


def sniff(path: Path) -> Sniff:
    with open(path, "rb") as f:
        raw = f.read(SNIFF_BYTES)
    head = raw.decode("utf-8", errors="replace").lstrip("\ufeff")
    stripped = head.lstrip()
    first_char = stripped[:1]
    first_record = header = None
    if first_char == "{":
        line = stripped.split("\n", 1)[0]
        try:
            obj = json.loads(line)
            first_record = obj if isinstance(obj, dict) else None
        except ValueError:
            first_record = None
    elif first_char and first_char != "[":
        try:
            header = tuple(h.strip() for h in next(csv.reader(head.splitlines()[:1])))
        except (StopIteration, csv.Error):
            header = None
    return Sniff(Path(path), head, first_char, first_record, header)


# ------------------------------------------------------------------ low-level rows
def _where(path: Path, line: int) -> str:
    return f"{path.name}:{line}"


# The C scanner behind json.loads, called directly: same grammar (NaN allowed, as
# json.loads), without the Python wrapper layers -- about twice as fast per line.
_scan = json.scanner.make_scanner(json.JSONDecoder())


def _loads_line(line: str):
    """Parse one JSONL line exactly as ``json.loads`` would (raises ValueError likewise)."""
    try:
        obj, end = _scan(line, 0)
    except (StopIteration, ValueError):
        return json.loads(line)  # leading whitespace, blank or malformed: json.loads decides/explains
    if end != len(line) - 1 and end != len(line) and line[end:].strip():
        return json.loads(line)  # trailing data: let json.loads raise its "Extra data" error
    return obj


def iter_jsonl(path: Path) -> Iterator[Row]:
    """Stream a JSONL file: one JSON object per non-blank line."""
    with open(path, encoding="utf-8-sig", newline=None, errors="strict") as f:
        line_no = 0
        try:
            for line_no, line in enumerate(f, 1):
                if not line.strip():
                    continue
                try:
                    obj = _loads_line(line)
                except ValueError as exc:
                    yield line_no, None, f"{_where(path, line_no)}: malformed JSON ({exc.msg}); expected one JSON object per line"
                    continue
                if not isinstance(obj, dict):
                    yield line_no, None, f"{_where(path, line_no)}: {type(obj).__name__} value; expected a JSON object"
                    continue
                yield line_no, obj, None
        except UnicodeDecodeError as exc:
            yield line_no + 1, None, f"{_where(path, line_no + 1)}: not UTF-8 text ({exc.reason}); expected a UTF-8 file"


def iter_csv(path: Path) -> Iterator[Row]:
    """Stream a CSV file with a header row (BOM, CRLF, quoted commas/newlines OK).

    Empty cells become ``None``; header names are stripped.
    """
    with open(path, encoding="utf-8-sig", newline="") as f:
        reader = csv.reader(f)
        try:
            header = [h.strip() for h in next(reader)]
        except StopIteration:
            return
        except (csv.Error, UnicodeDecodeError) as exc:
            yield 1, None, f"{_where(path, 1)}: unreadable CSV header ({exc}); expected a header row"
            return
        n = len(header)
        while True:
            try:
                cells = next(reader)
            except StopIteration:
                return
            except (csv.Error, UnicodeDecodeError) as exc:
                yield reader.line_num, None, f"{_where(path, reader.line_num)}: malformed CSV ({exc})"
                return
            if not cells or all(not c.strip() for c in cells):
                continue
            if len(cells) != n:
                yield reader.line_num, None, (f"{_where(path, reader.line_num)}: {len(cells)} cells; "
                                              f"expected {n} (the header's columns)")
                continue
            yield reader.line_num, {k: (v if v != "" else None) for k, v in zip(header, cells)}, None


def iter_table(path: Path) -> Iterator[Row]:
    """JSONL or CSV, decided by the first non-blank character (``{`` → JSONL)."""
    s = sniff(path)
    return iter_jsonl(path) if s.first_char == "{" else iter_csv(path)


def iter_json_array(path: Path) -> Iterator[Row]:
    """Decode a JSON array element by element, yielding each object with its line."""
    text = Path(path).read_text(encoding="utf-8-sig")
    dec = json.JSONDecoder()
    ws = " \t\r\n"
    pos = 0
    n = len(text)

    def skip(p):
        while p < n and text[p] in ws:
            p += 1
        return p

    pos = skip(pos)
    if pos >= n or text[pos] != "[":
        yield 1, None, f"{_where(path, 1)}: expected a JSON array ('[' ...)"
        return
    pos = skip(pos + 1)
    line = text.count("\n", 0, pos) + 1
    last = pos
    if pos < n and text[pos] == "]":
        return
    while pos < n:
        line += text.count("\n", last, pos)
        last = pos
        try:
            obj, end = dec.raw_decode(text, pos)
        except ValueError as exc:
            yield line, None, f"{_where(path, line)}: malformed JSON ({exc.msg})"
            return
        if isinstance(obj, dict):
            yield line, obj, None
        else:
            yield line, None, f"{_where(path, line)}: {type(obj).__name__} element; expected a JSON object"
        pos = skip(end)
        if pos < n and text[pos] == ",":
            pos = skip(pos + 1)
        elif pos < n and text[pos] == "]":
            return
        else:
            line += text.count("\n", last, pos)
            yield line, None, f"{_where(path, line)}: malformed JSON array; expected ',' or ']'"
            return


# ---------------------------------------------------------------- value helpers
def _opt_str(v):
    if v is None:
        return None
    if isinstance(v, (dict, list)):
        return json.dumps(v, ensure_ascii=False)
    s = str(v).strip()
    return s or None


def _opt_float(v, field: str, where: str):
    """Float or None; raises ValueError with a message naming the field."""
    if v is None or v == "":
        return None
    try:
        f = float(v)
    except (TypeError, ValueError):
        raise ValueError(f"{where}: {field} {v!r} is not a number") from None
    if not math.isfinite(f) or f < 0:
        raise ValueError(f"{where}: {field} {v!r}; expected a finite number >= 0")
    return f


def _extras(row: dict, where: str, out: dict) -> dict:
    """Copy optional annotator/reason/seconds/confidence from ``row`` into ``out``."""
    out["annotator"] = _opt_str(row.get("annotator"))
    out["reason"] = _opt_str(row.get("reason"))
    out["seconds"] = _opt_float(row.get("seconds"), "seconds", where)
    out["confidence"] = _opt_float(row.get("confidence"), "confidence", where)
    return out


# ---------------------------------------------------------------------- readers
def read_positions(path: Path, **_) -> Iterator[Row]:
    """Position verdicts for a planner batch (JSONL or CSV).

    Row: ``{"item", "verdict": left|right|tie|invalid|pass|fail, "id"?,
    "reason"?, "annotator"?, "seconds"?, "confidence"?}`` (labels are matched
    case-insensitively; anything else is an error, never guessed).
    """
    for line, row, problem in iter_table(path):
        if problem:
            yield line, None, problem
            continue
        where = _where(path, line)
        item = _opt_str(row.get("item"))
        verdict = row.get("verdict")
        v = verdict.strip().lower() if isinstance(verdict, str) else None
        if item is None:
            yield line, None, f"{where}: missing 'item'; expected the item id from the batch file"
            continue
        if v not in POSITION_VERDICTS:
            yield line, None, (f"{where}: verdict {verdict!r}; expected one of left, right, tie, invalid "
                               f"(pass, fail for acceptability items)")
            continue
        try:
            rec = _extras(row, where, {"item": item, "verdict": v, "id": _opt_str(row.get("id"))})
        except ValueError as exc:
            yield line, None, str(exc)
            continue
        yield line, rec, None


def _check_normalized(path: Path, line: int, row: dict) -> Row:
    """Full checks of one normalized row (CSV rows and anything off the JSONL fast path)."""
    verdict = row.get("verdict")
    v = ORIENTED_VERDICTS.get(verdict.lower()) if isinstance(verdict, str) else None
    jid, prompt, a, b = (_opt_str(row.get(k)) if isinstance(row.get(k), str) else None
                         for k in ("id", "prompt", "a", "b"))
    pos = row.get("a_position") or "left"
    where = _where(path, line)
    if v is None:
        return line, None, f"{where}: verdict {verdict!r}; expected one of A, B, tie, invalid"
    if pos not in ("left", "right"):
        return line, None, f"{where}: a_position {pos!r}; expected left or right"
    if None in (jid, prompt, a, b):
        missing = [k for k, x in zip(("id", "prompt", "a", "b"), (jid, prompt, a, b)) if x is None]
        return line, None, f"{where}: {', '.join(missing)} missing or not text; expected id, prompt, a, b as strings"
    try:
        rec = _extras(row, where, {"id": jid, "prompt": prompt, "a": a, "b": b, "verdict": v, "a_position": pos})
    except ValueError as exc:
        return line, None, str(exc)
    if rec["annotator"] is None:
        rec["annotator"] = _opt_str(row.get("judge"))
    return line, rec, None


_EXACT = {"A": "A", "B": "B", "tie": "tie", "invalid": "invalid"}
_FAST_KEYS = frozenset({"id", "prompt", "a", "b", "verdict", "judge", "annotator", "reason"})


def read_normalized(path: Path, **_) -> Iterator[Row]:
    """Normalized labelled judgments (JSONL, or CSV with the same columns).

    Row: ``{"id", "prompt", "a", "b", "verdict": A|B|tie|invalid, "a_position"?:
    left|right (default left), "judge"?, "annotator"?, "reason"?, "seconds"?,
    "confidence"?}``. ``annotator`` defaults to ``judge``. Verdict labels are
    matched case-insensitively; anything else is an error.

    JSONL rows in the common shape (only the keys above minus ``a_position``,
    ``seconds``, ``confidence``; exact labels; text fields) take a fast path
    that reuses the parsed dict; every other row goes through the full checks.
    """
    if sniff(Path(path)).first_char != "{":
        for line, row, problem in iter_csv(path):
            yield (line, None, problem) if problem else _check_normalized(path, line, row)
        return
    scan, exact, str_, fast_keys = _scan, _EXACT, str, _FAST_KEYS
    line_no = 0
    with open(path, encoding="utf-8-sig", newline=None) as f:
        try:
            for line_no, text in enumerate(f, 1):
                try:
                    row, end = scan(text, 0)
                    if end != len(text) - 1 and end != len(text) and text[end:].strip():
                        raise ValueError
                    if (row.keys() <= fast_keys and row["verdict"] in exact and type(row["id"]) is str_
                            and type(row["prompt"]) is str_ and type(row["a"]) is str_ and type(row["b"]) is str_):
                        ann = row.get("annotator") or row.get("judge")
                        reason = row.get("reason")
                        if (ann is None or type(ann) is str_) and (reason is None or type(reason) is str_):
                            row["annotator"] = ann
                            row["a_position"] = "left"
                            yield line_no, row, None
                            continue
                except (StopIteration, ValueError, KeyError, AttributeError, TypeError):
                    try:
                        row = json.loads(text)
                    except ValueError as exc:
                        if text.strip():
                            yield line_no, None, (f"{_where(path, line_no)}: malformed JSON ({exc.msg}); "
                                                  "expected one JSON object per line")
                        continue
                if not isinstance(row, dict):
                    yield line_no, None, f"{_where(path, line_no)}: {type(row).__name__} value; expected a JSON object"
                    continue
                yield _check_normalized(path, line_no, row)
        except UnicodeDecodeError as exc:
            yield line_no + 1, None, f"{_where(path, line_no + 1)}: not UTF-8 text ({exc.reason}); expected a UTF-8 file"


def _ls_annotator(v):
    if isinstance(v, dict):
        return _opt_str(v.get("email") or v.get("username") or v.get("id"))
    return _opt_str(v)


def read_label_studio(path: Path, **_) -> Iterator[Row]:
    """Label Studio full JSON export (a list of tasks).

    Per task: ``data.item_id`` → item; each non-cancelled annotation is one
    judgment: the Choices named ``verdict`` (left/right/tie/invalid, or pass/fail)
    and ``reason``; ``completed_by`` → annotator; ``lead_time`` → seconds.
    Cancelled (skipped) annotations carry no verdict and are not judgments.
    """
    for line, task, problem in iter_json_array(path):
        if problem:
            yield line, None, problem
            continue
        where = _where(path, line)
        data = task.get("data") or {}
        item = _opt_str(data.get("item_id")) if isinstance(data, dict) else None
        if item is None:
            yield line, None, f"{where}: task {task.get('id')!r} has no data.item_id; expected tasks written by planner"
            continue
        for k, ann in enumerate(task.get("annotations") or ()):
            if not isinstance(ann, dict) or ann.get("was_cancelled"):
                continue
            choices = {}
            for res in ann.get("result") or ():
                if isinstance(res, dict) and isinstance(res.get("value"), dict):
                    ch = res["value"].get("choices")
                    if ch:
                        choices[res.get("from_name")] = ch[0] if len(ch) == 1 else ",".join(map(str, ch))
            verdict = choices.get("verdict")
            v = verdict.strip().lower() if isinstance(verdict, str) else None
            if v not in POSITION_VERDICTS:
                yield line, None, (f"{where}: task {task.get('id')!r} annotation {ann.get('id', k)!r}: verdict "
                                   f"{verdict!r}; expected a Choices 'verdict' of left, right, tie, invalid, pass, fail")
                continue
            try:
                seconds = _opt_float(ann.get("lead_time"), "lead_time", where)
            except ValueError as exc:
                yield line, None, str(exc)
                continue
            yield line, {"item": item, "verdict": v, "id": f"ls:{task.get('id')}:{ann.get('id', k)}",
                         "annotator": _ls_annotator(ann.get("completed_by")), "reason": _opt_str(choices.get("reason")),
                         "seconds": seconds, "confidence": None}, None


_MT_WINNER = {"model_1": "A", "model_2": "B", "tie": "tie", "error": "invalid"}


def read_mt_bench(path: Path, **_) -> Iterator[Row]:
    """FastChat MT-bench pairwise judgments (``model_judgment/*_pair.jsonl``).

    Each line holds two judgments of the same pair: game 1 with ``model_1``
    shown first, game 2 with ``model_2`` shown first (``g2_winner`` is already in
    model terms, as FastChat writes it). Both are kept in their positions
    (oriented ``a = model_1``; ``a_position`` right for game 2); inconsistent
    pairs are NOT collapsed into ties. ``error`` → invalid.
    """
    for line, row, problem in iter_jsonl(path):
        if problem:
            yield line, None, problem
            continue
        where = _where(path, line)
        m1, m2, qid = row.get("model_1"), row.get("model_2"), row.get("question_id")
        if not (isinstance(m1, str) and isinstance(m2, str)) or qid is None:
            yield line, None, f"{where}: missing question_id, model_1 or model_2; expected a FastChat pairwise judgment"
            continue
        turn = row.get("turn", 1)
        prompt = str(qid) if turn in (1, None) else f"{qid}:turn{turn}"
        judge = row.get("judge")
        judge = "/".join(map(str, judge)) if isinstance(judge, (list, tuple)) else _opt_str(judge)
        for game, key, pos in ((1, "g1_winner", "left"), (2, "g2_winner", "right")):
            w = row.get(key)
            if w is None and key not in row:
                continue
            v = _MT_WINNER.get(w)
            if v is None:
                yield line, None, f"{where}: {key} {w!r}; expected model_1, model_2, tie or error"
                continue
            yield line, {"id": f"mt-bench:{prompt}:{m1}:{m2}:{judge}:g{game}", "prompt": prompt, "a": m1, "b": m2,
                         "verdict": v, "a_position": pos, "annotator": judge, "reason": None,
                         "seconds": None, "confidence": None}, None


_ARENA = {"A>>B": ("A", 1.0), "A>B": ("A", 0.5), "A=B": ("tie", None), "B>A": ("B", 0.5), "B>>A": ("B", 1.0)}


def read_arena_hard(path: Path, baseline: str | None = None, **_) -> Iterator[Row]:
    """arena-hard-auto judgment lines (``model_judgment/<judge>/<model>.jsonl``).

    ``games[0]`` shows the baseline first (answer A) and the model second;
    ``games[1]`` is the swapped order. Scores A>>B, A>B, A=B, B>A, B>>A are
    relative to the shown positions; the strength is kept as ``confidence``
    (1.0 for ``>>``, 0.5 for ``>``, none for a tie). A ``null`` score (the
    judge's output could not be parsed) is an invalid judgment. The baseline
    system comes from the line's ``baseline`` field or the ``baseline`` option.
    """
    for line, row, problem in iter_jsonl(path):
        if problem:
            yield line, None, problem
            continue
        where = _where(path, line)
        model = row.get("model")
        base = row.get("baseline") or baseline
        qid = row.get("question_id", row.get("uid"))
        games = row.get("games")
        if not isinstance(model, str) or qid is None or not isinstance(games, list):
            yield line, None, f"{where}: missing model, question_id/uid or games; expected an arena-hard-auto judgment"
            continue
        if not isinstance(base, str):
            yield line, None, f"{where}: no baseline system; expected a 'baseline' field or the --baseline option"
            continue
        judge = _opt_str(row.get("judge"))
        for g, game in enumerate(games):
            score = game.get("score") if isinstance(game, dict) else None
            first, second = (base, model) if g % 2 == 0 else (model, base)
            if score is None:
                v, conf = "invalid", None
            elif score in _ARENA:
                v, conf = _ARENA[score]
            else:
                yield line, None, f"{where}: games[{g}].score {score!r}; expected A>>B, A>B, A=B, B>A, B>>A or null"
                continue
            yield line, {"id": f"arena-hard:{qid}:{model}:{base}:{judge}:g{g + 1}", "prompt": str(qid),
                         "a": first, "b": second, "verdict": v, "a_position": "left", "annotator": judge,
                         "reason": None, "seconds": None, "confidence": conf}, None


def read_alpaca_eval(path: Path, **_) -> Iterator[Row]:
    """alpaca_eval annotations (JSON array, ``annotations.json``).

    ``generator_1`` (``output_1``) is shown first. ``preference`` 1 → first
    output, 2 → second, 1.5 → tie, legacy 0 → tie (as alpaca_eval itself
    treats it), NaN/null → invalid. Other values (continuous preferences) are
    an error: they are probabilities, not verdicts. The prompt id is the study
    prompt with the same text when one exists, else ``alpaca:<sha1 of the
    instruction, 12 hex>``.
    """
    for line, row, problem in iter_json_array(path):
        if problem:
            yield line, None, problem
            continue
        where = _where(path, line)
        g1, g2, instr = row.get("generator_1"), row.get("generator_2"), row.get("instruction")
        if not (isinstance(g1, str) and isinstance(g2, str) and isinstance(instr, str)):
            yield line, None, f"{where}: missing instruction, generator_1 or generator_2; expected an alpaca_eval annotation"
            continue
        p = row.get("preference")
        if p is None or (isinstance(p, float) and math.isnan(p)):
            v = "invalid"
        elif isinstance(p, (int, float)) and not isinstance(p, bool) and p in (0, 1, 1.5, 2):
            v = {0: "tie", 1: "A", 1.5: "tie", 2: "B"}[p]
        else:
            yield line, None, f"{where}: preference {p!r}; expected 1, 2, 1.5 (tie), 0 (legacy tie) or NaN"
            continue
        digest = hashlib.sha1(instr.encode("utf-8")).hexdigest()[:12]
        ann = _opt_str(row.get("annotator"))
        yield line, {"id": f"alpaca:{digest}:{g1}:{g2}:{ann}", "prompt": f"alpaca:{digest}", "prompt_text": instr,
                     "a": g1, "b": g2, "verdict": v, "a_position": "left", "annotator": ann,
                     "reason": None, "seconds": None, "confidence": None}, None


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


def _is_array_with(s: Sniff, *needles: str) -> bool:
    return s.first_char == "[" and all(n in s.head for n in needles)


register(Reader("label-studio", read_label_studio, lambda s: _is_array_with(s, '"annotations"', '"data"'),
                "Label Studio full JSON export"))
register(Reader("alpaca-eval", read_alpaca_eval, lambda s: _is_array_with(s, '"preference"', '"generator_1"'),
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
        if format not in READERS:
            raise UsageError(f"--format ({format!r}) must be one of {', '.join(READERS)}")
        return READERS[format]
    s = sniff(Path(path))
    for r in READERS.values():
        if r.detect(s):
            return r
    seen = ", ".join(sorted(s.keys)[:8]) or s.head[:40].strip()
    raise DataError(f"{Path(path).name}:1: cannot tell the format (saw {seen!r}); expected one of "
                    f"{', '.join(READERS)} — pass --format")


def _read_judge(path: Path, **options) -> Iterator[Row]:
    """LLM-judge outputs keyed by ``custom_id`` (parser in :mod:`planner.formats.judge`, imported lazily)."""
    from planner.formats.judge import read_judge_rows

    return read_judge_rows(path, **options)


register(Reader("judge", _read_judge, lambda s: "custom_id" in s.keys,
                "LLM-judge outputs keyed by custom_id (OpenAI batch JSONL)"), before="positions")
