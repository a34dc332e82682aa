"""The vocabulary of the acquisition rules and their one bundle of tunables.

:class:`SelectionOptions` replaces the module-global knobs the selection used
to read (``SETTLE_PROB``, ``RANKING_RISK``, ``LOOKAHEAD``, ``BATCH_CAP``, ...):
one frozen value, passed explicitly down the call chain
(``select_pairs(..., options=SelectionOptions(batch_cap=None))``). Its
defaults are the values the benches chose (bench/README.md, bench/RESULTS.md).
"""

from __future__ import annotations

from dataclasses import dataclass

from planner.errors import UsageError, parameters_of, shown
from planner.vocabulary import OBJECTIVES, STRATEGIES  # noqa: F401 (re-exported: the acquisition rules' names)

RISK_MODES = ("bayes", "truth", "fixed")


@dataclass(frozen=True)
class SelectionOptions:
    """Tunables of the acquisition rules (defaults: the values the benches chose).

    Attributes
    ----------
    settle_prob : float
        P(order) every decision must exceed to call it settled (stopping advice).
    ranking_risk : {"bayes", "truth", "fixed"}
        ``pair_risk`` mode of the ranking/top-k objectives (bench: best of the three).
    risk_eps : float
        Pairs with P(misorder) below this are left out of the ranking sum.
    pool_min : int
        Ranking objective: candidate pool size floor (the pool is ``max(pool_min, 2k)``).
    lookahead : tuple of int
        Ranking: judgments per pair looked ahead (the KG(*) rate, see ``RankingScorer.gains``).
    lazy_chunk : int
        Candidates re-evaluated at a time in the lazy greedy.
    greedy_steps : int
        Ranking: most greedy steps in one batch. A batch of ``k`` > ``greedy_steps`` picks takes
        ``ceil(k / greedy_steps)`` judgments of the chosen pair per step (orders alternating as
        usual; each of them credited an equal share of the step's exact reduction): at Arena
        scale (batch 1,000) five per step, and the selection's cost stays below the fit's.
    arena_floor : float
        Arena weights floored at this fraction of the largest weight.
    batch_cap : float or None
        Ranking: picks one pair may take in a batch (share of ``k``) before it
        yields; ``None``: no cap.
    cap_min : int
        ... but never fewer than this many picks.
    cap_yield : float
        ... to any candidate worth at least this share of its score.
    cap_even : float
        ... and never fewer than this many times the batch's even share per candidate pair
        (``k / candidates``): with few pairs a cap of ``cap_min`` would force round-robin's batch.
    sparse_rel : float
        Ranking gains: pairs whose variance moves by less than this (relative) are skipped.
    draws_pool : int
        Draws path: candidates kept (by Gaussian gain) when there are more.
    explore : float in [0, 1)
        Active: share of each batch given to the least-judged pairs (exploration floor).
    thompson : bool
        Active ranking/top-k: score gaps against one posterior draw of the strengths.
    tie_margin : float
        Practical-equivalence margin (logit, >= 0; 0: off). A pair whose gap lies within
        ``± tie_margin`` with probability > ``settle_prob`` is settled as tied: the stopping
        advice counts it as decided and the ranking/top-k objectives stop spending on it.
    """

    settle_prob: float = 0.95
    ranking_risk: str = "bayes"
    risk_eps: float = 1e-7
    pool_min: int = 256
    lookahead: tuple[int, ...] = (1, 4, 16)
    lazy_chunk: int = 8
    greedy_steps: int = 200
    arena_floor: float = 1e-3
    batch_cap: float | None = 0.1
    cap_min: int = 5
    cap_yield: float = 0.25
    cap_even: float = 2.0
    sparse_rel: float = 1e-4
    draws_pool: int = 64
    explore: float = 0.0
    thompson: bool = False
    tie_margin: float = 0.0

    def __post_init__(self):
        if self.ranking_risk not in RISK_MODES:
            raise UsageError(f"`ranking_risk` ({self.ranking_risk!r}) must be one of " + ", ".join(RISK_MODES),
                             parameters="ranking_risk")
        if not 0.5 < self.settle_prob < 1.0:
            raise UsageError(f"`settle_prob` ({self.settle_prob}) must be in (0.5, 1)", parameters="settle_prob")
        for name in ("tie_margin", "cap_even"):
            value = getattr(self, name)
            if not (isinstance(value, (int, float)) and not isinstance(value, bool) and 0.0 <= value < float("inf")):
                raise UsageError(f"{shown(name)} ({value!r}) must be a finite number >= 0",
                                 parameters=parameters_of(name))
        if not 0.0 <= self.explore < 1.0:
            raise UsageError(f"`explore` ({self.explore}) must be in [0, 1)", parameters="explore")
        look = tuple(self.lookahead)
        if not look or any(isinstance(n, bool) or int(n) != n or n < 1 for n in look):
            raise UsageError(f"`lookahead` ({self.lookahead!r}) must be a non-empty tuple of integers >= 1",
                             parameters="lookahead")
        object.__setattr__(self, "lookahead", look)
        for name in ("pool_min", "lazy_chunk", "greedy_steps", "cap_min", "draws_pool"):
            value = getattr(self, name)
            if isinstance(value, bool) or int(value) != value or value < 1:
                raise UsageError(f"{shown(name)} ({value}) must be an integer >= 1", parameters=parameters_of(name))
        if self.batch_cap is not None and not 0.0 < self.batch_cap <= 1.0:
            raise UsageError(f"`batch_cap` ({self.batch_cap}) must be in (0, 1] or missing (no cap)",
                             parameters="batch_cap")
        for name in ("risk_eps", "arena_floor", "cap_yield", "sparse_rel"):
            value = getattr(self, name)
            if not 0.0 <= value < 1.0:
                raise UsageError(f"{shown(name)} ({value}) must be in [0, 1)", parameters=parameters_of(name))
