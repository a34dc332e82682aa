"""planner.simulation: the simulator's pure pieces (see docs/architecture.md).

``truth`` (synthetic scenarios, the truth of a fit), ``judge`` (the synthetic
judge), ``replay`` (a pool of real judgments, from records), ``spec`` (what a
simulation runs), ``loop`` (one run: select → judge → refit → metrics),
``metrics``, ``summary`` (runs → per-strategy results), ``headline`` (ratios
with their noise bands) and ``money`` (``simulate --hybrid``). Reading files and
studies is the workflows' (:mod:`planner.workflows.simulate`).
"""

from planner.simulation.judge import Judge
from planner.simulation.loop import Trace, run_one
from planner.simulation.replay import ReplayPool
from planner.simulation.spec import SimulationSpec, Strategy, parse_strategies, parse_target
from planner.simulation.truth import Truth, make_truth

__all__ = ["Judge", "ReplayPool", "SimulationSpec", "Strategy", "Trace", "Truth", "make_truth", "parse_strategies",
           "parse_target", "run_one"]
