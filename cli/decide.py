"""`planner decide`: a release gate per stratum (pass / regress / undecided) with an exit code.

Only typer and the standard library at module level; ``planner.workflows.decide`` (numpy,
scipy, the model) is imported inside the command and rich inside the renderer.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from .app import app
from .common import call, out, print_json, warn
from .tables import print_table


@app.command("decide")
def decide(
    study: Annotated[Path, typer.Argument(help="Study directory.")],
    candidate: Annotated[str, typer.Option(help="The new system (must be a system of the study).")],
    baseline: Annotated[str, typer.Option(help="The system it must not regress against.")],
    margin: Annotated[float, typer.Option(
        help="Non-inferiority margin on the win-rate (half-tie score) scale, 0 <= M < 0.5: "
             "0.05 lets the candidate win as little as 45% of comparisons.")] = 0.05,
    mode: Annotated[str, typer.Option(
        help="non-inferiority (pass: win rate credibly above 50%-M) | superiority "
             "(pass: credibly above 50%; regress still means credibly below 50%-M).")] = "non-inferiority",
    confidence: Annotated[float, typer.Option(
        help="Interval level, 0 < C < 1; family-wise error 1-C over strata (Holm).")] = 0.95,
    min_pass_rate: Annotated[float | None, typer.Option(
        help="Acceptability floor 0 <= P <= 1: a candidate credibly below it does not pass.")] = None,
    engine: Annotated[str, typer.Option(help="Posterior engine: laplace (fast) | nuts (pymc).")] = "laplace",
    look: Annotated[int | None, typer.Option(
        help="This is analysis number k of --looks (group-sequential); default: the last.")] = None,
    looks: Annotated[int, typer.Option(help="Planned equally spaced analyses, 1 <= K <= 20.")] = 1,
    boundary: Annotated[str, typer.Option(help="obrien-fleming | pocock (with --looks).")] = "obrien-fleming",
    seed: Annotated[int | None, typer.Option(help="Seed of the posterior draws, 0 to 2**63-1 (default: the study's).")] = None,
    style_control: Annotated[bool, typer.Option(
        "--style-control", help="Posterior columns from the model controlled for length and markdown style "
                                "(report --style-control); the tests use the raw counts.")] = False,
    cluster: Annotated[str, typer.Option(
        help="Which verdicts share a cluster for cluster-robust tests and intervals: item (same prompt and pair; "
             "the default) | prompt | annotator | none (all independent).")] = "item",
    json_: Annotated[bool, typer.Option("--json", help="Print the result as one JSON document.")] = False,
) -> None:
    """Does the candidate regress against the baseline on any stratum? A release gate.

    Per stratum: the candidate's win rate (half-tie score) against the
    baseline with a score interval that includes the tie share's sampling
    error (Tango's; widened for verdicts clustered by prompt); one-sided
    score tests against 50%-M, Holm across strata; the Bayesian model's win probability and
    P(win >= threshold) (fitted per stratum to all systems); a verdict
    pass / regress / undecided (with the comparisons still needed). An
    acceptability check (pass/fail items) can veto a pairwise win.

    Exit codes: 0 pass; 3 regress (some stratum is credibly worse than the
    margin allows, or the acceptability gate fails); 4 undecided (not enough
    data, including no comparisons of the two yet); 1 bad data; 2 bad option.

    Example: planner decide my-study --candidate new-model --baseline prod-model --margin 0.05
    """
    from planner.workflows.decide import decide as run

    from .progress import heartbeat

    with heartbeat("fitting with NUTS" if engine == "nuts" else "decide"):
        result = call(run, study, candidate, baseline, margin=margin, mode=mode, confidence_level=confidence,
                      min_pass_rate=min_pass_rate, engine=engine, look=look, looks=looks, boundary=boundary,
                      seed=seed, style_control=style_control, cluster=cluster,
                      _flags={"confidence_level": "--confidence"})
    if json_:
        print_json(result)
    else:
        _render(result)
    for n in result.notes:
        if n.startswith("model: "):
            warn(n[len("model: "):])
    if result.exit_code:
        raise typer.Exit(code=result.exit_code)


def _pct(v) -> str:
    return "—" if v is None else f"{100 * v:.1f}%"


def _render(r) -> None:
    from rich.table import Table

    con = out()
    what = ("non-inferiority" if r.mode == "non-inferiority" else "superiority")
    con.print(f"{r.candidate} vs {r.baseline}: {what}, margin {r.margin:g} — pass when the win rate is "
              f"credibly above {r.threshold_pass:.0%}, regress when credibly below {r.threshold_regress:.0%}",
              markup=False, soft_wrap=True)
    from rich import box

    level = f"{r.confidence:.0%}"
    t = Table(box=box.SIMPLE_HEAD, pad_edge=False, padding=(0, 1), collapse_padding=True, show_edge=False)
    for col in ("stratum", "weight", "W–L–T", f"win rate ({level})", f"model ({level} CrI)",
                f"model P(≥{r.threshold_pass:.0%})", "verdict", "more"):
        t.add_column(col, justify="left" if col in ("stratum", "verdict") else "right", no_wrap=True)

    def rate(s):
        if s.win_rate is None:
            return "—"
        if s.ci_low is None:
            return _pct(s.win_rate)
        return f"{_pct(s.win_rate)} ({100 * s.ci_low:.1f}–{100 * s.ci_high:.1f})"

    def model(s):
        if s.posterior_mean is None:
            return "—"
        return f"{_pct(s.posterior_mean)} ({100 * s.posterior_low:.1f}–{100 * s.posterior_high:.1f})"

    for s in r.strata:
        more = "" if s.verdict != "undecided" else ("?" if s.more_comparisons is None
                                                    else f"~{s.more_comparisons:,}")
        t.add_row(s.stratum, f"{s.weight:.2f}", f"{s.wins}–{s.losses}–{s.ties}", rate(s), model(s),
                  "—" if s.p_posterior is None else f"{s.p_posterior:.3f}", s.verdict, more)
    p = r.pooled
    if len(r.strata) > 1:
        t.add_row("pooled", "1.00", f"{p.wins}–{p.losses}–{p.ties}", rate(p), model(p),
                  "—" if p.p_posterior is None else f"{p.p_posterior:.3f}", "—", "")
    print_table(t, console=con)
    if len(r.strata) > 1:
        con.print("pooled: re-weighted to the stratum weights; shown, not gated (the gate is per stratum).",
                  markup=False, soft_wrap=True)
    a = r.acceptability
    con.print(f"Acceptability: {a.status} — {a.message}", markup=False, soft_wrap=True)
    for s in r.strata:
        if s.verdict == "undecided" and s.note:
            con.print(f"  {s.stratum}: {s.note}", markup=False, soft_wrap=True)
    for n in r.notes:
        if not n.startswith("model: "):
            con.print(f"Note: {n}.", markup=False, soft_wrap=True)
    con.print(r.sentence, markup=False, soft_wrap=True)
