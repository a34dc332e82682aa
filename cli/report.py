"""`planner report STUDY`: ranking with honest intervals, and every diagnostic.

Only typer and the standard library at module level; ``planner.workflows.report`` (and
through it numpy/scipy/arviz, pymc for ``--engine nuts``, matplotlib for
``--plot``) is imported inside the command.
"""

from __future__ import annotations

import math
import sys
from pathlib import Path
from typing import Annotated

import typer

from .app import app
from .common import call, fail, message, out, print_json, warn
from .tables import print_table


def _one_mode(surrogate, html, bayes_only: dict[str, bool], surrogate_only: dict[str, bool]) -> None:
    """An option of the other mode (the Bayesian report vs --surrogate's PPI++ fit) is refused, not ignored.

    With --surrogate and --html the Bayesian report is built too (the page holds both), so its options apply.
    """
    from planner.errors import UsageError

    given = [f for f, on in (bayes_only if surrogate is not None else surrogate_only).items() if on]
    one = len(given) == 1
    if given and surrogate is not None and html is None:
        raise fail(UsageError(f"{', '.join(given)} {'does' if one else 'do'} not apply with --surrogate (the PPI++ "
                              "fit is a closed-form estimate with sandwich intervals: no engine or draws; --plot "
                              "draws its forest plot); "
                              "drop it, add --html for a page holding the Bayesian report too, or run report "
                              "without --surrogate"))
    if given and surrogate is None:
        raise fail(UsageError(f"{', '.join(given)} {'needs' if one else 'need'} --surrogate JUDGE (the "
                              "prediction-powered fit)"))


