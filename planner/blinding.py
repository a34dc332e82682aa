"""System names inside annotator-facing texts: find them, and optionally redact them.

A response that says "As GPT-4, I ..." unblinds the comparison. planner never
adds a system name to a batch file, but the responses themselves may carry
one. :func:`name_mentions` finds them (case-insensitive, whole words, and the
common spelling variants of a name: ``gpt-4`` also matches ``GPT4``,
``gpt 4``, ``GPT_4`` and ``gpt.4``); :func:`redact` replaces every mention by
:data:`REDACTION`.

Variant rule: a name is cut into runs of letters and runs of digits
(``claude-3-opus`` → ``claude 3 opus``); a mention is those runs in order,
separated by nothing or by one of space, ``-``, ``_``, ``.``; it must not be
preceded by a letter or digit, nor followed by a letter or digit or by
``-``/``_``/``.`` + letter or digit (so ``gpt-4`` does not match inside
``gpt-4.5`` or ``gpt-40``). Longer names are tried first. Pure functions, no
I/O.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import replace

REDACTION = "[a model]"
_RUN_RE = re.compile(r"[A-Za-z]+|[0-9]+")
_SEP = r"[ \-_.]?"


def name_pattern(names: Iterable[str]) -> re.Pattern | None:
    """One compiled pattern for every name and its variants (None when no usable name)."""
    alts = []
    for name in sorted(set(names), key=len, reverse=True):
        runs = _RUN_RE.findall(name)
        if not runs:
            continue
        alts.append(_SEP.join(re.escape(r) for r in runs))
    if not alts:
        return None
    return re.compile(r"(?<![A-Za-z0-9])(?:" + "|".join(alts) + r")(?![A-Za-z0-9]|[-_.][A-Za-z0-9])",
                      re.IGNORECASE)


def _canonical(names: Sequence[str]) -> dict[str, str]:
    return {"".join(_RUN_RE.findall(n)).lower(): n for n in names}


def name_mentions(items, names: Sequence[str]) -> dict[str, dict[str, int]]:
    """Mentions of each system per item in the annotator-facing response texts.

    Returns ``{item_id: {system: count}}`` for items with at least one mention
    (the prompt is shown on both sides alike and is not searched).
    """
    rx = name_pattern(names)
    if rx is None:
        return {}
    canon = _canonical(names)
    out: dict[str, dict[str, int]] = {}
    for it in items:
        for text in (it.left_text, it.right_text):
            for m in rx.finditer(text or ""):
                key = canon.get("".join(_RUN_RE.findall(m.group(0))).lower(), m.group(0))
                per = out.setdefault(it.item_id, {})
                per[key] = per.get(key, 0) + 1
    return out


def redact(text: str | None, rx: re.Pattern | None) -> str | None:
    """``text`` with every match of ``rx`` replaced by :data:`REDACTION`."""
    if text is None or rx is None:
        return text
    return rx.sub(REDACTION, text)


def redact_items(items, names: Sequence[str]) -> tuple:
    """Items whose response texts have every system-name mention redacted."""
    rx = name_pattern(names)
    if rx is None:
        return tuple(items)
    return tuple(replace(it, left_text=redact(it.left_text, rx), right_text=redact(it.right_text, rx))
                 for it in items)


def mentions_note(mentions: dict[str, dict[str, int]], *, redacted: bool, limit: int = 3) -> str | None:
    """One line for stderr: how many items/mentions, which systems, the first item ids."""
    if not mentions:
        return None
    total: dict[str, int] = {}
    for per in mentions.values():
        for s, n in per.items():
            total[s] = total.get(s, 0) + n
    n = sum(total.values())
    systems = ", ".join(f"{s} ×{k}" for s, k in sorted(total.items(), key=lambda x: (-x[1], x[0])))
    first = ", ".join(list(mentions)[:limit]) + (" …" if len(mentions) > limit else "")
    if redacted:
        return f"redacted {n} system-name mention(s) in {len(mentions)} item(s) as {REDACTION!r} ({systems}); " \
               f"first: {first}"
    return (f"{len(mentions)} item(s) show a response that names a system ({n} mention(s): {systems}); "
            f"annotators will see it; first: {first}; --redact-names replaces them with {REDACTION!r}")
