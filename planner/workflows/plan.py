"""`plan`: what the rest of a study will cost — comparisons, rounds and money to a target — as a forecast.

Reads the pilot from the study (its judgments, the prompts each pair can still
be shown on, the judge ledger's tokens) or takes stated assumptions, builds
the forecast's source (:mod:`planner.simulation.pilot`), runs one simulated
continuation per repetition through the simulator's loop (in worker
processes, results independent of their number) and summarises them
(:mod:`planner.simulation.forecast`, :mod:`planner.simulation.plan_result`).
The method is written out in docs/methods.md, "Forecasting a study".

The forecast of the first target is saved in the study (artifact
``forecast.json``) with the options that made it, so ``status`` and
``next-batch`` can show it updated to their data
(:mod:`planner.services.forecast_saved`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace

import numpy as np

from planner.errors import DataError, UsageError
from planner.simulation.costing import Prices
from planner.simulation.pilot import Assumptions, JudgeOverrides, Pilot
from planner.vocabulary import ENGINES

__all__ = ["PlanOptions", "PriceOptions", "plan"]

MAX_LEVEL = 0.99


@dataclass(frozen=True)
class PlanOptions:
    """The forecast's options (``planner plan --help`` says each in flag form)."""

    targets: tuple[str, ...] = ("resolved",)
    margin: float = 50.0                # Elo, the ``resolved`` target's margin
    strategy: str = "active"
    batch: int = 50
    reps: int = 200
    confidence_level: float = 0.8
    seed: int = 0
    max_comparisons: int | None = None
    orders: str = "one"
    votes: int = 1
    reuse_prompts: bool = False
    prompts: int | tuple | None = None  # prompts per pair instead of the study's: one for all, or one per pair
    engine: str = "laplace"             # the pilot's posterior: laplace or nuts
    workers: int | None = None
    batches: tuple[int, ...] = ()       # the trade-off table's batch sizes
    judge: JudgeOverrides = field(default_factory=JudgeOverrides)

    def __post_init__(self):
        from planner import limits
        from planner.simulation.spec import parse_target

        if not self.targets:
            raise UsageError("`target` must name at least one target", parameters=("target",))
        for t in self.targets:
            parse_target(t)
        limits.check_float("margin", self.margin, 0, limits.MAX_SPREAD)
        limits.check_int("batch", self.batch, 1, limits.MAX_SIM_BUDGET)
        limits.check_int("reps", self.reps, 1, limits.MAX_SIM_REPS)
        limits.check_float("confidence_level", self.confidence_level, 0, MAX_LEVEL, low_open=True)
        limits.check_seed("seed", self.seed)
        if self.max_comparisons is not None:
            limits.check_int("max_comparisons", self.max_comparisons, 1, limits.MAX_SIM_BUDGET)
        limits.check_int("votes", self.votes, 1, limits.MAX_PER_PROMPT)
        for n in (() if self.prompts is None else np.atleast_1d(self.prompts).tolist()):
            limits.check_int("prompts", n, 0 if isinstance(self.prompts, tuple) else 1, limits.MAX_PROMPT_BUDGET)
        if self.engine not in ENGINES:
            raise UsageError(f"`engine` ({self.engine!r}) must be one of " + ", ".join(map(repr, ENGINES)),
                             parameters=("engine",))
        if self.workers is not None:
            limits.check_int("workers", self.workers, 1, limits.MAX_WORKERS)
        for b in self.batches:
            limits.check_int("batches", b, 1, limits.MAX_SIM_BUDGET)
        j = self.judge
        for name, v, hi in (("tie_rate", j.tie_rate, 1), ("invalid_rate", j.invalid_rate, 1), ("icc", j.icc, 1)):
            if v is not None:
                limits.check_float(name, v, 0, hi, high_open=name != "icc")
        if j.position is not None:
            limits.check_float("position", j.position, -limits.MAX_POSITION, limits.MAX_POSITION)


