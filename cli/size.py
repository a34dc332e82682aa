"""`planner size` (power analysis) and `planner significance` (is a result a win?).

Only typer and the standard library at module level; ``planner.stats`` (numpy,
scipy.special) is imported inside the command functions, rich inside the renderers and the
plot's matplotlib inside ``planner.formats.power_plot``.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Annotated

import typer

from .app import app
from .common import call, message, out, print_json
from .tables import print_table


@app.command("size")
def size(
    effect: Annotated[float | None, typer.Option(help="Effect: absolute win-rate difference from 50% among decisive judgments, 0 < D < 0.5 (0.04 = 54% vs 50%).")] = None,
    win_rate: Annotated[float | None, typer.Option(help="Alternatively the win rate P of the better system among decisive judgments, 0.5 < P < 1.")] = None,
    alpha: Annotated[float, typer.Option(help="Family-wise significance level, 0 < alpha < 1.")] = 0.05,
    power: Annotated[float, typer.Option(help="Target power, 0 < power < 1.")] = 0.8,
    alternative: Annotated[str, typer.Option(help="two-sided | greater.")] = "two-sided",
    tie_rate: Annotated[float, typer.Option(help="Share of judgments that are ties, 0 <= T < 1.")] = 0.0,
    ties: Annotated[str, typer.Option(help="drop (test decisive judgments only) | half (a tie scores half a win).")] = "drop",
    invalid_rate: Annotated[float, typer.Option(help="Share of unusable judgments, 0 <= R < 1; inflates what to collect by 1/(1-R).")] = 0.0,
    both_orders: Annotated[bool, typer.Option("--both-orders", help="Judge each comparison twice with positions swapped.")] = False,
    per_prompt: Annotated[int, typer.Option(help="K judgments share a prompt (1 <= K <= 100,000).")] = 1,
    icc: Annotated[float, typer.Option(help="Intra-prompt correlation rho in [0, 1]; design effect 1 + (K-1) rho.")] = 0.0,
    systems: Annotated[int, typer.Option(help="Number of systems, 2 <= M <= 1,000.")] = 2,
    design: Annotated[str, typer.Option(help="anchor (M-1 candidates vs one anchor) | round-robin (all M(M-1)/2 pairs); Holm-Bonferroni, each pair sized at alpha/pairs.")] = "anchor",
    budget: Annotated[int | None, typer.Option(help="Total judgments available: report the minimum detectable effect (at most 10,000,000).")] = None,
    power_at: Annotated[int | None, typer.Option(help="Total judgments: report the power achieved for the effect (at most 10,000,000).")] = None,
    table: Annotated[bool, typer.Option("--table", help="Effect-size table, both methods.")] = False,
    plot: Annotated[Path | None, typer.Option(help="Write power against comparisons to this .png or .svg file.")] = None,
    looks: Annotated[int, typer.Option(help="Number of equally spaced analyses (group-sequential design), 1 <= K <= 20.")] = 1,
    boundary: Annotated[str, typer.Option(help="obrien-fleming | pocock (classical constant-shape boundaries) for --looks.")] = "obrien-fleming",
    pass_rate: Annotated[float | None, typer.Option(help="Expected pass rate of acceptability items, 0 <= P <= 1 (use with --precision).")] = None,
    precision: Annotated[float | None, typer.Option(help="Half-width of the 95% pass-rate interval, 0 < H < 0.5 (with --pass-rate).")] = None,
    hybrid: Annotated[bool, typer.Option("--hybrid", help="Budget humans + judge (prediction-powered): the cheapest numbers of human and judge labels for the target, beside humans only. Ties count half.")] = False,
    human_cost: Annotated[float | None, typer.Option(help="--hybrid: cost of one item's human label (> 0).", rich_help_panel="Hybrid")] = None,
    judge_cost: Annotated[float | None, typer.Option(help="--hybrid: cost of one item's judge prediction, all its calls (both orders: twice a call's price), >= 0.", rich_help_panel="Hybrid")] = None,
    rho: Annotated[float | None, typer.Option(help="--hybrid: correlation of human and judge scores per item, -1 <= rho < 1.", rich_help_panel="Hybrid")] = None,
    agreement: Annotated[float | None, typer.Option(help="--hybrid: human-judge agreement rate on binary verdicts, 0..1 (rho = 2a - 1).", rich_help_panel="Hybrid")] = None,
    pilot: Annotated[Path | None, typer.Option(help="--hybrid: estimate rho from this pilot study's items with human and judge verdicts.", rich_help_panel="Hybrid")] = None,
    surrogate: Annotated[str | None, typer.Option(help="--hybrid --pilot: the judge's annotator name in the pilot study.", rich_help_panel="Hybrid")] = None,
    width: Annotated[float | None, typer.Option(help="--hybrid: target half-width of the win-rate interval, 0 < H < 0.5 (instead of --effect).", rich_help_panel="Hybrid")] = None,
    confidence: Annotated[float, typer.Option(help="--hybrid --width: interval level, 0 < c < 1.", rich_help_panel="Hybrid")] = 0.95,
    max_items: Annotated[int | None, typer.Option(help="--hybrid: at most this many items can be judged (pool of prompts x pairs, or a judge budget / --judge-cost), per pair.", rich_help_panel="Hybrid")] = None,
    json_: Annotated[bool, typer.Option("--json", help="Print the result as one JSON document.")] = False,
) -> None:
    """How many comparisons a study needs to detect a win-rate difference (normal and exact binomial).

    Exact sizes are computed up to 250,000 comparisons per pair (docs/guide.md,
    "Limits"); a smaller effect is refused, not run for hours.

    Headline = exact binomial test: the smallest n from which on every larger n
    also reaches the target power. Also answers --budget (minimum detectable
    effect), --power-at, --table, --looks (group-sequential) and --pass-rate
    with --precision (acceptability items), and --hybrid (the cheapest
    numbers of human and judge labels, prediction-powered, beside humans only).

    Example: planner size --effect 0.04
    """
    hybrid_opts = {"--human-cost": human_cost, "--judge-cost": judge_cost, "--rho": rho, "--agreement": agreement,
                   "--pilot": pilot, "--surrogate": surrogate, "--width": width, "--max-items": max_items}
    if hybrid:
        _refuse_with_hybrid({"--budget": budget, "--power-at": power_at, "--plot": plot, "--pass-rate": pass_rate,
                             "--precision": precision, "--table": table or None, "--looks": None if looks == 1 else looks,
                             "--both-orders": both_orders or None, "--per-prompt": None if per_prompt == 1 else per_prompt,
                             "--icc": icc or None, "--invalid-rate": invalid_rate or None})
        _size_hybrid(effect, win_rate, alpha, power, alternative, tie_rate, systems, design, hybrid_opts,
                     confidence, json_)
    elif pass_rate is not None or precision is not None:
        _refuse_without_hybrid(hybrid_opts)
        _size_pass_rate(pass_rate, precision, invalid_rate, json_)
    else:
        _refuse_without_hybrid(hybrid_opts)
        design_args = dict(alpha=alpha, power=power, alternative=alternative, tie_rate=tie_rate, ties=ties,
                           invalid_rate=invalid_rate, both_orders=both_orders, per_prompt=per_prompt, icc=icc,
                           systems=systems, design=design)
        _size_comparisons(effect, win_rate, design_args, budget, power_at, table, looks, boundary, plot, json_)


def _refuse_with_hybrid(others: dict) -> None:
    """`size --hybrid` takes none of these options (None: not given, or left at its default)."""
    from planner.errors import UsageError

    bad = [k for k, v in others.items() if v is not None]
    if bad:
        call(_raise, UsageError(f"{bad[0]} does not apply with --hybrid (allowed: --effect/--win-rate or "
                                "--width, --alpha, --power, --alternative, --tie-rate, --systems, --design)",
                                parameters=()))


def _refuse_without_hybrid(hybrid_opts: dict) -> None:
    from planner.errors import UsageError

    given = [k for k, v in hybrid_opts.items() if v is not None]
    if given:
        call(_raise, UsageError(f"{given[0]} needs --hybrid", parameters=()))


def _size_comparisons(effect, win_rate, design_args: dict, budget, power_at, table: bool, looks: int,
                      boundary: str, plot, json_: bool) -> None:
    """`size` for a win-rate difference: comparisons (normal and exact), --budget, --power-at, --table, --plot."""
    from planner.errors import UsageError
    from planner.limits import check_output_file
    from planner.stats import power as pw
    from planner.stats.design import effect_from_win_rate

    if effect is not None and win_rate is not None:
        call(_raise, UsageError("give either --effect or --win-rate, not both", parameters=()))
    if win_rate is not None:
        effect = call(effect_from_win_rate, win_rate)
    d = call(pw.Design, **design_args)
    call(check_output_file, "--plot", plot, suffixes=(".png", ".svg"), create_parents=True)
    result = call(pw.size, effect, d, budget=budget, power_at=power_at, table=table,
                  looks=looks, boundary=boundary)
    if plot is not None:
        from planner.formats.power_plot import plot_power

        call(plot_power, result, d, str(plot))
        message(f"wrote {plot}")
    if json_:
        print_json(result)
        return
    _render_size(result)


def _raise(exc: Exception) -> None:
    raise exc


def _size_pass_rate(pass_rate, precision, invalid_rate: float, json_: bool) -> None:
    """`size --pass-rate --precision`: acceptability items for the interval's half-width."""
    from planner.errors import UsageError
    from planner.stats.pass_rate import pass_rate_size

    if pass_rate is None or precision is None:
        missing = "--precision" if precision is None else "--pass-rate"
        call(_raise, UsageError(f"{missing} is required with "
                                f"{'--pass-rate' if precision is None else '--precision'}"))
    result = call(pass_rate_size, pass_rate, precision, invalid_rate=invalid_rate)
    if json_:
        print_json(result)
    else:
        _render_pass_rate(result)


