"""Normalized judgments for the commands that read them without a study.

``simulate --replay`` and ``allocate --pilot`` read the same files ``ingest``
reads, through the same reader (:func:`planner.formats.readers.read_normalized`),
so a file one of them accepts the others accept too (``"verdict": "a"`` and
``"Tie"`` included). On top of the reader, the one
check ingest makes without a study is repeated here: a system is never compared
with itself; and, when the caller knows the prompts, a judgment on another
prompt is refused (as ingest refuses it in a study with prompts).
"""

from __future__ import annotations

import os
from collections.abc import Collection
from pathlib import Path

from planner.errors import DataError, UsageError, parameters_of, shown
from planner.formats.readers import read_normalized

MAX_PROBLEMS = 20


def load_normalized(path: str | os.PathLike, option: str,
                    prompts: Collection[str] | None = None) -> list[dict]:
    """Every record of a normalized judgments file (JSONL or CSV), or one DataError.

    Parameters
    ----------
    path : path-like
    option : str
        How the caller names the file in messages (e.g. ``"replay"``).
    prompts : collection of str, optional
        The known prompt ids; a judgment on another prompt is a problem.

    Returns
    -------
    list of dict
        Reader records: ``id, prompt, a, b, verdict`` (``A|B|tie|invalid``),
        ``a_position`` (``"left"``, ``"right"`` or None = unknown) and optional
        ``annotator, reason, seconds, confidence``; each with ``"where"`` =
        ``file:line`` added.

    Raises
    ------
    UsageError
        ``path`` is not a file.
    DataError
        Bad rows (up to :data:`MAX_PROBLEMS` named ``file:line``); nothing is returned.
    """
    p = Path(path)
    if not p.is_file():
        raise UsageError(f"{shown(option)} ({path}): no such file", parameters=parameters_of(option))
    out, problems = [], []
    for line, rec, problem in read_normalized(p):
        if rec is not None and rec.get("a") == rec.get("b"):
            problem = f"{p.name}:{line}: a == b ({rec['a']!r}); a system cannot be compared with itself"
        elif rec is not None and prompts is not None and rec["prompt"] not in prompts:
            problem = f"{p.name}:{line}: unknown prompt {rec['prompt']!r}; expected a prompt id of the prompts given"
        if rec is None or problem is not None:
            problems.append(str(problem))
            if len(problems) >= MAX_PROBLEMS:
                break
            continue
        rec.setdefault("where", f"{p.name}:{line}")
        out.append(rec)
    if problems:
        more = f" (and {len(problems) - 1} more below)" if len(problems) > 1 else ""
        raise DataError(problems[0] + more, problems=problems[1:])
    return out