@dataclass(frozen=True)
class PriceOptions:
    """Money: ``human_cost``/``judge_cost`` per judgment; or token prices (USD per 1M) with tokens per
    judgment (default: the study's judge ledger); ``surrogate`` (a judge in the study, ρ from the pilot)
    or ``rho`` for the hybrid split."""

    human_cost: float | None = None
    judge_cost: float | None = None
    price_in: float | None = None
    price_out: float | None = None
    tokens_in: float | None = None
    tokens_out: float | None = None
    surrogate: str | None = None
    rho: float | None = None


# ------------------------------------------------------------------ money
def _prices(study, p: PriceOptions, pilot_systems: int) -> tuple[Prices, list[str]]:
    """:class:`Prices` from the options: the judge's per-judgment cost from token prices and the ledger's
    tokens when asked, ρ from the pilot's surrogate judge when named."""
    from planner import limits
    from planner.connectors.pricing import check_prices

    notes: list[str] = []
    judge = p.judge_cost
    token_prices = check_prices(p.price_in, p.price_out, None)
    for name in ("tokens_in", "tokens_out"):
        if getattr(p, name) is not None:
            limits.check_float(name, getattr(p, name), 0, 1e9)
    price_in, price_out = token_prices.input, token_prices.output
    if price_in is not None and price_out is not None:  # both or neither (check_prices)
        if judge is not None:
            raise UsageError("give the judge's cost per judgment (`judge_cost`) or its token prices, not both",
                             parameters=("judge_cost", "price_in"))
        t_in, t_out = p.tokens_in, p.tokens_out
        if t_in is None or t_out is None:
            t_in, t_out, note = _ledger_tokens(study, t_in, t_out)
            notes.append(note)
        judge = (t_in * price_in + t_out * price_out) / 1e6
    rho, rho_source = p.rho, "given (--rho)" if p.rho is not None else ""
    if p.surrogate is not None:
        if study is None:
            raise UsageError("`surrogate` needs a pilot study", parameters=("surrogate",))
        from planner.services.study_pilot import rho_from_study

        rho, n = rho_from_study(study, p.surrogate)
        rho_source = f"pilot: {p.surrogate} vs the humans on {n:,} items"
    return Prices(p.human_cost, judge, rho, rho_source), notes


def _ledger_tokens(study, t_in, t_out) -> tuple[float, float, str]:
    """Mean prompt / completion tokens per answer of the study's one judge model (the judge ledger)."""
    if study is None:
        raise UsageError("token prices need `tokens_in` and `tokens_out` (tokens per judgment) without a pilot study",
                         parameters=("tokens_in", "tokens_out"))
    from planner.store.ledger import judge_totals

    models = [t for t in judge_totals(study.path) if t["answers"]]
    if len(models) != 1:
        raise UsageError(f"the study's judge ledger holds {len(models)} judge models with answers; give "
                         "`tokens_in` and `tokens_out` (tokens per judgment)", parameters=("tokens_in", "tokens_out"))
    t = models[0]
    t_in = t["prompt_tokens"] / t["answers"] if t_in is None else t_in
    t_out = t["completion_tokens"] / t["answers"] if t_out is None else t_out
    return t_in, t_out, (f"judge tokens per judgment: {t_in:,.0f} prompt + {t_out:,.0f} completion "
                         f"(mean of {t['answers']:,} {t['model']} answers in the study's ledger)")


def _target_cost(prices: Prices, f, pairs: int):
    from planner.simulation.plan_result import TargetCost

    if not prices.given:
        return None
    return TargetCost(prices.of(f.median, pairs), prices.of(f.lo, pairs), prices.of(f.hi, pairs))


