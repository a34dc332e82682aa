"""`simulate --hybrid`: spend money on humans only or on the planned humans + judge split.

The simulation itself is core (:mod:`planner.simulation.money`: the synthetic pair and the replay
of real items); this workflow reads a study's items for the replay.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from planner.simulation.money import MoneyRow, replay_money

__all__ = ["replay_study"]


def replay_study(study_path: str | Path, surrogate: str, budgets, *, human_cost: float, judge_cost: float,
                 reps: int = 200, confidence_level: float = 0.9,
                 rng: np.random.Generator) -> tuple[float, list[MoneyRow]]:
    """(ρ̂, rows) of :func:`planner.simulation.money.replay_money` on a study's items, scored as
    ``report --surrogate`` scores them (``surrogate``: the judge's annotator name)."""
    from planner.workflows.hybrid_report import items_from_study

    items = items_from_study(study_path, surrogate)
    return replay_money(items, budgets, human_cost=human_cost, judge_cost=judge_cost, reps=reps,
                        confidence_level=confidence_level, rng=rng)