def _render_size(r) -> None:
    from rich.table import Table

    unit = "decisive comparisons" if r.ties == "drop" else "comparisons (ties count half)"
    if r.rows:
        t = Table(title=f"Effect table: alpha {r.alpha:g} ({r.alternative}), power {r.power:g}; {unit} per pair")
        for col in ("effect", "win rate", "n normal", "n exact", "exact power", "judgments"):
            t.add_column(col, justify="right")
        for row in r.rows:
            t.add_row(f"{row.effect:.2f}", f"{row.win_rate:.0%}", f"{row.comparisons_normal:,}",
                      f"{row.comparisons_exact:,}", f"{row.achieved_power_exact:.3f}", f"{row.judgments:,}")
        print_table(t)
    t = Table(title=f"Sample size: {r.win_rate:.1%} vs 50%")
    t.add_column("")
    t.add_column("normal approx.", justify="right")
    t.add_column("exact binomial", justify="right")
    t.add_row(f"{unit} per pair", f"{r.comparisons_normal:,}", f"{r.comparisons_exact:,}")
    t.add_row("power at that n", f"{r.achieved_power_normal:.3f}", f"{r.achieved_power_exact:.3f}")
    t.add_row("exact power at the normal n", f"{r.exact_power_at_normal_n:.3f}", "")
    t.add_row("smallest n reaching power (saw-tooth)", "", f"{r.comparisons_exact_first:,}")
    t.add_row("judgments to collect (total)", f"{r.judgments_normal:,}", f"{r.judgments:,}")
    if r.budget is not None:
        t.add_row(f"minimum detectable effect with {r.budget:,} judgments",
                  f"{r.mde_normal:.4f}", f"{r.mde:.4f}")
    if r.power_at is not None:
        t.add_row(f"power with {r.power_at:,} judgments", f"{r.power_at_normal:.3f}", f"{r.power_at_exact:.3f}")
    print_table(t)
    s = r.sequential
    if s is not None:
        t = Table(title=f"{s.looks} looks, {s.boundary} boundary (two-sided alpha {s.alpha:g} per pair)"
                  if s.alternative == "two-sided" else f"{s.looks} looks, {s.boundary} boundary")
        for col in ("look", "judgments per pair", "|z| boundary", "nominal p", "alpha spent"):
            t.add_column(col, justify="right")
        for k in range(s.looks):
            t.add_row(str(k + 1), f"{s.n_per_look * (k + 1):,}", f"{s.z_boundaries[k]:.3f}",
                      f"{s.nominal_alpha[k]:.3g}", f"{s.alpha_spent[k]:.3g}")
        print_table(t)
    out().print(sentence(r), markup=False)


