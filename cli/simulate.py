"""`planner simulate`: comparisons each sampling strategy needs, synthetic or replayed."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from .app import app
from .common import call, err, message, out, print_json
from .tables import print_table

DEFAULT_STRATEGIES = "active,round-robin,random,swiss,arena,entropy,oracle"


@app.command("simulate")
def simulate_cmd(
    scenario: Annotated[str, typer.Option(help="Synthetic truth: linear | arena | asap | prompts (ignored with --replay/--from-study).")] = "linear",
    systems: Annotated[int, typer.Option("--systems", help="Number of systems (synthetic scenarios), 2 to 200.")] = 16,
    spread: Annotated[float, typer.Option(help="linear: Elo range from best to worst system, 0 to 5,000.")] = 400.0,
    arena_gamma: Annotated[float, typer.Option(help="arena: strengths ~ Beta(1/g, 1/g), 0 < g <= 100.")] = 2.0,
    replay: Annotated[Path | None, typer.Option(help="Replay real judgments (normalized JSONL); truth = fit on the whole pool.")] = None,
    from_study: Annotated[Path | None, typer.Option(help="Truth drawn per repetition from the study's posterior; verdicts of a fresh study of its design, with its judge's ties, position and invalid rate.")] = None,
    strategies: Annotated[str, typer.Option(help="Comma-separated: active, round-robin, random, anchor, swiss, arena, oracle, entropy, variance, top-k=K, active:OBJECTIVE.")] = DEFAULT_STRATEGIES,
    budget: Annotated[int, typer.Option(help="Comparisons per run, 1 to 1,000,000.")] = 2000,
    batch: Annotated[int, typer.Option(help="Comparisons per batch (the model is refitted after each), 1 to --budget.")] = 50,
    reps: Annotated[int, typer.Option(help="Repetitions per strategy (run in parallel processes), 1 to 10,000.")] = 20,
    seed: Annotated[int, typer.Option(help="Seed of every random choice (0 to 2**63-1).")] = 0,
    engine: Annotated[str, typer.Option(help="Model engine: laplace (fast) or nuts.")] = "laplace",
    tie_rate: Annotated[float, typer.Option(help="Synthetic judge: tie probability between equal systems, 0 <= t < 1.")] = 0.0,
    position: Annotated[float, typer.Option(help="Synthetic judge: left-position logit shift, -10 to 10.")] = 0.0,
    flip: Annotated[float, typer.Option(help="Synthetic judge: probability a decisive verdict is reversed, 0 <= f < 0.5.")] = 0.0,
    anchor: Annotated[str | None, typer.Option(help="Anchor system of the anchor strategies, by name as in the system list (synthetic: sys01, sys02, ...; replay/study: its names). Default: the first.")] = None,
    target: Annotated[str, typer.Option(help="Target to budget for: tau=0.9, credible-tau=0.9 (pairs the truth settles: all pairs of a synthetic truth, P(order) > 0.95 in the fit of a replay's file or of a --from-study run's simulated study), credible-all (every such pair right), resolved (every pair credibly ordered or credibly within ±--margin), rho=0.9, rmse=0.3, width=100 (Elo), coverage=0.9, top1=0.9. Met within 1e-9.")] = "tau=0.9",
    margin: Annotated[float | None, typer.Option(help="The resolved target's margin in Elo, 0 to 5,000 (default 50 with --target resolved).", metavar="ELO")] = None,
    workers: Annotated[int | None, typer.Option(help="Worker processes, 1 to 64 (default 2).")] = None,
    plot: Annotated[Path | None, typer.Option(help="Write metric-vs-comparisons curves (.png or .svg).")] = None,
    json_out: Annotated[bool, typer.Option("--json", help="Print one JSON document on stdout.")] = False,
    out_file: Annotated[Path | None, typer.Option("--out", help="Append every finished run to this JSONL file as it finishes (kept on failure or Ctrl-C).")] = None,
    resume: Annotated[bool, typer.Option(help="Continue the --out file: run only the runs it does not hold (same options needed).")] = False,
    hybrid: Annotated[bool, typer.Option("--hybrid", help="Money mode: humans only vs the planned humans + judge split (size --hybrid) per --money budget; synthetic pair, or --from-study with --surrogate.", rich_help_panel="Hybrid")] = False,
    money: Annotated[str | None, typer.Option(help="--hybrid: money budgets, comma-separated (e.g. 300,1000).", rich_help_panel="Hybrid")] = None,
    human_cost: Annotated[float | None, typer.Option(help="--hybrid: cost of one item's human label.", rich_help_panel="Hybrid")] = None,
    judge_cost: Annotated[float | None, typer.Option(help="--hybrid: cost of one item's judge prediction (both orders).", rich_help_panel="Hybrid")] = None,
    agreement: Annotated[float, typer.Option(help="--hybrid synthetic: P(the judge copies the human verdict) per order, else it answers at random with --position bias.", rich_help_panel="Hybrid")] = 0.8,
    win_rate: Annotated[float, typer.Option(help="--hybrid synthetic: true human win rate among decisive votes.", rich_help_panel="Hybrid")] = 0.55,
    surrogate: Annotated[str | None, typer.Option(help="--hybrid --from-study: the judge's annotator name.", rich_help_panel="Hybrid")] = None,
) -> None:
    """How many comparisons each sampling strategy needs to reach a target.

    Runs the real loop (fit, select a batch, judge, refit) on a synthetic truth
    or on replayed real judgments, and reports, per strategy, the comparisons at
    which the metric averaged over repetitions reaches the target, its spread
    over repetitions and the ratio to round-robin.

    Example: planner simulate --scenario linear --systems 16 --spread 400 --reps 20 --target tau=0.9
    """
    if hybrid:
        from .simulate_hybrid import run_hybrid

        return run_hybrid(money=money, human_cost=human_cost, judge_cost=judge_cost, agreement=agreement,
                          win_rate=win_rate, tie_rate=tie_rate, position=position, reps=reps, seed=seed,
                          from_study=from_study, surrogate=surrogate, json_out=json_out)
    if money is not None or human_cost is not None or judge_cost is not None or surrogate is not None:
        from planner.errors import UsageError

        call(_raise, UsageError("--money, --human-cost, --judge-cost and --surrogate need --hybrid"))
    from planner.workflows import simulate as sim

    spec = call(_build_spec, sim, scenario=scenario, systems=systems, spread=spread, arena_gamma=arena_gamma,
                replay=replay, from_study=from_study, strategies=strategies, budget=budget, batch=batch, reps=reps,
                seed=seed, engine=engine, judge=(tie_rate, position, flip), anchor=anchor, target=target,
                margin=margin, workers=workers, plot=plot, out_file=out_file)
    result = _run(sim, spec, target=target, workers=workers, out_file=out_file, resume=resume)
    if plot is not None:
        from planner.formats.simulate_plot import plot as write_plot

        call(write_plot, result, plot)
        message(f"wrote {plot}")
    if json_out:
        print_json(result)
        return
    _render(result)


def _build_spec(sim, *, scenario, systems, spread, arena_gamma, replay, from_study, strategies, budget, batch, reps,
                seed, engine, judge, anchor, target, margin, workers, plot, out_file):
    """The :class:`SimulationSpec` of the options, after their checks; ``judge`` is the synthetic judge's
    ``(tie_rate, position, flip)``."""
    from planner.errors import UsageError
    from planner.limits import check_input_file, check_output_file, check_simulation_options
    from planner.simulation.judge import Judge
    from planner.simulation.spec import SimulationSpec, parse_strategies
    from planner.simulation.truth import make_truth

    tie_rate, position, flip = judge
    synthetic = replay is None and from_study is None
    check_simulation_options(n_systems=systems if synthetic else None, spread=spread, arena_gamma=arena_gamma,
                             tie_rate=tie_rate, position=position, flip=flip, budget=budget, batch=batch,
                             reps=reps, seed=seed, workers=workers)
    check_output_file("--plot", plot, suffixes=(".png", ".svg"))
    check_output_file("--out", out_file)
    check_input_file("--replay", replay)
    strats = parse_strategies(strategies)
    name, truth, pool = sim.load_truth(scenario, replay=replay, from_study=from_study)
    source = None
    if from_study is not None:
        if tie_rate or position or flip:
            raise UsageError("--tie-rate, --position and --flip describe a synthetic judge; with --from-study "
                             "the judge is the study's own (planner plan overrides it)",
                             parameters=("tie_rate", "position", "flip"))
        source = sim.study_source(from_study, budget, seed)
        names = source.start.systems
    else:   # linear draws nothing: only the synthetic names, the ones every synthetic scenario uses
        names = truth.systems if truth is not None else make_truth("linear", systems, None).systems
    return SimulationSpec(name, strats, n_systems=len(names), spread=spread, arena_gamma=arena_gamma,
                          judge=Judge(tie_rate, position, flip), budget=budget, batch=batch, reps=reps, seed=seed,
                          engine=engine, anchor=_anchor_index(anchor, names), truth=truth, replay=pool,
                          margin_elo=_margin(margin, target), source=source)


def _run(sim, spec, *, target, workers, out_file, resume):
    """Run the simulation with progress on stderr; Ctrl-C says what was kept and exits 130."""
    from .progress import Progress

    total = len(spec.strategies) * spec.reps
    try:
        with Progress("simulating", total=total, unit="runs") as bar:
            return call(sim.simulate, spec, target=target, workers=workers, out=out_file, resume=resume,
                        progress=bar.update)
    except KeyboardInterrupt:
        if out_file is None:
            err().print("interrupted: nothing kept (pass --out FILE to keep finished runs)", markup=False)
        else:
            err().print(f"interrupted: the finished runs are in {out_file}; continue with the same options "
                        "and --resume", markup=False)
        raise typer.Exit(130) from None


ANCHOR_NAMES_SHOWN = 20  # an unknown --anchor lists at most this many allowed names (up to 200 systems)


def _anchor_index(anchor: str | None, names: tuple[str, ...]) -> int:
    """Position of the ``--anchor`` system in the simulation's system list (0, the first, when not given)."""
    if anchor is None:
        return 0
    if anchor in names:
        return names.index(anchor)
    from planner.errors import UsageError, quote

    shown = ", ".join(names[:ANCHOR_NAMES_SHOWN])
    more = f", … ({len(names)} systems)" if len(names) > ANCHOR_NAMES_SHOWN else ""
    raise UsageError(f"--anchor ({quote(anchor)}) must be one of the systems: {shown}{more}")


