"""Budget a study by simulation: how many comparisons each sampling strategy needs.

The workflow of ``planner simulate``: it reads what the core may not (a replay
file, a study) and runs every (strategy, repetition) of a
:class:`~planner.simulation.spec.SimulationSpec`, in worker processes, saving
each finished run (``--out``/``--resume``, :mod:`planner.services.simulation_tasks`).
The pure pieces live in :mod:`planner.simulation`: the truths
(:mod:`~planner.simulation.truth`: ``linear``, ``arena``, ``asap``, the truth of
a fit), the synthetic judge (:mod:`~planner.simulation.judge`), the replay pool
(:mod:`~planner.simulation.replay`), one run of the real loop
(:mod:`~planner.simulation.loop`), the metrics, the summary and the headline
ratios.

Truths read here:

* ``from-study``: every repetition draws its truth from the study's posterior
  (strengths, position effect and tie parameter jointly) and simulates a study
  of the same design from scratch (:func:`study_source`: the machinery of
  ``planner plan``, without the pilot's data); credible-τ counts the pairs that
  simulated study separates at its end, as a replay counts those its file does.
* replay: a requested comparison draws an unused real judgment for that pair
  (without replacement); an exhausted pair is unavailable. The truth is the
  Laplace fit on the whole pool. Real judges bring real ties, invalid verdicts
  and position bias.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from planner.errors import DataError, UsageError, check_range
from planner.simulation.replay import ReplayPool, order_balance, pool_from_records, replay_truth
from planner.simulation.spec import (
    SimulationSpec,
    parse_target,
)
from planner.simulation.summary import SimulationResult, build_result, run_notes, summarise
from planner.simulation.truth import SCENARIOS, Truth

# the workflow's own functions, then the core names a caller of simulate() works with (re-exported)
__all__ = ["load_truth", "read_replay", "simulate", "study_source"]


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
    return pool_from_records(load_normalized(path, "replay"), str(path))


def study_source(study_path: str | Path, budget: int, seed: int = 0):
    """``--from-study``: a :class:`~planner.simulation.forecast.ForecastSource` whose repetitions draw the
    truth from the study's posterior and the verdicts of a fresh study of its design (its prompts per pair,
    one order per prompt) — the study's judgments are the posterior's data, not the runs' start."""
    from planner.counts import Counts
    from planner.services.study_pilot import read_pilot
    from planner.simulation.pilot import JudgeOverrides, forecast_source, posterior_params
    from planner.simulation.study_pool import PilotVerdicts, PoolDesign
    from planner.store.study import Study

    with Study.open(study_path) as study:
        pilot, _ = read_pilot(study, otherwise=("simulate a `scenario` instead of `from_study`",
                                                ("from_study", "scenario")))
    tot = pilot.counts.totals()
    if tot["A"] + tot["B"] == 0:   # the posterior ranks every system equal: no ranking to recover
        raise DataError(f"`from_study` ({study_path}) has no decisive judgment ({sum(tot.values()):,} counted: "
                        f"tie {tot['tie']:,}, invalid {tot['invalid']:,}); its posterior ranks every system "
                        "equal, so no strategy can recover a ranking. Ingest judgments first, or simulate a "
                        "`scenario`", parameters=("from_study", "scenario"))
    params = posterior_params(pilot, "laplace", seed)
    fresh = replace(pilot, counts=Counts.empty(pilot.systems), verdicts=PilotVerdicts.empty())
    source = forecast_source(fresh, params, JudgeOverrides(), PoolDesign(pilot.prompts, "one", 1), budget)
    return replace(source, invalid=(int(pilot.counts.invalid.sum()), int(pilot.counts.usable.sum())))


def load_truth(scenario: str, *, replay: str | Path | None = None,
               from_study: str | Path | None = None) -> tuple[str, Truth | None, ReplayPool | None]:
    """(scenario name, truth, replay pool): a replay file's pool and its truth, or a synthetic scenario or
    a study (their truth is drawn per repetition, so None here: a study's by :func:`study_source`)."""
    if replay is not None and from_study is not None:
        raise UsageError("`replay` and `from_study` cannot be used together", parameters=('replay', 'from_study'))
    if replay is not None:
        pool = read_replay(replay)
        return "replay", replay_truth(pool), pool
    if from_study is not None:
        return "from-study", None, None
    if scenario not in SCENARIOS:
        raise UsageError(f"`scenario` ({scenario!r}) must be one of {', '.join(SCENARIOS)}", parameters=('scenario',))
    return scenario, None, None


