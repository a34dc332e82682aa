"""Untrusted text made safe for where it is shown: one function per medium (core, pure).

Annotator identities, strata, system names, prompt ids and file names come
from users' files and from tools such as Label Studio. Shown raw they can
drive a terminal (``\\x1b]0;…\\x07`` sets the window title, ``\\x1b[2J`` clears
the screen) or inject Markdown/HTML into a shared report (``<script>``, a
fake link). Every such text passes through exactly one of:

* :func:`for_terminal` — what the command line prints (the CLI's consoles
  call it on every string they render, and on every error line);
* :func:`for_markdown` — what ``report --markdown`` writes (every table cell
  and every sentence that carries a name);
* :func:`for_html` — what ``report --html`` writes (text and attribute values,
  inline SVG included).

Both first make invisible characters visible (:func:`visible`): control
characters, line and paragraph separators, bidirectional overrides and other
format characters, lone surrogates — anything :meth:`str.isprintable` rejects —
become their Python escape (``\\x1b``, ``\\u202e``), so what was there can be
read, and nothing is silently dropped.
"""

from __future__ import annotations

import re

__all__ = ["for_html", "for_markdown", "for_terminal", "visible"]

_UNPRINTABLE = re.compile(r"[^ -~]")   # fast path: anything but printable ASCII


_SHORT = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


def _escape_char(ch: str) -> str:
    if ch in _SHORT:
        return _SHORT[ch]
    n = ord(ch)
    if n < 0x100:
        return f"\\x{n:02x}"
    if n < 0x10000:
        return f"\\u{n:04x}"
    return f"\\U{n:08x}"


def visible(text: str, keep: str = "") -> str:
    """``text`` with every character :meth:`str.isprintable` rejects (except those in ``keep``) escaped.

    >>> visible("a\\x1b[2Jb")
    'a\\\\x1b[2Jb'
    >>> visible("x\\u202ey")
    'x\\\\u202ey'
    """
    text = str(text)
    if not _UNPRINTABLE.search(text):
        return text
    return "".join(ch if ch.isprintable() or ch in keep else _escape_char(ch) for ch in text)


def for_terminal(text: str) -> str:
    """``text`` for a terminal: control and format characters escaped; line breaks and tabs kept."""
    return visible(text, keep="\n\t")


_MD_ENTITIES = {"&": "&amp;", "<": "&lt;"}
#: always escaped: code, emphasis, tables' cell separator, strikethrough, math, headings, entities, tags
_MD_ALWAYS = r"\\`*_|~$#&<"
#: a ``]`` followed by ``(``, ``[`` or ``:`` would close a link, an image, a reference or its definition
_MD_SPECIAL = re.compile(rf"[{_MD_ALWAYS}]|\](?=[(\[:])")
#: at the start of a list item or a cell, these begin a block (quote, list, heading rule)
_MD_BLOCK_START = re.compile(r"^(\s*)(>|[+\-](?=\s|$)|\d{1,9}(?=[.)](?:\s|$)))")


def for_markdown(text) -> str:
    """``text`` as literal Markdown inline text (a table cell, a list item, a word in a sentence).

    Invisible characters are escaped (:func:`visible`, line breaks too: a cell
    or a list item is one line); ``&`` and ``<`` become HTML entities (no tag,
    comment, autolink or entity can start); the characters that start
    CommonMark/GFM inline syntax (code, emphasis, tables' ``|``, strikethrough,
    math ``$``, headings' ``#``, and a ``]`` that would close a link, image or
    reference definition) are backslash-escaped, as is a leading block marker
    (``>``, ``- ``, ``+ ``, ``1. ``; not ``-0.12`` or ``2.5``). The text renders exactly as it reads; plain
    sentences (intervals in brackets, ``P(lead>x)``) are left as they are.

    >>> for_markdown("<script>x</script>")
    '&lt;script>x&lt;/script>'
    >>> for_markdown("[a](http://x) *b* |c|")
    '[a\\](http://x) \\*b\\* \\|c\\|'
    """
    text = visible(str(text))
    text = _MD_SPECIAL.sub(lambda m: _MD_ENTITIES.get(m.group(0)) or "\\" + m.group(0), text)
    return _MD_BLOCK_START.sub(lambda m: m.group(1) + "\\" + m.group(2) if not m.group(2)[0].isdigit()
                               else m.group(1) + m.group(2) + "\\", text, count=1)


def for_html(text) -> str:
    """``text`` for HTML or inline SVG, as text or an attribute value: invisible characters escaped
    (:func:`visible`; a control character is not even allowed in XML), then ``& < > " '`` as entities.

    >>> for_html('<b a="1">\x1b')
    '&lt;b a=&quot;1&quot;&gt;\\x1b'
    """
    import html

    return html.escape(visible(str(text)), quote=True)