# ------------------------------------------------------------------ the forecast
def _design(pilot: Pilot, o: PlanOptions):
    """The :class:`PoolDesign` and the budget (most more comparisons) of the forecast."""
    from planner.simulation.study_pool import PoolDesign, layout, open_slots

    per_order = o.votes * (2 if o.orders == "both" else 1)
    reuse = 1
    if o.reuse_prompts:
        if o.max_comparisons is None:
            raise UsageError("`reuse_prompts` makes the pool unlimited: give `max_comparisons`",
                             parameters=("reuse_prompts", "max_comparisons"))
        least = max(int(pilot.prompts.min()), 1) if pilot.prompts.size else 1
        reuse = max(1, math.ceil(o.max_comparisons / (least * per_order)) + 1)
    design = PoolDesign(pilot.prompts, o.orders, o.votes, reuse)
    slots = open_slots(layout(design, pilot.verdicts), pilot.verdicts)
    if slots == 0:
        raise DataError("the study's pool is used up: no pair can take another comparison (allow `reuse_prompts` "
                        "with `max_comparisons`, or add prompts)", parameters=("reuse_prompts", "max_comparisons"))
    budget = slots if o.max_comparisons is None else min(slots, o.max_comparisons)
    return design, slots, budget


def _run(spec, workers, progress) -> tuple[list, int]:
    """The spec's runs (failed ones left out, counted); all failing raises the first error."""
    from planner.services.simulation_tasks import run_tasks

    tasks = [(0, rep) for rep in range(spec.reps)]
    workers = min(2, len(tasks)) if workers is None else workers
    done = run_tasks(spec, tasks, {}, workers=workers, out=None, fp="", progress=progress)
    traces = [done[t] for t in tasks]
    good = [t for t in traces if not t.error]
    if not good:
        first = traces[0]
        raise (UsageError if first.error_kind == "usage" else DataError)(f"{first.strategy}: {first.error}")
    return good, len(traces) - len(good)


def _spec(pilot: Pilot, o: PlanOptions, source, budget: int, anchor: int):
    from planner.simulation.spec import SimulationSpec, parse_strategies, parse_target

    strategies = parse_strategies(o.strategy)
    if len(strategies) != 1 or strategies[0].strategy == "oracle":
        raise UsageError(f"`strategy` ({o.strategy!r}) must name one strategy a study can run (oracle knows the "
                         "truth: a simulator's bound)", parameters=("strategy",))
    stop = tuple(parse_target(t) for t in o.targets)
    return SimulationSpec("forecast", strategies, n_systems=len(pilot.systems), budget=budget,
                          batch=min(o.batch, budget), reps=o.reps, seed=o.seed, anchor=anchor, margin_elo=o.margin,
                          start=pilot.counts, stop_at=stop, source=source)


def _summaries(spec, traces, o: PlanOptions, budget: int):
    from planner.simulation.forecast import summarise_target
    from planner.simulation.plan_result import target_text

    return tuple(summarise_target(traces, metric, value, target_text(metric, value, o.margin), o.confidence_level,
                                  budget, spec.batch) for metric, value in spec.stop_at)


def plan(study_path=None, options: PlanOptions | None = None, *, assumptions: Assumptions | None = None,
         prices: PriceOptions | None = None, progress=None, save: bool = True):
    """Forecast the rest of the study in ``study_path`` (or of a stated one, ``assumptions``).

    Returns a :class:`planner.simulation.plan_result.PlanResult`; with a study and ``save``, the first
    target's forecast is stored in it for ``status``/``next-batch``. ``progress(done, total)`` as runs finish.
    """
    from planner.simulation.pilot import assumed_params, assumed_pilot

    o = options or PlanOptions()
    if (study_path is None) == (assumptions is None):
        raise UsageError("plan from a pilot study (STUDY) or from assumptions (`systems`, `spread`), one of the two",
                         parameters=("systems", "spread"))
    p = prices or PriceOptions()
    if assumptions is not None:
        return _forecast(assumed_pilot(assumptions), assumed_params(assumptions, o.judge), o, p, [], "assumptions",
                         None, 0, progress)[0]
    from planner.services.study_pilot import read_pilot
    from planner.simulation.pilot import posterior_params
    from planner.store.study import Study

    with Study.open(study_path) as study:
        pilot, notes = read_pilot(study, surrogate=p.surrogate, prompts=o.prompts)
        anchor = pilot.systems.index(study.anchor) if study.anchor in pilot.systems else 0
        result, particles = _forecast(pilot, posterior_params(pilot, o.engine, o.seed), o, p, notes,
                                      str(study_path), study, anchor, progress)
        if save:
            from planner.services.forecast_saved import ARTIFACT, artifact

            study.save_artifact(ARTIFACT, artifact(o, p, result, particles))
    return result


