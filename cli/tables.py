"""Tables that never cut a value: the one way a command prints a table on stdout.

A command builds a rich ``Table`` as it wants it to look and hands it to
:func:`print_table`. Rich would squeeze a table that is wider than the console
by cutting cells (``0.0…``, ``guanaco…``); here a cell is never cut or broken.
The table is laid out in the first of these that fits the width:

1. as designed, headers on one line; then in a compact style (no side
   borders, one space between columns); then both again with headers wrapped
   at spaces;
2. split into several tables of the same rows, the key columns (the row's
   name: system, stratum, file) repeated in each, the rest in their order;
3. as records: one block per row, ``column: value`` on its own line.

Cells of the columns named in ``wrap`` (sentences, lists of flags) may wrap at
spaces, never inside a word. The width is ``$COLUMNS`` when set, the
terminal's width on a terminal, and unbounded otherwise: a pipe, a file or a CI
log gets every table at its natural width. Cells are shown as plain text
(square brackets in a system name are not rich markup).
"""

from __future__ import annotations

import copy
import os
import sys
from dataclasses import dataclass, replace

from .common import console_class, out

#: the width of a terminal that does not say how wide it is (rich's default)
UNKNOWN_TERMINAL_WIDTH = 80
#: the width given to the measuring console: wider than any table planner prints
MEASURE_WIDTH = 1_000_000


def available_width() -> int | None:
    """Columns a table may use on stdout: ``$COLUMNS``, else the terminal's width, else None (unbounded)."""
    cols = os.environ.get("COLUMNS", "").strip()
    if cols.isdigit() and int(cols) > 0:
        return int(cols)
    try:
        if sys.stdout.isatty():
            # a terminal that reports no size (0 columns: some ptys, serial consoles) gets rich's 80
            return os.get_terminal_size(sys.stdout.fileno()).columns or UNKNOWN_TERMINAL_WIDTH
    except (OSError, ValueError, AttributeError):
        return UNKNOWN_TERMINAL_WIDTH
    return None


@dataclass(frozen=True)
class _Col:
    """What the layout needs of one column: its cells as text and the widths they allow."""

    column: object        # the designed rich Column
    header: object        # rich Text
    cells: tuple          # rich Text per row
    natural: int          # widest cell on one line
    least: int            # widest cell that may not break (a word for wrap columns)
    head_full: int
    head_word: int


def _text(value):
    from rich.text import Text

    from planner.escape import for_terminal

    if isinstance(value, Text):
        return value
    return Text(for_terminal(str(value)))   # untrusted names: a terminal escape is shown, not obeyed


def _longest_word(text: str) -> int:
    from rich.cells import cell_len

    return max((cell_len(w) for line in text.split("\n") for w in line.split()), default=0)


def _widest_line(text: str) -> int:
    from rich.cells import cell_len

    return max((cell_len(line) for line in text.split("\n")), default=0)


def _columns(table, wrap: frozenset[int]) -> list[_Col]:
    cols = []
    for i, c in enumerate(table.columns):
        cells = tuple(_text(v) for v in c.cells)
        head = _text(c.header)
        natural = max((_widest_line(t.plain) for t in cells), default=0)
        least = max((_longest_word(t.plain) for t in cells), default=0) if i in wrap else natural
        cols.append(_Col(c, head, cells, natural, least, _widest_line(head.plain),
                         _longest_word(head.plain) if table.show_header else 0))
    return cols


def _compact(table):
    from rich import box

    t = copy.copy(table)
    t.box, t.show_edge, t.pad_edge, t.collapse_padding, t.padding = box.SIMPLE_HEAD, False, False, True, (0, 1)
    return t


def _build(style, cols: list[_Col], widths: list[int], title=None):
    """A copy of ``style`` (box, padding, title) holding ``cols`` at the given widths."""
    t = copy.copy(style)
    t.columns = []
    if title is not None:
        t.title = title
    for i, (c, w) in enumerate(zip(cols, widths)):
        t.columns.append(replace(c.column, header=c.header, width=max(w, 1), min_width=None, max_width=None,
                                 overflow="fold", no_wrap=False, _index=i, _cells=list(c.cells)))
    t.rows = list(style.rows)
    return t


def _table_width(console, style, cols, widths) -> int:
    from rich.measure import Measurement

    t = _build(style, cols, widths)
    return Measurement.get(console, console.options.update_width(MEASURE_WIDTH), t).maximum


