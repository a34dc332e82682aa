"""A simulation's runs summarised: per strategy the mean curves, their band and the comparisons needed.

Runs' own checkpoints can drift off the multiples of the batch size (a replay
batch comes back short when a pair runs dry), so every run is read on a common
grid: a run's value at ``c`` is the one after its last refit with at most ``c``
comparisons spent. The headline of a strategy is the first grid point at which
its metric averaged over repetitions meets the target; each repetition's own
first crossing gives the spread (median and 25/75% quantiles, observed values,
an unreached repetition counting as more than the budget).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from planner.equality import array_eq
from planner.model import bt
from planner.simulation.judge import Judge
from planner.simulation.loop import Trace
from planner.simulation.metrics import CREDIBLE, meets
from planner.simulation.spec import METRICS, SimulationSpec, Strategy
from planner.simulation.truth import pair_table, synthetic_names

__all__ = ["SimulationResult", "StrategyResult", "build_result", "run_notes", "summarise"]


@array_eq
@dataclass(frozen=True)
class StrategyResult:
    """Per strategy: mean and 10/90% band of each metric over repetitions (on the
    common ``checkpoints``, multiples of the batch size: a run's value at ``c`` is
    the one after its last refit with at most ``c`` comparisons spent), and
    comparisons needed to reach the target: the headline ``needed_mean_curve``
    (first checkpoint at which the metric averaged over repetitions reaches the
    target) and the spread over repetitions (first crossing per rep; median and
    25/75% quantiles, an unreached rep counting as more than the budget)."""

    name: str
    strategy: str
    objective: str
    checkpoints: np.ndarray
    mean: dict
    low: dict
    high: dict
    needed_mean_curve: int | None      # headline: first checkpoint where the mean curve reaches the target
    needed: tuple                      # per rep: comparisons to reach target, None if not reached
    needed_median: float | None
    needed_q25: float | None
    needed_q75: float | None
    reached: int
    ratio_to_round_robin: float | None = None
    failed: int = 0                    # runs that raised (left out of every figure above)
    fallback_runs: int = 0             # runs in which round-robin had to fill a batch
    reps_used: tuple = ()              # the repetitions summarised (pairs reps across strategies)
    curves: np.ndarray | None = field(default=None, repr=False)  # target metric, reps x checkpoints
    rr_band: tuple | None = None       # 95% paired bootstrap band of ratio_to_round_robin
    best_baseline: str | None = None   # the best baseline other than this strategy
    ratio_to_best: float | None = None
    best_band: tuple | None = None
    metric: str = "tau"                # the target metric the curves, needed and budget_mean are of
    budget_mean: float | None = None   # the target metric averaged over checkpoints and repetitions
    vs_round_robin: tuple | None = None  # (budget_mean difference to round-robin, 95% low, high), paired


@dataclass(frozen=True)
class SimulationResult:
    scenario: str
    systems: tuple[str, ...]
    truth_elo: tuple[float, ...] | None
    spread_elo: float | None
    n_systems: int
    budget: int
    batch: int
    reps: int
    seed: int
    engine: str
    judge: Judge
    target_metric: str
    target_value: float
    strategies: tuple[StrategyResult, ...]
    replay_source: str | None = None
    notes: tuple[str, ...] = ()
    # replay: per pair, the full-pool order (a above b), P(a above b) and whether it is credible
    pairs: tuple[dict, ...] = ()

    def to_dict(self) -> dict:
        from dataclasses import asdict

        d = {k: getattr(self, k) for k in ("scenario", "systems", "truth_elo", "spread_elo", "n_systems",
                                           "budget", "batch", "reps", "seed", "engine", "target_metric",
                                           "target_value", "replay_source", "notes")}
        d["pairs"] = list(self.pairs)
        d["judge"] = asdict(self.judge)
        d["strategies"] = [
            {"name": s.name, "strategy": s.strategy, "objective": s.objective,
             "checkpoints": s.checkpoints, "mean": s.mean, "low": s.low, "high": s.high,
             "comparisons_needed": s.needed_mean_curve, "comparisons_needed_per_rep": list(s.needed),
             "needed_median": s.needed_median,
             "needed_q25": s.needed_q25, "needed_q75": s.needed_q75, "reached": s.reached,
             "ratio_to_round_robin": s.ratio_to_round_robin, "ratio_to_round_robin_band": _band_dict(s.rr_band),
             "best_baseline": s.best_baseline, "ratio_to_best_baseline": s.ratio_to_best,
             "ratio_to_best_baseline_band": _band_dict(s.best_band),
             "budget_mean": s.budget_mean, "budget_mean_minus_round_robin": _diff_dict(s.vs_round_robin),
             "failed_runs": s.failed,
             "runs_with_fallback": s.fallback_runs}
            for s in self.strategies]
        return d


def _band_dict(band):
    """A 95% band for JSON: ``high`` is null and ``high_never`` true when some resample never met the target."""
    if band is None:
        return None
    return {"low": band[0], "high": None if math.isinf(band[1]) else band[1], "high_never": math.isinf(band[1])}


def _diff_dict(diff):
    """A paired difference for JSON: ``{"difference", "low", "high"}`` (95% band), or None."""
    return None if diff is None else {"difference": diff[0], "low": diff[1], "high": diff[2]}


def _needed(trace: Trace, metric: str, target: float) -> int | None:
    v = trace.values[metric]
    hit = np.flatnonzero(meets(metric, v, target))
    return int(trace.spent[hit[0]]) if hit.size else None


def _grid(traces: list[Trace], batch: int, budget: int) -> np.ndarray:
    """Common checkpoints: multiples of ``batch`` (and ``budget``) up to the furthest run."""
    last = max((int(t.spent[-1]) for t in traces if t.spent.size), default=0)
    grid = np.arange(batch, budget + 1, batch, dtype=np.int64)
    if budget % batch:
        grid = np.append(grid, budget)
    return grid[grid <= last]


def _on_grid(trace: Trace, key: str, grid: np.ndarray) -> np.ndarray:
    """A run's metric at each grid point: its value after the last refit with ``spent <= c``.

    Replay batches can come back short (a pair runs dry), so runs' own
    checkpoints drift off the multiples of ``batch``; a run that stopped early
    (pool exhausted) keeps its last value.
    """
    if trace.spent.size == 0 or key not in trace.values:   # a results file from before the metric existed
        return np.full(grid.size, np.nan)
    idx = np.searchsorted(trace.spent, grid, side="right") - 1
    return trace.values[key][np.clip(idx, 0, None)]


def summarise(name: str, strat: Strategy, traces: list[Trace], metric: str, target: float,
              batch: int, budget: int) -> StrategyResult:
    """One strategy's runs (failed ones counted and left out) as a :class:`StrategyResult`."""
    failed = sum(bool(t.error) for t in traces)
    fallback_runs = sum(t.fallbacks > 0 for t in traces)
    traces = [t for t in traces if not t.error]
    if not traces:
        empty = {k: np.zeros(0) for k in METRICS}
        return StrategyResult(name, strat.strategy, strat.objective, np.zeros(0, dtype=np.int64), empty, empty,
                              empty, None, (), None, None, None, 0, failed=failed, curves=np.zeros((0, 0)),
                              metric=metric)
    checkpoints = _grid(traces, batch, budget)
    n = checkpoints.size
    mean, low, high = {}, {}, {}
    for k in METRICS:
        arr = np.vstack([_on_grid(t, k, checkpoints) for t in traces]) if n else np.zeros((len(traces), 0))
        mean[k] = arr.mean(axis=0)
        low[k] = np.quantile(arr, 0.1, axis=0) if n else arr[0]
        high[k] = np.quantile(arr, 0.9, axis=0) if n else arr[0]
    needed = tuple(_needed(t, metric, target) for t in traces)
    reached = sum(x is not None for x in needed)
    # unreached reps count as "more than the budget" (+inf), and quantiles are
    # observed values (inverted CDF), so the median is honest and never interpolated
    vals = np.array([np.inf if x is None else x for x in needed], dtype=float)

    def q(p):
        v = np.quantile(vals, p, method="inverted_cdf")
        return None if not np.isfinite(v) else float(v)

    # headline: first checkpoint at which the MEAN curve over reps reaches the target
    hit = np.flatnonzero(meets(metric, mean[metric], target))
    at_mean = int(checkpoints[hit[0]]) if hit.size else None
    curves = np.vstack([_on_grid(t, metric, checkpoints) for t in traces]) if n else np.zeros((len(traces), 0))
    return StrategyResult(name, strat.strategy, strat.objective, checkpoints, mean, low, high, at_mean,
                          needed, q(0.5), q(0.25), q(0.75), reached, failed=failed,
                          fallback_runs=fallback_runs, reps_used=tuple(t.rep for t in traces), curves=curves,
                          metric=metric)


