"""Untrusted text (annotator names, strata) never reaches a terminal or a Markdown report raw.

Two media, one escaping function each (``planner.escape``): ``for_terminal`` in
the CLI's consoles and error lines, ``for_markdown`` in ``report --markdown``.
Identities read from files are validated like system names are at ``init``:
one printable line, so terminal escapes are refused at ingest; a study written
before that check (simulated by writing the name into the database, as an older
planner would have stored it) still prints them escaped.

The Markdown oracle is an independent CommonMark renderer (``markdown-it-py``,
installed with rich) with GFM tables on: the rendered HTML must contain no tag
or link the names did not ask to be shown as text.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest
from markdown_it import MarkdownIt
from typer.testing import CliRunner

from cli.main import app
from planner.errors import DataError
from planner.escape import for_markdown, for_terminal, visible
from planner.store.study import DB_NAME, ingest, init_study

SYSTEMS = ("sys-a", "sys-b", "sys-c")
SCRIPT = "<script>alert(1)</script>"
IMG_STRATUM = "<img src=x onerror=alert(1)>"
TERMINAL = "\x1b]0;pwned\x07\x1b[2J"          # sets the window title, then clears the screen
MARKUP = "[/]"                                 # rich markup: an unmatched closing tag used to crash tables
LINK = "[click](javascript:alert(1))"

runner = CliRunner()


def _jl(path: Path, rows) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def hostile_study(tmp_path_factory):
    """3 systems, 12 prompts in two strata (one named like an HTML tag), 240 judgments by four annotators."""
    d = tmp_path_factory.mktemp("untrusted")
    prompts = [{"id": f"p{i}", "text": f"question {i}", "stratum": IMG_STRATUM if i % 2 else "plain"}
               for i in range(12)]
    responses = [{"prompt": f"p{i}", "system": s, "text": f"answer {s} {i}"} for i in range(12) for s in SYSTEMS]
    names = [SCRIPT, MARKUP, LINK, "ok_annotator"]
    rows = []
    for j in range(240):
        a, b = SYSTEMS[j % 3], SYSTEMS[(j + 1 + j // 3 % 2) % 3]
        rows.append({"id": f"j{j}", "prompt": f"p{j % 12}", "a": a, "b": b,
                     "verdict": ("A", "B", "tie", "A")[j % 4], "annotator": names[j % 4], "a_position": "left"})
    init_study(d / "s", prompts_file=_jl(d / "p.jsonl", prompts), responses_file=_jl(d / "r.jsonl", responses))
    ingest(d / "s", [_jl(d / "j.jsonl", rows)])
    return d / "s"


@pytest.fixture
def older_study(hostile_study, tmp_path):
    """The same study with a terminal escape in an annotator name, as a planner without the check stored it."""
    import shutil

    s = tmp_path / "older"
    shutil.copytree(hostile_study, s)
    con = sqlite3.connect(str(s / DB_NAME))
    with con:
        con.execute("UPDATE judgments SET annotator = ? WHERE annotator = 'ok_annotator'", (TERMINAL,))
    con.close()
    return s


def _html(md: str) -> str:
    return MarkdownIt("commonmark").enable("table").render(md)


# ------------------------------------------------------------------ the functions
@pytest.mark.parametrize("raw, want", [
    (SCRIPT, "&lt;script>alert(1)&lt;/script>"),
    (LINK, "[click\\](javascript:alert(1))"),
    ("a|b", "a\\|b"), ("*x* _y_ `z` ~~s~~ $m$", "\\*x\\* \\_y\\_ \\`z\\` \\~\\~s\\~\\~ \\$m\\$"),
    ("1. item", "1\\. item"), ("- item", "\\- item"), ("> quote", "\\> quote"),
    ("-0.123", "-0.123"), ("2.5", "2.5"), ("[43.7%, 64.0%]", "[43.7%, 64.0%]"), ("P(lead>x)", "P(lead>x)"),
    ("a\nb", "a\\\\nb"), ("x\\y", "x\\\\y"), ("Q&amp;A", "Q&amp;amp;A")])
def test_for_markdown_by_hand(raw, want):
    assert for_markdown(raw) == want


@pytest.mark.parametrize("raw", [SCRIPT, IMG_STRATUM, LINK, "**bold** _it_", "a|b|c", "[x]: http://evil.test",
                                 "<!-- c -->", "&lt;b&gt;", "`code`", "# h", "line\nbreak", TERMINAL])
def test_markdown_renders_the_text_as_written(raw):
    """Oracle: CommonMark (markdown-it) renders the escaped text to exactly the visible text, HTML-escaped."""
    import html

    got = _html(f"| h |\n|---|\n| {for_markdown(raw)} |\n")
    assert f"<td>{html.escape(visible(raw), quote=False)}</td>" in got, got
    item = _html(f"- {for_markdown(raw)}\n")
    assert item == f"<ul>\n<li>{html.escape(visible(raw), quote=False)}</li>\n</ul>\n", item


def test_for_terminal_keeps_line_breaks_and_escapes_the_rest():
    assert for_terminal(TERMINAL + "\nok\tz\u202e\x9b") == "\\x1b]0;pwned\\x07\\x1b[2J\nok\tz\\u202e\\x9b"
    assert for_terminal("é — 中") == "é — 中"


# ------------------------------------------------------------------ ingest refuses escapes
@pytest.mark.parametrize("name", [TERMINAL, "bob\u202eevil", "two\nlines", "x" * 1001])
def test_ingest_refuses_an_annotator_name_that_is_not_one_printable_line(hostile_study, tmp_path, name):
    before = (hostile_study / DB_NAME).read_bytes()
    f = _jl(tmp_path / "bad.jsonl", [{"id": "bad1", "prompt": "p0", "a": "sys-a", "b": "sys-b", "verdict": "A",
                                      "annotator": name}])
    with pytest.raises(DataError) as e:
        ingest(hostile_study, [f])
    assert "bad.jsonl:1: annotator" in e.value.problems[0] and "printable" in e.value.problems[0]
    assert (hostile_study / DB_NAME).read_bytes() == before
    r = runner.invoke(app, ["ingest", str(hostile_study), str(f)])
    assert r.exit_code == 1 and "\x1b" not in r.output and "\x07" not in r.output and "Traceback" not in r.output


# ------------------------------------------------------------------ markdown
def test_report_markdown_escapes_names_and_strata(hostile_study, tmp_path):
    out = tmp_path / "r.md"
    r = runner.invoke(app, ["report", str(hostile_study), "--markdown", str(out)])
    assert r.exit_code == 0, r.output
    md = out.read_text(encoding="utf-8")
    html = _html(md)
    assert "<script" not in html
    assert "<img" not in html
    assert "<a " not in html and "href" not in html                 # the link is text, not a link
    assert "[click](javascript:alert(1))" in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html     # shown, as text, in the annotators table
    assert "&lt;img src=x onerror=alert(1)&gt;" in html        # the stratum, as text, in the strata table


def test_report_markdown_of_an_older_study_has_no_escape_bytes(older_study, tmp_path):
    out = tmp_path / "r.md"
    r = runner.invoke(app, ["report", str(older_study), "--markdown", str(out)])
    assert r.exit_code == 0, r.output
    md = out.read_text(encoding="utf-8")
    assert "\x1b" not in md and "\x07" not in md and "\\\\x1b]0;pwned\\\\x07" in md


# ------------------------------------------------------------------ terminal
@pytest.mark.parametrize("command", [["status"], ["report"], ["export", "--out", "EXPORT"]])
def test_terminal_output_carries_no_escape_and_no_markup(older_study, tmp_path, command):
    args = [a if a != "EXPORT" else str(tmp_path / "exp") for a in command]
    r = runner.invoke(app, [args[0], str(older_study), *args[1:]])
    assert r.exit_code == 0, r.output
    assert "\x1b" not in r.output and "\x07" not in r.output
    if command == ["status"]:   # the annotators table names them, escaped, and [/] as written
        assert "\\x1b]0;pwned\\x07\\x1b[2J" in r.output and "│ [/] " in r.output and "<script>alert(1)" in r.output


def test_json_output_escapes_c1_controls_and_bidi_overrides(older_study):
    con = sqlite3.connect(str(older_study / DB_NAME))
    with con:
        con.execute("UPDATE judgments SET annotator = ? WHERE annotator = ?", ("csi\x9b2J\u202e", MARKUP))
    con.close()
    r = runner.invoke(app, ["status", str(older_study), "--json"])
    assert r.exit_code == 0
    assert "\x9b" not in r.output and "\u202e" not in r.output and "\x1b" not in r.output
    names = {a["annotator"] for a in json.loads(r.output)["annotators"]}
    assert {"csi\x9b2J\u202e", TERMINAL} <= names   # the same text, written as \\u escapes


def test_print_json_is_indented_and_compact_past_a_million_characters(capsys):
    """``--json`` documents: indented for reading, one compact line past COMPACT_JSON_CHARS; both parse to the
    same document, with the same escapes (the ``\\u009b`` a terminal would act on)."""
    import json as _json

    from cli.common import COMPACT_JSON_CHARS, print_json

    small = {"name": "x\x9by", "rows": [1, 2]}
    print_json(small)
    out = capsys.readouterr().out
    assert out.count("\n") > 2 and "\\u009b" in out and _json.loads(out) == small
    big = {"name": "x\x9by", "rows": ["r" * 100] * (COMPACT_JSON_CHARS // 100)}
    print_json(big)
    out = capsys.readouterr().out
    assert out.count("\n") == 1 and "\\u009b" in out and _json.loads(out) == big