def sentence(r) -> str:
    """The one plain sentence under the table."""
    pct = f"{r.power:.0%}"
    unit = "decisive comparisons" if r.ties == "drop" else "judged comparisons (ties count half)"
    if r.pairs > 1:   # the count is sized at alpha/pairs: say so where alpha is quoted
        level = (f"family-wise α = {r.alpha:g}, i.e. α = {r.alpha_per_pair:.4g} per pair "
                 f"({r.pairs} pairs, {r.design}, Holm–Bonferroni)")
        each = " per pair"
    else:
        level, each = f"α = {r.alpha:g}", ""
    s = (f"To detect {r.win_rate:.0%} vs 50% with {pct} power at {level} you need "
         f"{r.comparisons_exact:,} {unit}{each} (normal approximation: {r.comparisons_normal:,})")
    extras = []
    if r.tie_rate and r.ties == "drop":
        extras.append(f"a {r.tie_rate:.0%} tie rate")
    if r.invalid_rate:
        extras.append(f"a {r.invalid_rate:.0%} invalid rate")
    if r.design_effect != 1:
        extras.append(f"design effect {r.design_effect:g}")
    if r.both_orders:
        extras.append(f"both orders ({r.comparisons_per_pair:,} comparisons shown twice)")
    if r.pairs > 1:
        extras.append(f"{r.pairs} pairs")
    if extras or r.judgments != r.comparisons_exact:
        s += f"; with {', '.join(extras) if extras else 'this design'} collect {r.judgments:,} judgments"
    s += "."
    if r.budget is not None:
        s += (f" With {r.budget:,} judgments you can detect about d = {r.mde:.3f} "
              f"(normal approximation {r.mde_normal:.3f}).")
    if r.sequential is not None:
        q = r.sequential
        s += (f" With {q.looks} looks ({q.boundary}) the maximum is {q.inflation:.3f}× a single look: "
              f"{q.n_max:,} judgments per pair, {q.n_per_look:,} per look.")
    return s