@app.command("report")
def report_cmd(
    study: Annotated[Path, typer.Argument(help="Study directory.")],
    engine: Annotated[str, typer.Option(
        help="laplace (Gaussian at the posterior mode: fast, the default) | nuts (pymc NUTS sampling: "
             "seconds to minutes, r-hat/ESS/divergences checked).")] = "laplace",
    by_stratum: Annotated[bool, typer.Option(
        "--by-stratum", help="Per-stratum strengths (partial pooling); the leaderboard is re-weighted to "
                             "stratum weights (sum of prompt weights, or prompts per stratum).")] = False,
    seed: Annotated[int, typer.Option(help="Seed of the sampler / the Laplace draws (0 to 2**63-1).")] = 0,
    draws: Annotated[int, typer.Option(help="Posterior draws (per chain for nuts), 1 to 100,000.")] = 1000,
    tune: Annotated[int, typer.Option(help="NUTS tuning steps per chain, 0 to 100,000.")] = 1000,
    chains: Annotated[int, typer.Option(help="NUTS chains (run on up to 2 cores), 1 to 16.")] = 2,
    min_pass_rate: Annotated[float, typer.Option(
        help="Flag the leader when its acceptability pass rate is below this, 0..1.")] = 0.8,
    plot: Annotated[Path | None, typer.Option(
        help="Directory for strengths.{png,svg} (forest plot) and win_rates.{png,svg} (heatmap).")] = None,
    markdown: Annotated[Path | None, typer.Option(help="Write the report as a Markdown document.")] = None,
    html: Annotated[Path | None, typer.Option(
        help="Write the report as one self-contained HTML page to share (CSS, JavaScript and SVG inline, nothing "
             "fetched): leaderboard with interval bars, win-rate heatmap, diagnostics, raw vs style-controlled "
             "ranking (with --style-control), the hybrid fit (with --surrogate).")] = None,
    json_: Annotated[bool, typer.Option("--json", help="Print the report as one JSON document.")] = False,
    target: Annotated[str, typer.Option(help="With --surrogate: whose preference to estimate (humans = every "
                                             "annotator other than the surrogate).")] = "humans",
    surrogate: Annotated[str | None, typer.Option(
        help="Judge (annotator name) whose verdicts serve as predictions: prediction-powered (PPI++) Bradley–Terry "
             "for --target at 90%, beside target-only and judge-only fits.")] = None,
    style_control: Annotated[bool, typer.Option(
        "--style-control", help="Also fit the ranking controlled for length and markdown style (Chatbot Arena's "
                                "style control) and show it beside the raw one with the style coefficients; for an "
                                "anchor design also AlpacaEval's length-controlled win rates.")] = False,
    lc_anchor: Annotated[str | None, typer.Option(
        help="Length-controlled win rate (AlpacaEval LC GLM) of every system against this one.")] = None,
    ties: Annotated[str, typer.Option(
        help="With --surrogate: half (a tie is half a win) | davidson (win/tie/loss likelihood, tie parameter ν).")] = "half",
    save_posterior: Annotated[bool, typer.Option(
        "--save-posterior", help="Also save a Laplace posterior in the study as ArviZ netcdf (NUTS posteriors "
                                 "are always saved).")] = False,
    cluster: Annotated[str, typer.Option(
        help="Which verdicts share a cluster for cluster-robust intervals: item (same prompt and pair: both "
             "orders, every annotator; the default) | prompt | annotator | none (all independent).")] = "item",
) -> None:
    """Leaderboard (strength, 95% credible interval, Elo, P(best), 95% rank interval, letters, P(leader better)), pairs,
    anchor tests, tie/position/length bias, circular triads, reasons, annotator QC, strata,
    acceptability and model diagnostics. Flags and warnings go to stderr. With --surrogate JUDGE: the
    prediction-powered human ranking instead (few human verdicts + many judge verdicts; docs/guide.md).

    Example: planner report my-study --plot figures --markdown report.md --html report.html
    """
    from planner.limits import check_report_options
    from planner.workflows import report as rp

    from .progress import heartbeat

    # every output and option is checked before the fit (which caches its result in the study)
    call(check_report_options, seed=seed, draws=draws, tune=tune, chains=chains)
    _one_mode(surrogate, html, {"--engine": engine != "laplace", "--by-stratum": by_stratum, "--seed": seed != 0,
                                "--draws": draws != 1000, "--tune": tune != 1000, "--chains": chains != 2,
                                "--min-pass-rate": min_pass_rate != 0.8,
                                "--markdown": markdown is not None, "--style-control": style_control,
                                "--lc-anchor": lc_anchor is not None, "--save-posterior": save_posterior},
              {"--target": target != "humans", "--ties": ties != "half"})
    _check_outputs(plot, markdown, html)
    hybrid = None
    if surrogate is not None:
        from .hybrid import check_ppi_plot, run_hybrid

        check_ppi_plot(plot)
        hybrid = run_hybrid(study, surrogate, target, json_, ties, cluster, plot=plot)
        if html is None:
            return

    if engine == "nuts":
        message(f"fitting with NUTS ({chains} chains, {tune} tuning + {draws} draws each) ...")
    with heartbeat("fitting with NUTS" if engine == "nuts" else "report", "draws") as beat:
        # NUTS: pymc's bar on a terminal, else a count of draws in the progress lines
        bar = (sys.stderr.isatty() or beat.update) if engine == "nuts" else False
        res = call(rp.build_report, study, engine=engine, by_stratum=by_stratum, seed=seed, draws=draws,
                   tune=tune, chains=chains, progressbar=bar,
                   min_pass_rate=min_pass_rate, save_posterior=True if save_posterior else None,
                   style_control=style_control, lc_anchor=lc_anchor, cluster=cluster)
    _write_files(res, plot, markdown, html, hybrid)
    if hybrid is None:  # with --surrogate the surrogate's tables are printed; the report itself went to --html
        _print_report(res, json_)


