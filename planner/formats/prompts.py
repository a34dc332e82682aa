"""The one prompts-file reader (``planner init --prompts`` and ``planner allocate --prompts``).

Both commands call :func:`read_prompts`, so a prompts file one accepts the
other accepts too, with the same ``frozen`` words and the same messages.

A prompts file is CSV (by a ``.csv`` extension, sniffed otherwise) or JSONL,
one prompt per row:

* ``id`` (required): non-empty text or a number (kept as text, stripped);
  unique in the file;
* ``text`` (required): a string;
* ``stratum``: text (blank = none);
* ``weight``: a finite number >= 0 (blank/missing = none; the stratum-weight
  rule in :mod:`planner.strata` counts it as 1);
* ``difficulty``: a number (kept as a float) or a label (kept as text);
  blank/missing = none;
* ``frozen``: a flag, see :func:`parse_flag` (blank/missing = false).
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from planner.errors import UsageError, parameters_of, quote, shown
from planner.names import id_problem, text_problem

#: Spellings of a flag, compared after ``strip().lower()``; JSON true/false and
#: the numbers 1/0 are accepted too.
TRUE_WORDS = ("true", "t", "yes", "y", "1")
FALSE_WORDS = ("false", "f", "no", "n", "0")
FLAG_HELP = "true or false (or t/f, yes/no, y/n, 1/0)"


@dataclass(frozen=True)
class PromptRow:
    """One prompt as read from a file (same attributes as ``planner.store.study.Prompt``, plus ``where``)."""

    id: str
    text: str
    stratum: str | None = None
    weight: float | None = None
    difficulty: float | str | None = None
    frozen: bool = False
    where: str = ""


def parse_flag(value: Any, where: str, field: str, *, true_words: tuple[str, ...] = (),
               false_words: tuple[str, ...] = ()) -> tuple[bool | None, str | None]:
    """``(flag, problem)`` of one flag cell; ``(None, None)`` when blank or missing.

    Accepted: JSON ``true``/``false``, the integers 1/0 and the words of
    :data:`TRUE_WORDS` / :data:`FALSE_WORDS` in any case (plus ``true_words`` /
    ``false_words`` for a field with its own vocabulary, e.g. ``pass``/``fail``
    for ``acceptable``). The problem names ``where``, the field, the value and
    what is allowed.
    """
    if value is None or (isinstance(value, str) and not value.strip()):
        return None, None
    if isinstance(value, bool):
        return value, None
    if isinstance(value, int) and value in (0, 1):
        return bool(value), None
    if isinstance(value, str):
        s = value.strip().lower()
        if s in TRUE_WORDS or s in true_words:
            return True, None
        if s in FALSE_WORDS or s in false_words:
            return False, None
    extra = "/".join(f"{t}/{f}" for t, f in zip(true_words, false_words))
    allowed = FLAG_HELP[:-1] + (f", {extra})" if extra else ")")
    return None, f"{where}: {field} {quote(value)}; expected {allowed}"


def _number(value: Any, where: str, field: str) -> tuple[float | None, str | None]:
    """A finite number >= 0 (``weight``), or ``(None, None)`` when blank/missing."""
    if value is None or (isinstance(value, str) and not value.strip()):
        return None, None
    try:
        if isinstance(value, bool):
            raise ValueError
        f = float(value)
        if not math.isfinite(f) or f < 0:
            raise ValueError
        return f, None
    except (TypeError, ValueError):
        return None, f"{where}: {field} {quote(value)}; expected a finite number >= 0"


def _difficulty(value: Any, where: str) -> tuple[float | str | None, str | None]:
    if value is None or (isinstance(value, str) and not value.strip()):
        return None, None
    if isinstance(value, (bool, dict, list)):
        return None, f"{where}: difficulty {quote(value)}; expected a number or a label"
    try:
        f = float(value)
    except (TypeError, ValueError):
        return str(value).strip(), None          # a label, e.g. "hard"
    if not math.isfinite(f):
        return None, f"{where}: difficulty {quote(value)}; expected a finite number or a label"
    return f, None


def _row(rec: dict, where: str, seen: dict[str, str], problems: list[str]) -> PromptRow | None:
    pid = rec.get("id")
    why = id_problem(pid)
    if why:
        problems.append(f"{where}: id {quote(pid)} {why}; expected a non-empty prompt id on one printable line "
                        "(columns id, text)")
        return None
    pid = str(pid).strip()
    if pid in seen:
        problems.append(f"{where}: duplicate prompt id {quote(pid)} (first at {seen[pid]})")
        return None
    seen[pid] = where
    text = rec.get("text")
    if not isinstance(text, str) or text_problem(text):
        why = text_problem(text) if isinstance(text, str) else f"is {quote(text)}"
        problems.append(f"{where}: text of prompt {quote(pid)} {why}; expected the prompt text")
        return None
    bad = len(problems)
    weight, p1 = _number(rec.get("weight"), where, "weight")
    difficulty, p2 = _difficulty(rec.get("difficulty"), where)
    frozen, p3 = parse_flag(rec.get("frozen"), where, "frozen")
    problems.extend(p for p in (p1, p2, p3) if p)
    if len(problems) > bad:
        return None
    stratum = rec.get("stratum")
    stratum = None if stratum is None or not str(stratum).strip() else str(stratum).strip()
    if stratum is not None and id_problem(stratum):
        problems.append(f"{where}: stratum {quote(stratum)} {id_problem(stratum)}")
        return None
    return PromptRow(pid, text, stratum, weight, difficulty, bool(frozen), where)


def read_prompts(path: str | os.PathLike, option: str = "prompts") -> tuple[list[PromptRow], list[str]]:
    """Read a prompts file: ``(rows, problems)``, each problem one line naming ``file:line``.

    Rows with a problem are left out; the caller decides whether any problem
    refuses the whole file (both commands do).

    Raises
    ------
    UsageError
        ``path`` is not a file (named as ``option``).
    """
    from planner.formats.reading import iter_table

    p = Path(path)
    if not p.is_file():
        raise UsageError(f"{shown(option)} ({path}): no such file", parameters=parameters_of(option))
    rows: list[PromptRow] = []
    problems: list[str] = []
    seen: dict[str, str] = {}
    for line, rec, problem in iter_table(p):
        if rec is None:   # the iterator's problem (exactly one of the two is set)
            problems.append(str(problem))
            continue
        row = _row(rec, f"{p.name}:{line}", seen, problems)
        if row is not None:
            rows.append(row)
    return rows, problems
