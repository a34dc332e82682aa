"""cli/tables.print_table: a table is never cut, whatever the width (the layouts, one by one)."""

from __future__ import annotations

import io

import pytest
from rich.console import Console
from rich.table import Table

from cli.tables import available_width, print_table

NAMES = ("gpt-3.5-turbo", "guanaco-65b", "[bold]not-markup[/bold]", "模型-中文")   # markup and wide characters


def _table() -> Table:
    t = Table(title="leaderboard")
    for h in ("system", "Elo [95% CrI]", "P(best)", "P(lead>x)", "rank", "score", "wins / losses / ties"):
        t.add_column(h, justify="left" if h == "system" else "right")
    for k, s in enumerate(NAMES):
        t.add_row(s, f"{1500 - 40 * k} [{1480 - 40 * k}, {1520 - 40 * k}]", f"{0.5 / (k + 1):.3f}", "0.999",
                  f"{k + 1}–{k + 2}", f"{0.6 - 0.05 * k:.3f}", f"{1_300 + k:,} / {7 + k} / {20 + k}")
    return t


def _render(width: int | None, monkeypatch, **kw) -> str:
    if width is None:
        monkeypatch.delenv("COLUMNS", raising=False)
    else:
        monkeypatch.setenv("COLUMNS", str(width))
    buf = io.StringIO()
    con = Console(file=buf, width=80, force_terminal=False, highlight=False)
    print_table(_table(), console=con, **kw)
    return buf.getvalue()


def _cells_whole(text: str) -> None:
    t = _table()
    for col in t.columns:
        for cell in col.cells:
            assert cell in text, f"{cell!r} is cut"
    assert "…" not in text


@pytest.mark.parametrize("width", [200, 100, 80, 60, 40, 24, 12])
def test_no_cell_is_cut_at_any_width(width, monkeypatch):
    text = _render(width, monkeypatch)
    _cells_whole(text)
    from rich.cells import cell_len

    rules = [ln for ln in text.splitlines() if set(ln.strip()) <= set("─━┏┓┗┛┡┩└┘┳┻╇┴┬") and ln.strip()]
    assert all(cell_len(ln) <= width for ln in rules), rules


def test_a_split_table_repeats_the_key_in_every_part(monkeypatch):
    text = _render(60, monkeypatch)
    assert "(1/" in text and "(2/" in text
    parts = text.count("leaderboard (")
    for s in NAMES:
        assert text.count(s) == parts          # the system names in each part


def test_records_when_nothing_fits(monkeypatch):
    text = _render(12, monkeypatch)
    assert "  P(best): 0.500" in text and "  wins / losses / ties: 1,300 / 7 / 20" in text


def test_a_pipe_gets_the_natural_width(monkeypatch):
    """No COLUMNS and stdout not a terminal: the table is printed whole on one line per row."""
    text = _render(None, monkeypatch)
    assert available_width() is None
    rows = [ln for ln in text.splitlines() if "gpt-3.5-turbo" in ln]
    assert len(rows) == 1 and "1,300 / 7 / 20" in rows[0] and len(rows[0]) > 80


def test_cells_are_text_not_markup(monkeypatch):
    assert "[bold]not-markup[/bold]" in _render(120, monkeypatch)


def test_wrap_columns_wrap_at_spaces_only(monkeypatch):
    monkeypatch.setenv("COLUMNS", "40")
    t = Table(title="diagnostics", show_header=False)
    t.add_column("what")
    t.add_column("value")
    t.add_row("position", "left wins 65.0% [63.4%, 66.4%] of 3,867 decisive (right 35.0%; p = 2.7e-78)")
    buf = io.StringIO()
    print_table(t, wrap=(1,), console=Console(file=buf, width=80, force_terminal=False))
    text = buf.getvalue()
    for word in ("65.0%", "[63.4%,", "66.4%]", "3,867", "2.7e-78)"):
        assert word in text
    assert max(len(ln) for ln in text.splitlines()) <= 40
