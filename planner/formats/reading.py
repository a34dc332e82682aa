"""Shared pieces of the readers: sniffing, row iterators, value checks, locations.

Every iterator yields ``(line, row, problem)`` triples; exactly one of ``row``
and ``problem`` is not ``None``. Problems are one line: ``<where>: <what>;
expected <what is allowed>``, every echoed value through
:func:`planner.errors.quote` (cut to ~80 characters, "missing" for ``None``).

Locations (``where``):

* JSONL: ``file.jsonl:LINE`` (physical line);
* CSV: ``file.csv:row N`` -- the N-th data row; the header is not a row and a
  quoted cell spanning several lines does not shift the numbering;
* JSON arrays: ``file.json:LINE`` where the element starts, or
  ``file.json:element N`` when the whole array is on one line (readers of
  tool exports use the tool's own ids instead, e.g. ``export.json:task 17``).
"""

from __future__ import annotations

import csv
import math
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from planner.errors import DataError, UsageError, quote
from planner.formats import jsonsafe
from planner.formats.jsonsafe import JSONProblem

Row = tuple[int, "dict | None", "str | None"]

SNIFF_BYTES = 65536
FIRST_ELEMENT_BYTES = 8 << 20  # detection reads this much to see the first element of a JSON array


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
        The first JSONL line, or the first element of a JSON array, when it
        parses within the head.
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


def read_option_file(path, parameter: str, give: str) -> str:
    """The text of the file an option names (UTF-8, a BOM dropped).

    A missing file, a directory (``give``: what to give instead, e.g. "a JSONL
    file") or an unreadable one is a one-line :class:`UsageError` naming
    ``parameter``; a file that is not UTF-8 raises :class:`UnicodeDecodeError`,
    which the caller turns into its own error (bad option or bad data).
    """
    p = Path(path)
    try:
        return p.read_text(encoding="utf-8-sig")
    except FileNotFoundError:
        raise UsageError(f"`{parameter}`: {quote(str(p))} does not exist", parameters=(parameter,)) from None
    except IsADirectoryError:
        raise UsageError(f"`{parameter}`: {quote(str(p))} is a directory; give {give}",
                         parameters=(parameter,)) from None
    except OSError as exc:
        raise UsageError(f"`{parameter}`: cannot read {quote(str(p))} ({exc.strerror or exc})",
                         parameters=(parameter,)) from None


def sniff(path: Path) -> Sniff:
    """Read the head of ``path`` for detection (missing file: UsageError; unreadable: DataError)."""
    path = Path(path)
    try:
        with jsonsafe._OPEN(path, "rb") as f:
            raw = f.read(SNIFF_BYTES)
    except FileNotFoundError:
        raise UsageError(f"{quote(str(path))} does not exist", parameters=('path',)) from None
    except OSError as exc:
        raise DataError(f"{path.name}: cannot read the file ({exc.strerror or exc.__class__.__name__})") from None
    head = raw.decode("utf-8", errors="replace").lstrip("\ufeff")
    stripped = head.lstrip()
    first_char = stripped[:1]
    first_record = header = None
    try:
        if first_char == "{":
            first_record = _first_line(path, stripped, len(raw) == SNIFF_BYTES)
        elif first_char == "[":
            first_record = _first_element(path, stripped, len(raw) == SNIFF_BYTES)
        elif first_char:
            header = tuple(h.strip() for h in next(csv.reader(head.splitlines()[:1])))
    except (ValueError, StopIteration, csv.Error):
        pass
    return Sniff(path, head, first_char, first_record, header)


class BadValue(ValueError):
    """A value in a row is not allowed; ``str(exc)`` is the whole one-line problem (``where: what; expected``)."""


def _first_line(path: Path, stripped: str, more: bool) -> dict | None:
    """The first JSON Lines record, reading up to :data:`FIRST_ELEMENT_BYTES` when the head cuts it (a record
    with long texts before the keys that tell its format)."""
    line = stripped.split("\n", 1)[0]
    if "\n" not in stripped and more:
        try:
            with jsonsafe._OPEN(path, "rb") as f:
                line = f.readline(FIRST_ELEMENT_BYTES).decode("utf-8", errors="replace").lstrip("\ufeff").strip()
        except OSError:
            return None
    obj = jsonsafe.loads(line)
    return obj if isinstance(obj, dict) else None


def _first_element(path: Path, stripped: str, more: bool) -> dict | None:
    """The first element of a JSON array, reading up to :data:`FIRST_ELEMENT_BYTES` when the head cuts it."""
    rest = stripped[1:].lstrip()
    if rest[:1] != "{":
        return None
    try:
        obj, _ = jsonsafe.raw_decode(rest, 0)
    except ValueError:
        if not more:
            return None
        try:
            with jsonsafe._OPEN(path, "rb") as f:
                text = f.read(FIRST_ELEMENT_BYTES).decode("utf-8", errors="replace").lstrip("\ufeff").lstrip()
            rest = text[1:].lstrip()
            obj, _ = jsonsafe.raw_decode(rest, 0)
        except (OSError, ValueError):
            return None
    return obj if isinstance(obj, dict) else None


