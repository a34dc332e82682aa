"""The store's records and kinds: what a study holds, as frozen dataclasses.

Accounting rules (never bend):

* every judgment is exactly one of ``A``, ``B``, ``tie``, ``invalid`` relative to
  its stored orientation ``(a, b)`` (acceptability judgments: ``pass``,
  ``fail``, ``invalid`` on a single system); invalid is stored and reported,
  never dropped or turned into a tie;
* the half-tie score is ``(wins + ties/2) / (wins + losses + ties)`` and is
  ``None`` (JSON ``null``) when there is no usable judgment — never 0.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from planner.equality import array_eq
from planner.vocabulary import (
    COUNTED_KINDS,  # noqa: F401  (store/status.py's import until its owner moves it)
    ITEM_KINDS,
)


@dataclass(frozen=True)
class Prompt:
    """A prompt: ``weight`` is its production frequency (relative), ``frozen``
    marks prompts that must be used first (e.g. a regression set)."""

    id: str
    text: str
    stratum: str | None = None
    weight: float | None = None
    difficulty: float | None = None
    frozen: bool = False


@dataclass(frozen=True)
class Response:
    """A system's response to a prompt; ``length`` in characters; ``acceptable``
    is the optional absolute label from the responses file (None = unlabelled)."""

    prompt: str
    system: str
    text: str
    length: int
    acceptable: bool | None = None


@dataclass(frozen=True)
class Judgment:
    """One stored judgment.

    ``verdict`` is ``A`` (system ``a`` won), ``B``, ``tie`` or ``invalid`` —
    or ``pass``/``fail``/``invalid`` for ``kind == "acceptability"`` (then
    ``b`` is None). ``a_position`` says where ``a`` was shown (``left`` = first).
    ``item`` is the batch item (None for external data), ``batch`` its batch
    id, ``source`` the ingested file name, ``seconds`` annotator time in
    seconds, ``confidence`` the source's strength (arena-hard: 1.0 ``>>``,
    0.5 ``>``).
    """

    id: str
    item: str | None
    prompt: str
    stratum: str
    a: str
    b: str | None
    verdict: str
    a_position: str
    kind: str
    annotator: str | None
    reason: str | None
    seconds: float | None
    confidence: float | None
    source: str
    batch: int | None


@dataclass(frozen=True)
class BatchItem:
    """One item of an issued batch (the key: item id → prompt, left, right).

    ``right`` is None for single-response ``acceptability`` items. ``link`` is
    the original item id for ``repeat``/``swap`` items; ``order_group`` groups
    items that belong together (e.g. both orders of one comparison).
    """

    item_id: str
    prompt: str
    left: str
    right: str | None
    kind: str = "regular"
    annotator: str | None = None
    link: str | None = None
    order_group: str | None = None


@dataclass(frozen=True)
class BatchInfo:
    """An issued batch.

    ``issued`` items, ``returned`` (at least one judgment), ``unanswered``
    (no judgment, and a judge request for it failed in transport: rerun
    ``planner judge``, or write them again with ``next-batch --retry-failed``;
    0 once the batch is voided), ``pending`` (no judgment yet, still
    expected: issued - returned, or 0 once the batch is voided or expired).
    ``voided`` is the time the batch was voided (None while it counts).
    """

    id: int
    created: str
    manifest: dict
    issued: int
    returned: int
    pending: int
    unanswered: int = 0
    voided: str | None = None
    void_reason: str | None = None


@dataclass(frozen=True)
class StudyInfo:
    """What :func:`init_study` created."""

    path: str
    systems: tuple[str, ...]
    anchor: str | None
    prompts: int
    responses: int
    strata: tuple[str, ...]
    missing_responses: int
    config: dict


@array_eq
@dataclass(frozen=True)
class AcceptabilityCounts:
    """Pass/fail/invalid acceptability judgments, arrays of shape (n_systems, n_strata)."""

    systems: tuple[str, ...]
    strata: tuple[str, ...]
    passed: np.ndarray
    failed: np.ndarray
    invalid: np.ndarray

    def pass_rate(self) -> list[float | None]:
        """Pass rate per system pooled over strata (None when no pass/fail)."""
        p, f = self.passed.sum(axis=1), self.failed.sum(axis=1)
        return [None if p[i] + f[i] == 0 else float(p[i] / (p[i] + f[i])) for i in range(len(self.systems))]


def item_rows(items, prompts, sys_id: Mapping[str, int]) -> tuple[list[tuple], list[str]]:
    """The ``items`` table's rows of a batch about to be recorded, and its problems (empty when none).

    A row is ``(id, prompt, left id, right id, kind, annotator, link, order_group)``; a problem names the
    item: an unknown kind, prompt or system, a duplicate id, ``left == right``, a pairwise item without
    ``right`` or an acceptability item with one.
    """
    problems, rows, seen = [], [], set()
    for k, it in enumerate(items):
        where = f"item {k} ({it.item_id!r})"
        if it.kind not in ITEM_KINDS:
            problems.append(f"{where}: kind {it.kind!r}; expected one of {', '.join(ITEM_KINDS)}")
        if it.item_id in seen:
            problems.append(f"{where}: duplicate item id")
        seen.add(it.item_id)
        if it.prompt not in prompts:
            problems.append(f"{where}: unknown prompt {it.prompt!r}")
        ids: list[int | None] = []
        for side in ("left", "right"):
            name = getattr(it, side)
            if name is None:
                ids.append(None)
                if side == "left" or it.kind != "acceptability":
                    problems.append(f"{where}: {side} system missing; only acceptability items have one system")
            elif name not in sys_id:
                problems.append(f"{where}: unknown {side} system {name!r}; expected one of {', '.join(sys_id)}")
                ids.append(None)
            else:
                ids.append(sys_id[name])
        if it.right is not None and it.left == it.right:
            problems.append(f"{where}: left == right ({it.left!r}); a system cannot be compared with itself")
        if it.kind == "acceptability" and it.right is not None:
            problems.append(f"{where}: acceptability items show one system; right must be None")
        rows.append((it.item_id, it.prompt, ids[0], ids[1], it.kind, it.annotator, it.link, it.order_group))
    return rows, problems


def shown_as(a: str, b: str | None, pos: str | None, verdict: str) -> tuple:
    """``(left, right, position_verdict, winner)`` of a judgment stored as ``verdict`` on ``(a, b)`` with
    ``a`` shown at ``pos``: the systems as shown (None when the position is unknown), the verdict in
    position form (None when the position of a pairwise verdict is unknown) and the winning system (None for
    tie, invalid and acceptability verdicts)."""
    left, right = (a, b) if pos == "left" else (b, a) if pos == "right" else (None, None)
    pv = None
    if b is None or verdict in ("tie", "invalid"):
        pv = verdict if pos is not None or b is None else None
    elif pos is not None:
        pv = "left" if (verdict == "A") == (pos == "left") else "right"
    win = a if verdict == "A" else b if verdict == "B" else None
    return left, right, pv, win
