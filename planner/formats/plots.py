"""Plots of ``planner report`` (edge): the forest plot of strengths and the win-rate heatmap.

Headless and byte-stable: figures are built with :class:`matplotlib.figure.Figure`
(no pyplot, the global backend is left alone); SVGs carry no date and a fixed
hash salt. matplotlib is imported inside :func:`write_plots` only.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from planner.errors import UsageError

__all__ = ["hybrid_figure", "strength_figure", "win_rate_figure", "write_hybrid_plot", "write_plots"]

#: the forest plots' caption, one short line each so it fits the narrowest figure (6.4 in at 9 pt)
STRENGTH_CAPTION = ("strength, Elo scale (1500 + 173.7 β); bars = 95% credible interval\n"
                    "blue = not credibly below the leader\n"
                    "[letters]: a shared letter = not credibly separated")


#: matplotlib settings of every report figure (font size at creation, a fixed SVG hash salt at saving)
RC = {"svg.hashsalt": "planner", "font.size": 9}


def _output_dir(directory) -> Path:
    out = Path(directory)
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise UsageError(f"`plot` ({directory}) cannot be created: {exc.strerror or exc}",
                         parameters=('plot',)) from None
    return out


def write_plots(report: Any, directory) -> tuple[str, ...]:
    """Write ``strengths.{png,svg}`` (forest plot) and ``win_rates.{png,svg}`` (heatmap).

    The forest plot shows each system's posterior mean strength on the Elo
    scale with its 95% credible interval, best at the top, blue when not
    credibly below the leader (grey otherwise), labelled with its letters and
    95% rank interval (nothing is coloured by a chaining group). The heatmap
    shows row system's half-tie score against the column
    system (blank = unobserved). Headless: figures are built with
    :class:`matplotlib.figure.Figure` (no pyplot, the global backend is left
    alone) and rendered by the Agg / SVG backends. SVGs carry no date and a
    fixed hash salt, so the same report gives identical SVG files. Returns the
    paths.
    """
    import matplotlib

    out = _output_dir(directory)
    with matplotlib.rc_context(RC):
        return tuple(_save(strength_figure(report), out / "strengths")
                     + _save(win_rate_figure(report), out / "win_rates"))


def strength_figure(report: Any):
    """The forest plot of :func:`write_plots` as a matplotlib ``Figure`` (laid out, not saved; build it
    under ``matplotlib.rc_context(RC)``, as :func:`write_plots` does)."""
    import matplotlib
    from matplotlib.figure import Figure

    rows = report.leaderboard
    fig = Figure(figsize=(6.4, 0.45 * len(rows) + 1.6))
    ax = fig.subplots()
    y = np.arange(len(rows))[::-1]
    colours = matplotlib.colormaps["tab10"]
    for yi, x in zip(y, rows):
        col = colours(0) if x.tied_with_leader else colours(7)
        ax.plot([x.elo_lo, x.elo_hi], [yi, yi], color=col, lw=2)
        ax.plot([x.elo], [yi], "o", color=col)
    ax.set_yticks(y, [f"{x.system}{f' [{x.letters}]' if x.letters else ''} rank {x.rank_low}"
                      + ("" if x.rank_low == x.rank_high else f"–{x.rank_high}") for x in rows])
    ax.axvline(1500, color="grey", lw=0.8, ls="--")
    ax.set_xlabel(STRENGTH_CAPTION)
    ax.set_title(f"{Path(report.study).name}: strengths ({report.model.engine})")
    fig.tight_layout()
    return fig


def win_rate_figure(report: Any):
    """The heatmap of :func:`write_plots` as a matplotlib ``Figure``."""
    from matplotlib.figure import Figure

    names = [x.system for x in report.leaderboard]
    idx = [report.systems.index(s) for s in names]
    mat = np.array([[np.nan if report.win_matrix[i][j] is None else report.win_matrix[i][j] for j in idx]
                    for i in idx], dtype=float)
    n = len(names)
    fig = Figure(figsize=(0.6 * n + 2.4, 0.55 * n + 1.6))
    ax = fig.subplots()
    im = ax.imshow(np.ma.masked_invalid(mat), cmap="RdBu", vmin=0, vmax=1)
    ax.set_xticks(range(n), names, rotation=45, ha="right")
    ax.set_yticks(range(n), names)
    for i in range(n):
        for j in range(n):
            if np.isfinite(mat[i, j]):
                ax.text(j, i, f"{mat[i, j]:.2f}", ha="center", va="center", fontsize=7,
                        color="white" if abs(mat[i, j] - 0.5) > 0.3 else "black")
    fig.colorbar(im, ax=ax, label="row's half-tie score vs column")
    ax.set_title("win rates (ties = half)")
    fig.tight_layout()
    return fig


def write_hybrid_plot(result: Any, directory) -> tuple[str, ...]:
    """``report --surrogate JUDGE --plot DIR``: ``ppi_strengths.{png,svg}`` of :func:`hybrid_figure` (beside the
    raw report's ``strengths``/``win_rates`` when ``--html`` builds that too)."""
    import matplotlib

    out = _output_dir(directory)
    with matplotlib.rc_context(RC):
        return tuple(_save(hybrid_figure(result), out / "ppi_strengths"))


def hybrid_figure(result: Any):
    """Forest plot of a hybrid report: per system the PPI, target-only and judge-only strengths (Elo, mean 0)
    with their intervals, ordered by the PPI estimate (best at the top)."""
    import matplotlib
    from matplotlib.figure import Figure

    from planner.model.bt import ELO_SCALE

    c = result.comparison
    fits = ((c.ppi, "PPI"), (c.human, f"{result.target} only"), (c.judge, f"{result.surrogate} only (its own)"))
    order = sorted(range(len(c.ppi.names)), key=lambda i: -c.ppi.theta[i])
    fig = Figure(figsize=(6.4, 0.55 * len(order) + 1.9))
    ax = fig.subplots()
    colours = matplotlib.colormaps["tab10"]
    for k, (fit, label) in enumerate(fits):
        y = np.arange(len(order))[::-1] + 0.25 * (1 - k)
        for yi, i in zip(y, order):
            ax.plot([ELO_SCALE * fit.lo[i], ELO_SCALE * fit.hi[i]], [yi, yi], color=colours(k), lw=2)
        ax.plot([ELO_SCALE * fit.theta[i] for i in order], y, "o", color=colours(k), label=label)
    ax.set_yticks(np.arange(len(order))[::-1], [c.ppi.names[i] for i in order])
    ax.axvline(0, color="grey", lw=0.8, ls="--")
    lvl = f"{100 * c.ppi.confidence_level:.0f}%"
    ax.set_xlabel(f"{result.target} Bradley–Terry strength, Elo (mean 0); bars = {lvl} interval\n"
                  f"PPI: {result.n_labelled:,} labelled items + {result.n_unlabelled:,} judged only by "
                  f"{result.surrogate} (λ = {c.ppi.lam:.2f})")
    ax.set_title(f"{Path(result.study).name}: {result.target} ranking with {result.surrogate} as surrogate")
    ax.legend(loc="lower right", fontsize=7)
    fig.tight_layout()
    return fig


def _save(fig, stem: Path) -> list[str]:
    """Render both files in memory, then write them atomically (a full disk is one error, no half file)."""
    import io

    from planner.formats.staging import write_atomically

    png, svg = io.BytesIO(), io.BytesIO()
    fig.savefig(png, format="png", dpi=120, metadata={"Software": None})
    fig.savefig(svg, format="svg", metadata={"Date": None})
    paths = [stem.with_suffix(".png"), stem.with_suffix(".svg")]
    write_atomically(list(zip(paths, (png.getvalue(), svg.getvalue()))), force=True, option="plot")
    return [str(p) for p in paths]
