"""One run of a sampling strategy: the real loop, against a known truth.

For one (strategy, repetition)::

    counts = nothing judged yet
    repeat until the budget is spent:
        posterior = planner.model.fit(counts, engine)          # same engine as report
        pairs     = planner.acquisition.select_pairs(posterior, batch, strategy, ...)
        verdicts  = the oracle judges each pair (synthetic truth, or a real
                    judgment drawn without replacement from a replay pool)
        counts   += verdicts
        record metrics of the refitted posterior against the truth

Random numbers: the truth and the verdicts depend only on (seed, repetition), the same
for every strategy (common random numbers, :mod:`planner.simulation.streams`: the n-th
judgment of a pair is the same whichever strategy asks for it); a strategy's own draws
(tie-breaks, Thompson, exploration, preferred prompts) depend on (seed, repetition,
strategy index), so runs can go to any worker in any order.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from planner.counts import Counts
from planner.equality import array_eq
from planner.errors import DataError, PlannerError, UsageError
from planner.model import bt
from planner.simulation.metrics import meets, metrics
from planner.simulation.replay import ReplayWalk
from planner.simulation.spec import METRICS, SimulationSpec, Strategy
from planner.simulation.streams import ColumnRng, PairStreams
from planner.simulation.truth import make_truth

__all__ = ["Trace", "run_one", "safe_run", "truth_rng"]


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


def _rngs(seed: int, s_index: int, rep: int) -> tuple[np.random.Generator, np.random.Generator,
                                                    np.random.SeedSequence]:
    """(truth rng, run rng, verdict seed): common random numbers, the truth and the verdicts
    depend only on (seed, rep), the run's own choices on (seed, rep, strategy index)."""
    root = np.random.SeedSequence(seed)
    truth_seq, run_seq, verdict_seq = root.spawn(3)
    truth_rng = np.random.default_rng(truth_seq.spawn(rep + 1)[rep])
    rng = np.random.default_rng(run_seq.spawn(rep + 1)[rep].spawn(s_index + 1)[s_index])
    return truth_rng, rng, verdict_seq.spawn(rep + 1)[rep]


def truth_rng(seed: int, rep: int) -> np.random.Generator:
    """The generator repetition ``rep`` draws its truth (and a forecast its parameters and pool) from:
    the first of :func:`_rngs`'s three, the same for every strategy."""
    return _rngs(seed, 0, rep)[0]


