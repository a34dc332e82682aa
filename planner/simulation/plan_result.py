"""``planner plan``'s result: the forecast per target, its money and rounds, the sentence and the table rows.

The sentence and the table are written from the same :class:`PlanResult`
numbers; ``to_dict`` is the ``--json`` document. A quantile beyond the budget
(the target not met within it in that share of repetitions) is ``inf`` here,
"more than N" in the sentence and ``null`` in JSON (with ``budget`` beside it).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from planner.simulation.costing import Cost, Prices
from planner.simulation.forecast import TargetForecast
from planner.simulation.pilot import Setting

__all__ = ["DesignInfo", "PlanResult", "TargetCost", "TradeoffRow", "count_text", "money_text", "rounds_text",
           "target_text"]


def target_text(metric: str, value: float, margin_elo: float) -> str:
    """``resolved at 50 Elo``, ``credible-τ 0.9``, ``credible-all``."""
    if metric == "resolved":
        return f"resolved at {margin_elo:g} Elo"
    if metric == "credible_all":
        return "credible-all"
    return f"{metric.replace('_tau', '-τ').replace('_', '-')} {value:g}"


def count_text(x: float, budget: int) -> str:
    """A comparison count as printed: ``1,350``, or ``more than 2,000`` beyond the budget."""
    return f"{x:,.0f}" if math.isfinite(x) else f"more than {budget:,}"


@dataclass(frozen=True)
class DesignInfo:
    """The study's design as forecast: orders, votes, reuse passes, prompts per pair (min, max), the
    verdicts the pool still holds and the budget (the most more comparisons a repetition may take)."""

    orders: str
    votes: int
    reuse: int
    prompts_min: int
    prompts_max: int
    open_slots: int
    budget: int


@dataclass(frozen=True)
class TargetCost:
    """A target's money at the median and the interval ends (each :class:`Cost`)."""

    median: Cost
    lo: Cost
    hi: Cost


@dataclass(frozen=True)
class TradeoffRow:
    """One batch size of the trade-off table: the first target's forecast with that batch."""

    batch: int
    forecast: TargetForecast
    cost: TargetCost | None