def _check_outputs(plot, markdown, html) -> None:
    """Every output path, before the fit (which caches its result in the study)."""
    from planner.limits import check_output_dir, check_output_file

    call(check_output_dir, "--plot", plot)
    for name in ("strengths.png", "strengths.svg", "win_rates.png", "win_rates.svg") if plot is not None else ():
        call(check_output_file, "--plot", plot / name, create_parents=True)
    call(check_output_file, "--markdown", markdown, create_parents=True)
    call(check_output_file, "--html", html, create_parents=True)


def _print_report(res, json_: bool) -> None:
    """Flags and notes on stderr; the JSON document or the tables (and the judge totals) on stdout."""
    for f in res.flags:
        warn(f)
    for n in res.notes:
        message(f"note: {n}")
    if json_:
        print_json(res)
        return
    _render(res)
    if res.style_control is not None:
        _render_style(res.style_control)
    if res.judges:  # LLM-judge totals (planner.store.ledger.judge_totals)
        from planner.store.ledger import judge_totals_sentence

        for j in res.judges:
            out().print(judge_totals_sentence(j), markup=False, soft_wrap=True)


def _write_files(res, plot, markdown, html, hybrid) -> None:
    """The report's files: plots, Markdown, the HTML page (with the hybrid fit when there is one)."""
    if plot is not None:
        from planner.formats.plots import write_plots

        paths = call(write_plots, res, plot)
        message("wrote " + ", ".join(paths))
    if markdown is not None:
        from planner.formats.markdown import write_markdown

        call(write_markdown, res, markdown)
        message(f"wrote {markdown}")
    if html is not None:
        from planner.formats.html import write_html

        call(write_html, res, html, hybrid)
        message(f"wrote {html}")


def _pct(x, digits: int = 1) -> str:
    return "—" if x is None else f"{100 * x:.{digits}f}%"


def _num(x, fmt: str = ".3f") -> str:
    return "—" if x is None or math.isnan(x) else format(x, fmt)


def _render(r) -> None:
    con = out()
    _render_leaderboard(con, r)
    _render_pairs(con, r)
    _render_diagnostics(con, r)
    _render_annotators(con, r)
    _render_strata(con, r)
    if r.acceptability is not None and r.acceptability_source:
        con.print(f"acceptability from {r.acceptability_source}: pass rates with Wilson 95% intervals "
                  "in the leaderboard", markup=False, soft_wrap=True)


def _render_leaderboard(con, r) -> None:
    from rich.table import Table

    t = r.totals
    con.print(f"{r.study}: A {t['A']:,} / B {t['B']:,} / tie {t['tie']:,} / invalid {t['invalid']:,}; "
              f"engine {r.model.engine}" + (" (by stratum, re-weighted)" if r.model.by_stratum else ""),
              markup=False, soft_wrap=True)
    has_acc = r.acceptability is not None
    letters = r.ranking is None or r.ranking.letters_shown   # left out above 26 systems (a note says why)
    tab = Table(title="leaderboard (shared letter = not credibly separated)" if letters else
                "leaderboard (rank = 95% rank interval; tied = not credibly below the leader)")
    tab.add_column("tied", justify="right")
    if letters:
        tab.add_column("letters")
    tab.add_column("system", no_wrap=True)
    tab.add_column("Elo [95% CrI]", justify="right", no_wrap=True)
    tab.add_column("P(best)", justify="right")
    tab.add_column("P(lead>x)", justify="right")
    tab.add_column("rank", justify="right", no_wrap=True)
    tab.add_column("score", justify="right")
    if has_acc:
        tab.add_column("acceptable", justify="right", no_wrap=True)
    for x in r.leaderboard:
        row = ["tied" if x.tied_with_leader else ""] + ([x.letters] if letters else []) + [
               x.system, f"{x.elo:.0f} [{x.elo_lo:.0f}, {x.elo_hi:.0f}]", f"{x.p_best:.3f}",
               "leader" if x.p_leader_better is None else f"{x.p_leader_better:.3f}",
               str(x.rank_low) if x.rank_low == x.rank_high else f"{x.rank_low}–{x.rank_high}", _num(x.score)]
        if has_acc:
            row.append("—" if x.pass_rate is None else
                       f"{_pct(x.pass_rate, 0)} [{_pct(x.pass_low, 0)}, {_pct(x.pass_high, 0)}]")
        tab.add_row(*row)
    print_table(tab, key=(2,), console=con)
    if r.clusters is not None:
        con.print(r.clusters.sentence, markup=False, soft_wrap=True)
    if r.forecast is not None:
        con.print(f"Remaining budget (the forecast planner plan saved): {r.forecast.sentence()}.", markup=False,
                  soft_wrap=True)


