"""What a forecast's comparisons cost: humans, a judge's tokens, or humans and a surrogate judge together.

A forecast counts judgments of the kind the pilot holds. :class:`Prices` turns a
number of them into money:

* ``human``: ``n · c_h`` (cost of one human judgment);
* ``judge``: ``n · c_j`` with ``c_j`` given per judgment, or from token prices
  (USD per 1M prompt / completion tokens, :class:`planner.connectors.pricing.Prices`'
  units) times the tokens of one judgment (stated, or the pilot's mean from the
  judge ledger);
* ``hybrid`` (humans with a surrogate judge whose scores correlate ρ with
  theirs): the forecast's human-only judgments ``n`` are spread evenly over the
  ``P`` pairs, and each pair's ``n/P`` is replaced by the cheapest split of
  human and judge labels with the same PPI++ variance — the split of
  ``planner size --hybrid`` (:func:`planner.hybrid.budget.plan`), not a copy
  of its formula. Where the judge does not pay off the split is humans only.

Cost is monotone in ``n``, so the cost interval is the cost of the
comparisons' interval.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from planner.errors import UsageError, check_range

__all__ = ["Cost", "Prices"]


@dataclass(frozen=True)
class Prices:
    """Costs of one judgment (see the module docstring); ``None`` = not given."""

    human: float | None = None
    judge: float | None = None          # per judgment (all its calls)
    rho: float | None = None            # hybrid: human-judge score correlation
    rho_source: str = ""

    def __post_init__(self):
        for name in ("human", "judge"):
            v = getattr(self, name)
            if v is not None and not (isinstance(v, (int, float)) and math.isfinite(v) and v >= 0):
                raise UsageError(f"`{name}_cost` ({v!r}) must be a number >= 0", parameters=(f"{name}_cost",))
        if self.rho is not None:
            check_range("rho", self.rho, -1, 1, low_open=False)
            if self.human is None or self.judge is None:
                raise UsageError("a hybrid split (`rho` or `surrogate`) needs `human_cost` and `judge_cost`",
                                 parameters=("rho", "surrogate", "human_cost", "judge_cost"))

    @property
    def given(self) -> bool:
        return self.human is not None or self.judge is not None

    @property
    def mode(self) -> str:
        """``hybrid``, ``human`` (a human cost given: the pilot's judgments are human), or ``judge``."""
        if self.rho is not None:
            return "hybrid"
        return "human" if self.human is not None else "judge"

    def of(self, n: float, pairs: int) -> Cost:
        """The cost of ``n`` judgments of the pilot's kind (``inf`` stays ``inf``)."""
        if not math.isfinite(n):
            return Cost(math.inf, math.inf, math.inf, 0.0)
        human, judge, rho = self.human, self.judge, self.rho
        if rho is None or human is None or judge is None:  # a rho comes with both costs (__post_init__)
            if human is not None:
                return Cost(n * human, n, 0.0, 0.0)
            if judge is None:
                raise UsageError("no price given: `human_cost`, `judge_cost` or the judge's token prices",
                                 parameters=("human_cost", "judge_cost", "price_in"))
            return Cost(n * judge, 0.0, n, 0.0)
        if n <= 0:
            return Cost(0.0, 0.0, 0.0, 0.0)
        from planner.hybrid.budget import plan

        if human <= 0:
            raise UsageError("a hybrid split needs `human_cost` > 0", parameters=("human_cost",))
        hp = plan(n / pairs, rho, human, judge, pairs=pairs)
        if hp.hybrid is None:
            return Cost(hp.human_cost_total, hp.human_n * pairs, 0.0, 0.0)
        return Cost(hp.cost, hp.hybrid.n * pairs, hp.hybrid.items * pairs, hp.saving)


@dataclass(frozen=True)
class Cost:
    """Money for a number of judgments: ``total``; ``humans`` and ``judge`` labels; ``saving`` of a
    hybrid split over humans only."""

    total: float
    humans: float
    judge: float
    saving: float