@dataclass(frozen=True)
class PlanResult:
    """Everything ``planner plan`` prints (see the module docstring)."""

    source: str
    systems: tuple[str, ...]
    pilot_judgments: int
    strategy: str
    batch: int
    reps: int
    level: float
    seed: int
    margin_elo: float
    settings: tuple[Setting, ...]
    design: DesignInfo
    targets: tuple[TargetForecast, ...]
    costs: tuple[TargetCost | None, ...]
    prices: Prices
    tradeoff: tuple[TradeoffRow, ...] = ()
    notes: tuple[str, ...] = ()
    failed: int = 0

    def sentence(self, k: int = 0) -> str:
        """``About 420 [300–610] more comparisons (80% interval) to resolved at 50 Elo: 9 [6–13] rounds of 50; …``"""
        f = self.targets[k]
        b = f.budget
        if f.median == 0 and f.hi == 0:
            return (f"The pilot already meets {f.text} in {f.already:.0%} of the repetitions: no more comparisons "
                    "needed.")
        if not math.isfinite(f.median):
            return (f"{f.text[0].upper()}{f.text[1:]} is out of reach in most repetitions: met within the {b:,} "
                    f"comparisons the study can still take in {f.reached:.0%} of them (add prompts, allow reuse, or "
                    "relax the target).")
        head = (f"About {count_text(f.median, b)} [{count_text(f.lo, b)}–{count_text(f.hi, b)}] more comparisons "
                f"({f.level:.0%} interval) to {f.text}: {rounds_text(f)} of {f.batch:,}")
        cost = self.costs[k]
        if cost is not None:
            head += f"; cost {money_text(cost.median.total)} [{money_text(cost.lo.total)}–{money_text(cost.hi.total)}]"
        tail = "." if f.reached == 1 else (f"; met within the budget of {b:,} in {f.reached:.0%} of the "
                                           "repetitions.")
        return head + tail

    def tradeoff_sentence(self) -> str:
        """``Batches of 10: 380 [..] comparisons in 38 [..] rounds; of 50: …`` (the trade-off rows)."""
        if not self.tradeoff:
            return ""
        parts = [f"of {r.batch:,}: {count_text(r.forecast.median, r.forecast.budget)} comparisons in "
                 f"{rounds_text(r.forecast)}" for r in self.tradeoff]
        return f"Batches {'; '.join(parts)} (medians [{self.level:.0%} intervals], {self.targets[0].text})."

    def to_dict(self) -> dict:
        doc: dict[str, Any] = {
               "source": self.source, "systems": list(self.systems), "pilot_judgments": self.pilot_judgments,
               "strategy": self.strategy, "batch": self.batch, "reps": self.reps, "level": self.level,
               "seed": self.seed, "margin_elo": self.margin_elo,
               "judge": [{"name": s.name, "value": s.value, "shown": s.shown, "source": s.source}
                         for s in self.settings],
               "design": {k: getattr(self.design, k) for k in ("orders", "votes", "reuse", "prompts_min",
                                                                 "prompts_max", "open_slots", "budget")},
               "targets": [_target_doc(f, c) for f, c in zip(self.targets, self.costs)],
               "batches": [{"batch": r.batch, **_target_doc(r.forecast, r.cost)} for r in self.tradeoff],
               "prices": {"human_cost": self.prices.human, "judge_cost": self.prices.judge, "rho": self.prices.rho,
                          "rho_source": self.prices.rho_source, "mode": self.prices.mode if self.prices.given
                          else None},
               "sentence": self.sentence(), "failed_runs": self.failed, "notes": list(self.notes)}
        first = doc["targets"][0]
        doc.update(target=first["target"], comparisons_needed=first["comparisons_needed"], rounds=first["rounds"],
                   cost=first["cost"])
        return doc


def _finite(x: float):
    return float(x) if math.isfinite(x) else None


def rounds_text(f: TargetForecast, unit: str = " rounds") -> str:
    """``29 [22–36] rounds``; an end beyond the budget reads ``more than N`` (N rounds fill the budget)."""
    most = math.ceil(f.budget / f.batch)
    r = lambda x: f"{x:,.0f}" if math.isfinite(x) else f"more than {most:,}"  # noqa: E731
    return f"{r(f.rounds_median)} [{r(f.rounds_lo)}–{r(f.rounds_hi)}]{unit}"


def money_text(x: float) -> str:
    """An amount as printed: ``1,234.50``, or ``more`` when the target is beyond the budget."""
    return f"{x:,.2f}" if math.isfinite(x) else "more"


def _target_doc(f: TargetForecast, cost: TargetCost | None) -> dict:
    needed = {"median": _finite(f.median), "lo": _finite(f.lo), "hi": _finite(f.hi), "level": f.level,
              "budget": f.budget, "reached": f.reached, "already_met": f.already}
    rounds = {"median": _finite(f.rounds_median), "lo": _finite(f.rounds_lo), "hi": _finite(f.rounds_hi),
              "level": f.level, "batch": f.batch}
    money = None
    if cost is not None:
        money = {"median": _finite(cost.median.total), "lo": _finite(cost.lo.total), "hi": _finite(cost.hi.total),
                 "level": f.level,
                 "split": {q: {"humans": _finite(getattr(cost, q).humans), "judge": _finite(getattr(cost, q).judge),
                               "saving": _finite(getattr(cost, q).saving)} for q in ("median", "lo", "hi")}}
    return {"target": f.metric, "value": f.value, "text": f.text, "comparisons_needed": needed, "rounds": rounds,
            "cost": money, "per_rep": [_finite(x) for x in f.per_rep]}