def _size_hybrid(effect, win_rate, alpha, power, alternative, tie_rate, systems, design, o: dict,
                 confidence: float, json_: bool) -> None:
    """`size --hybrid`: planner.hybrid.budget on the options; table + one sentence, or --json."""
    from planner.errors import UsageError
    from planner.hybrid import budget as hb

    sources = [k for k in ("--rho", "--agreement", "--pilot") if o[k] is not None]
    if len(sources) != 1:
        call(_raise, UsageError("--hybrid needs exactly one of --rho, --agreement, --pilot (with --surrogate); "
                                f"got {', '.join(sources) if sources else 'none'}"))
    for k in ("--human-cost", "--judge-cost"):
        if o[k] is None:
            call(_raise, UsageError(f"--hybrid needs {k} (the price of one label)"))
    if (o["--pilot"] is None) != (o["--surrogate"] is None):
        call(_raise, UsageError("--pilot and --surrogate go together"))
    if o["--rho"] is not None:
        r, source = o["--rho"], "given"
    elif o["--agreement"] is not None:
        r = call(hb.rho_from_agreement, o["--agreement"])
        source = f"from agreement {o['--agreement']:.0%} (rho = 2a - 1)"
    else:
        from planner.workflows.simulate_hybrid import pilot_rho

        r, used = call(pilot_rho, o["--pilot"], o["--surrogate"])
        lo, hi = hb.rho_interval(r, used)
        source = (f"estimated on {used:,} pilot items of {o['--pilot']} ({o['--surrogate']} vs humans), "
                  f"90% interval {lo:.2f} to {hi:.2f}")
    from planner.errors import check_range

    call(check_range, "--confidence", confidence, 0, 1)
    costs = (r, o["--human-cost"], o["--judge-cost"])
    if o["--width"] is not None:
        if effect is not None:
            call(_raise, UsageError("give either --effect or --width with --hybrid, not both"))
        p = call(hb.plan_for_width, o["--width"], *costs, confidence_level=confidence,
                 win_rate=0.5 if win_rate is None else win_rate, tie_rate=tie_rate, max_items=o["--max-items"],
                 _flags={"confidence_level": "--confidence"})
    else:
        if effect is not None and win_rate is not None:
            call(_raise, UsageError("give either --effect or --win-rate, not both"))
        if win_rate is not None:
            from planner.stats.design import effect_from_win_rate

            effect = call(effect_from_win_rate, win_rate)
        if effect is None:
            call(_raise, UsageError("--hybrid needs a target: --effect, --win-rate or --width"))
        p = call(hb.plan_for_effect, effect, *costs, alpha=alpha, power=power, alternative=alternative,
                 tie_rate=tie_rate, systems=systems, design=design, max_items=o["--max-items"],
                 _flags={"confidence_level": "--confidence"})
    if json_:
        print_json({**p.to_dict(), "rho_source": source})
        return
    _render_hybrid(p, source)