def _pairs_shown(r) -> tuple[list, str]:
    """The pairs the terminal shows: every pair, or past ``LETTERS_MAX_SYSTEMS`` systems (where the letters are left
    out too) the neighbours in the ranking — a 300-system study has 44,850 pairs, which no terminal reads and rich
    takes ~15 s to lay out — with a note saying where the rest are."""
    from itertools import pairwise

    from planner.diagnostics.letters import LETTERS_MAX_SYSTEMS

    rows = list(r.pairs.rows)
    if len(r.systems) <= LETTERS_MAX_SYSTEMS:
        return rows, ""
    order = [x.system for x in r.leaderboard]
    wanted = {frozenset(p) for p in pairwise(order)}
    shown = [p for p in rows if frozenset((p.system_a, p.system_b)) in wanted]
    return shown, (f"{len(shown):,} of {len(rows):,} pairs shown: each system with its neighbour in the ranking "
                   f"(more than {LETTERS_MAX_SYSTEMS} systems); every pair is in --json, --markdown and planner export.")


def _render_pairs(con, r) -> None:
    from rich.table import Table

    rows, note = _pairs_shown(r)
    tab = Table(title="pairs (a = earlier in the study's system order)" + (
        "; neighbours in the ranking only" if note else ""))
    deff = any(p.design_effect is not None for p in rows)
    for h in ("a", "b", "a wins", "b wins", "ties", "inv", "score", "P(a>b)") + (("deff",) if deff else ()):
        tab.add_column(h, justify="left" if h in ("a", "b") else "right", no_wrap=h in ("a", "b"))
    for p in rows:
        tab.add_row(p.system_a, p.system_b, f"{p.a_wins:,}", f"{p.b_wins:,}", f"{p.ties:,}", f"{p.invalid:,}",
                    _num(p.score), _num(p.p_a_better), *((_num(p.design_effect, ".2f"),) if deff else ()))
    print_table(tab, key=(0, 1), console=con)
    if note:
        con.print(note, markup=False, soft_wrap=True)

    if r.anchor_tests is not None:
        at = r.anchor_tests
        clustered = any(a.design_effect > 1.0 for a in at.rows)
        tab = Table(title=f"against the anchor {at.anchor} (ties: {at.ties}; Wilson 95%, exact binomial test"
                          + ("; n / deff under clustering)" if clustered else ")"))
        for h in ("system", "wins", "losses", "ties", "invalid", "win rate", "95% CI", "p") + (
                ("deff",) if clustered else ()):
            tab.add_column(h, justify="left" if h == "system" else "right")
        for a in at.rows:
            tab.add_row(a.system, str(a.wins), str(a.losses), str(a.ties), str(a.invalid), _pct(a.win_rate),
                        f"[{_pct(a.ci_low)}, {_pct(a.ci_high)}]", _num(a.pvalue, ".3g"),
                        *((f"{a.design_effect:.2f}",) if clustered else ()))
        print_table(tab, console=con)


