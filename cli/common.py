"""Helpers shared by the command modules: consoles, error mapping, JSON output.

* tables and results go to stdout; messages, warnings and progress to stderr;
* colour is off when the stream is not a terminal or ``NO_COLOR`` is set
  (rich honours both);
* ``--json`` prints exactly one JSON document on stdout and nothing else there;
* a :class:`planner.errors.PlannerError` becomes one line per problem on stderr
  and its exit code; nothing else is caught;
* every string the consoles render (messages, table cells, titles) and every
  error line passes through :func:`planner.escape.for_terminal`, and none is
  read as rich markup: an annotator named ``\x1b]0;…\x07`` or ``[/]`` prints
  as those characters, it does not retitle the window or crash the table.
"""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Callable
from functools import cache
from typing import Any, TypeVar

import typer

from planner.errors import PlannerError
from planner.escape import for_terminal

from .pipes import closed_pipe

T = TypeVar("T")


def console_class():
    """rich's Console, except that a closed pipe exits with :data:`cli.pipes.EXIT_BROKEN_PIPE`, and every
    string it renders is text passed through :func:`planner.escape.for_terminal`.

    rich catches the ``BrokenPipeError`` of its own writes and exits 1, which planner's
    exit codes reserve for data that failed validation.
    """
    from rich.console import Console

    class _Console(Console):
        def on_broken_pipe(self) -> None:
            self.quiet = True
            closed_pipe()

        def render_str(self, text, **kw):
            """Strings are text: escaped for the terminal, never markup or emoji codes (untrusted names)."""
            kw.update(markup=False, emoji=False)
            return super().render_str(for_terminal(text), **kw)

    return _Console


@cache
def _console(stderr: bool):
    return console_class()(stderr=stderr, highlight=False, soft_wrap=False, markup=False, emoji=False)


def out():
    """The stdout console (tables, results)."""
    return _console(False)


def err():
    """The stderr console (messages, warnings, progress)."""
    return _console(True)


def _redact(text: str) -> str:
    """The connectors' one redaction rule (keys, echoes of them, credentials) over anything printed."""
    from planner.connectors.guard import redact

    return redact(text)


def message(text: str) -> None:
    """A plain message on stderr (no markup interpretation), one line: the terminal wraps it."""
    err().print(_redact(text), markup=False, soft_wrap=True)


def warn(text: str) -> None:
    err().print(f"warning: {_redact(text)}", markup=False, style="yellow", soft_wrap=True)


#: the longest line an error prints; library messages quote values to ~80 characters
#: (planner.errors.quote), this is the backstop for any message that did not
LINE_LIMIT = 360


def _one_line(text: str) -> str:
    text = _redact(" ".join(text.split("\n")))
    if len(text) > LINE_LIMIT:
        text = text[:LINE_LIMIT - 30] + f"… ({len(text):,} characters)"
    return for_terminal(text)


def fail(exc: PlannerError, flags: dict[str, str] | None = None) -> typer.Exit:
    """One line per problem on stderr; the parameters the error names read as this command's flags."""
    lines = exc.lines(flags if flags is not None else True)
    for i, line in enumerate(lines):
        prefix = "error: " if i == 0 else "  "
        sys.stderr.write(prefix + _one_line(line) + "\n")
    sys.stderr.flush()
    return typer.Exit(code=exc.exit_code)


def call(fn: Callable[..., T], *args: Any, _flags: dict[str, str] | None = None, **kwargs: Any) -> T:
    """Call a library function, mapping :class:`PlannerError` to an exit code.

    The library names parameters (``batch_size``); the error is printed with
    each parameter it lists spelled as this command's flag: ``--batch-size`` by
    default (:func:`planner.errors.flag_for`), or as ``_flags`` maps it where
    the command's flag has another name.

    A damaged study database found in the middle of a command (SQLite reports a
    malformed page only when it reads it; :meth:`planner.store.study.Study.open`
    checks the header, the schema and the config up front) is exit 1 with one
    line, never a traceback.
    """
    import sqlite3

    try:
        return fn(*args, **kwargs)
    except PlannerError as exc:
        raise fail(exc, _flags) from None
    except sqlite3.DatabaseError as exc:
        from planner.store.db import database_error

        raise fail(database_error(exc)) from None


#: ``--json`` documents of at least this many characters (compact) are printed on one line
COMPACT_JSON_CHARS = 1_000_000


def print_json(obj: Any) -> None:
    """Write exactly one JSON document to stdout."""
    from planner.jsonable import jsonable

    doc = jsonable(obj)
    # compact first, by the C encoder; a document under COMPACT_JSON_CHARS is indented for reading (json's
    # indenting encoder is pure Python: 1.6 s for a 300-system report's 14 MB, which stays compact)
    text = json.dumps(doc, ensure_ascii=False, separators=(",", ":"))
    if len(text) < COMPACT_JSON_CHARS:
        text = json.dumps(doc, indent=2, ensure_ascii=False)
    sys.stdout.write(_json_visible(text) + "\n")
    sys.stdout.flush()


def _json_visible(doc: str) -> str:
    """JSON text with every character a terminal could act on written as a ``\\u`` escape.

    ``json.dumps`` escapes C0 controls but, with ``ensure_ascii=False``, leaves
    C1 controls (``\\x9b`` is CSI), bidirectional overrides and lone surrogates
    raw; they can only occur inside strings, where the escape means the same.
    """
    if doc.isascii():
        return doc
    # only the non-ASCII characters are looked at (a per-character pass took 3 s on a 14 MB report)
    return _NON_ASCII.sub(lambda m: m.group() if m.group().isprintable() else
                          "".join(f"\\u{u:04x}" for u in _utf16(m.group())), doc)


_NON_ASCII = re.compile(r"[^\x00-\x7e]")   # DEL too: json.dumps leaves it raw


def _utf16(c: str) -> tuple[int, ...]:
    n = ord(c)
    if n < 0x10000:
        return (n,)
    n -= 0x10000
    return (0xD800 + (n >> 10), 0xDC00 + (n & 0x3FF))