def _fit(console, style, cols: list[_Col], width: int | None, whole_headers: bool = False) -> list[int] | None:
    """Column widths for ``cols`` in ``style`` within ``width``, or None when they cannot fit uncut.

    Starts from the narrowest uncut layout (cells whole; headers whole with
    ``whole_headers``, else wrapped at spaces), then gives the room left to the
    headers (one line each) and to the wrap columns, in order.
    """
    least = [max(c.least, c.head_full if whole_headers else c.head_word, 1) for c in cols]
    full = [max(c.natural, c.head_full, 1) for c in cols]
    chrome = _table_width(console, style, cols, least) - sum(least)
    if width is None:
        return full
    room = width - chrome - sum(least)
    if room < 0:
        return None
    widths = list(least)
    for i in range(len(cols)):
        grow = min(room, full[i] - widths[i])
        widths[i] += grow
        room -= grow
    return widths


def _print(console, renderable, natural: int) -> None:
    if natural > console.width:
        # a pipe or a file (the table at its natural width), or $COLUMNS wider than the width the
        # console took when it was made: rich would squeeze the table into the console's width
        wide = console_class()(file=console.file, width=natural, highlight=False, soft_wrap=False,
                               force_terminal=console.is_terminal, no_color=console.no_color,
                               color_system=console.color_system)
        wide.print(renderable)
        return
    console.print(renderable)


def _records(console, table, cols: list[_Col], key: tuple[int, ...]) -> None:
    """Last resort for a very narrow width: every row as ``column: value`` lines, nothing cut."""
    if table.title:
        console.print(_text(table.title), soft_wrap=True)
    names = [c.header.plain.replace("\n", " ") or f"column {i + 1}" for i, c in enumerate(cols)]
    for r in range(len(table.rows)):
        head = " · ".join(cols[k].cells[r].plain for k in key)
        console.print(_text(head), soft_wrap=True)
        for i, c in enumerate(cols):
            if i not in key:
                console.print(_text(f"  {names[i]}: {c.cells[r].plain}"), soft_wrap=True)


def print_table(table, *, key: tuple[int, ...] = (0,), wrap: tuple[int, ...] = (), console=None) -> None:
    """Print ``table`` on stdout (or ``console``) with every cell whole; see the module docstring.

    ``key``: the columns that name a row, repeated in every part of a split table.
    ``wrap``: columns whose cells may wrap at spaces (sentences, lists).
    """
    con = console if console is not None else out()
    width = available_width()
    cols = _columns(table, frozenset(wrap))
    for style, whole in ((table, True), (_compact(table), True), (table, False), (_compact(table), False)):
        widths = _fit(con, style, cols, width, whole)
        if widths is not None:
            _print(con, _build(style, cols, widths), _table_width(con, style, cols, widths))
            return
    parts = _balanced(con, _compact(table), cols, key, width)
    if parts is None:
        _records(con, table, cols, key)
        return
    title = table.title.plain if hasattr(table.title, "plain") else table.title
    for n, part in enumerate(parts, 1):
        sub = [cols[i] for i in part]
        widths = _fit(con, _compact(table), sub, width)
        what = f"{title} ({n}/{len(parts)})" if title else f"({n}/{len(parts)})"
        t = _build(_compact(table), sub, widths, title=what)
        _print(con, t, _table_width(con, _compact(table), sub, widths))


def _split(con, style, cols: list[_Col], key: tuple[int, ...], width: int) -> list[list[int]] | None:
    """Groups of column indices (each starting with the key columns) that fit ``width``; None if one cannot."""
    key = tuple(k for k in key if k < len(cols))
    parts: list[list[int]] = []
    current: list[int] = []
    for i in range(len(cols)):
        if i in key:
            continue
        trial = [*key, *current, i]
        if _fit(con, style, [cols[j] for j in trial], width) is not None:
            current.append(i)
            continue
        if not current:
            return None
        parts.append([*key, *current])
        current = [i]
        if _fit(con, style, [cols[j] for j in (*key, i)], width) is None:
            return None
    if current or not parts:
        parts.append([*key, *current])
    return parts


#: tables with more columns than this are split greedily only (balancing measures the table ~8 times)
BALANCE_MAX_COLUMNS = 30


def _balanced(con, style, cols: list[_Col], key: tuple[int, ...], width: int) -> list[list[int]] | None:
    """:func:`_split` at the narrowest width that needs no more parts: parts of similar widths."""
    parts = _split(con, style, cols, key, width)
    if parts is None or len(parts) < 2 or len(cols) > BALANCE_MAX_COLUMNS:
        return parts
    lo, hi = 1, width
    while lo < hi:      # the fewest parts is monotone in the width: bisect for the narrowest
        mid = (lo + hi) // 2
        trial = _split(con, style, cols, key, mid)
        if trial is not None and len(trial) <= len(parts):
            hi = mid
        else:
            lo = mid + 1
    return _split(con, style, cols, key, lo)