def run_notes(by_strategy, results, *, out) -> list[str]:
    """Say which runs failed, which strategies needed round-robin to fill a batch and how many
    runs exhausted a replay pool (``out``: the results file a resume would continue, or None)."""
    notes = []
    for s in by_strategy:
        reasons = {t.error for t in results if t.strategy == s.name and t.error}
        if s.failed:
            notes.append(f"{s.name}: {s.failed} run(s) failed and are left out ({'; '.join(sorted(reasons))[:160]})"
                         + (f"; --resume {out} retries them" if out is not None else ""))
        if s.fallback_runs:
            why = next(t.fallback_reason for t in results if t.strategy == s.name and t.fallbacks)
            n = sum(t.fallbacks for t in results if t.strategy == s.name)
            notes.append(f"{s.name}: in {s.fallback_runs} run(s) the pool left it no pair it may choose ({why}); "
                         f"round-robin over the pairs left filled {n} batch(es)")
    exhausted = sum(t.exhausted for t in results)
    if exhausted:
        notes.append(f"{exhausted} of {len(results)} runs exhausted the replay pool before the budget")
    return notes


def build_result(spec: SimulationSpec, metric: str, value: float, by_strategy, notes: list[str]) -> SimulationResult:
    """The :class:`SimulationResult` of ``spec``: the truth in Elo, the replay's pair table and the notes."""
    truth = spec.truth
    truth_elo = None if truth is None else tuple(float(x) for x in bt.to_elo(truth.strengths) - bt.ELO_BASE)
    spread = None
    if truth is not None:
        spread = float(np.ptp(truth.strengths) * bt.ELO_SCALE)
    elif spec.scenario == "linear":
        spread = float(spec.spread)
    systems = (truth.systems if truth is not None else spec.start.systems if spec.start is not None
               else spec.source.start.systems if spec.source is not None else synthetic_names(spec.n_systems))
    pairs = pair_table(truth) if truth is not None and truth.pair_prob is not None else ()
    notes = list(notes)
    if pairs:
        n_cred = sum(p["credible"] for p in pairs)
        notes.append(f"{n_cred} of {len(pairs)} pairs are credibly separated by the full pool "
                     f"(P(order) > {CREDIBLE:g}); credible-tau and credible-all count only those")
    return SimulationResult(spec.scenario, systems, truth_elo, spread, len(systems), spec.budget, spec.batch,
                            spec.reps, spec.seed, spec.engine, spec.judge, metric, value, tuple(by_strategy),
                            spec.replay.source if spec.replay is not None else None, tuple(notes),
                            pairs)