def _render_diagnostics(con, r) -> None:
    from rich.table import Table

    m, p, c = r.model, r.position, r.triads
    tab = Table(title="diagnostics", show_header=False)
    tab.add_column("what")
    tab.add_column("value")
    tr = r.ties.overall
    tab.add_row("tie rate", f"{_pct(tr.rate)} of {tr.usable:,} [{_pct(tr.ci_low)}, {_pct(tr.ci_high)}]; "
                            f"ν = {m.nu.mean:.3f} [{m.nu.lo:.3f}, {m.nu.hi:.3f}]")
    tab.add_row("position", f"left wins {_pct(p.left_win_rate)} [{_pct(p.ci_low)}, {_pct(p.ci_high)}] of "
                            f"{p.n_decisive:,} decisive (right {_pct(None if p.left_win_rate is None else 1 - p.left_win_rate)}"
                            f"; p = {_num(p.pvalue, '.3g')}); "
                            f"γ = {m.gamma.mean:.3f} [{m.gamma.lo:.3f}, {m.gamma.hi:.3f}]"
                            + (" FLAG" if p.flagged else ""))
    if r.length is not None:
        lb = r.length
        tab.add_row("length", f"longer wins {_pct(lb.share)} of {lb.n:,} decisive "
                              f"[{_pct(lb.ci_low)}, {_pct(lb.ci_high)}]; p = {_num(lb.pvalue, '.3g')}"
                              + (" FLAG" if lb.flagged else ""))
    tab.add_row("circular triads", f"d = {c.d:g} of {c.d_max:g}; ζ = {_num(c.zeta)}")
    tab.add_row("no reason", f"{_pct(r.reasons.share_without_reason)} of {r.reasons.n_decisive:,} decisive")
    d = m.diagnostics
    if m.engine == "nuts":
        tab.add_row("sampler", f"max r-hat {_num(d.max_r_hat)}, min ESS {_num(d.min_ess_bulk, '.0f')}/"
                               f"{_num(d.min_ess_tail, '.0f')} (bulk/tail), divergences {d.divergences}")
    else:
        tab.add_row("optimiser", f"{d.iterations} Newton iterations, converged: {'yes' if d.converged else 'no'}")
    if r.posterior_artifact:
        tab.add_row("posterior", f"saved in the study as {r.posterior_artifact}")
    print_table(tab, wrap=(1,), console=con)


def _render_annotators(con, r) -> None:
    from rich.table import Table

    if r.annotators is not None and r.annotators.annotators:
        tab = Table(title="annotators")
        for h in ("annotator", "judgments", "attention", "swap", "kappa", "fast", "left", "run", "flags"):
            tab.add_column(h, justify="left" if h in ("annotator", "flags") else "right")
        for a in r.annotators.annotators:
            tab.add_row(a.annotator, f"{a.n_judgments:,}", _pct(a.attention_rate, 0), _pct(a.swap_rate, 0),
                        _num(a.kappa, ".2f"), _pct(a.fast_share, 0), _pct(a.left_share, 0), str(a.longest_run),
                        ", ".join(a.flags) or "—")
        print_table(tab, wrap=(8,), console=con)

    ag = r.annotators.agreement if r.annotators is not None else None
    if ag is not None and ag.method:
        con.print(f"agreement on {ag.n_items} overlap comparisons ({ag.n_annotators} annotators): "
                  f"{ag.method} kappa = {_num(ag.kappa, '.2f')}" + (" FLAG" if ag.flagged else ""),
                  markup=False, soft_wrap=True)

    rs = r.reasons
    if any(s.reason for x in rs.rows for s in x.win_reasons):
        tab = Table(title="reasons: share of each system's wins / losses")
        for h in ("system", "wins", "win reasons", "losses", "loss reasons"):
            tab.add_column(h, justify="right" if h in ("wins", "losses") else "left")
        for x in rs.rows:
            tab.add_row(x.system, f"{x.wins:,}", ", ".join(f"{s.reason or 'none'} {_pct(s.share, 0)}" for s in x.win_reasons),
                        f"{x.losses:,}", ", ".join(f"{s.reason or 'none'} {_pct(s.share, 0)}" for s in x.loss_reasons))
        print_table(tab, wrap=(2, 4), console=con)


