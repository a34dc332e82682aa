"""Strict, bounded JSON decoding for the readers (hostile input never crashes a reader).

What :mod:`json` accepts silently or crashes on, and what this module does instead
(every failure is a :class:`JSONProblem` -- a ``ValueError`` whose text is one
line, ready to follow ``file:where:``):

* a **duplicated key** in one object: identical values pass; conflicting values
  are refused (``json`` keeps the last one silently);
* **lone UTF-16 surrogates** (``"\\ud800"`` escapes): refused, because no UTF-8
  text (nor SQLite) can hold them;
* **deep nesting** (``[[[[...`` 100 000 levels): ``json`` raises
  ``RecursionError``; refused as "nested too deeply";
* **integers of more than** :data:`MAX_INT_DIGITS` **digits**: refused at parse
  time (they overflow every numeric field, and Python refuses to print them
  beyond 4300 digits);
* NaN / Infinity literals stay accepted (pandas writes ``NaN``; alpaca_eval
  uses it for "no preference"); numeric fields check finiteness themselves.

Whole files are read with :func:`read_text`: strict UTF-8 (a BOM is dropped),
an ``OSError`` or a decoding error becomes a :class:`JSONProblem` naming the
line, and NUL bytes are refused before any parsing. Every reader opens its file
through :func:`open_input`, which inflates gzip files (``.json.gz``,
``.jsonl.gz``) transparently.
"""

from __future__ import annotations

import errno
import gzip
import io
import json
import json.scanner
import re
import zlib
from pathlib import Path

from planner.errors import quote

MAX_INT_DIGITS = 40
_SURROGATE_ESCAPE = re.compile(r"\\[uU][dD][89a-fA-F]")
GZIP_MAGIC = b"\x1f\x8b"
#: a gzip file's text is refused beyond this many bytes when a reader needs it whole (a JSON array):
#: a 10 MB "bomb" can inflate to 10 GB; streamed formats (JSONL, CSV) are read line by line, unbounded
MAX_INFLATED_BYTES = 4 << 30


class _Gunzip(io.RawIOBase):
    """The inflated bytes of a gzip file; a truncated or damaged stream is an ``OSError`` (EIO) naming it,
    never ``EOFError``/``zlib.error`` (which no reader expects)."""

    def __init__(self, path):
        self._gz = gzip.open(path, "rb")  # noqa: SIM115 (this reader owns the stream and closes it)

    def readable(self) -> bool:
        return True

    def readinto(self, b) -> int:
        try:
            return self._gz.readinto(b)
        except (EOFError, zlib.error, gzip.BadGzipFile) as exc:
            raise OSError(errno.EIO, f"the gzip data is truncated or damaged: {exc}") from None

    def close(self) -> None:
        self._gz.close()
        super().close()


def open_input(path, mode: str = "r", **kwargs):
    """Open an input file like :func:`open` (``"rb"`` or text mode with ``encoding``/``newline``/``errors``),
    inflating it when it is gzip-compressed (told by its first two bytes, not its name): ``x.jsonl.gz`` and
    ``x.json.gz`` read as ``x.jsonl`` and ``x.json`` (alpaca_eval and arena-hard results are often shared so)."""
    with open(path, "rb") as probe:
        gz = probe.read(2) == GZIP_MAGIC
    if not gz:
        return open(path, mode, **kwargs)
    raw = io.BufferedReader(_Gunzip(path), buffer_size=1 << 16)
    if "b" in mode:
        return raw
    return io.TextIOWrapper(raw, encoding=kwargs.get("encoding"), errors=kwargs.get("errors"),
                            newline=kwargs.get("newline"))


_OPEN = open_input  # indirection so tests can simulate an I/O error while reading


class JSONProblem(ValueError):
    """A one-line description of why a JSON text is refused."""


def _pairs(pairs: list) -> dict:
    d = dict(pairs)
    if len(d) != len(pairs):
        seen: dict = {}
        for k, v in pairs:
            if k in seen and seen[k] != v:
                raise JSONProblem(f"duplicated key {quote(k)} with different values "
                                  f"({quote(seen[k], 30)} and {quote(v, 30)}); expected each key once")
            seen[k] = v
    return d


