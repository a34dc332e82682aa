"""Budget a study by simulation: how many comparisons each sampling strategy needs.

The loop is the real one. For every strategy and repetition::

    counts = nothing judged yet
    repeat until the budget is spent:
        posterior = planner.model.fit(counts, engine)          # same engine as report
        pairs     = planner.acquisition.select_pairs(posterior, batch, strategy, ...)
        verdicts  = the oracle judges each pair (synthetic truth, or a real
                    judgment drawn without replacement from a replay pool)
        counts   += verdicts
        record metrics of the refitted posterior against the truth

Scenarios with a known truth (strengths on the logit scale unless noted):

* ``linear``: M systems evenly spread over an Elo range (``spread`` points),
  ``beta = elo / (400 / ln 10)``.
* ``arena``: Bradley–Terry coefficients ``xi ~ Beta(1/g, 1/g)`` with ``g = 2``
  used directly as logit strengths, ``P(i beats j) = 1 / (1 + exp(xi_j - xi_i))``
  — the simulation of Chiang et al. (2024), "Chatbot Arena: An Open Platform
  for Evaluating LLMs by Human Preference", ICML, §6. A fresh truth is drawn per
  repetition (the same one for every strategy: common random numbers).
* ``asap``: Thurstone scores ``s ~ Uniform[0, 5]`` for N systems, observer
  ``P(i beats j) = Phi((s_i - s_j) / 1.4865)`` — the simulation of Mikhailiuk
  et al. (2020), "Active Sampling for Pairwise Comparisons via Approximate
  Message Passing and Information Gain Maximization" (ASAP), ICPR. The model
  fitted is still Bradley–Terry (a deliberate misspecification, as in practice).
* ``from-study``: the truth is the current posterior mean of a study.
* replay: a requested comparison draws an unused real judgment for that pair
  (without replacement); an exhausted pair is unavailable. The truth is the
  Laplace fit on the whole pool. Real judges bring real ties, invalid verdicts
  and position bias.

Synthetic judges can add ties (Davidson ``nu`` chosen so that equal systems tie
with probability ``tie_rate``: ``nu = 2 t / (1 - t)``), a left-position logit
shift ``position`` and label-flip noise (a decisive verdict is reversed with
probability ``flip``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Sequence

import numpy as np

from planner.model import bt
from planner.counts import Counts
from planner.equality import array_eq
from planner.errors import DataError, UsageError, check_range
from planner.simulation.metrics import (  # metrics and the target test live there; re-exported here
    CREDIBLE,
    SMALLER_IS_BETTER,
    TARGET_TOL,
    Z95,
    credible_scores,
    meets,
    metrics,
    pair_order_probs,
    pair_table,
)

SCENARIOS = ("linear", "arena", "asap")
ASAP_SIGMA = 1.4865  # ASAP observer: P = Phi(delta / 1.4865)
METRICS = ("tau", "rho", "rmse", "width", "max_width", "coverage", "top1", "credible_tau", "credible_all")
TARGET_METRICS = ("tau", "rho", "rmse", "width", "coverage", "top1", "credible-tau", "credible-all")
__all__ = ["CREDIBLE", "SMALLER_IS_BETTER", "TARGET_TOL", "Z95", "credible_scores", "meets", "metrics",
           "pair_order_probs", "pair_table"]


# --------------------------------------------------------------- truth
@array_eq
@dataclass(frozen=True)
class Truth:
    """A known truth for a simulated study.

    ``strengths`` are centred logit strengths for Bradley–Terry observers; for
    the Thurstone observer (``asap``) they are the Thurstone scores converted to
    the logistic scale with the usual factor 1.702 / 1.4865 (logistic ≈ probit
    × 1.702), used only for interval coverage — the ranking is unaffected.
    """

    systems: tuple[str, ...]
    strengths: np.ndarray
    observer: str = "bt"          # "bt" or "thurstone"
    scores: np.ndarray | None = None  # Thurstone scores (asap only)
    # replay: P(system i is above system j) under the full-pool posterior (M x M); None = exact truth
    pair_prob: np.ndarray | None = None

    def credible(self) -> np.ndarray:
        """Upper-triangle mask of the pairs whose true order is settled.

        A synthetic truth is exact: every pair of unequal strengths. A replay's
        truth is a fit: the pairs whose full-pool P(order) exceeds ``CREDIBLE``.
        """
        m = len(self.systems)
        upper = np.triu(np.ones((m, m), dtype=bool), 1)
        if self.pair_prob is None:
            return upper & (self.strengths[:, None] != self.strengths[None, :])
        return upper & (np.maximum(self.pair_prob, 1 - self.pair_prob) > CREDIBLE)


def make_truth(scenario: str, n_systems: int, rng: np.random.Generator, *,
               spread: float = 400.0, arena_gamma: float = 2.0) -> Truth:
    """Draw the truth of a synthetic scenario (see the module docstring)."""
    if scenario not in SCENARIOS:
        raise UsageError(f"--scenario ({scenario!r}) must be one of {', '.join(SCENARIOS)}")
    if n_systems < 2:
        raise UsageError(f"--systems ({n_systems}) must be at least 2")
    names = tuple(f"sys{i + 1:02d}" for i in range(n_systems))
    if scenario == "linear":
        if not spread > 0:
            raise UsageError(f"--spread ({spread:g}) must be > 0 Elo points")
        elo = np.linspace(spread / 2, -spread / 2, n_systems)
        return Truth(names, elo / bt.ELO_SCALE)
    if scenario == "arena":
        check_range("--arena-gamma", arena_gamma, 0, math.inf)
        xi = rng.beta(1.0 / arena_gamma, 1.0 / arena_gamma, size=n_systems)
        return Truth(names, xi - xi.mean())
    s = rng.uniform(0.0, 5.0, size=n_systems)
    return Truth(names, (s - s.mean()) * 1.702 / ASAP_SIGMA, observer="thurstone", scores=s)


@dataclass(frozen=True)
class Judge:
    """A synthetic judge: ties, a left-position shift and label-flip noise."""

    tie_rate: float = 0.0
    position: float = 0.0
    flip: float = 0.0

    @property
    def nu(self) -> float:
        return 2.0 * self.tie_rate / (1.0 - self.tie_rate)

    def judge(self, truth: Truth, left: np.ndarray, right: np.ndarray,
              rng: np.random.Generator) -> np.ndarray:
        """Outcome codes (0 = left won, 1 = right won, 2 = tie) for each comparison."""
        u = rng.random(left.size)
        if truth.observer == "thurstone":
            from scipy.stats import norm

            d = (truth.scores[left] - truth.scores[right]) / ASAP_SIGMA + self.position / 1.702
            p_left = norm.cdf(d)
            tie = u < self.tie_rate
            u2 = rng.random(left.size)
            out = np.where(u2 < p_left, 0, 1)
            out = np.where(tie, 2, out)
        else:
            pa, pb, _ = bt.outcome_probs(truth.strengths[left] - truth.strengths[right] + self.position,
                                         self.nu)
            out = np.where(u < pa, 0, np.where(u < pa + pb, 1, 2))
        if self.flip > 0:
            flip = (rng.random(left.size) < self.flip) & (out < 2)
            out = np.where(flip, 1 - out, out)
        return out.astype(np.int64)


# -------------------------------------------------------------- replay
@array_eq
@dataclass(frozen=True)
class ReplayPool:
    """Real judgments grouped by unordered system pair.

    ``left``/``right``/``outcome`` are per judgment (outcome codes as in
    :meth:`planner.counts.Counts.from_arrays`, 3 = invalid); ``by_pair`` maps
    ``(i, j)`` with ``i < j`` to the indices of that pair's judgments.
    """

    systems: tuple[str, ...]
    left: np.ndarray
    right: np.ndarray
    outcome: np.ndarray
    by_pair: dict = field(repr=False)
    source: str = ""

    @property
    def size(self) -> int:
        return int(self.left.size)

    def counts(self) -> Counts:
        return Counts.from_arrays(self.systems, self.left, self.right, self.outcome)


_VERDICT_CODE = {"A": 0, "B": 1, "tie": 2, "invalid": 3}


def read_replay(path: str | Path) -> ReplayPool:
    """Read a normalized judgments file (JSONL or CSV) into a replay pool.

    The file is read by the same reader as ``planner ingest``
    (:func:`planner.formats.normalized.load_normalized`), so it accepts what
    ingest accepts (verdict labels in any case, CSV, ``a_position``). ``a`` is
    the system shown first unless ``"a_position": "right"`` (an unknown
    position is replayed as shown first). Bad lines raise :class:`DataError`
    naming ``file:line``.
    """
    from planner.formats.normalized import load_normalized

    path = Path(path)
    systems: dict[str, int] = {}
    left, right, outcome = [], [], []
    for rec in load_normalized(path, "--replay"):
        ia = systems.setdefault(rec["a"], len(systems))
        ib = systems.setdefault(rec["b"], len(systems))
        code = _VERDICT_CODE[rec["verdict"]]
        if rec.get("a_position") == "right":
            ia, ib = ib, ia
            code = {0: 1, 1: 0}.get(code, code)
        left.append(ia)
        right.append(ib)
        outcome.append(code)
    if len(systems) < 2:
        raise DataError(f"{path}: a replay pool needs judgments of at least two systems")
    left_a = np.asarray(left, dtype=np.int64)
    right_a = np.asarray(right, dtype=np.int64)
    lo, hi = np.minimum(left_a, right_a), np.maximum(left_a, right_a)
    key = lo * len(systems) + hi
    order = np.argsort(key, kind="stable")
    by_pair = {}
    uniq, start = np.unique(key[order], return_index=True)
    bounds = list(start) + [order.size]
    for u, s0, s1 in zip(uniq, bounds[:-1], bounds[1:]):
        by_pair[(int(u // len(systems)), int(u % len(systems)))] = order[s0:s1]
    return ReplayPool(tuple(systems), left_a, right_a, np.asarray(outcome, dtype=np.int64), by_pair,
                      str(path))


# ---------------------------------------------------------------- spec
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


def parse_strategies(spec: str | Sequence[str]) -> tuple[Strategy, ...]:
    """Parse ``"active,round-robin,entropy,active:top-k=3,active+explore=0.2"``.

    Plain objective names (``ranking``, ``entropy``, ``variance``, ``anchor``)
    mean ``active`` with that objective; ``active:OBJ`` likewise; ``top-k=K``
    or ``active:top-k=K`` the top-K objective. An active item may end in
    ``+explore=F`` (share of each batch to the least-judged pairs) and/or
    ``+thompson`` (one posterior draw in the ranking objective); the whole
    item is the strategy's label.
    """
    from planner.acquisition import OBJECTIVES, STRATEGIES

    items = [s.strip() for s in (spec.split(",") if isinstance(spec, str) else spec) if s.strip()]
    if not items:
        raise UsageError("--strategies must name at least one strategy")
    out = []
    for label in items:
        item, *mods = label.split("+")
        body = item[len("active:"):] if item.startswith("active:") else item
        top_k = None
        if body.startswith("top-k"):
            try:
                top_k = int(body.split("=", 1)[1])
            except (IndexError, ValueError):
                raise UsageError(f"--strategies ({item!r}): write top-k=K with an integer K") from None
            out.append(Strategy(label, "active", "top-k", top_k))
        elif body in OBJECTIVES and (item.startswith("active:") or body not in STRATEGIES):
            out.append(Strategy(label, "active", body))
        elif item in STRATEGIES:
            out.append(Strategy(label, item))
        else:
            allowed = ", ".join(list(STRATEGIES) + [o for o in OBJECTIVES if o not in STRATEGIES])
            raise UsageError(f"--strategies ({item!r}) must be one of {allowed} (or active:OBJECTIVE)")
    out = [_with_modifiers(s, s.name.split("+")[1:]) for s in out]
    names = [s.name for s in out]
    if len(set(names)) != len(names):
        raise UsageError(f"--strategies ({','.join(names)}) names a strategy twice")
    return tuple(out)


def _with_modifiers(s: Strategy, mods: list[str]) -> Strategy:
    """Apply ``+explore=F`` / ``+thompson`` to an active strategy."""
    from dataclasses import replace

    for mod in mods:
        if s.strategy != "active":
            raise UsageError(f"--strategies ({s.name!r}): +{mod} applies to active strategies only")
        if mod == "thompson":
            s = replace(s, thompson=True)
            continue
        key, _, val = mod.partition("=")
        try:
            share = float(val)
        except ValueError:
            share = -1.0
        if key != "explore" or not 0.0 <= share < 1.0:
            raise UsageError(f"--strategies ({s.name!r}): +{mod} must be +explore=F with F in [0, 1) "
                             "or +thompson")
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
    judge: Judge = Judge()
    budget: int = 2000
    batch: int = 50
    reps: int = 20
    seed: int = 0
    engine: str = "laplace"
    anchor: int = 0
    truth: Truth | None = None          # from-study / replay
    replay: ReplayPool | None = None


@array_eq
@dataclass(frozen=True)
class Trace:
    """Metrics of one (strategy, repetition) run after every batch."""

    strategy: str
    rep: int
    spent: np.ndarray                   # comparisons spent at each checkpoint
    values: dict                        # metric -> ndarray over checkpoints
    exhausted: bool = False
    totals: dict = field(default_factory=dict)  # A/B/tie/invalid judged in the run
    fallbacks: int = 0                  # batches the strategy could not fill (round-robin filled them)
    fallback_reason: str = ""           # the strategy's message the first time
    error: str = ""                     # the run failed (message); not saved, retried by --resume
    error_kind: str = ""                # "usage" or "data"


def _run_one(spec: SimulationSpec, s_index: int, rep: int) -> Trace:
    from planner.acquisition import select_pairs
    from planner.model import fit

    strategy = spec.strategies[s_index]
    root = np.random.SeedSequence(spec.seed)
    # common random numbers: the truth depends only on (seed, rep)
    truth_seq, run_seq = root.spawn(2)
    truth_rng = np.random.default_rng(truth_seq.spawn(rep + 1)[rep])
    rng = np.random.default_rng(run_seq.spawn(rep + 1)[rep].spawn(s_index + 1)[s_index])
    if spec.truth is not None:
        truth = spec.truth
    else:
        truth = make_truth(spec.scenario, spec.n_systems, truth_rng, spread=spec.spread,
                           arena_gamma=spec.arena_gamma)
    systems = truth.systems
    pool_order = None
    used = None
    if spec.replay is not None:
        pool_order = {p: rng.permutation(idx) for p, idx in spec.replay.by_pair.items()}
        used = {p: 0 for p in pool_order}
    credible = truth.credible()
    counts = Counts.empty(systems)
    spent = 0
    checkpoints: list[int] = []
    values: dict[str, list[float]] = {k: [] for k in METRICS}
    exhausted = False
    fallbacks, fallback_reason = 0, ""
    while True:
        # the loop uses only the Gaussian summary: one Laplace draw (the minimum) instead of 200
        post = fit(counts, engine=spec.engine, seed=spec.seed, draws=1 if spec.engine == "laplace" else 500,
                   tune=500)
        if spent > 0:
            row = metrics(post.posterior.mean, post.posterior.sd, truth.strengths, credible)
            checkpoints.append(spent)
            for k in METRICS:
                values[k].append(row[k])
        if spent >= spec.budget:
            break
        k = min(spec.batch, spec.budget - spent)
        allowed = capacity = None
        if used is not None:
            capacity = {p: pool_order[p].size - n for p, n in used.items() if n < pool_order[p].size}
            allowed = set(capacity)
            if not allowed:
                exhausted = True
                break
        try:
            sel = select_pairs(post.posterior, k, strategy=strategy.strategy, objective=strategy.objective,
                               top_k=strategy.top_k, anchor=systems[spec.anchor], judged=counts, rng=rng,
                               allowed=allowed, true_mean=truth.strengths, capacity=capacity,
                               explore=strategy.explore, thompson=strategy.thompson)
            if any(n.startswith("swiss:") for n in sel.notes):
                fallbacks += 1
                fallback_reason = fallback_reason or sel.notes[-1][:120]
        except (DataError, UsageError) as exc:
            if allowed is None:
                raise
            # the replay pool left this strategy no pair it may choose (e.g. swiss with every
            # neighbour pair used up): fill the batch with the least-judged pairs still in the pool
            fallbacks += 1
            fallback_reason = fallback_reason or str(exc)[:120]
            sel = select_pairs(post.posterior, k, strategy="round-robin", judged=counts, rng=rng,
                               allowed=allowed, capacity=capacity)
        pairs = np.asarray(sel.pairs, dtype=np.int64).reshape(-1, 2)
        if spec.replay is not None:
            lefts, rights, outs = [], [], []
            for i, j in pairs:
                p = (min(i, j), max(i, j))
                if used[p] >= pool_order[p].size:
                    continue  # the pair ran dry within this batch
                idx = pool_order[p][used[p]]
                used[p] += 1
                lefts.append(spec.replay.left[idx])
                rights.append(spec.replay.right[idx])
                outs.append(spec.replay.outcome[idx])
            if not outs:
                exhausted = True
                break
            new = Counts.from_arrays(systems, lefts, rights, outs)
            spent += len(outs)
        else:
            flip = rng.random(len(pairs)) < 0.5
            left = np.where(flip, pairs[:, 1], pairs[:, 0])
            right = np.where(flip, pairs[:, 0], pairs[:, 1])
            out = spec.judge.judge(truth, left, right, rng)
            new = Counts.from_arrays(systems, left, right, out)
            spent += len(pairs)
        counts = counts + new
    return Trace(strategy.name, rep, np.asarray(checkpoints, dtype=np.int64),
                 {k: np.asarray(v, dtype=float) for k, v in values.items()}, exhausted, counts.totals(),
                 fallbacks, fallback_reason)


# -------------------------------------------------------------- result
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
             "ratio_to_best_baseline_band": _band_dict(s.best_band), "failed_runs": s.failed,
             "runs_with_fallback": s.fallback_runs}
            for s in self.strategies]
        return d


def _band_dict(band):
    """A 95% band for JSON: ``high`` is null and ``high_never`` true when some resample never met the target."""
    if band is None:
        return None
    return {"low": band[0], "high": None if math.isinf(band[1]) else band[1], "high_never": math.isinf(band[1])}


def parse_target(text: str) -> tuple[str, float]:
    """``"tau=0.9"`` → ("tau", 0.9); ``"credible-tau=0.9"`` → ("credible_tau", 0.9);
    ``"credible-all"`` (every credibly separated pair right) → ("credible_all", 1.0)."""
    if text.strip() == "credible-all":
        text = "credible-all=1"
    try:
        name, value = text.split("=", 1)
        name, val = name.strip(), float(value)
    except ValueError:
        raise UsageError(f"--target ({text[:80]!r}) must look like tau=0.9, credible-tau=0.9, "
                         "credible-all, rho=0.9, rmse=0.3 or width=100") from None
    if name not in TARGET_METRICS or not math.isfinite(val):
        raise UsageError(f"--target ({text[:80]!r}): metric must be one of {', '.join(TARGET_METRICS)}")
    return name.replace("-", "_"), val


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
    if trace.spent.size == 0:
        return np.full(grid.size, np.nan)
    idx = np.searchsorted(trace.spent, grid, side="right") - 1
    return trace.values[key][np.clip(idx, 0, None)]


def _summarise(name: str, strat: Strategy, traces: list[Trace], metric: str, target: float,
               batch: int, budget: int) -> StrategyResult:
    failed = sum(bool(t.error) for t in traces)
    fallback_runs = sum(t.fallbacks > 0 for t in traces)
    traces = [t for t in traces if not t.error]
    if not traces:
        empty = {k: np.zeros(0) for k in METRICS}
        return StrategyResult(name, strat.strategy, strat.objective, np.zeros(0, dtype=np.int64), empty, empty,
                              empty, None, (), None, None, None, 0, failed=failed, curves=np.zeros((0, 0)))
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
    q = lambda p: (lambda v: None if not np.isfinite(v) else float(v))(  # noqa: E731
        np.quantile(vals, p, method="inverted_cdf"))
    # headline: first checkpoint at which the MEAN curve over reps reaches the target
    hit = np.flatnonzero(meets(metric, mean[metric], target))
    at_mean = int(checkpoints[hit[0]]) if hit.size else None
    curves = np.vstack([_on_grid(t, metric, checkpoints) for t in traces]) if n else np.zeros((len(traces), 0))
    return StrategyResult(name, strat.strategy, strat.objective, checkpoints, mean, low, high, at_mean,
                          needed, q(0.5), q(0.25), q(0.75), reached, failed=failed,
                          fallback_runs=fallback_runs, reps_used=tuple(t.rep for t in traces), curves=curves)


def simulate(spec: SimulationSpec, *, target: str = "tau=0.9", workers: int | None = None,
             progress=None, out: str | Path | None = None, resume: bool = False) -> SimulationResult:
    """Run every (strategy, repetition) of ``spec`` and summarise.

    ``workers`` processes run repetitions in parallel (default: up to 2);
    results do not depend on ``workers``. ``progress(done, total)`` is called
    as runs finish. ``out``: a JSONL file to which every finished run is
    appended at once; ``resume``: continue ``out``, running only what is
    missing (see :mod:`planner.workflows.simulate_runs`). A run that fails is left out
    and said so in the notes; only if every run fails is its error raised.
    """
    from planner.limits import check_simulation_options
    from planner.workflows.simulate_runs import open_results, run_tasks

    check_simulation_options(n_systems=spec.n_systems if spec.truth is None else None, spread=spec.spread,
                             arena_gamma=spec.arena_gamma,
                             tie_rate=spec.judge.tie_rate, position=spec.judge.position, flip=spec.judge.flip,
                             budget=spec.budget, batch=spec.batch, reps=spec.reps, seed=spec.seed,
                             workers=workers, anchor=spec.anchor)
    metric, value = parse_target(target)
    if spec.budget < 1 or spec.batch < 1 or spec.reps < 1:
        raise UsageError(f"--budget ({spec.budget}), --batch ({spec.batch}) and --reps ({spec.reps}) "
                         "must be positive integers")
    if spec.engine not in ("laplace", "nuts"):
        raise UsageError(f"--engine ({spec.engine!r}) must be one of 'laplace' or 'nuts'")
    for name, v in (("--tie-rate", spec.judge.tie_rate), ("--flip", spec.judge.flip)):
        check_range(name, v, 0, 1, low_open=False)
    if spec.judge.flip >= 0.5:
        raise UsageError(f"--flip ({spec.judge.flip:g}) must be in [0, 0.5): at 0.5 verdicts carry no information")
    done, fp = open_results(Path(out) if out is not None else None, resume, spec)
    # repetition-major: if the run is cut short, every strategy has the same first repetitions
    tasks = [(si, rep) for rep in range(spec.reps) for si in range(len(spec.strategies))]
    workers = min(2, len(tasks)) if workers is None else max(1, workers)
    done = run_tasks(spec, tasks, done, workers=workers, out=Path(out) if out is not None else None, fp=fp,
                     progress=progress)
    results = [done[t] for t in tasks]
    failures = [t for t in results if t.error]
    if len(failures) == len(results):
        first = failures[0]
        raise (UsageError if first.error_kind == "usage" else DataError)(f"{first.strategy}: {first.error}")
    by_strategy = []
    for si, strat in enumerate(spec.strategies):
        traces = [done[(si, r)] for r in range(spec.reps)]
        by_strategy.append(_summarise(strat.name, strat, traces, metric, value, spec.batch, spec.budget))
    from planner.simulation.headline import add_ratios

    by_strategy, notes = add_ratios(by_strategy, metric, value, spec.seed)
    notes.extend(_run_notes(by_strategy, results, out=out))
    exhausted = sum(t.exhausted for t in results)
    if exhausted:
        notes.append(f"{exhausted} of {len(results)} runs exhausted the replay pool before the budget")
    truth = spec.truth
    truth_elo = None if truth is None else tuple(float(x) for x in bt.to_elo(truth.strengths) - bt.ELO_BASE)
    spread = None
    if truth is not None:
        spread = float(np.ptp(truth.strengths) * bt.ELO_SCALE)
    elif spec.scenario == "linear":
        spread = float(spec.spread)
    systems = truth.systems if truth is not None else tuple(f"sys{i + 1:02d}" for i in range(spec.n_systems))
    pairs = pair_table(truth) if truth is not None and truth.pair_prob is not None else ()
    if pairs:
        n_cred = sum(p["credible"] for p in pairs)
        notes.append(f"{n_cred} of {len(pairs)} pairs are credibly separated by the full pool "
                     f"(P(order) > {CREDIBLE:g}); credible-tau and credible-all count only those")
    return SimulationResult(spec.scenario, systems, truth_elo, spread, len(systems), spec.budget, spec.batch,
                            spec.reps, spec.seed, spec.engine, spec.judge, metric, value, tuple(by_strategy),
                            spec.replay.source if spec.replay is not None else None, tuple(notes),
                            pairs)


def _run_notes(by_strategy, results, *, out) -> list[str]:
    """Say which runs failed and which strategies needed round-robin to fill a batch."""
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
    return notes


def replay_truth(pool: ReplayPool) -> Truth:
    """The truth of a replay: the Laplace posterior mean on the whole pool."""
    from planner.model import fit

    post = fit(pool.counts(), engine="laplace", draws=1)
    mean, cov = post.posterior.mean, post.posterior.cov
    return Truth(pool.systems, mean, pair_prob=pair_order_probs(mean, cov))


def study_truth(study_path: str | Path) -> Truth:
    """The truth of ``--from-study``: the study's current posterior mean (Laplace), with each
    pair's P(order), so credible-tau counts only the pairs the study already settles."""
    from planner.model import fit
    from planner.store.study import Study

    with Study.open(study_path) as study:
        counts = study.counts(by_stratum=False)
    post = fit(counts, engine="laplace", draws=1)
    mean, cov = post.posterior.mean, post.posterior.cov
    return Truth(tuple(counts.systems), mean, pair_prob=pair_order_probs(mean, cov))


def plot(result: SimulationResult, path: str | Path) -> Path:
    """Metric-vs-comparisons curves per strategy with 10–90% bands (PNG or SVG)."""
    path = Path(path)
    if path.suffix.lower() not in (".png", ".svg"):
        raise UsageError(f"--plot ({path}) must end in .png or .svg")
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    metric = result.target_metric
    fig, ax = plt.subplots(figsize=(7, 4.5))
    for s in result.strategies:
        if s.checkpoints.size == 0:
            continue
        ax.plot(s.checkpoints, s.mean[metric], label=s.name)
        ax.fill_between(s.checkpoints, s.low[metric], s.high[metric], alpha=0.15)
    ax.axhline(result.target_value, color="grey", ls="--", lw=1)
    ax.set_xlabel("comparisons")
    ax.set_ylabel(metric)
    ax.set_title(f"{result.scenario}: {result.n_systems} systems, {result.reps} reps")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, metadata={"Date": None} if path.suffix.lower() == ".svg" else None)
    plt.close(fig)
    return path