def _render(result) -> None:
    from rich.table import Table

    metric = result.target_metric
    title = (f"{result.scenario}: {result.n_systems} systems"
             + (f", true spread {result.spread_elo:.0f} Elo" if result.spread_elo is not None else "")
             + f"; {result.reps} reps, batches of {result.batch}, budget {result.budget}; "
             f"target mean {metric.replace('_', '-')} {'<=' if metric in ('rmse', 'width') else '>='} "
             f"{result.target_value:g}")
    table = Table(title=title)
    # "needed": first checkpoint where the mean curve over reps reaches the target;
    # "per rep": median [25%-75%] of each rep's first crossing; "×RR": needed / round-robin's
    # "×best": needed / the best other baseline's (named in the lines below the table and in --json);
    # brackets: 95% paired bootstrap over reps
    label = metric.replace("_", "-")
    extra = ("credible_tau",) if result.pairs and metric != "credible_tau" else ()
    # "over budget": the target metric averaged over checkpoints and reps (the area under the mean curve / budget)
    for col in ("strategy", "needed", "per rep [IQR]", "reached", "×RR [95%]", "×best [95%]", f"final {label}",
                f"{label} over budget",
                *(f"final {e.replace('_', '-')}" for e in extra), "width"):
        table.add_column(col, justify="left" if col == "strategy" else "right")
    fmt = lambda v: "—" if v is None else f"{v:,.0f}"  # noqa: E731
    for s in result.strategies:
        last = _last_values(s)
        table.add_row(s.name, fmt(s.needed_mean_curve),
                      f"{fmt(s.needed_median)} [{fmt(s.needed_q25)}–{fmt(s.needed_q75)}]",
                      f"{s.reached}/{len(s.needed)}" + (f" ({s.failed} failed)" if s.failed else ""),
                      _ratio(s.ratio_to_round_robin, s.rr_band),
                      _ratio(s.ratio_to_best, s.best_band),
                      f"{last(metric):.3f}", "—" if s.budget_mean is None else f"{s.budget_mean:.3f}",
                      *(f"{last(e):.3f}" for e in extra), f"{last('width'):.0f}")
    print_table(table)
    if result.pairs:
        _render_pairs(result.pairs)
    for note in result.notes:
        err().print(f"note: {note}", markup=False)
    from planner.simulation.headline import is_baseline, verdict

    for s in result.strategies:
        if not is_baseline(s) and s.strategy != "oracle" and verdict(s):
            out().print(verdict(s), markup=False)
    best = [s for s in result.strategies if s.needed_mean_curve is not None and s.strategy != "oracle"]
    if best:
        b = min(best, key=lambda s: s.needed_mean_curve)
        out().print(f"Fewest comparisons to reach mean {label} {result.target_value:g}: {b.name}, "
                    f"{b.needed_mean_curve:,} (a '—' means not reached within the budget of {result.budget:,}).",
                    markup=False)