# ------------------------------------------------------------------ locations
def where(path: Path, line: int) -> str:
    return f"{Path(path).name}:{line}"


# ------------------------------------------------------------------ row iterators
def iter_jsonl(path: Path) -> Iterator[Row]:
    """Stream a JSONL file: one JSON object per non-blank line (strict JSON, see :mod:`.jsonsafe`)."""
    path = Path(path)
    line_no = 0
    try:
        with jsonsafe._OPEN(path, encoding="utf-8-sig", newline=None, errors="strict") as f:
            for line_no, line in enumerate(f, 1):
                if not line.strip():
                    continue
                if "\x00" in line:
                    yield line_no, None, f"{where(path, line_no)}: a NUL byte; expected a JSON object per line"
                    continue
                try:
                    obj = jsonsafe.loads(line)
                except JSONProblem as exc:
                    yield line_no, None, f"{where(path, line_no)}: {exc}; expected one JSON object per line"
                    continue
                if not isinstance(obj, dict):
                    yield line_no, None, f"{where(path, line_no)}: a JSON {_jtype(obj)}; expected a JSON object"
                    continue
                yield line_no, obj, None
    except UnicodeDecodeError as exc:
        yield line_no + 1, None, f"{where(path, line_no + 1)}: not UTF-8 text ({exc.reason}); expected a UTF-8 file"
    except OSError as exc:
        yield line_no + 1, None, f"{path.name}: cannot read the file ({exc.strerror or exc.__class__.__name__})"


def iter_csv(path: Path, *, rows: bool = False) -> Iterator[Row]:
    """Stream a CSV file with a header row (BOM, CRLF, quoted commas/newlines OK).

    Empty cells become ``None``; header names are stripped. ``line`` is the
    physical line where the row ends, or with ``rows=True`` the logical data
    row number (1 = the first row after the header), which is also what the
    problems cite then (``file.csv:row 3``).
    """
    path = Path(path)
    name = path.name
    n_row = 0

    def at(reader) -> str:
        return f"{name}:row {n_row}" if rows else f"{name}:{reader.line_num}"

    try:
        with jsonsafe._OPEN(path, encoding="utf-8-sig", newline="") as f:
            reader = csv.reader(f, strict=True)  # an unterminated quote (a cut-off file) is an error
            try:
                header = [h.strip() for h in next(reader)]
            except StopIteration:
                return
            except (csv.Error, UnicodeDecodeError) as exc:
                yield 1, None, f"{name}:1: unreadable CSV header ({_csv_reason(exc)}); expected a header row"
                return
            if any("\x00" in h for h in header):
                yield 1, None, f"{name}:1: a NUL byte in the header; expected a CSV text file"
                return
            dup = sorted({h for h in header if h and header.count(h) > 1})
            if dup:
                yield 1, None, (f"{name}:1: column {quote(dup[0])} appears twice in the header; "
                                "expected each column once")
                return
            n = len(header)
            while True:
                n_row += 1
                try:
                    cells = next(reader)
                except StopIteration:
                    return
                except (csv.Error, UnicodeDecodeError) as exc:
                    where = n_row if rows else reader.line_num
                    yield where, None, f"{at(reader)}: malformed CSV ({_csv_reason(exc)})"
                    return
                line = n_row if rows else reader.line_num
                if not cells or all(not c.strip() for c in cells):
                    continue
                if any("\x00" in c for c in cells):
                    yield line, None, f"{at(reader)}: a NUL byte; expected text cells"
                    continue
                if len(cells) != n:
                    yield line, None, f"{at(reader)}: {len(cells)} cells; expected {n} (the header's columns)"
                    continue
                yield line, {k: (v if v != "" else None) for k, v in zip(header, cells)}, None
    except OSError as exc:
        yield n_row, None, f"{name}: cannot read the file ({exc.strerror or exc.__class__.__name__})"


def _csv_reason(exc: Exception) -> str:
    if isinstance(exc, UnicodeDecodeError):
        return f"not UTF-8 text: {exc.reason}"
    return str(exc).replace("\n", " ")[:80]


def iter_table(path: Path, *, rows: bool = False) -> Iterator[Row]:
    """JSONL or CSV, decided by the first non-blank character (``{`` → JSONL)."""
    s = sniff(path)
    return iter_jsonl(path) if s.first_char == "{" else iter_csv(path, rows=rows)


def iter_json_array(path: Path) -> Iterator[Row]:
    """Decode a JSON array element by element, yielding each object with the line where it starts.

    The array must be complete: a file cut off anywhere (mid-element, after a
    comma, before ``]``) or with data after ``]`` yields a problem, so a
    truncated export can never be read as its first elements.
    """
    for line, _at, obj, problem in iter_json_array_indexed(path):
        yield line, obj, problem


