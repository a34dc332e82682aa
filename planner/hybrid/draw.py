"""``next-batch --for humans`` on data: the (prompt, pair) items where a human label is worth most.

Candidates: items the surrogate judged that carry no human vote and were not chosen by an earlier
live round (``waiting``: those still wait for their votes). :func:`planner.hybrid.select.select_for_humans`
gives every item its probability (``size`` = expected labels) and draws; the design (every item's
probability and the chosen ones) goes into the batch manifest as ``for_humans``, which
``report --surrogate`` reads back to weight the labels by 1/π.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from planner.errors import DataError


@dataclass(frozen=True)
class DrawForHumans:
    """The draw: ``planned`` comparisons (:class:`planner.batch.items.PlannedComparison`), the
    ``selection`` (:class:`planner.hybrid.select.HumanSelection`), the ``design`` recorded in the
    manifest, and the notes."""

    planned: tuple
    selection: Any
    design: dict
    notes: tuple[str, ...]


def waiting_mask(items, chosen: Iterable[Iterable[str]]) -> np.ndarray:
    """Which of ``items`` an earlier round chose (``[prompt, system, system]``) and that still has no label."""
    names = items.names
    keyed = {(p, int(a), int(b)): k for k, (p, (a, b)) in enumerate(zip(items.prompts, items.pairs))}
    waiting = np.zeros(len(items.y), dtype=bool)
    for prompt, a, c in chosen:
        if a not in names or c not in names:
            continue
        k = keyed.get((prompt, names.index(a), names.index(c)))
        if k is not None and not items.labelled[k]:
            waiting[k] = True
    return waiting


def draw_for_humans(items, *, surrogate: str, size: int, rng: np.random.Generator, stratum_of: Mapping[str, str],
                    waiting: np.ndarray, floor: float = 0.2, objective: str = "strengths") -> DrawForHumans:
    """Draw ``size`` expected items of ``items`` (:class:`planner.hybrid.items.HybridItems` of the
    ``surrogate`` judge) for human labels, leaving out the ``waiting`` ones; ``stratum_of`` maps a prompt
    to its stratum."""
    from planner.batch.items import PlannedComparison
    from planner.hybrid.select import select_for_humans

    names = items.names
    sel = select_for_humans(items, size, rng, floor=floor, objective=objective, exclude=waiting)
    planned = tuple(PlannedComparison(items.prompts[k], names[items.pairs[k, 0]], names[items.pairs[k, 1]],
                                      stratum_of.get(items.prompts[k]))
                    for k in np.flatnonzero(sel.chosen))
    notes = [f"--for humans: {len(planned)} item(s) drawn (expected {size}) from {int(sel.candidate.sum()):,} "
             f"candidates; π from {sel.source}; π ranges {sel.prob[sel.candidate].min():.4f}–"
             f"{sel.prob[sel.candidate].max():.4f} (floor share {floor:g})"]
    if waiting.any():
        notes.append(f"{int(waiting.sum())} item(s) chosen by an earlier round still wait for votes: not drawn again")
    if not planned:
        raise DataError(f"`for` humans: the draw chose no item (expected {size}); raise `size`",
                        parameters=('for', 'size'))
    design = {"surrogate": surrogate, "objective": objective, "floor": float(floor), "expected_labels": float(size),
              "source": sel.source,
              "probabilities": [[items.prompts[k], names[a], names[b], float(sel.prob[k])]
                                for k, (a, b) in enumerate(items.pairs)],
              "chosen": [[c.prompt_id, c.system_i, c.system_j] for c in planned]}
    return DrawForHumans(planned, sel, design, tuple(notes))
