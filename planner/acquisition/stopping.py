"""Stopping advice: is the decision the objective cares about already made?"""

from __future__ import annotations

import itertools

import numpy as np
from scipy.special import ndtr

from planner.acquisition.objectives import diff_var, tie_probability
from planner.acquisition.state import SelectionContext


def settled_advice(ctx: SelectionContext, systems, inflation=None) -> tuple[bool, str]:
    """``(settled, one sentence)``: every decision the objective cares about has P > ``settle_prob``
    (with a ``tie_margin``, a pair tied within it with P > ``settle_prob`` is decided too).

    ``inflation`` (M, M): each pair's design effect (clustered verdicts); the sd of a
    difference is widened by its square root before the probabilities are read.
    """
    settle = ctx.opts.settle_prob
    mu, cov = (ctx.mu if ctx.est_mu is None else ctx.est_mu), ctx.cov0
    s = np.sqrt(diff_var(cov) * (1.0 if inflation is None else inflation))
    with np.errstate(divide="ignore", invalid="ignore"):
        p_order = ndtr(np.abs(mu[:, None] - mu[None, :]) / s)
    p_order = np.where(s > 0, p_order, np.where(mu[:, None] == mu[None, :], 0.5, 1.0))
    p_tie = tie_probability(mu[:, None] - mu[None, :], s, ctx.opts.tie_margin)
    if ctx.objective == "anchor":
        a = ctx.a_idx
        with np.errstate(divide="ignore", invalid="ignore"):
            p_beat = ndtr((mu - mu[a]) / s[:, a])
        others = [c for c in range(mu.size) if c != a]
        unsure = [c for c in others if 1 - settle <= p_beat[c] <= settle and p_tie[c, a] <= settle]
        if not unsure:
            words = _tied_words([(c, a) for c in others if p_tie[c, a] > settle], systems, ctx.opts.tie_margin)
            return True, (f"every system beats or loses to the anchor {systems[a]}{words[0]} with probability "
                          f"> {settle:g}{words[1]}: you can stop; more comparisons buy little")
        c = min(unsure, key=lambda c: abs(p_beat[c] - 0.5))
        return False, (f"{len(unsure)} system(s) not yet separated from the anchor; least settled: "
                       f"{systems[c]} beats {systems[a]} with probability {p_beat[c]:.2f}")
    order = np.argsort(-mu, kind="stable")
    if ctx.objective == "top-k":
        pairs = [(int(x), int(y)) for x in order[:ctx.top_k] for y in order[ctx.top_k:]]
        what = f"every top-{ctx.top_k} system is ahead of every other system"
    else:
        pairs = [(int(x), int(y)) for x, y in itertools.pairwise(order)]
        what = "every adjacent pair in the posterior-mean ranking is ordered"
    tied = [(x, y) for x, y in pairs if p_tie[x, y] > settle]
    open_ = [(x, y) for x, y in pairs if p_tie[x, y] <= settle]
    probs = np.array([p_order[x, y] for x, y in open_])
    least = ""          # with every decision a practical tie there is no least-ordered pair to name
    if open_:
        worst = int(np.argmin(probs))
        x, y = open_[worst]
        if probs[worst] <= settle:
            return False, f"not settled: P({systems[x]} ahead of {systems[y]}) = {probs[worst]:.2f} <= {settle:g}"
        least = f" (least: {systems[x]} over {systems[y]}, {probs[worst]:.3f})"
    ws = _tied_words(tied, systems, ctx.opts.tie_margin)
    return True, (f"{what}{ws[0]} with probability > {settle:g}{least}{ws[1]}: you can stop; "
                  "more comparisons buy little")


def _tied_words(tied, systems, margin: float) -> tuple[str, str]:
    """(" or tied within ±N Elo", "; tied: a ~ b, ...") for the pairs settled as ties, else ("", "")."""
    if not tied:
        return "", ""
    from planner.model.bt import ELO_SCALE

    names = ", ".join(f"{systems[x]} ~ {systems[y]}" for x, y in tied[:5]) + (", …" if len(tied) > 5 else "")
    return f" or tied within ±{margin * ELO_SCALE:.0f} Elo", f"; tied: {names}"
