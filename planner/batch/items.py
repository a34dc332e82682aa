"""The batch vocabulary: planned comparisons, items, skips, item kinds and opaque ids.

* **planned comparison** — ``(prompt_id, system_i, system_j, stratum)`` chosen by
  acquisition + allocation.
* **item** — one thing shown to an annotator: a comparison (``left``/``right``)
  or, for ``kind == "acceptability"``, a single response. The map from position
  to system (``left_system``/``right_system``) is the **key**; it is never
  written to an annotator-facing file.
* **kind** — one of :data:`KINDS` (see :mod:`planner.batch`).

Pure types, no I/O; randomness (the ids) only from an explicit numpy Generator.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import numpy as np

from planner.errors import UsageError

KINDS = ("regular", "swap", "repeat", "overlap", "attention", "acceptability")
ID_PREFIX = "it-"
# Crockford base32 (no i, l, o, u), lower case; 12 symbols = 60 random bits.
ID_ALPHABET = "0123456789abcdefghjkmnpqrstvwxyz"
ID_LENGTH = 12


@dataclass(frozen=True)
class PlannedComparison:
    """One comparison chosen by acquisition/allocation (system order is irrelevant)."""

    prompt_id: str
    system_i: str
    system_j: str
    stratum: str | None = None


@dataclass(frozen=True)
class Item:
    """One batch item.

    Attributes
    ----------
    item_id : str
        Opaque random id (``"it-"`` + 12 base32 symbols from ``rng``), never
        derived from names.
    kind : str
        One of :data:`KINDS`.
    prompt_id, prompt : str
        Prompt id (key side) and prompt text (annotator-facing).
    left_system, right_system : str or None
        The **key**: which system produced each side. ``right_system`` is
        ``None`` for acceptability items; for attention items the broken side's
        key is the system whose slot was broken (its text came from elsewhere
        when ``qc_source`` is ``"pool"`` or ``"off-topic"``), so the study's key
        always names two different systems.
    left_text, right_text : str or None
        Annotator-facing texts after style normalization / truncation
        (``right_text`` is ``None`` for acceptability items).
    stratum : str or None
        Stratum of the prompt.
    annotator : str or None
        Annotator the item goes to (``None`` when the batch is not split).
    link : str or None
        For ``repeat``, ``swap`` and ``overlap``: the id of the original item.
    expected : str or None
        For ``attention``: the verdict a careful annotator gives
        (``"left"``/``"right"``: the unbroken side).
    qc_source : str or None
        For ``attention``: how the broken side was made
        (``"truncated"``, ``"off-topic"``, ``"pool"``).
    """

    item_id: str
    kind: str
    prompt_id: str
    prompt: str
    left_system: str | None
    right_system: str | None
    left_text: str
    right_text: str | None
    stratum: str | None = None
    annotator: str | None = None
    link: str | None = None
    expected: str | None = None
    qc_source: str | None = None

    @property
    def is_pairwise(self) -> bool:
        return self.kind != "acceptability"

    def key(self) -> dict[str, Any]:
        """The key side of the item (no texts): what the study stores."""
        return {
            "item_id": self.item_id, "kind": self.kind, "prompt_id": self.prompt_id,
            "left_system": self.left_system, "right_system": self.right_system,
            "stratum": self.stratum, "annotator": self.annotator, "link": self.link,
            "expected": self.expected, "qc_source": self.qc_source,
        }


@dataclass(frozen=True)
class Skipped:
    """A planned comparison (or prompt) left out of the batch, and why."""

    prompt_id: str
    system_i: str | None
    system_j: str | None
    stratum: str | None
    reason: str


def as_planned(entry: Any, index: int) -> PlannedComparison:
    """A :class:`PlannedComparison` from one entry of a plan (object or tuple); ``index`` names it in errors."""
    if isinstance(entry, PlannedComparison):
        return entry
    if all(hasattr(entry, a) for a in ("prompt_id", "system_i", "system_j")):
        return PlannedComparison(str(entry.prompt_id), str(entry.system_i), str(entry.system_j),
                                 getattr(entry, "stratum", None))
    try:
        seq = tuple(entry)
    except TypeError:
        seq = ()
    if len(seq) in (3, 4):
        stratum = seq[3] if len(seq) == 4 else None
        return PlannedComparison(str(seq[0]), str(seq[1]), str(seq[2]),
                                 None if stratum is None else str(stratum))
    raise UsageError(f"planned comparison #{index + 1} ({entry!r}) must be (prompt_id, system_i, system_j, stratum)",
                     parameters=('planned',))


class Ids:
    """Opaque random ids, unique within the batch and against earlier ids."""

    def __init__(self, rng: np.random.Generator, used: Iterable[str]):
        self.rng = rng
        self.used = set(used)

    def new(self) -> str:
        while True:
            digits = self.rng.integers(0, len(ID_ALPHABET), size=ID_LENGTH)
            item_id = ID_PREFIX + "".join(ID_ALPHABET[d] for d in digits)
            if item_id not in self.used:
                self.used.add(item_id)
                return item_id


def previous_ids(previous_items: Iterable[Any] | None) -> list[str]:
    """Ids already used in the study (strings, or objects with ``item_id``)."""
    out = []
    for p in previous_items or ():
        out.append(p if isinstance(p, str) else str(p.item_id))
    return out


def swapped(it: Item, kind: str, ids: Ids) -> Item:
    """A copy of ``it`` with positions (and texts) swapped, of ``kind``, linked to ``it``."""
    return Item(ids.new(), kind, it.prompt_id, it.prompt, it.right_system, it.left_system,
                it.right_text or "", it.left_text, it.stratum, it.annotator, it.item_id)