def _shown(pairs: np.ndarray, streams: PairStreams) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(left, right, the rows' remaining uniforms): each pick's pair in the position its stream row gives."""
    ordered, rows = streams.next(pairs)
    flip = rows[:, 0] < 0.5
    left = np.where(flip, ordered[:, 1], ordered[:, 0])
    right = np.where(flip, ordered[:, 0], ordered[:, 1])
    return left, right, rows[:, 1:]


def _judge_synthetic(spec: SimulationSpec, truth, pairs: np.ndarray, streams: PairStreams) -> Counts:
    """Show each pair in a random order and let the synthetic judge decide (both from the pair's stream)."""
    left, right, u = _shown(pairs, streams)
    out = spec.judge.judge(truth, left, right, ColumnRng(u[:, :3]))
    return Counts.from_arrays(truth.systems, left, right, out)


class _PromptLog:
    """The ``prompts`` scenario's judgments so far (prompt, left, right, outcome), and each batch's prompt draw.

    Uniform: every comparison's prompt uniform over the scenario's prompts. ``+prompts``: drawn with the
    probabilities of :func:`planner.prompt_choice.probabilities` from the shrunk scores of the judgments so far,
    each judgment signed against the current posterior mean (:func:`planner.prompt_choice.shrink`, one stratum).
    Prompts may repeat for a pair (a fresh judgment each time).
    """

    def __init__(self, n_prompts: int, prefer: bool):
        self.n, self.prefer = n_prompts, prefer
        self.rows: list[np.ndarray] = []

    def draw(self, u: np.ndarray, mean: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        """Prompts for ``u.size`` comparisons: uniform from the pairs' stream uniforms ``u``, or preferred (``rng``)."""
        k = u.size
        if not self.prefer or not self.rows:
            return np.minimum((u * self.n).astype(np.int64), self.n - 1)
        from planner.prompt_choice import probabilities, shrink

        prompt, left, right, out = np.concatenate(self.rows, axis=1)
        gap = mean[left] - mean[right]
        z = np.where(out == 2, 0, np.where((out == 0) == (gap > 0), 1, -1))[gap != 0]
        zs: dict[str, list[int]] = {}
        for p, v in zip(prompt[gap != 0].tolist(), z.tolist()):
            zs.setdefault(str(p), []).append(v)
        scores = shrink(zs, {str(p): "all" for p in range(self.n)})
        pi = probabilities([scores.of(str(p), "all") for p in range(self.n)])
        return rng.choice(self.n, size=k, p=pi)

    def record(self, prompt, left, right, out) -> None:
        self.rows.append(np.vstack([prompt, left, right, out]).astype(np.int64))


def _judge_prompts(spec: SimulationSpec, truth, pairs: np.ndarray, log: _PromptLog, mean: np.ndarray,
                   streams: PairStreams, rng: np.random.Generator) -> Counts:
    """:func:`_judge_synthetic` on the ``prompts`` scenario: each comparison on a prompt from ``log``."""
    left, right, u = _shown(pairs, streams)
    prompt = log.draw(u[:, 3], mean, rng)
    out = spec.judge.judge_prompts(truth, left, right, prompt, ColumnRng(u[:, :2]))
    log.record(prompt, left, right, out)
    return Counts.from_arrays(truth.systems, left, right, out)


def _select(post, k: int, strategy: Strategy, spec: SimulationSpec, truth, counts: Counts,
            rng: np.random.Generator, allowed, capacity, orders=None, clusters=None):
    """(selection, fallback reason or None): the strategy's pairs, or round-robin's when a replay
    pool leaves the strategy no pair it may choose."""
    from planner.acquisition import select_pairs

    try:
        sel = select_pairs(post.posterior, k, strategy=strategy.strategy, objective=strategy.objective,
                           top_k=strategy.top_k, anchor=truth.systems[spec.anchor], judged=counts, rng=rng,
                           allowed=allowed, true_mean=truth.strengths, capacity=capacity,
                           order_capacity=orders, clusters=clusters, explore=strategy.explore,
                           thompson=strategy.thompson)
        if any(n.startswith("swiss:") for n in sel.notes):
            return sel, sel.notes[-1]
        return sel, None
    except (DataError, UsageError) as exc:
        if allowed is None:
            raise
        # the replay pool left this strategy no pair it may choose (e.g. swiss with every
        # neighbour pair used up): fill the batch with the least-judged pairs still in the pool
        reason = str(exc)[:120]
        sel = select_pairs(post.posterior, k, strategy="round-robin", judged=counts, rng=rng,
                           allowed=allowed, capacity=capacity, order_capacity=orders)
        return sel, reason


def _truth_and_pool(spec: SimulationSpec, truth_rng: np.random.Generator):
    """The repetition's truth and replay pool: drawn by a forecast's ``source``, given (replay, study),
    or a synthetic scenario's (drawn from ``truth_rng``)."""
    if spec.source is not None:
        return spec.source.draw(truth_rng)
    if spec.truth is not None:
        return spec.truth, spec.replay
    return make_truth(spec.scenario, spec.n_systems, truth_rng, spread=spec.spread,
                      arena_gamma=spec.arena_gamma), spec.replay


class _Targets:
    """A forecast's stopping rule: a run ends once every target in ``stop_at`` has been met."""

    def __init__(self, stop_at):
        self.open = {metric: value for metric, value in stop_at}

    def update(self, row: dict) -> bool:
        """Record a checkpoint's metrics; True when nothing is left to wait for (and there was a target)."""
        if not self.open:
            return False
        self.open = {k: v for k, v in self.open.items() if not meets(k, row[k], v)}
        return not self.open


def run_one(spec: SimulationSpec, s_index: int, rep: int) -> Trace:
    """Run strategy ``s_index`` for repetition ``rep``: select → judge → refit until the budget is spent
    (or, in a forecast, until every target of ``spec.stop_at`` is met)."""
    from planner.model import fit

    strategy = spec.strategies[s_index]
    truth_rng, rng, verdict_seq = _rngs(spec.seed, s_index, rep)
    truth, pool = _truth_and_pool(spec, truth_rng)
    replay = ReplayWalk(pool, np.random.default_rng(verdict_seq)) if pool is not None else None
    streams = PairStreams(verdict_seq)
    if strategy.prefers_prompts and truth.discrimination is None:
        raise UsageError(f"`strategies` ({strategy.name!r}): +prompts needs the prompts scenario "
                         "(`scenario` prompts)", parameters=("strategies", "scenario"))
    prompts = None if truth.discrimination is None else _PromptLog(len(truth.discrimination),
                                                                     strategy.prefers_prompts)
    credible, margin = truth.credible(), spec.margin_elo / bt.ELO_SCALE
    counts = Counts.empty(truth.systems) if spec.start is None else spec.start
    targets = _Targets(spec.stop_at)
    spent = 0
    checkpoints: list[int] = []
    values: dict[str, list[float]] = {k: [] for k in METRICS}
    exhausted = False
    fallbacks, fallback_reason = 0, ""
    while True:
        # the loop uses only the Gaussian summary: one Laplace draw (the minimum) instead of 200
        post = fit(counts, engine=spec.engine, seed=spec.seed, draws=1 if spec.engine == "laplace" else 500,
                   tune=500)
        if spent > 0 or spec.start is not None:
            row = metrics(post.posterior.mean, post.posterior.sd, truth.strengths, credible,
                          cov=post.posterior.cov, margin=margin)
            checkpoints.append(spent)
            for k in METRICS:
                values[k].append(row[k])
            if targets.update(row):
                break
        if spent >= spec.budget:
            break
        allowed = capacity = orders = clusters = None
        if replay is not None:
            capacity, orders, clusters = replay.capacity(), replay.order_capacity(), replay.clusters()
            allowed = set(capacity)
            if not allowed:
                exhausted = True
                break
        sel, fell_back = _select(post, min(spec.batch, spec.budget - spent), strategy, spec, truth, counts, rng,
                                 allowed, capacity, orders, clusters)
        if fell_back is not None:
            fallbacks += 1
            fallback_reason = fallback_reason or fell_back
        new, n = _judge(spec, truth, np.asarray(sel.pairs, dtype=np.int64).reshape(-1, 2), sel.left, replay,
                        prompts, post.posterior.mean, streams, rng)
        if new is None:
            exhausted = True
            break
        spent += n
        counts = counts + new
    return Trace(strategy.name, rep, np.asarray(checkpoints, dtype=np.int64),
                 {k: np.asarray(v, dtype=float) for k, v in values.items()}, exhausted, counts.totals(),
                 fallbacks, fallback_reason)


def _judge(spec, truth, pairs, left, replay, prompts, mean, streams, rng) -> tuple[Counts | None, int]:
    """The batch's verdicts: drawn from the replay pool in each pick's order (``left``: the system shown
    first), or given by the synthetic judge."""
    if replay is not None:
        return replay.draw(pairs, left, truth.systems)
    if prompts is not None:
        return _judge_prompts(spec, truth, pairs, prompts, mean, streams, rng), len(pairs)
    return _judge_synthetic(spec, truth, pairs, streams), len(pairs)


def safe_run(args) -> Trace:
    """Run one task ``(spec, s_index, rep)``; an error becomes a failed run (a Trace with ``error``), never a crash."""
    spec, s_index, rep = args
    try:
        return run_one(spec, s_index, rep)
    except (PlannerError, ArithmeticError, ValueError, LookupError, RuntimeError, np.linalg.LinAlgError) as exc:
        kind = "" if isinstance(exc, PlannerError) else f"{type(exc).__name__}: "
        return Trace(spec.strategies[s_index].name, rep, np.zeros(0, dtype=np.int64), {}, error=f"{kind}{exc}"[:200],
                     error_kind="usage" if isinstance(exc, UsageError) else "data")