def _forecast(pilot: Pilot, params, o: PlanOptions, p: PriceOptions, notes: list[str], source_text: str,
              study, anchor: int, progress):
    """Run the forecast of ``pilot`` and assemble the :class:`PlanResult` (``study``: the open pilot study,
    None when planning from assumptions)."""
    from planner.simulation.pilot import forecast_source, judge_settings
    from planner.simulation.plan_result import DesignInfo, PlanResult, TradeoffRow

    money, money_notes = _prices(study, p, len(pilot.systems))
    notes = notes + money_notes
    design, slots, budget = _design(pilot, o)
    source = forecast_source(pilot, params, o.judge, design, budget)
    spec = _spec(pilot, o, source, budget, anchor)
    extra = [b for b in dict.fromkeys(min(b, budget) for b in o.batches) if b != spec.batch]
    total = o.reps * (1 + len(extra))
    step = (lambda offset: (lambda done, _: progress(offset + done, total))) if progress else (lambda offset: None)
    traces, failed = _run(spec, o.workers, step(0))
    targets = _summaries(spec, traces, o, budget)
    pairs = len(pilot.systems) * (len(pilot.systems) - 1) // 2
    tradeoff = []
    for b in dict.fromkeys(min(b, budget) for b in o.batches):
        bspec = replace(spec, batch=b, stop_at=spec.stop_at[:1])
        btraces = traces if bspec.batch == spec.batch else _run(bspec, o.workers,
                                                               step(o.reps * (1 + extra.index(bspec.batch))))[0]
        f = _summaries(bspec, btraces, o, budget)[0]
        tradeoff.append(TradeoffRow(bspec.batch, f, _target_cost(money, f, pairs)))
    if failed:
        notes.append(f"{failed} of {o.reps} repetitions failed and are left out")
    info = DesignInfo(o.orders, o.votes, design.reuse, int(pilot.prompts.min()), int(pilot.prompts.max()),
                      slots, budget)
    settings = judge_settings(pilot, params, o.judge, assumed=study is None)
    result = PlanResult(source_text, pilot.systems, pilot.judgments, spec.strategies[0].name, spec.batch, o.reps,
                        o.confidence_level, o.seed, o.margin, settings, info, targets,
                        tuple(_target_cost(money, f, pairs) for f in targets), money, tuple(tradeoff), tuple(notes),
                        failed)
    return result, _saved(o, spec, traces, design, pilot, result)


# ------------------------------------------------------------------ the saved forecast
def _saved(o: PlanOptions, spec, traces, design, pilot: Pilot, result):
    """The first target's repetitions as particles for :mod:`planner.services.forecast_saved`."""
    from planner.simulation.loop import truth_rng
    from planner.simulation.remaining import SavedForecast, cell_table

    f = result.targets[0]
    theta = []
    for t in traces:
        strengths, gamma, nu, _ = spec.source.parameters(truth_rng(spec.seed, t.rep))
        theta.append(np.concatenate([strengths, [gamma, math.log(nu)]]))
    k = design.per_cluster * (2 if design.orders == "both" else 1)
    icc = o.judge.icc if o.judge.icc is not None else (pilot.icc or 0.0)
    temper = 1.0 / (1.0 + (k - 1) * max(icc, 0.0))
    return SavedForecast(f.metric, f.value, f.text, f.level, f.batch, f.budget, cell_table(pilot.counts),
                         np.asarray(theta), np.asarray(f.per_rep, dtype=float), temper)
