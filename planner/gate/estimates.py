"""The release gate's estimates for one pair: tallies, half-tie score and interval, pooled row, posterior."""

from __future__ import annotations

import numpy as np

from planner.counts import Counts
from planner.gate.results import StratumDecision
from planner.model import bt
from planner.stats.proportions import half_tie_interval, wilson_interval


def pair_tallies(counts: Counts, ci: int, bi: int) -> np.ndarray:
    """(K, 4) wins, losses, ties, invalid of system ``ci`` against ``bi`` per stratum."""
    return counts.pair_tensor(by_stratum=True)[:, ci, bi, :]


def position_shares(counts: Counts, ci: int, bi: int) -> list[tuple[str, float, int]]:
    """(stratum, share of usable judgments with the candidate shown first, usable) per stratum."""
    out = []
    usable = counts.usable
    for k, name in enumerate(counts.strata):
        st = counts.stratum == k
        first = int(usable[st & (counts.a == ci) & (counts.b == bi)].sum())
        second = int(usable[st & (counts.a == bi) & (counts.b == ci)].sum())
        if first + second:
            out.append((name, first / (first + second), first + second))
    return out


def score_interval(w: int, l: int, t: int, confidence_level: float, design_effect: float = 1.0):
    """Half-tie score, tie share and the trinomial score interval (ties' sampling error included;
    widened by ``design_effect`` for clustered judgments)."""
    n = w + l + t
    if n == 0:
        return None, None, None, None
    lo, hi = half_tie_interval(w, l, t, confidence_level, design_effect)
    return (w + t / 2) / n, t / n, lo, hi


def finite(z: float) -> float:
    """Clip an infinite score statistic (zero null variance) to a large finite value for Holm/JSON."""
    return float(min(max(z, -1e6), 1e6))


def pooled_row(rows: list[StratumDecision], confidence_level: float, post: tuple) -> StratumDecision:
    """Stratified estimate ``sum w_h S_h`` over strata with data (weights renormalised).

    With one stratum carrying data (and weight) the pooled row *is* that stratum's estimate and
    interval. Otherwise: variance ``sum w_h^2 deff_h V_h / N_h`` with ``V_h = pW + pT/4 - S_h²`` the
    plug-in variance of one judgment's score (ties' sampling error included) and ``deff_h`` the
    stratum's design effect; Wilson interval with the effective sample size ``S (1 - S) / Var``
    (Korn & Graubard 1998), capped at the number of usable judgments.
    """
    have = [r for r in rows if r.n > 0]
    tot = [int(sum(getattr(r, f) for r in rows)) for f in ("wins", "losses", "ties", "invalid")]
    n_all = tot[0] + tot[1] + tot[2]
    s = lo = hi = tie = None
    wsum = sum(r.weight for r in have)
    weighted = [r for r in have if r.weight > 0]
    if len(weighted) == 1:
        one = weighted[0]
        s, lo, hi = one.win_rate, one.ci_low, one.ci_high
        tie = tot[2] / n_all
    elif have and wsum > 0:
        w = [r.weight / wsum for r in have]
        s = float(sum(wi * r.win_rate for wi, r in zip(w, have)))
        var = 0.0
        for wi, r in zip(w, have):
            v = (r.wins + r.ties / 4) / r.n - r.win_rate ** 2
            var += wi * wi * max(v, 0.0) * r.design_effect / r.n
        n_eff = n_all if var <= 0 else min(n_all, s * (1 - s) / var)
        lo, hi = wilson_interval(s * n_eff, n_eff, confidence_level) if n_eff > 0 else (None, None)
        tie = tot[2] / n_all
    elif have:  # every stratum with data has weight 0: fall back to the raw pooled score
        s, tie, lo, hi = score_interval(tot[0], tot[1], tot[2], confidence_level)
    return StratumDecision("pooled", 1.0, tot[0], tot[1], tot[2], tot[3], n_all, s, lo, hi, tie,
                           posterior_mean=post[0], posterior_low=post[1], posterior_high=post[2],
                           p_posterior=post[3],
                           note="re-weighted to the stratum weights; informative, not part of the gate")


def posterior_columns(fit, ci: int, bi: int, weights: np.ndarray, theta: float, confidence_level: float):
    """Per-stratum and pooled posterior summaries of ``P(A) + P(tie)/2`` at gamma = 0."""
    draws = fit.stratum_draws  # (S, K, M)
    pa, _, pt = bt.outcome_probs(draws[:, :, ci] - draws[:, :, bi], fit.posterior.nu)
    win = pa + pt / 2  # (S, K)
    pooled = win @ weights
    q = (1 - confidence_level) / 2

    def summ(x):
        lo, hi = np.quantile(x, [q, 1 - q])
        return float(x.mean()), float(lo), float(hi), float(np.mean(x >= theta))

    return [summ(win[:, k]) for k in range(win.shape[1])], summ(pooled)