def _money(v: float) -> str:
    return f"{v:,.2f}"


def _render_hybrid(p, source: str) -> None:
    from rich.table import Table

    each = " per pair" if p.pairs > 1 else ""
    used = f"; used as {p.rho_used:g}" if p.rho_used != p.rho else ""
    t = Table(title=f"Hybrid budget{each}: {p.target_text}; rho = {p.rho:.3f} ({source}{used})")
    for col in ("plan", "human labels", "judge labels", "cost", "effective n"):
        t.add_column(col, justify="right" if col != "plan" else "left")
    t.add_row("humans only", f"{p.human_n:,}", "0", _money(p.human_n * p.human_cost), f"{p.human_n:,}")
    h = p.hybrid
    if h is not None:
        label = "humans + judge (cheapest, pool cap)" if h.capped else "humans + judge (cheapest)"
        t.add_row(label, f"{h.n:,}", f"{h.items:,}", _money(h.cost), f"{h.effective_n:,.1f}")
    else:
        t.add_row("humans + judge (cheapest)", "—", "—", "does not pay off", "—")
    t.add_row("floor: unlimited free judge", f"{p.floor_n:,}", "unlimited", "—", "—")
    print_table(t)
    out().print(hybrid_sentence(p), markup=False)


def hybrid_sentence(p) -> str:
    """The one sentence under the hybrid table, from the plan's own numbers."""
    total = f" ({p.pairs} pairs: totals)" if p.pairs > 1 else ""
    s = (f"To {p.target_text}, humans alone need {p.human_n * p.pairs:,} human labels "
         f"costing {_money(p.human_cost_total)}{total}")
    h = p.hybrid
    if p.rho < 0:   # the formula is evaluated at the rho the plan uses, and the sentence says which
        return (s + f"; rho = {p.rho:.2f} is negative: a judge that disagrees with humans adds nothing to PPI++ "
                "(its weight is clipped to [0, 1]), so it is planned as rho = 0 and does not pay off "
                "(sqrt(1 - 0^2) + 0 sqrt(c_j/c_h) = 1 >= 1); collect human labels only.")
    if h is None:
        return (s + f"; with rho = {p.rho:.2f} the judge does not pay off at these prices "
                f"(sqrt(1 - rho^2) + rho sqrt(c_j/c_h) = {math.sqrt(p.cost_ratio_limit):.3f} >= 1), "
                "so collect human labels only.")
    return (s + f"; with the judge (rho = {p.rho:.2f}) the cheapest plan is {h.n * p.pairs:,} human labels and "
            f"{h.items * p.pairs:,} judge labels ({h.N * p.pairs:,} items judged only) costing {_money(p.cost)}, "
            f"saving {_money(p.saving)} ({p.saving / p.human_cost_total:.0%}).")


