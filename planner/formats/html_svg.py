"""The inline SVG figures of ``report --html`` (edge): interval bars, the win-rate heatmap, raw vs controlled ranks.

Plain SVG text, no plotting library: the page stays one self-contained file and
the figures are the same bytes on every machine. Every label is escaped
(:func:`esc`); every number drawn comes from the report object it is given.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from planner.escape import for_html

__all__ = ["esc", "heatmap", "interval_bar", "rank_slopes"]


def esc(value) -> str:
    """Text for HTML or SVG (system, annotator and stratum names are untrusted): :func:`planner.escape.for_html`."""
    return for_html(value)


def _f(x: float) -> str:
    return f"{x:.1f}"


def interval_bar(lo: float, mid: float, hi: float, scale_lo: float, scale_hi: float, *, width: int = 220,
                 height: int = 14, label: str = "") -> str:
    """One row's interval on a shared axis: a line from ``lo`` to ``hi`` and a dot at ``mid``."""
    span = (scale_hi - scale_lo) or 1.0

    def x(v: float) -> float:
        return 4 + (width - 8) * (v - scale_lo) / span

    y = height / 2
    return (f'<svg class="bar" width="{width}" height="{height}" viewBox="0 0 {width} {height}" role="img" '
            f'aria-label="{esc(label)}"><title>{esc(label)}</title>'
            f'<line x1="{_f(x(lo))}" y1="{_f(y)}" x2="{_f(x(hi))}" y2="{_f(y)}" class="ci"/>'
            f'<circle cx="{_f(x(mid))}" cy="{_f(y)}" r="3.5" class="pt"/></svg>')


def _colour(p: float | None) -> str:
    """Win rate → fill: blue below 50%, white at 50%, red above; grey when there is no judgment."""
    if p is None or (isinstance(p, float) and math.isnan(p)):
        return "#e5e5e5"
    t = max(-1.0, min(1.0, 2 * (p - 0.5)))
    a, b = (255, 255, 255), ((178, 24, 43) if t > 0 else (33, 102, 172))
    r, g, bl = (round(a[i] + abs(t) * (b[i] - a[i])) for i in range(3))
    return f"#{r:02x}{g:02x}{bl:02x}"


def heatmap(names: Sequence[str], matrix: Sequence[Sequence[float | None]], order: Sequence[int]) -> str:
    """The win-rate heatmap: cell (row i, column j) = share of i's judgments against j that i won (ties half)."""
    n, cell, left, top = len(order), 46, 130, 120
    w, h = left + cell * n + 70, top + cell * n + 10
    out = [f'<svg class="heatmap" width="{w}" height="{h}" viewBox="0 0 {w} {h}" role="img" '
           'aria-label="win-rate heatmap: row system against column system">']
    for k, i in enumerate(order):
        y = top + k * cell + cell / 2 + 4
        out.append(f'<text x="{left - 6}" y="{_f(y)}" text-anchor="end">{esc(names[i])}</text>')
        x = left + k * cell + cell / 2
        out.append(f'<text transform="translate({_f(x + 4)},{top - 6}) rotate(-55)">{esc(names[i])}</text>')
    for r, i in enumerate(order):
        for c, j in enumerate(order):
            p = matrix[i][j] if i != j else None
            x, y = left + c * cell, top + r * cell
            label = "—" if p is None else f"{p:.2f}"
            tip = f"{names[i]} vs {names[j]}: " + ("no judgments" if p is None else f"{100 * p:.1f}% won")
            out.append(f'<g class="cell"><title>{esc(tip)}</title>'
                       f'<rect x="{x}" y="{y}" width="{cell - 2}" height="{cell - 2}" fill="{_colour(p)}"/>'
                       + ("" if i == j else
                          f'<text x="{_f(x + cell / 2 - 1)}" y="{_f(y + cell / 2 + 3)}" text-anchor="middle">'
                          f'{label}</text>') + "</g>")
    out.append("</svg>")
    return "".join(out)


def rank_slopes(systems: Sequence[str], raw: Sequence[int], controlled: Sequence[int]) -> str:
    """Raw rank (left) joined to the style-controlled rank (right), one line per system."""
    n, step, left, right = len(systems), 26, 150, 430
    h = 40 + step * n
    out = [f'<svg class="slopes" width="580" height="{h}" viewBox="0 0 580 {h}" role="img" '
           'aria-label="raw rank against style-controlled rank">',
           f'<text x="{left}" y="16" text-anchor="middle" class="head">raw</text>',
           f'<text x="{right}" y="16" text-anchor="middle" class="head">controlled</text>']
    for s, a, b in zip(systems, raw, controlled):
        ya, yb = 20 + step * a, 20 + step * b
        cls = "moved" if a != b else "same"
        out.append(f'<g class="{cls}"><title>{esc(f"{s}: rank {a} raw, {b} controlled")}</title>'
                   f'<line x1="{left + 14}" y1="{ya - 4}" x2="{right - 14}" y2="{yb - 4}"/>'
                   f'<text x="{left - 8}" y="{ya}" text-anchor="end">{esc(s)} {a}</text>'
                   f'<text x="{right + 8}" y="{yb}">{b} {esc(s)}</text></g>')
    out.append("</svg>")
    return "".join(out)
