"""The power curve of ``planner size --plot``: power against comparisons per pair, to a .png or .svg file.

matplotlib is imported inside :func:`plot_power`, with the Agg backend, so
nothing else pays for it.
"""

from __future__ import annotations

import numpy as np

from planner.errors import UsageError
from planner.stats.design import Design
from planner.stats.power import SizeResult, power_exact, power_normal


def plot_power(result: SizeResult, design: Design, path: str) -> str:
    """Write power against comparisons per pair (normal and exact) to ``path``.

    The target power and the chosen (exact, headline) n are marked. ``path``
    must end in ``.png`` or ``.svg``. matplotlib is imported here, with the Agg
    backend, so nothing else pays for it.
    """
    import os

    ext = os.path.splitext(path)[1].lower()
    if ext not in (".png", ".svg"):
        raise UsageError(f"`plot` ({path!r}) must end in .png or .svg", parameters=('plot',))
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    n_hi = int(max(result.comparisons_exact, result.comparisons_normal) * 1.5) + 10
    ns = np.arange(1, n_hi + 1)
    fig, ax = plt.subplots(figsize=(7, 4.2))
    ax.plot(ns, power_exact(result.effect, ns, design), lw=0.8, label="exact binomial test")
    ax.plot(ns, power_normal(result.effect, ns, design), lw=1.2, ls="--", label="normal approximation")
    ax.axhline(result.power, color="grey", lw=0.8, ls=":", label=f"target power {result.power:g}")
    ax.axvline(result.comparisons_exact, color="C3", lw=1,
               label=f"chosen n = {result.comparisons_exact:,}")
    unit = "decisive comparisons" if result.ties == "drop" else "judged comparisons (ties count half)"
    ax.set_xlabel(f"{unit} per pair")
    ax.set_ylabel("power")
    ax.set_ylim(0, 1)
    ax.set_title(f"win rate {result.win_rate:.1%} vs 50%, alpha {result.alpha_per_pair:g} "
                 f"({result.alternative})")
    ax.legend(loc="lower right", fontsize=8)
    fig.tight_layout()
    try:
        # no date, no software tag, a fixed hash salt for the SVG ids: the same design gives the same file
        with matplotlib.rc_context({"svg.hashsalt": "planner"}):
            fig.savefig(path, metadata={"Date": None} if ext == ".svg" else {"Software": None})
    except OSError as exc:
        raise UsageError(f"`plot` ({path!r}) cannot be written: {exc.strerror}", parameters=('plot',)) from None
    finally:
        plt.close(fig)
    return path
