"""The pointwise-scores reader (``allocate --pointwise``): ``{"prompt", "system", "score"}`` rows, JSONL or CSV."""

from __future__ import annotations

import math
import os
from pathlib import Path

from planner.errors import DataError, UsageError, parameters_of, shown


def _first(problems: list[str], what: str) -> DataError:
    """One DataError: the first problem as the message, the rest listed after it."""
    more = f" (and {len(problems) - 1} more {what} below)" if len(problems) > 1 else ""
    return DataError(problems[0] + more, problems=problems[1:])


def _records(path: str | os.PathLike, option: str) -> list[tuple[str, dict]]:
    """Rows of a CSV or JSONL file as ``("name:line", dict)`` via the shared readers.

    Unreadable lines (malformed JSON/CSV, not UTF-8) raise :class:`DataError`
    naming ``file:line``; empty CSV cells are ``None``.
    """
    from planner.formats.reading import iter_table

    p = Path(path)
    if not p.is_file():
        raise UsageError(f"{shown(option)} ({path}): no such file", parameters=parameters_of(option))
    rows: list[tuple[str, dict]] = []
    problems: list[str] = []
    for line, rec, problem in iter_table(p):
        if rec is None:   # the iterator's problem (exactly one of the two is set)
            problems.append(str(problem))
        else:
            rows.append((f"{p.name}:{line}", rec))
    if problems:
        raise _first(problems, "unreadable lines")
    return rows



def read_pointwise(path: str | os.PathLike, known: set[str]) -> list[dict]:
    """Read ``{"prompt", "system", "score"}`` rows (JSONL or CSV): one record per row, ``score`` a float.

    Bad rows (missing fields, prompts not in ``known``, non-finite scores, a
    second score for the same prompt and system) raise one :class:`DataError`
    naming ``file:line``.
    """
    problems: list[str] = []
    seen: dict[tuple, str] = {}
    recs: list[dict] = []
    for where, rec in _records(path, "pointwise"):
        prompt, system, score = rec.get("prompt"), rec.get("system"), rec.get("score")
        try:
            score = float("nan") if score is None or isinstance(score, bool) else float(score)
        except (TypeError, ValueError):
            score = float("nan")
        if prompt is None or system is None:
            problems.append(f"{where}: needs prompt, system and score")
        elif str(prompt) not in known:
            problems.append(f"{where}: unknown prompt {prompt!r}")
        elif not math.isfinite(score):
            problems.append(f"{where}: score ({rec.get('score')!r}) must be a finite number")
        elif (str(prompt), str(system)) in seen:
            problems.append(f"{where}: duplicate score for prompt {prompt!r}, system {system!r} "
                            f"(first at {seen[(str(prompt), str(system))]})")
        else:
            seen[(str(prompt), str(system))] = where
            recs.append({"prompt": str(prompt), "system": str(system), "score": score})
    if problems:
        raise _first(problems, "bad pointwise rows")
    return recs