def _check(spec: SimulationSpec, workers: int | None) -> None:
    """The options of ``spec`` (and ``workers``) in range, before any run starts."""
    from planner.limits import check_simulation_options

    check_simulation_options(n_systems=spec.n_systems if spec.truth is None else None, spread=spec.spread,
                             arena_gamma=spec.arena_gamma,
                             tie_rate=spec.judge.tie_rate, position=spec.judge.position, flip=spec.judge.flip,
                             budget=spec.budget, batch=spec.batch, reps=spec.reps, seed=spec.seed,
                             workers=workers, anchor=spec.anchor)


def _check_spec(spec: SimulationSpec) -> None:
    if spec.budget < 1 or spec.batch < 1 or spec.reps < 1:
        raise UsageError(f"`budget` ({spec.budget}), `batch` ({spec.batch}) and `reps` ({spec.reps}) "
                         "must be positive integers", parameters=('budget', 'batch', 'reps'))
    if spec.engine not in ("laplace", "nuts"):
        raise UsageError(f"`engine` ({spec.engine!r}) must be one of 'laplace' or 'nuts'", parameters=('engine',))
    for name, v in (("tie_rate", spec.judge.tie_rate), ("flip", spec.judge.flip)):
        check_range(name, v, 0, 1, low_open=False)
    if spec.judge.flip >= 0.5:
        raise UsageError(f"`flip` ({spec.judge.flip:g}) must be in [0, 0.5): at 0.5 verdicts carry no information",
                         parameters=('flip',))


def simulate(spec: SimulationSpec, *, target: str = "tau=0.9", workers: int | None = None,
             progress=None, out: str | Path | None = None, resume: bool = False) -> SimulationResult:
    """Run every (strategy, repetition) of ``spec`` and summarise.

    ``workers`` processes run repetitions in parallel (default: up to 2);
    results do not depend on ``workers``. ``progress(done, total)`` is called
    as runs finish. ``out``: a JSONL file to which every finished run is
    appended at once; ``resume``: continue ``out``, running only what is
    missing (see :mod:`planner.services.simulation_tasks`). A run that fails is left out
    and said so in the notes; only if every run fails is its error raised.
    """
    from planner.services.simulation_tasks import open_results, run_tasks
    from planner.simulation.headline import add_ratios

    _check(spec, workers)
    metric, value = parse_target(target)
    _check_spec(spec)
    out_path = Path(out) if out is not None else None
    done, fp = open_results(out_path, resume, spec)
    # repetition-major: if the run is cut short, every strategy has the same first repetitions
    tasks = [(si, rep) for rep in range(spec.reps) for si in range(len(spec.strategies))]
    workers = min(2, len(tasks)) if workers is None else max(1, workers)
    done = run_tasks(spec, tasks, done, workers=workers, out=out_path, fp=fp, progress=progress)
    results = [done[t] for t in tasks]
    failures = [t for t in results if t.error]
    if len(failures) == len(results):
        first = failures[0]
        raise (UsageError if first.error_kind == "usage" else DataError)(f"{first.strategy}: {first.error}")
    by_strategy = [summarise(strat.name, strat, [done[(si, r)] for r in range(spec.reps)], metric, value,
                             spec.batch, spec.budget)
                   for si, strat in enumerate(spec.strategies)]
    by_strategy, notes = add_ratios(by_strategy, metric, value, spec.seed)
    notes.extend(run_notes(by_strategy, results, out=out))
    if spec.replay is not None and (unbalanced := order_balance(spec.replay).note()):
        notes.append(unbalanced)
    if spec.source is not None:
        notes.append("from-study: each repetition draws the truth from the study's posterior (strengths, position "
                     "effect and ties jointly) and the verdicts of a fresh study of its design; credible-tau counts "
                     "the pairs that simulated study separates at its end (P(order) > 0.95 in its fit)")
    return build_result(spec, metric, value, by_strategy, notes)
