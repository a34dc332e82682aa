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

__all__ = ["write_plots"]


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
    from matplotlib.figure import Figure

    out = Path(directory)
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise UsageError(f"`plot` ({directory}) cannot be created: {exc.strerror or exc}",
                         parameters=('plot',)) from None
    paths: list[str] = []
    rows = report.leaderboard
    with matplotlib.rc_context({"svg.hashsalt": "planner", "font.size": 9}):
        fig = Figure(figsize=(6.4, 0.45 * len(rows) + 1.2))
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
        ax.set_xlabel("strength, Elo scale (1500 + 173.7 β); bars = 95% credible interval\n"
                      "blue = not credibly below the leader; [letters]: shared letter = not separated")
        ax.set_title(f"{Path(report.study).name}: strengths ({report.model.engine})")
        fig.tight_layout()
        paths += _save(fig, out / "strengths")

        names = [x.system for x in rows]
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
        paths += _save(fig, out / "win_rates")
    return tuple(paths)


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
