"""`simulate --hybrid` and `size --hybrid --pilot`: the humans + judge money split on a pilot study.

The simulation itself is core (:mod:`planner.simulation.money`: the synthetic pair and the replay
of real items); this workflow opens the study and reads its items
(:mod:`planner.services.study_pilot`) for the replay, or their ρ̂ for ``size``.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:   # the simulation imports scipy.stats, which `size --hybrid --pilot` (pilot_rho) never needs
    import numpy as np

    from planner.simulation.money import MoneyRow

__all__ = ["pilot_rho", "replay_study"]


def replay_study(study_path: str | Path, surrogate: str, budgets, *, human_cost: float, judge_cost: float,
                 reps: int = 200, confidence_level: float = 0.9,
                 rng: np.random.Generator) -> tuple[float, list[MoneyRow]]:
    """(ρ̂, rows) of :func:`planner.simulation.money.replay_money` on a study's items, scored as
    ``report --surrogate`` scores them (``surrogate``: the judge's annotator name)."""
    from planner.services.study_pilot import items_from_study
    from planner.simulation.money import replay_money
    from planner.store.study import Study

    with Study.open(study_path) as study:
        items = items_from_study(study, surrogate)
    return replay_money(items, budgets, human_cost=human_cost, judge_cost=judge_cost, reps=reps,
                        confidence_level=confidence_level, rng=rng)


def pilot_rho(study_path: str | Path, surrogate: str) -> tuple[float, int]:
    """(ρ̂, items used) of the pilot study at ``study_path`` (``size --hybrid --pilot``):
    :func:`planner.services.study_pilot.rho_from_study`."""
    from planner.services.study_pilot import rho_from_study
    from planner.store.study import Study

    with Study.open(study_path) as study:
        return rho_from_study(study, surrogate)
