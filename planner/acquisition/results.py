"""The result types of the acquisition rules."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from planner.equality import array_eq


@array_eq
@dataclass(frozen=True)
class Selection:
    """The pairs chosen for the next batch and what they are expected to buy.

    Attributes
    ----------
    systems : tuple of str
        System names; pair indices index this tuple.
    pairs : list of (int, int)
        Unordered system pairs ``(i, j)``, ``i < j``, in pick order (a pair may
        repeat).
    gains : ndarray (k,)
        Expected reduction of the objective from each pick, given the picks
        (and pending items) before it (fantasized, see module docstring).
    expected_reduction : float
        ``gains.sum()``: expected reduction of the objective from the batch.
    value_before, value_after : float
        Objective value with pending items fantasized, before the batch and
        expected after it (``value_after = value_before - expected_reduction``).
        Units: ``ranking``/``top-k`` expected number of misordered system
        pairs; ``entropy`` nats (½ log det of the covariance in the
        sum-to-zero subspace, up to a constant); ``variance`` logit²;
        ``anchor`` win-rate² (sum of variances).
    strategy, objective : str
    settled : bool
        Stopping advice: the decision the objective cares about is already
        made with probability > ``SelectionOptions.settle_prob`` (0.95 by default; see ``reason``).
    reason : str
        One sentence explaining ``settled``.
    engine : str
        ``"gaussian"`` (rank-one updates) or ``"draws"`` (importance re-weighting).
    notes : tuple of str
        What the strategy could not do as asked (a batch the allowed pairs'
        capacity cannot fill; swiss out of neighbour pairs), one sentence each.
    left : tuple of int
        The system shown left (first) in each pick, as the objective planned it:
        the only order open to the pair, else the order the pair has been shown in
        less often (judged + pending + earlier picks; an exact balance broken by
        the seeded generator). A caller that assigns positions itself (balanced
        within the batch) keeps each pair close to this plan.
    """

    systems: tuple[str, ...]
    pairs: list
    gains: np.ndarray
    expected_reduction: float
    value_before: float
    value_after: float
    strategy: str
    objective: str
    settled: bool
    reason: str
    engine: str = "gaussian"
    notes: tuple = ()
    left: tuple = ()

    def pair_names(self) -> list[tuple[str, str]]:
        """The picks as ``(system_i, system_j)`` name tuples."""
        return [(self.systems[i], self.systems[j]) for i, j in self.pairs]

    def to_dict(self) -> dict:
        return {"strategy": self.strategy, "objective": self.objective, "engine": self.engine,
                "pairs": [list(p) for p in self.pair_names()],
                "gains": [float(g) for g in self.gains],
                "expected_reduction": float(self.expected_reduction),
                "value_before": float(self.value_before), "value_after": float(self.value_after),
                "settled": bool(self.settled), "reason": self.reason, "notes": list(self.notes),
                "left": [self.systems[i] for i in self.left]}


@array_eq
@dataclass(frozen=True)
class CandidateGains:
    """Expected reduction of the objective from ONE more judgment, per candidate.

    Attributes
    ----------
    systems : tuple of str
    pairs : list of (int, int)
        Candidate pairs ``(i, j)``, ``i < j``, sorted by decreasing gain.
    gains : ndarray
        Expected reduction (units of the objective, see :class:`Selection`).
    engine : str
        ``"gaussian"`` or ``"draws"``.
    """

    systems: tuple[str, ...]
    pairs: list
    gains: np.ndarray
    engine: str
