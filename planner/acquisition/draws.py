"""The draws path: expected reductions by importance re-weighting of posterior draws.

Used by ``select_pairs``/``candidate_gains`` when posterior draws (e.g. NUTS)
are given; within a batch the picks are conditioned with the Gaussian
rank-one updates (see :func:`active_draws`).
"""

from __future__ import annotations

import numpy as np
from scipy.special import ndtr

from planner.acquisition.gains import ClosedForm, RankingScorer, gaussian_gains
from planner.acquisition.greedy import capped_argmax, pair_batch_cap
from planner.acquisition.objectives import logistic, pair_weights, sum_to_zero_basis
from planner.acquisition.positions import Orders
from planner.acquisition.state import Pick, SelectionContext, SelectionState
from planner.acquisition.ties import rounded
from planner.model import bt


class DrawsScorer:
    """Expected reductions by importance re-weighting of posterior draws.

    For a candidate, in the order its next pick takes, and each outcome ``o``
    (A / B / tie) the draws are re-weighted by ``P(o | β_s)`` (γ at its mean); the expected objective after
    the judgment is ``Σ_o P(o) value(w_o)`` (``ranking``/``top-k`` in the
    ``truth`` mode: ``Σ_kl E_θ[Φ(−|θ_kl| / s'_kl)]`` with ``s'²`` the expected
    re-weighted variance). Earlier picks and pending items are fantasized as
    Gaussian pseudo-observations centred on the current weighted mean,
    ``w_s ∝ w_s exp(−½ I (β_si − β_sj − m_ij)²)`` — the draws analogue of the
    rank-one precision update. ``pairs`` (kr, lr) restricts the misorder sum
    (the Gaussian path's relevant pairs).
    """

    def __init__(self, ctx: SelectionContext, draws, pending, pairs=None):
        self.ctx = ctx
        b = draws - draws.mean(axis=1, keepdims=True)
        self.b = b
        self.w = np.full(b.shape[0], 1.0 / b.shape[0])
        if pending is not None and pending.n_cells:
            n = (pending.usable + pending.invalid).astype(float)
            for a, bb, nn in zip(pending.a, pending.b, n):
                if nn > 0:
                    self.fantasize(a, bb, 1.0, nn)       # a cell's system a is shown left
        self.rel = None
        if ctx.objective in ("ranking", "top-k"):
            if pairs is None:
                pairs = np.nonzero(pair_weights(ctx.mu, ctx.objective, ctx.top_k) > 0)
            kr, lr = pairs
            self.rel = (kr, lr, None, b[:, kr] - b[:, lr])

    def current(self):
        if self.rel is not None and self.ctx.opts.ranking_risk == "truth":
            return _draws_truth_risk(self.w[None, None, :], np.ones((1, 1)), self.rel)[0]
        return float(_draws_value(self.ctx, self.b, self.w[None, :], self.rel)[0])

    def gains(self, ci, cj, signs):
        """Expected reduction from one judgment in orders ``signs`` (+1: ``ci`` left), per candidate."""
        cur = self.current()
        s = self.b.shape[0]
        chunk = max(1, 2_000_000 // (6 * s))
        out = []
        for lo in range(0, len(ci), chunk):
            rows, probs = _outcome_rows(self.ctx, self.b, self.w, ci[lo:lo + chunk], cj[lo:lo + chunk],
                                        signs[lo:lo + chunk])
            if self.rel is not None and self.ctx.opts.ranking_risk == "truth":
                after = _draws_truth_risk(rows, probs, self.rel)
            else:
                c = rows.shape[0]
                vals = _draws_value(self.ctx, self.b, rows.reshape(c * 3, s), self.rel).reshape(c, 3)
                after = (probs * np.where(probs > 0, vals, 0.0)).sum(axis=1)   # no ties when ν = 0
            out.append(cur - after)
        return np.concatenate(out) if out else np.zeros(0)

    def fantasize(self, i, j, sign, n=1.0):
        info = n * _draws_info(self.ctx, self.b, self.w, i, j, sign)
        self.w = _pseudo_obs(self.b, self.w, i, j, info)


def _draws_value(ctx, draws, wmat, rel=None):
    """Objective value for each row of weights ``wmat`` (n, S) over ``draws``."""
    obj = ctx.objective
    if obj in ("ranking", "top-k"):
        # P(misorder) from the re-weighted moments of β_k − β_l, Φ(−|mean| / sd):
        # the empirical min(P, 1 − P) of indicators would add O(S^-1/2) noise that the
        # min turns into a positive bias of every gain
        diffs = rel[3]
        mean = wmat @ diffs
        sd = np.sqrt(np.clip(wmat @ (diffs * diffs) - mean * mean, 1e-300, None))
        return ndtr(-np.abs(mean) / sd).sum(axis=1)
    if obj == "variance":
        mean = wmat @ draws
        return (wmat @ (draws * draws) - mean * mean).sum(axis=1)
    if obj == "anchor":
        x = logistic(draws - draws[:, [ctx.a_idx]])
        mean = wmat @ x
        return (wmat @ (x * x) - mean * mean).sum(axis=1)
    q = sum_to_zero_basis(draws.shape[1])
    z = draws @ q
    out = np.empty(wmat.shape[0])
    for r, w in enumerate(wmat):
        if not w.any():
            out[r] = 0.0
            continue
        zc = z - w @ z
        out[r] = 0.5 * np.linalg.slogdet((zc * w[:, None]).T @ zc)[1]
    return out


def _outcome_rows(ctx, b, w, ci, cj, signs):
    """Re-weighted draws per candidate × outcome in its order ``signs``: rows (C, 3, S), P (C, 3)."""
    d = b[:, ci] - b[:, cj]                      # (S, C)
    rows, probs = [], []
    # the outcomes of the system shown left: A when ci is left (+1), B when cj is
    for p_o in bt.outcome_probs(signs * d + ctx.gamma, ctx.nu):
        wo = w[:, None] * p_o
        tot = wo.sum(axis=0)
        rows.append((wo / np.where(tot > 0, tot, 1.0)).T)
        probs.append(tot)
    return np.stack(rows, axis=1), np.stack(probs, axis=1)


def _draws_truth_risk(rows, probs, rel):
    """``truth`` risk on draws, per candidate: Σ_kl E_θ[Φ(−|θ_kl| / s'_kl)].

    ``rows`` (C, O, S) re-weighted draws with outcome probabilities ``probs``
    (C, O). ``θ`` runs over the batch-start draws (the truth as the posterior
    sees it); ``s'²`` is the expected posterior variance of ``β_k − β_l``
    after the judgment: ``Σ_o P(o) Var_{w_o}`` (law of total variance).
    """
    diffs = rel[3]
    mean = rows @ diffs                                  # (C, O, P)
    var = np.einsum("co,cop->cp", probs, rows @ (diffs * diffs) - mean * mean)
    sd = np.sqrt(np.clip(var, 1e-300, None))
    return np.array([ndtr(-np.abs(diffs) / sd_c).mean(axis=0).sum() for sd_c in sd])


def _draws_info(ctx, b, w, i, j, sign):
    d = b[:, i] - b[:, j]
    return float(w @ bt.information(sign * d + ctx.gamma, ctx.nu))


def _pseudo_obs(b, w, i, j, info):
    d = b[:, i] - b[:, j]
    m = w @ d
    lw = np.log(np.maximum(w, 1e-300)) - 0.5 * info * (d - m) ** 2
    lw -= lw.max()
    w = np.exp(lw)
    return w / w.sum()


def active_draws(ctx: SelectionContext, state: SelectionState, draws, ci, cj, k, pending, capv, orders: Orders,
                 shares=None):
    """Greedy batch scored on the draws, conditioned with Gaussian updates.

    Each candidate's one-judgment gain ``g_draws`` is computed once on the
    re-weighted draws (:class:`DrawsScorer`; with more than ``draws_pool``
    candidates, the ``draws_pool`` with the largest Gaussian gains). Within
    the batch, the picks before are accounted for by the Gaussian rank-one
    updates of the joint ``(β, γ)``: a candidate's score is ``g_draws · G_t / G_0``,
    with ``G_t`` its Gaussian score (with look-ahead for ranking) after the earlier
    picks and ``G_0`` before them. (Fantasizing on the draws themselves either leaves
    the mean in place while shrinking the variance — the gain of the same
    pair then grows — or, with sampled outcomes, lets the fantasized mean
    drift; both spoil the batch.)
    """
    ranking = ctx.objective in ("ranking", "top-k")
    rk = RankingScorer(ctx, state) if ranking else None
    capv = np.full(ci.size, np.inf) if capv is None else capv
    opts = ctx.opts
    if ci.size > opts.draws_pool:
        g = gaussian_gains(ctx, state, ci, cj, orders)
        keep = np.sort(np.argsort(-rounded(g), kind="stable")[:opts.draws_pool])
        if capv[keep].sum() >= k:
            ci, cj, capv, orders = ci[keep], cj[keep], capv[keep], orders.subset(keep)
            shares = None if shares is None else shares.subset(keep)
    sc = DrawsScorer(ctx, draws, pending, None if rk is None else (rk.kr, rk.lr))
    before = sc.current()
    g_draws = sc.gains(ci, cj, orders.signs())
    one = np.ones(ci.size)
    fwd, bwd = state.info(ci, cj, one), state.info(ci, cj, -one)
    cf = None if ranking else ClosedForm(ctx, state)

    def gauss(look):
        pick = Pick.choose(fwd, bwd, orders, shares)
        if ranking:
            return rk.gains(state, ci, cj, pick, look)
        return cf.gains(state, ci, cj, pick.s, pick.info)
    g0, g0_one = gauss(opts.lookahead), gauss((1,))
    pairs, gains, left = [], [], []
    cap, taken = pair_batch_cap(k, opts, ci.size), np.zeros(ci.size, np.int64)
    for _ in range(k):
        with np.errstate(divide="ignore", invalid="ignore"):
            score = np.where(g0 > 0, g_draws * gauss(opts.lookahead) / g0, 0.0)
            one_g = np.where(g0_one > 0, g_draws * gauss((1,)) / g0_one, 0.0)
        score = rounded(np.where(taken >= capv, -np.inf, score))
        t = capped_argmax(score, taken, cap, opts.cap_yield) if ranking else int(np.argmax(score))
        pick = Pick.choose(fwd, bwd, orders, shares, np.array([t]))
        taken[t] += 1
        pairs.append((int(ci[t]), int(cj[t])))
        left.append(int(ci[t]) if pick.s[0] > 0 else int(cj[t]))
        gains.append(float(one_g[t]))
        orders.take(t, pick.s[0])
        if shares is not None:
            shares.take(t)
        c, f = state.apply(ci[t], cj[t], pick.s[0], pick.info[0])
        if rk is not None:       # ranking and top-k: the pair-risk ranking; else the closed form
            rk.update(c, f)
        elif cf is not None:
            cf.update(state, c, f)
    return pairs, gains, before, left