def _margin(margin: float | None, target: str) -> float:
    """``--margin`` in Elo: 50 by default for ``--target resolved``, else 0 (only ``resolved`` reads it)."""
    from planner import limits

    if margin is None:
        return 50.0 if target.strip().startswith("resolved") else 0.0
    limits.check_float("margin", margin, 0, limits.MAX_SPREAD)
    return float(margin)


def _raise(exc: Exception) -> None:
    raise exc


def _last_values(s):
    return lambda k: s.mean[k][-1] if s.checkpoints.size else float("nan")


def _ratio(ratio, band) -> str:
    if ratio is None:
        return "—"
    if band is None:
        return f"{ratio:.2f}"
    hi = "∞" if band[1] == float("inf") else f"{band[1]:.2f}"
    return f"{ratio:.2f} [{band[0]:.2f}–{hi}]"


def _render_pairs(pairs, limit: int = 45) -> None:
    """The replay truth per pair: full-pool P(order), least settled first."""
    from rich.table import Table

    shown = pairs if len(pairs) <= limit else [p for p in pairs if not p["credible"]][:limit]
    n_cred = sum(p["credible"] for p in pairs)
    title = (f"full-pool order per pair ({n_cred} of {len(pairs)} credibly separated, P(order) > 0.95)"
             + ("" if len(shown) == len(pairs) else f"; showing the {len(shown)} least settled"))
    table = Table(title=title)
    for col in ("above", "below", "gap (Elo)", "P(order)", "credible"):
        table.add_column(col, justify="left" if col in ("above", "below") else "right")
    for p in shown:
        table.add_row(p["a"], p["b"], f"{p['gap_elo']:.0f}", f"{p['p_order']:.3f}", "yes" if p["credible"] else "no")
    print_table(table)