def _int(text: str):
    digits = len(text.lstrip("-"))
    if digits > MAX_INT_DIGITS:
        raise JSONProblem(f"an integer of {digits} digits; expected at most {MAX_INT_DIGITS}")
    return int(text)


_DECODER = json.JSONDecoder(object_pairs_hook=_pairs, parse_int=_int)
_SCAN = json.scanner.make_scanner(_DECODER)


def _explain(exc: Exception) -> JSONProblem:
    if isinstance(exc, JSONProblem):
        return exc
    if isinstance(exc, RecursionError):
        return JSONProblem("JSON nested too deeply; expected a flat record")
    if isinstance(exc, json.JSONDecodeError):
        return JSONProblem(f"malformed JSON ({exc.msg} at column {exc.colno})")
    return JSONProblem(f"malformed JSON ({exc})")


def _lone_surrogate(obj, budget: int = 100_000) -> str | None:
    """The first string (key or value) holding a lone surrogate, walked iteratively."""
    stack = [obj]
    while stack and budget > 0:
        budget -= 1
        x = stack.pop()
        if isinstance(x, str):
            try:
                x.encode("utf-8")
            except UnicodeEncodeError:
                return x
        elif isinstance(x, dict):
            stack.extend(x.keys())
            stack.extend(x.values())
        elif isinstance(x, list):
            stack.extend(x)
    return None


def check_surrogates(text: str, obj) -> None:
    """Raise :class:`JSONProblem` when ``obj`` (decoded from ``text``) holds a lone surrogate."""
    if _SURROGATE_ESCAPE.search(text) is not None:
        bad = _lone_surrogate(obj)
        if bad is not None:
            raise JSONProblem(f"text {quote(bad)} holds a lone UTF-16 surrogate; expected valid Unicode text")


def loads(text: str):
    """``json.loads`` with the checks of this module (raises :class:`JSONProblem`)."""
    try:
        obj, end = _SCAN(text, _skip_ws(text, 0))
    except StopIteration:
        raise JSONProblem("malformed JSON (expecting a value)" if text.strip() else "empty line") from None
    except (ValueError, RecursionError) as exc:
        raise _explain(exc) from None
    if text[end:].strip():
        raise JSONProblem(f"malformed JSON (extra data at column {end + 1})")
    check_surrogates(text, obj)
    return obj


def raw_decode(text: str, pos: int):
    """Decode one JSON value starting at ``pos`` (no leading whitespace): ``(obj, end)``."""
    try:
        obj, end = _SCAN(text, pos)
    except StopIteration:
        raise JSONProblem("malformed JSON (expecting a value)") from None
    except (ValueError, RecursionError) as exc:
        raise _explain(exc) from None
    check_surrogates(text[pos:end], obj)
    return obj, end


def _skip_ws(text: str, pos: int) -> int:
    n = len(text)
    while pos < n and text[pos] in " \t\r\n":
        pos += 1
    return pos


def read_text(path: Path) -> str:
    """The whole file as text: strict UTF-8, BOM dropped, no NUL bytes.

    Raises :class:`JSONProblem` (message starts with ``line N:`` where it can
    tell) for an unreadable file, bytes that are not UTF-8, or NUL bytes.
    """
    try:
        with _OPEN(path, "rb") as f:
            raw = f.read(MAX_INFLATED_BYTES + 1)
    except OSError as exc:
        raise JSONProblem(f"cannot read the file ({exc.strerror or exc.__class__.__name__})") from None
    if len(raw) > MAX_INFLATED_BYTES:
        raise JSONProblem(f"more than {MAX_INFLATED_BYTES >> 30} GiB of text to read whole; expected a smaller file "
                          "(or the format as JSONL, which is read line by line)")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw.count(b"\n", 0, exc.start) + 1
        raise JSONProblem(f"line {line}: not UTF-8 text ({exc.reason} at byte {exc.start}); "
                          "expected a UTF-8 file") from None
    nul = text.find("\x00")
    if nul >= 0:
        line = text.count("\n", 0, nul) + 1
        raise JSONProblem(f"line {line}: a NUL byte; expected text")
    return text.removeprefix("\ufeff")
