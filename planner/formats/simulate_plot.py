"""The simulator's figure: metric-vs-comparisons curves per strategy (PNG or SVG)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from planner.errors import UsageError

if TYPE_CHECKING:
    from planner.simulation.summary import SimulationResult


def plot(result: SimulationResult, path: str | Path) -> Path:
    """Metric-vs-comparisons curves per strategy with 10–90% bands (PNG or SVG)."""
    path = Path(path)
    if path.suffix.lower() not in (".png", ".svg"):
        raise UsageError(f"`plot` ({path}) must end in .png or .svg", parameters=('plot',))
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    metric = result.target_metric
    fig, ax = plt.subplots(figsize=(7, 4.5))
    for s in result.strategies:
        if s.checkpoints.size == 0:
            continue
        ax.plot(s.checkpoints, s.mean[metric], label=s.name)
        ax.fill_between(s.checkpoints, s.low[metric], s.high[metric], alpha=0.15)
    ax.axhline(result.target_value, color="grey", ls="--", lw=1)
    ax.set_xlabel("comparisons")
    ax.set_ylabel(metric)
    ax.set_title(f"{result.scenario}: {result.n_systems} systems, {result.reps} reps")
    ax.legend(fontsize=8)
    fig.tight_layout()
    svg = path.suffix.lower() == ".svg"
    # no date, no software tag, a fixed hash salt for the SVG ids: the same result gives the same file
    with matplotlib.rc_context({"svg.hashsalt": "planner"}):
        fig.savefig(path, metadata={"Date": None} if svg else {"Software": None})
    plt.close(fig)
    return path