def _render_strata(con, r) -> None:
    from rich.table import Table

    from planner.model.bt import ELO_SCALE as ELO

    st = r.strata
    if len(st.rows) > 1 and st.rows[0].mean is not None:
        tab = Table(title="strength per stratum (Elo, partially pooled)")
        tab.add_column("stratum", no_wrap=True)
        for s in st.systems:
            tab.add_column(s, justify="right")
        for row in st.rows:
            tab.add_row(row.stratum, *(f"{1500 + ELO * v:.0f}" for v in row.mean))
        print_table(tab, console=con)
    if len(st.rows) > 1:
        tab = Table(title=f"half-tie score per stratum (weights: {st.weights_source})")
        tab.add_column("stratum", no_wrap=True)
        tab.add_column("weight", justify="right")
        tab.add_column("n", justify="right")
        tab.add_column("tie rate [95% CI]", justify="right")
        for s in st.systems:
            tab.add_column(s, justify="right")
        ties = {t.stratum: t for t in r.ties.per_stratum}
        for row in st.rows:
            t = ties.get(row.stratum)
            tab.add_row(row.stratum, f"{row.weight:.3f}", f"{row.judgments:,}",
                        "—" if t is None else f"{_pct(t.rate)} [{_pct(t.ci_low)}, {_pct(t.ci_high)}]",
                        *(_num(v) for v in row.scores))
        o = r.ties.overall
        tab.add_row("re-weighted", "1.000", f"{sum(x.judgments for x in st.rows):,}",
                    f"{_pct(o.rate)} [{_pct(o.ci_low)}, {_pct(o.ci_high)}]", *(_num(v) for v in st.weighted_scores))
        print_table(tab, console=con)


def _render_style(sc) -> None:
    """Raw and controlled leaderboards, style coefficients, LC win rates (planner.services.style_report)."""
    from rich.table import Table

    from planner.sentences import lc_sentence, style_cluster_sentence

    con = out()
    if sc.rows:
        tab = Table(title=f"style control: raw vs controlled ranking ({sc.n_used:,} judgments)")
        for h in ("system", "raw rank", "raw β [95% CrI]", "ctrl rank", "ctrl β [95% CrI]", "ctrl rank 95%",
                  "ctrl P(best)"):
            tab.add_column(h, justify="left" if h == "system" else "right", no_wrap=True)
        for r in sc.rows:
            tab.add_row(r.system, str(r.raw_rank), f"{r.raw_mean:+.3f} [{r.raw_lo:+.3f}, {r.raw_hi:+.3f}]",
                        str(r.rank), f"{r.mean:+.3f} [{r.lo:+.3f}, {r.hi:+.3f}]",
                        str(r.rank_low) if r.rank_low == r.rank_high else f"{r.rank_low}–{r.rank_high}",
                        _num(r.p_best))
        print_table(tab, console=con)
        tab = Table(title="style coefficients (logit per rms unit of the normalised difference a − b)")
        for h in ("feature", "rms unit", "coef [95% CrI]", "odds ratio [95% CrI]"):
            tab.add_column(h, justify="left" if h == "feature" else "right", no_wrap=True)
        for c in sc.coefficients:
            tab.add_row(c.feature, f"{c.scale:.3f}", f"{c.mean:+.3f} [{c.lo:+.3f}, {c.hi:+.3f}]",
                        f"{c.odds_ratio:.2f} [{c.odds_lo:.2f}, {c.odds_hi:.2f}]")
        print_table(tab, console=con)
        con.print(sc.sentence, markup=False, soft_wrap=True)
        if sc.clusters is not None:
            con.print(style_cluster_sentence(sc), markup=False, soft_wrap=True)
    for r in sc.lc:
        con.print(lc_sentence(sc.lc_anchor, r), markup=False, soft_wrap=True)