def iter_json_array_indexed(path: Path) -> Iterator[tuple]:
    """``(line, at, obj, problem)`` for each element; ``at`` is ``file.json:LINE``, or
    ``file.json:element N`` when the array is on one line. See :func:`iter_json_array`."""
    path = Path(path)
    name = path.name
    try:
        text = jsonsafe.read_text(path)
    except JSONProblem as exc:
        msg = str(exc)
        line = int(msg[5:msg.index(":")]) if msg.startswith("line ") else 1
        shown_msg = msg.split(": ", 1)[1] if msg.startswith("line ") else msg
        yield line, f"{name}:{line}", None, f"{name}:{line}: {shown_msg}"
        return
    one_line = "\n" not in text.strip()
    n = len(text)
    pos = jsonsafe._skip_ws(text, 0)
    if pos >= n or text[pos] != "[":
        shown = quote(text[pos:pos + 20] or None)
        yield 1, f"{name}:1", None, f"{name}:1: not a JSON array (starts with {shown}); expected '[' ..."
        return
    pos = jsonsafe._skip_ws(text, pos + 1)
    line, last, index = text.count("\n", 0, pos) + 1, pos, 0
    if pos < n and text[pos] == "]":
        problem = _trailing(text, pos + 1, name)
        if problem:
            yield line, f"{name}:{line}", None, problem
        return
    ends = text.rstrip().endswith("]")
    while True:
        index += 1
        line += text.count("\n", last, pos)
        last = pos
        at = f"{name}:element {index}" if one_line else f"{name}:{line}"
        if pos >= n:
            yield line, at, None, f"{at}: the file ends inside the array (truncated?); expected ']'"
            return
        try:
            obj, end = jsonsafe.raw_decode(text, pos)
        except JSONProblem as exc:
            cut = "" if ends else " (the file does not end with ']': truncated?)"
            yield line, at, None, f"{at}: {exc}{cut}"
            return
        if isinstance(obj, dict):
            yield line, at, obj, None
        else:
            yield line, at, None, f"{at}: a JSON {_jtype(obj)} element; expected a JSON object"
        pos = jsonsafe._skip_ws(text, end)
        if pos < n and text[pos] == ",":
            pos = jsonsafe._skip_ws(text, pos + 1)
            continue
        if pos < n and text[pos] == "]":
            problem = _trailing(text, pos + 1, name)
            if problem:
                yield text.count("\n", 0, pos) + 1, at, None, problem
            return
        what = "the file ends inside the array (truncated?)" if pos >= n else f"found {quote(text[pos:pos + 10])}"
        yield line, at, None, f"{at}: {what}; expected ',' or ']' after the element"
        return


def _trailing(text: str, pos: int, name: str) -> str | None:
    rest = text[pos:].strip()
    if rest:
        line = text.count("\n", 0, pos) + 1
        return f"{name}:{line}: data after the closing ']' ({quote(rest[:20])}); expected the end of the file"
    return None


def _jtype(obj) -> str:
    return {dict: "object", list: "array", str: "string", bool: "boolean", type(None): "null"}.get(
        type(obj), "number")


# ---------------------------------------------------------------- value helpers
def opt_str(v):
    """Text or None: strings stripped (empty → None), numbers as text, JSON containers dumped."""
    if v is None:
        return None
    if isinstance(v, (dict, list)):
        import json

        return json.dumps(v, ensure_ascii=False)
    s = str(v).strip()
    return s or None


def text_id(v):
    """An id: a non-blank string or an integer (as text); anything else → None."""
    if isinstance(v, bool):
        return None
    if isinstance(v, int):
        return str(v)
    if isinstance(v, str) and v.strip():
        return v.strip()
    return None


def opt_float(v, field: str, at: str):
    """Float >= 0 or None; raises ValueError with a one-line message naming the field."""
    if v is None or v == "":
        return None
    if isinstance(v, (bool, dict, list)):
        raise BadValue(f"{at}: {field} {quote(v)} is not a number; expected a finite number >= 0")
    try:
        f = float(v)
    except (TypeError, ValueError, OverflowError):
        raise BadValue(f"{at}: {field} {quote(v)} is not a number; expected a finite number >= 0") from None
    if not math.isfinite(f) or f < 0:
        raise BadValue(f"{at}: {field} {quote(v)}; expected a finite number >= 0")
    return f


def extras(row: dict, at: str, out: dict) -> dict:
    """Copy optional annotator/reason/seconds/confidence from ``row`` into ``out`` (ValueError on bad values)."""
    for key in ("annotator", "reason"):
        v = row.get(key)
        if (v is not None and not isinstance(v, (str, int, float))) or isinstance(v, bool):
            raise BadValue(f"{at}: {key} {quote(v)}; expected text")
        out[key] = opt_str(v)
    out["seconds"] = opt_float(row.get("seconds"), "seconds", at)
    out["confidence"] = opt_float(row.get("confidence"), "confidence", at)
    return out
