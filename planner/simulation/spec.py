"""What a simulation runs: its strategies, its options and its target.

A :class:`SimulationSpec` holds everything one simulation needs (it is pickled
to worker processes); :func:`parse_strategies` and :func:`parse_target` read the
``--strategies`` and ``--target`` texts.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Protocol

from planner.counts import Counts
from planner.errors import UsageError
from planner.simulation.judge import Judge
from planner.simulation.replay import ReplayPool
from planner.simulation.truth import Truth

if TYPE_CHECKING:
    import numpy as np


class PoolSource(Protocol):
    """Draws each repetition's truth and replay pool, continuing from ``start``
    (:class:`planner.simulation.forecast.ForecastSource`)."""

    @property
    def start(self) -> Counts: ...

    def draw(self, rng: np.random.Generator) -> tuple[Truth, ReplayPool]: ...

METRICS = ("tau", "rho", "rmse", "width", "max_width", "coverage", "top1", "credible_tau", "credible_all",
           "resolved")
TARGET_METRICS = ("tau", "rho", "rmse", "width", "coverage", "top1", "credible-tau", "credible-all", "resolved")

__all__ = ["METRICS", "TARGET_METRICS", "SimulationSpec", "Strategy", "parse_strategies", "parse_target"]


@dataclass(frozen=True)
class Strategy:
    """A sampling strategy as the simulator runs it: ``name`` (the label),
    ``strategy`` (an acquisition strategy) and ``objective`` (for active)."""

    name: str
    strategy: str
    objective: str = "ranking"
    top_k: int | None = None
    explore: float | None = None        # active: exploration floor (acquisition.select_pairs explore)
    thompson: bool = False              # active: Thompson-style draw in the ranking objective

    @property
    def prefers_prompts(self) -> bool:
        """``+prompts``: draw each comparison's prompt by its shrunk score (:mod:`planner.prompt_choice`).

        Read from the label, not a field, so the fingerprints of earlier runs do not move."""
        return "prompts" in self.name.split("+")[1:]


def parse_strategies(spec: str | Sequence[str]) -> tuple[Strategy, ...]:
    """Parse ``"active,round-robin,entropy,active:top-k=3,active+explore=0.2"``.

    Plain objective names (``ranking``, ``entropy``, ``variance``, ``anchor``)
    mean ``active`` with that objective; ``active:OBJ`` likewise; ``top-k=K``
    or ``active:top-k=K`` the top-K objective. An active item may end in
    ``+explore=F`` (share of each batch to the least-judged pairs) and/or
    ``+thompson`` (one posterior draw in the ranking objective) and/or
    ``+prompts`` (prompts drawn by their shrunk score; ``--scenario prompts``
    only); the whole item is the strategy's label.
    """
    items = [s.strip() for s in (spec.split(",") if isinstance(spec, str) else spec) if s.strip()]
    if not items:
        raise UsageError("`strategies` must name at least one strategy", parameters=('strategies',))
    out = [_parse_item(label) for label in items]
    out = [_with_modifiers(s, s.name.split("+")[1:]) for s in out]
    names = [s.name for s in out]
    if len(set(names)) != len(names):
        raise UsageError(f"`strategies` ({','.join(names)}) names a strategy twice", parameters=('strategies',))
    return tuple(out)


def _parse_item(label: str) -> Strategy:
    """One ``--strategies`` item without its ``+`` modifiers (the label keeps them)."""
    from planner.acquisition import OBJECTIVES, STRATEGIES

    item = label.split("+", maxsplit=1)[0]
    body = item[len("active:"):] if item.startswith("active:") else item
    if body.startswith("top-k"):
        try:
            top_k = int(body.split("=", 1)[1])
        except (IndexError, ValueError):
            raise UsageError(f"`strategies` ({item!r}): write top-k=K with an integer K",
                             parameters=('strategies',)) from None
        return Strategy(label, "active", "top-k", top_k)
    if body in OBJECTIVES and (item.startswith("active:") or body not in STRATEGIES):
        return Strategy(label, "active", body)
    if item in STRATEGIES:
        return Strategy(label, item)
    allowed = ", ".join(list(STRATEGIES) + [o for o in OBJECTIVES if o not in STRATEGIES])
    raise UsageError(f"`strategies` ({item!r}) must be one of {allowed} (or active:OBJECTIVE)",
                     parameters=('strategies',))


def _with_modifiers(s: Strategy, mods: list[str]) -> Strategy:
    """Apply ``+explore=F`` / ``+thompson`` to an active strategy."""
    for mod in mods:
        if s.strategy != "active":
            raise UsageError(f"`strategies` ({s.name!r}): +{mod} applies to active strategies only",
                             parameters=('strategies',))
        if mod == "thompson":
            s = replace(s, thompson=True)
            continue
        if mod == "prompts":   # read by Strategy.prefers_prompts
            continue
        key, _, val = mod.partition("=")
        try:
            share = float(val)
        except ValueError:
            share = -1.0
        if key != "explore" or not 0.0 <= share < 1.0:
            raise UsageError(f"`strategies` ({s.name!r}): +{mod} must be +explore=F with F in [0, 1) "
                             "or +thompson or +prompts", parameters=('strategies',))
        s = replace(s, explore=share)
    return s


@dataclass(frozen=True)
class SimulationSpec:
    """Everything one simulation needs (picklable, sent to worker processes)."""

    scenario: str                       # linear | arena | asap | from-study | replay
    strategies: tuple[Strategy, ...]
    n_systems: int = 16
    spread: float = 400.0
    arena_gamma: float = 2.0
    judge: Judge = field(default_factory=Judge)
    budget: int = 2000
    batch: int = 50
    reps: int = 20
    seed: int = 0
    engine: str = "laplace"
    anchor: int = 0
    truth: Truth | None = None          # from-study / replay
    replay: ReplayPool | None = None
    margin_elo: float = 0.0             # the ``resolved`` metric's margin (Elo points)
    # a forecast (planner plan): the data every run continues from, the runs stop once every
    # target in ``stop_at`` is met, and ``source`` draws each repetition's truth and pool
    start: Counts | None = None
    stop_at: tuple = ()                 # ((metric, value), ...)
    source: PoolSource | None = None


def parse_target(text: str) -> tuple[str, float]:
    """``"tau=0.9"`` → ("tau", 0.9); ``"credible-tau=0.9"`` → ("credible_tau", 0.9);
    ``"credible-all"`` (every credibly separated pair right) → ("credible_all", 1.0);
    ``"resolved"`` (every pair credibly ordered or credibly within the margin) → ("resolved", 1.0)."""
    if text.strip() in ("credible-all", "resolved"):
        text = f"{text.strip()}=1"
    try:
        name, value = text.split("=", 1)
        name, val = name.strip(), float(value)
    except ValueError:
        raise UsageError(f"`target` ({text[:80]!r}) must look like tau=0.9, credible-tau=0.9, "
                         "credible-all, resolved, rho=0.9, rmse=0.3 or width=100", parameters=('target',)) from None
    if name not in TARGET_METRICS or not math.isfinite(val):
        raise UsageError(f"`target` ({text[:80]!r}): metric must be one of {', '.join(TARGET_METRICS)}",
                         parameters=('target',))
    return name.replace("-", "_"), val