def _render_pass_rate(r) -> None:
    from rich.table import Table

    t = Table(title=f"Acceptability items for a pass rate of {r.pass_rate:.0%} ± {r.precision:.1%}")
    t.add_column("method")
    t.add_column("items", justify="right")
    t.add_row("Wilson (headline)", f"{r.items_wilson:,}")
    t.add_row("normal (Wald)", f"{r.items_normal:,}")
    print_table(t)
    extra = f" ({r.items:,} after a {r.invalid_rate:.0%} invalid rate)" if r.invalid_rate else ""
    out().print(f"To estimate a {r.pass_rate:.0%} pass rate to ±{r.precision:.1%} ({r.confidence:.0%} Wilson "
                f"interval) you need {r.items_wilson:,} acceptability items{extra}.", markup=False)


@app.command("significance")
def significance(
    wins: Annotated[int, typer.Option(help="Judgments the candidate won (0 to 10**12).")],
    losses: Annotated[int, typer.Option(help="Judgments the candidate lost (0 to 10**12).")],
    ties: Annotated[int, typer.Option(help="Tied judgments (>= 0).")] = 0,
    ties_convention: Annotated[str, typer.Option(
        help="drop (win rate among decisive judgments) | half (ties score half a win).")] = "drop",
    confidence: Annotated[float, typer.Option(
        help="Interval level, 0 < c < 1; the test level is 1 - c.")] = 0.95,
    alternative: Annotated[str, typer.Option(help="two-sided | greater.")] = "two-sided",
    look: Annotated[int | None, typer.Option(
        help="This is analysis number k of --looks (group-sequential); default: the last.")] = None,
    looks: Annotated[int, typer.Option(help="Planned equally spaced analyses, 1 <= K <= 20.")] = 1,
    boundary: Annotated[str, typer.Option(help="obrien-fleming | pocock (with --looks).")] = "obrien-fleming",
    json_: Annotated[bool, typer.Option("--json", help="Print the result as one JSON document.")] = False,
) -> None:
    """Is an observed win rate distinguishable from 50%? Exact binomial test; Wald, Wilson, Clopper–Pearson.

    With --looks K --look k the decision uses the matching group-sequential
    boundary instead of the naive p-value.

    Example: planner significance --wins 54 --losses 46
    """
    from planner.stats.significance import significance as run

    r = call(run, wins, losses, ties, ties_convention=ties_convention, confidence_level=confidence,
             alternative=alternative, look=look, looks=looks, boundary=boundary,
             _flags={"confidence_level": "--confidence"})
    if json_:
        print_json(r)
        return
    from rich.table import Table

    def pct(v):
        return "—" if v is None else f"{v:.1%}"

    t = Table(title=f"{wins} wins, {losses} losses, {ties} ties (ties: {ties_convention})")
    t.add_column("")
    t.add_column("value", justify="right")
    t.add_row("win rate" if ties_convention == "drop" else "half-tie score", pct(r.win_rate))
    t.add_row("exact binomial p-value", "—" if r.pvalue is None else f"{r.pvalue:.4g}")
    lvl = f"{confidence:.0%}"
    t.add_row(f"Wald {lvl}", f"[{pct(r.wald.low)}, {pct(r.wald.high)}]")
    t.add_row(f"Wilson {lvl}", f"[{pct(r.wilson.low)}, {pct(r.wilson.high)}]")
    t.add_row(f"Clopper–Pearson {lvl}", f"[{pct(r.clopper_pearson.low)}, {pct(r.clopper_pearson.high)}]")
    if r.looks:
        t.add_row(f"z at look {r.look}/{r.looks}", "—" if r.z is None else f"{r.z:.3f}")
        t.add_row(f"{r.boundary} boundary |z| ≥", f"{r.z_boundary:.3f}")
    print_table(t)
    if ties_convention == "half" and ties:
        message("note: Wilson and Clopper–Pearson intervals apply to a binary win rate; "
                "with --ties-convention half only the Wald interval of the score is shown.")
    out().print(r.conclusion, markup=False)
