"""The demo's synthetic study on disk, shared by ``planner demo`` and ``planner demo --live-judge``.

:func:`build_demo_files` writes the prompts (in strata, with weights) and one response per system
and prompt, every word drawn from the caller's seeded generator; :func:`check_demo_target` is the
demo's own rule for its directory (never a study; ``force`` replaces only a demo directory);
:func:`answer_rows` answers an issued batch in the position-verdict format, as an attentive
annotator would.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from planner import limits
from planner.errors import UsageError, quote

STRATA = ("everyday", "factual", "coding", "creative")
_WORDS = ("the", "answer", "explains", "clearly", "because", "data", "result", "step", "first", "then",
          "finally", "example", "shows", "method", "careful", "simple", "useful", "detail", "reason", "plan")


def _text(rng: np.random.Generator, n_words: int) -> str:
    words = [_WORDS[int(i)] for i in rng.integers(0, len(_WORDS), n_words)]
    return " ".join(words).capitalize() + "."


def build_demo_files(directory: Path, n_systems: int, n_prompts: int, rng: np.random.Generator):
    """Write ``prompts.jsonl`` and ``responses.jsonl`` for a synthetic study."""
    systems = [f"model-{chr(ord('a') + i)}" for i in range(n_systems)]
    prompts = directory / "prompts.jsonl"
    responses = directory / "responses.jsonl"
    with open(prompts, "w", encoding="utf-8") as fh:
        for i in range(n_prompts):
            fh.write(json.dumps({"id": f"q{i + 1}", "text": f"Demo question {i + 1}: {_text(rng, 8)}",
                                 "stratum": STRATA[i % len(STRATA)],
                                 "weight": [4, 3, 2, 1][i % len(STRATA)]}) + "\n")
    with open(responses, "w", encoding="utf-8") as fh:
        for i in range(n_prompts):
            for s in systems:
                fh.write(json.dumps({"prompt": f"q{i + 1}", "system": s,
                                     "text": _text(rng, int(rng.integers(30, 120)))}) + "\n")
    return systems, prompts, responses


def answer_rows(study, batch_id: int, items, verdict_of, *, annotator: str | None = None) -> list[dict]:
    """Position-verdict rows answering the issued batch ``batch_id`` of the open ``study``, as an
    attentive annotator would.

    ``items`` are the batch's assembled items (:attr:`planner.services.batch_plan.BatchPlan.items`);
    ``verdict_of(key_item)`` gets the study's key of a pairwise item
    (:class:`planner.store.study.BatchItem`: prompt, left, right) and returns
    ``left``/``right``/``tie``/``invalid``. Attention items get their expected
    verdict. Used by the demo and by loop tests with real judgments.
    """
    key = {it.item_id: it for it in study.items(batch_id)}
    rows = []
    for it in items:
        verdict = it.expected if it.kind == "attention" else verdict_of(key[it.item_id])
        row = {"item": it.item_id, "verdict": verdict}
        if annotator is not None:
            row["annotator"] = annotator
        rows.append(row)
    return rows


#: what a demo directory holds; --force replaces only a directory made of these
DEMO_ENTRIES = ("prompts.jsonl", "responses.jsonl", "study", "batch-*", "verdicts-*")


def check_demo_target(directory: Path, force: bool) -> None:
    """Refuse a file, an existing study, or (without ``--force``) any non-empty directory."""
    from fnmatch import fnmatch

    name = quote(str(directory))
    if directory.exists() and not directory.is_dir():
        raise UsageError(f"DIRECTORY ({name}) is an existing file; expected a new directory for the demo",
                         parameters=('directory',))
    from planner.store.db import CONFIG_NAME, DB_NAME

    if (directory / CONFIG_NAME).exists() or (directory / DB_NAME).exists():
        raise UsageError(f"DIRECTORY ({name}) holds a study; the demo never replaces a study",
                         parameters=('directory',))
    if directory.exists() and any(directory.iterdir()):
        if not force:
            raise UsageError(f"DIRECTORY ({name}) already exists and is not empty (use `force` to replace a demo)",
                             parameters=('force',))
        other = [p.name for p in directory.iterdir() if not any(fnmatch(p.name, g) for g in DEMO_ENTRIES)]
        if other:
            raise UsageError(f"DIRECTORY ({name}) holds {quote(other[0])}, which the demo did not write; "
                             "`force` replaces only a demo directory", parameters=('force',))
    limits.check_output_dir("DIRECTORY", directory)


