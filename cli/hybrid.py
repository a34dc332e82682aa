"""Rendering of `planner report --surrogate JUDGE [--target humans]`.

Called from ``cli/report.py``; the statistics are in :mod:`planner.hybrid.ppi` /
:mod:`planner.workflows.hybrid_report` (imported inside the function, as the other commands do).
"""

from __future__ import annotations

from pathlib import Path

from .common import call, message, out, print_json
from .tables import print_table


def check_ppi_plot(plot) -> None:
    """``report --surrogate --plot DIR``: the PPI forest plot's files can be written (checked before the fit)."""
    from planner.limits import check_output_dir, check_output_file

    call(check_output_dir, "--plot", plot)
    for name in ("ppi_strengths.png", "ppi_strengths.svg") if plot is not None else ():
        call(check_output_file, "--plot", plot / name, create_parents=True)


def run_hybrid(study: Path, surrogate: str, target: str, json_: bool, ties: str = "half", cluster: str = "item", *,
               plot: Path | None = None):
    """Fit, print (tables or JSON) and return the hybrid result (``report --html`` adds it to the page);
    ``plot``: write its forest plot there."""
    from planner.workflows.hybrid_report import hybrid_report

    res = call(hybrid_report, study, surrogate=surrogate, target=target, ties=ties, cluster=cluster)
    for n in res.notes:
        message(f"note: {n}")
    if plot is not None:
        from planner.formats.plots import write_hybrid_plot

        message("wrote " + ", ".join(call(write_hybrid_plot, res, plot)))
    if json_:
        print_json(res)
    else:
        _render(res)
    return res


def _render(r) -> None:
    from rich.table import Table

    from planner.model.bt import ELO_SCALE as ELO

    c, con = r.comparison, out()
    lvl = f"{100 * c.ppi.confidence_level:.0f}%"
    con.print(f"{r.study}: {r.target} ({r.target_votes:,} votes on {r.n_labelled:,} items) with {r.surrogate} as "
              f"surrogate ({r.surrogate_verdicts:,} verdicts; {r.n_unlabelled:,} items judged only by it); "
              f"{'IPW-PPI (recorded probabilities)' if r.design != 'uniform' else 'PPI++'} λ = {c.ppi.lam:.2f}; "
              f"ties {'Davidson' if r.ties == 'davidson' else 'as half a win'}", markup=False, soft_wrap=True)
    if r.ties == "davidson":
        con.print(f"tie parameter ν = {c.ppi.nu:.3f} [{c.ppi.nu_lo:.3f}, {c.ppi.nu_hi:.3f}] (PPI); win rates below "
                  "are decisive-win probabilities (given no tie)", markup=False, soft_wrap=True)
    con.print(f"effective human items: {c.effective_n:,.0f} (the judge was worth {c.labels_gained:,.0f} human-labelled "
              f"items at this λ)", markup=False, soft_wrap=True)
    tab = Table(title=f"{r.target} Bradley–Terry, Elo (mean 0) [{lvl} interval]; rank set simultaneous at {lvl}")
    for h in ("system", "PPI", "rank set", f"{r.target} only", f"{r.surrogate} only (its own preference)"):
        tab.add_column(h, justify="left" if h == "system" else "right", no_wrap=True)
    order = sorted(range(len(c.ppi.names)), key=lambda i: -c.ppi.theta[i])
    for i in order:
        cell = [f"{ELO * x.theta[i]:.0f} [{ELO * x.lo[i]:.0f}, {ELO * x.hi[i]:.0f}]" for x in (c.ppi, c.human, c.judge)]
        rs = c.ppi.rank_low[i], c.ppi.rank_high[i]
        tab.add_row(c.ppi.names[i], cell[0], str(rs[0]) if rs[0] == rs[1] else f"{rs[0]}–{rs[1]}", *cell[1:])
    print_table(tab, console=con)
    if r.population is not None and not r.strata.get("same_as_pooled"):
        _population(r, con, ELO, lvl)
    kind = "ties half" if r.ties == "half" else "decisive wins, Davidson"
    tab = Table(title=f"pairwise win rates of a over b for {r.target} ({kind}) [{lvl} interval]")
    for h in ("a", "b", "PPI", f"{r.target} only"):
        tab.add_column(h, justify="left" if h in ("a", "b") else "right", no_wrap=True)
    for x, i in enumerate(order):
        for j in order[x + 1:]:
            tab.add_row(c.ppi.names[i], c.ppi.names[j],
                        *[f"{y.win[i, j]:.3f} [{y.win_lo[i, j]:.3f}, {y.win_hi[i, j]:.3f}]" for y in (c.ppi, c.human)])
    print_table(tab, key=(0, 1), console=con)


def _population(r, con, elo, lvl) -> None:
    from rich.table import Table

    p, w = r.population, r.strata["weights"]
    shares = ", ".join(f"{k} {v:.3f}" for k, v in w.items())
    tab = Table(title=f"population {r.target} Bradley–Terry, Elo (mean 0) [{lvl}], stratum weights {shares} "
                      f"({r.strata['note']})")
    for h in ("system", "population PPI", "rank set"):
        tab.add_column(h, justify="left" if h == "system" else "right", no_wrap=True)
    for i in sorted(range(len(p.names)), key=lambda i: -p.theta[i]):
        rs = p.rank_low[i], p.rank_high[i]
        tab.add_row(p.names[i], f"{elo * p.theta[i]:.0f} [{elo * p.lo[i]:.0f}, {elo * p.hi[i]:.0f}]",
                    str(rs[0]) if rs[0] == rs[1] else f"{rs[0]}–{rs[1]}")
    print_table(tab, console=con)
