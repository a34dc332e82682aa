"""`planner plan`: what the rest of a study will cost (comparisons, rounds, money) to a target, as a forecast."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from .app import app
from .common import call, err, out, print_json
from .tables import print_table

_MONEY = "Money"
ORDERS = {"one": "one order per prompt", "both": "both orders of every prompt", "fixed": "one order per pair"}
#: the library's parameter names that are spelled otherwise here
FLAGS = {"confidence_level": "--level", "targets": "--target", "strategies": "--strategy", "orders": "--both-orders/--fixed-order",
         "judge_cost": "--judge-cost", "human_cost": "--human-cost"}
_JUDGE = "Simulated judge (default: the pilot's)"
_DESIGN = "Design of the rest of the study"


@app.command("plan")
def plan_cmd(
    study: Annotated[Path | None, typer.Argument(help="Pilot study directory (omit to plan from --systems/--spread).", metavar="STUDY")] = None,
    target: Annotated[list[str] | None, typer.Option(help="Target, repeatable: resolved (every pair credibly ordered or credibly within ±--margin), credible-tau=0.9 (the pairs the finished study credibly separates), credible-all, tau=0.9, ... The first one is the headline. Default: resolved.", metavar="TARGET")] = None,
    margin: Annotated[float, typer.Option(help="resolved: the margin in Elo within which two systems count as equal, 0 to 5,000.", metavar="ELO")] = 50.0,
    strategy: Annotated[str, typer.Option(help="How the rest is chosen: active (next-batch's default), round-robin, random, ...")] = "active",
    batch: Annotated[int, typer.Option(help="Comparisons per round (the model is refitted after each).")] = 50,
    batches: Annotated[str | None, typer.Option(help="Trade-off: forecast the headline target for these batch sizes too, e.g. 10,50 (more rounds, fewer comparisons).")] = None,
    reps: Annotated[int, typer.Option(help="Repetitions (simulated continuations), 1 to 10,000.")] = 200,
    level: Annotated[float, typer.Option(help="Level of the interval, 0 < level <= 0.99.")] = 0.8,
    seed: Annotated[int, typer.Option(help="Seed of every random choice (0 to 2**63-1).")] = 0,
    max_comparisons: Annotated[int | None, typer.Option(help="Most comparisons the rest of the study may take (default: all the pool still holds).", rich_help_panel=_DESIGN)] = None,
    both_orders: Annotated[bool, typer.Option("--both-orders", help="Each (prompt, pair) is judged in both presentation orders.", rich_help_panel=_DESIGN)] = False,
    fixed_order: Annotated[bool, typer.Option("--fixed-order", help="Each pair is shown in one order only (the pilot's): a judge run one way, a public file.", rich_help_panel=_DESIGN)] = False,
    votes: Annotated[int, typer.Option(help="Verdicts per (prompt, pair, order), e.g. 3 annotators.", rich_help_panel=_DESIGN)] = 1,
    reuse_prompts: Annotated[bool, typer.Option("--reuse-prompts", help="A pair may take a prompt again (needs --max-comparisons).", rich_help_panel=_DESIGN)] = False,
    prompts: Annotated[int | None, typer.Option(help="Prompts each pair can be shown on (default: the study's prompts with both responses; 80 without a study).", rich_help_panel=_DESIGN)] = None,
    tie_rate: Annotated[float | None, typer.Option(help="Tie probability between equal systems, 0 <= t < 1.", rich_help_panel=_JUDGE)] = None,
    position: Annotated[float | None, typer.Option(help="Left-position logit shift, -10 to 10.", rich_help_panel=_JUDGE)] = None,
    invalid_rate: Annotated[float | None, typer.Option(help="Share of invalid verdicts, 0 <= r < 1.", rich_help_panel=_JUDGE)] = None,
    icc: Annotated[float | None, typer.Option(help="Intraclass correlation of verdicts on one (prompt, pair), 0 to 1.", rich_help_panel=_JUDGE)] = None,
    systems: Annotated[int | None, typer.Option(help="Without a study: number of systems, 2 to 200.", rich_help_panel="Without a pilot")] = None,
    spread: Annotated[float | None, typer.Option(help="Without a study: Elo from best to worst (evenly spaced).", rich_help_panel="Without a pilot")] = None,
    human_cost: Annotated[float | None, typer.Option(help="Cost of one human judgment.", rich_help_panel=_MONEY)] = None,
    judge_cost: Annotated[float | None, typer.Option(help="Cost of one judge judgment (all its calls).", rich_help_panel=_MONEY)] = None,
    price_in: Annotated[float | None, typer.Option(help="Judge: USD per 1M prompt tokens.", rich_help_panel=_MONEY)] = None,
    price_out: Annotated[float | None, typer.Option(help="Judge: USD per 1M completion tokens.", rich_help_panel=_MONEY)] = None,
    tokens_in: Annotated[float | None, typer.Option(help="Judge: prompt tokens per judgment (default: the study's judge ledger).", rich_help_panel=_MONEY)] = None,
    tokens_out: Annotated[float | None, typer.Option(help="Judge: completion tokens per judgment.", rich_help_panel=_MONEY)] = None,
    surrogate: Annotated[str | None, typer.Option(help="Hybrid: the judge in the pilot whose verdicts predict the humans (ρ from the pilot).", rich_help_panel=_MONEY)] = None,
    rho: Annotated[float | None, typer.Option(help="Hybrid: human-judge score correlation, -1 to 1.", rich_help_panel=_MONEY)] = None,
    engine: Annotated[str, typer.Option(help="The pilot's posterior: laplace (fast) or nuts.")] = "laplace",
    workers: Annotated[int | None, typer.Option(help="Worker processes, 1 to 64 (default 2).")] = None,
    json_out: Annotated[bool, typer.Option("--json", help="Print one JSON document on stdout.")] = False,
) -> None:
    """How many more comparisons (rounds, money) until a target: a forecast with an interval.

    Every repetition draws the truth from the pilot's posterior (strengths, position effect and tie
    parameter jointly), simulates the rest of the study with the pilot's judge (ties, position,
    invalid rate, clustering) and the study's design, and continues the real loop from the pilot's
    data until the target is met. Without a study it plans from stated assumptions.

    Example: planner plan my-study --target resolved --margin 50 --human-cost 0.4 --batches 10,50
    """
    from planner.simulation.pilot import Assumptions, JudgeOverrides
    from planner.workflows.plan import PlanOptions, PriceOptions, plan

    def build():
        from planner.errors import UsageError

        if both_orders and fixed_order:
            raise UsageError("--both-orders and --fixed-order cannot be combined")
        assumed = None
        if study is None:
            if systems is None or spread is None:
                raise UsageError("give a pilot STUDY, or --systems and --spread to plan from assumptions")
            from planner import limits

            limits.check_int("systems", systems, 2, limits.MAX_SIM_SYSTEMS)
            limits.check_float("spread", spread, 0, limits.MAX_SPREAD)
            assumed = Assumptions(systems, spread, prompts if prompts is not None else 80)
        elif systems is not None or spread is not None:
            raise UsageError("--systems and --spread describe a study without a pilot; with STUDY they come "
                             "from its data")
        options = PlanOptions(targets=tuple(target or ("resolved",)), margin=margin, strategy=strategy, batch=batch,
                              reps=reps, confidence_level=level, seed=seed, max_comparisons=max_comparisons,
                              orders="both" if both_orders else "fixed" if fixed_order else "one", votes=votes,
                              reuse_prompts=reuse_prompts, prompts=prompts if study is not None else None,
                              engine=engine, workers=workers, batches=_batches(batches),
                              judge=JudgeOverrides(tie_rate, position, invalid_rate, icc))
        return options, assumed, PriceOptions(human_cost, judge_cost, price_in, price_out, tokens_in, tokens_out,
                                              surrogate, rho)

    options, assumed, prices = call(build, _flags=FLAGS)
    from .progress import Progress

    with Progress("forecasting", total=options.reps, unit="repetitions") as bar:
        result = call(plan, study, options, assumptions=assumed, prices=prices,
                      progress=bar.update, _flags=FLAGS)
    if json_out:
        print_json(result)
        return
    _render(result)


def _batches(text: str | None) -> tuple[int, ...]:
    if text is None:
        return ()
    from planner.errors import UsageError

    try:
        return tuple(int(x) for x in text.split(",") if x.strip())
    except ValueError:
        raise UsageError(f"--batches ({text[:60]!r}) must be comma-separated whole numbers, e.g. 10,50") from None


def _render(result) -> None:
    from rich.table import Table

    from planner.simulation.plan_result import count_text, money_text, rounds_text

    c = out()
    pilot = (f"{result.source}: {len(result.systems)} systems, {result.pilot_judgments:,} judgments"
             if result.pilot_judgments else f"no pilot: {len(result.systems)} stated systems")
    t = Table(title=f"simulated judge and design ({pilot})")
    for col in ("feature", "value", "source"):
        t.add_column(col)
    for s in result.settings:
        t.add_row(s.name, s.shown, s.source)
    d = result.design
    t.add_row("design", f"{ORDERS[d.orders]}, {d.votes} verdict(s) each, {d.prompts_min:,}"
                        + (f"–{d.prompts_max:,}" if d.prompts_max != d.prompts_min else "") + " prompts per pair"
                        + (f", each up to {d.reuse} times" if d.reuse > 1 else ""),
              f"{d.open_slots:,} verdicts still open; budget {d.budget:,}")
    print_table(t, wrap=(1, 2))
    t = Table(title=f"comparisons still needed: {result.reps} repetitions, {result.strategy}, batches of "
                    f"{result.batch:,}, median [{result.level:.0%} interval]")
    for col in ("target", "comparisons", "rounds", "met within budget", "already met", "cost"):
        t.add_column(col, justify="left" if col == "target" else "right")
    for f, cost in zip(result.targets, result.costs):
        t.add_row(f.text, f"{count_text(f.median, f.budget)} [{count_text(f.lo, f.budget)}–"
                          f"{count_text(f.hi, f.budget)}]", rounds_text(f, ""), f"{f.reached:.0%}", f"{f.already:.0%}",
                  "—" if cost is None else f"{money_text(cost.median.total)} [{money_text(cost.lo.total)}–"
                                           f"{money_text(cost.hi.total)}]")
    print_table(t)
    if result.tradeoff:
        t = Table(title=f"batch size trade-off ({result.targets[0].text})")
        for col in ("batch", "comparisons", "rounds", "cost"):
            t.add_column(col, justify="right")
        for r in result.tradeoff:
            f = r.forecast
            t.add_row(f"{r.batch:,}", f"{count_text(f.median, f.budget)} [{count_text(f.lo, f.budget)}–"
                                      f"{count_text(f.hi, f.budget)}]", rounds_text(f, ""),
                      "—" if r.cost is None else money_text(r.cost.median.total))
        print_table(t)
    for note in result.notes:
        err().print(f"note: {note}", markup=False)
    c.print(result.sentence(), markup=False, soft_wrap=True)
    if result.tradeoff:
        c.print(result.tradeoff_sentence(), markup=False, soft_wrap=True)
