"""The greedy batch on the Gaussian posterior (lazy for the ranking objectives).

Each pick is conditioned on fantasized rank-one updates of the picks before it
(and of pending items). The tunables (pool size, look-ahead, lazy chunk, batch
cap) come from the context's :class:`~planner.acquisition.options.SelectionOptions`.
"""

from __future__ import annotations

import numpy as np

from planner.acquisition.gains import ClosedForm, RankingScorer, chunked
from planner.acquisition.objectives import pair_risk, value_gaussian
from planner.acquisition.options import SelectionOptions
from planner.acquisition.positions import Orders
from planner.acquisition.state import Pick, SelectionContext, SelectionState
from planner.acquisition.ties import rounded


def active_gaussian(ctx: SelectionContext, state: SelectionState, ci, cj, k, rng, capv, orders: Orders, share=None):
    """Greedy batch on the Gaussian posterior with fantasized rank-one updates.

    Entropy/variance/anchor: every candidate re-scored at every pick (closed
    forms, O(C) + one M×M product). Ranking/top-k: a candidate pool of the
    ``max(pool_min, 2k)`` pairs with the largest own-pair gain, then lazy
    greedy (Minoux 1978): stale gains are upper bounds when gains diminish,
    so only the top few are re-scored per pick. ``capv``: picks each
    candidate may take (a candidate at its limit is out of the batch);
    ``orders``: the presentation order each candidate's next pick takes
    (:class:`~planner.acquisition.positions.Orders`); ``share``: the
    clustering's information share of each candidate's picks
    (:class:`~planner.acquisition.clustering.Shares`, None: every pick a fresh cluster).
    Returns ``(pairs, gains, value before the batch, left system of each pick)``.
    """
    perm = rng.permutation(ci.size)         # seeded tie-break between equal gains
    ci, cj = ci[perm], cj[perm]
    capv = np.full(ci.size, np.inf) if capv is None else capv[perm]
    orders = orders.subset(perm)
    share = None if share is None else share.subset(perm)
    # expected information of each order, fixed for the batch
    info = _Info(state.info(ci, cj, np.ones(ci.size)), state.info(ci, cj, -np.ones(ci.size)), orders, share)
    if ctx.objective in ("ranking", "top-k"):
        return _lazy_greedy_ranking(ctx, state, ci, cj, info, k, capv)
    return _greedy_closed_form(ctx, state, ci, cj, info, k, capv)


class _Info:
    """The order and expected information of each candidate's next pick, as picks are taken."""

    def __init__(self, fwd, bwd, orders: Orders, share=None):
        self.fwd, self.bwd, self.orders, self.share = fwd, bwd, orders, share

    def subset(self, idx) -> _Info:
        return _Info(self.fwd[idx], self.bwd[idx], self.orders.subset(idx),
                     None if self.share is None else self.share.subset(idx))

    def now(self, idx=None) -> Pick:
        """The next pick of candidates ``idx`` (all when None)."""
        return Pick.choose(self.fwd, self.bwd, self.orders, self.share, idx)

    def one(self, t: int) -> tuple[float, float]:
        """``(order, information)`` of candidate ``t``'s next pick, as Python floats (the rule of
        :meth:`Orders.signs` for one candidate: no array operation per pick)."""
        o = self.orders
        f_ok, b_ok = o.cap_f[t] > 0, o.cap_b[t] > 0
        if f_ok and b_ok:
            fwd = bool(o.coin[t]) if o.shown_f[t] == o.shown_b[t] else bool(o.shown_f[t] < o.shown_b[t])
        else:
            fwd = bool(f_ok)
        info = float(self.fwd[t] if fwd else self.bwd[t])
        if self.share is not None:
            sh = self.share
            info *= 1.0 if sh.taken[t] < sh.fresh[t] else float(sh.share[t])
        return (1.0 if fwd else -1.0), info

    def take(self, t: int, s: float) -> None:
        self.orders.take(t, s)
        if self.share is not None:
            self.share.take(t)


def _greedy_closed_form(ctx: SelectionContext, state: SelectionState, ci, cj, info: _Info, k, capv):
    """Entropy/variance/anchor: every candidate re-scored at every pick."""
    before = value_gaussian(ctx.objective, ctx.mu, state.cov[:-1, :-1], ctx.top_k, ctx.a_idx,
                             ctx.opts.ranking_risk)
    pairs, gains, left = [], [], []
    cf = ClosedForm(ctx, state)
    caps = capv.copy()
    for _ in range(k):
        pick = info.now()
        s, inf_now = pick.s, pick.info
        g = np.where(caps > 0, rounded(cf.gains(state, ci, cj, s, inf_now)), -np.inf)
        t = int(np.argmax(g))
        caps[t] -= 1
        pairs.append((int(ci[t]), int(cj[t])))
        left.append(int(ci[t]) if s[t] > 0 else int(cj[t]))
        gains.append(float(g[t]))
        info.take(t, s[t])
        cf.update(state, *state.apply(ci[t], cj[t], s[t], inf_now[t]))
    return pairs, gains, before, left


def _lazy_greedy_ranking(ctx: SelectionContext, state: SelectionState, ci, cj, info: _Info, k, capv):
    """Ranking/top-k: a pool of the best own-pair gains, then the lazy greedy with a batch cap."""
    opts = ctx.opts
    rk = RankingScorer(ctx, state)
    before = rk.value()
    pool = _ranking_pool(ctx, state, ci, cj, info, max(opts.pool_min, 2 * k))
    if capv[pool].sum() < k:                # the pool cannot hold the batch: every candidate
        pool = np.arange(ci.size)
    pi, pj, pinfo, pcap = ci[pool], cj[pool], info.subset(pool), capv[pool]
    one = np.zeros(pi.size)

    def score(t):
        st, one[t] = rk.gains(state, pi[t], pj[t], pinfo.now(t), opts.lookahead, one=True)
        return rounded(np.where(np.isnan(st), -np.inf, st))      # a NaN bound would win every argmax
    stale = chunked(score, pi.size)
    cap = pair_batch_cap(k, opts, ci.size)
    taken = np.zeros(pi.size, np.int64)
    pairs: list[tuple[int, int]] = []
    left: list[int] = []
    gains: list[float] = []
    step = -(-k // opts.greedy_steps)       # picks per greedy step: 1 unless the batch is large
    current = before
    while len(pairs) < k:
        best = _lazy_pick(score, stale, taken, pcap, cap, opts)
        if best < 0:                        # every candidate is at its capacity (cannot happen: k fits)
            break
        room = cap - taken[best] if taken[best] < cap else 1
        n = int(min(step, k - len(pairs), pcap[best] - taken[best], room))
        if step == 1:
            s, inf_now = pinfo.one(best)
            _take(pairs, left, pi, pj, best, s)
            pinfo.take(best, s)
            rk.update(*state.apply(pi[best], pj[best], s, inf_now))
            gains.append(float(one[best]))  # fresh: re-scored at this pick
        else:
            # n judgments of one pair: per order one update with their summed information (the same
            # precision as n rank-one updates); the step's exact reduction is shared among them
            got = {1.0: 0.0, -1.0: 0.0}
            for _ in range(n):
                s, inf_now = pinfo.one(best)
                got[s] += inf_now
                _take(pairs, left, pi, pj, best, s)
                pinfo.take(best, s)
            for sign, info_sum in got.items():
                if info_sum > 0:
                    rk.update(*state.apply(pi[best], pj[best], sign, info_sum))
            after = rk.value()
            gains.extend([(current - after) / n] * n)
            current = after
        taken[best] += n
    return pairs, gains, before, left


def _take(pairs: list[tuple[int, int]], left: list[int], pi, pj, t, s) -> None:
    """Record one pick of pool candidate ``t`` in order ``s``."""
    pairs.append((int(pi[t]), int(pj[t])))
    left.append(int(pi[t]) if s > 0 else int(pj[t]))


def _lazy_pick(score, stale, taken, pcap, cap, opts: SelectionOptions) -> int:
    """One pick of the lazy greedy (Minoux 1978); ``stale`` (upper bounds) is updated in place.

    Batch diversity: a pair holding ``cap`` picks of this batch yields to any
    candidate worth at least ``opts.cap_yield`` of its own (look-ahead) score;
    it keeps taking picks when nothing else comes close (the objective says so).
    """
    dead = taken >= pcap
    stale[dead] = -np.inf
    blocked = (taken >= cap) & ~dead
    open_ = ~blocked & ~dead    # may still take picks of this batch without yielding
    fresh = dead.copy()
    best = -1
    while open_.any():
        idx = np.flatnonzero(open_)
        best = int(idx[np.argmax(stale[idx])])
        if fresh[best]:
            break
        masked = np.where(fresh | ~open_, -np.inf, stale)
        top = _top(masked, opts.lazy_chunk)
        top = top[np.isfinite(masked[top])]
        if not top.size:        # no open candidate has a finite bound left: nothing to re-score
            break
        stale[top] = score(top)
        fresh[top] = True
    if blocked.any():           # the best open candidate is fresh: compare it with the capped ones
        bi = np.flatnonzero(blocked)
        # stale scores are upper bounds (gains diminish): when the open candidate beats
        # cap_yield x the largest of them it wins without re-scoring the capped ones
        open_ok = best >= 0 and open_[best] and np.isfinite(stale[best])
        if not (open_ok and stale[best] >= opts.cap_yield * stale[bi].max()):
            stale[bi] = score(bi)
            best = capped_argmax(np.where(dead, -np.inf, stale), taken, cap, opts.cap_yield)
    return best


def _top(x, n):
    """``np.argsort(-x, kind="stable")[:n]`` (largest first, ties by index) without sorting all of ``x``:
    a partition finds the ``n``-th largest value, and only the entries at or above it are sorted."""
    neg = -x
    if neg.size <= n:
        return np.argsort(neg, kind="stable")
    kth = np.partition(neg, n - 1)[n - 1]
    if np.isnan(kth):
        return np.argsort(neg, kind="stable")[:n]
    near = np.flatnonzero(neg <= kth)          # every entry that can be among the first n, in index order
    return near[np.argsort(neg[near], kind="stable")[:n]]


def pair_batch_cap(k, opts: SelectionOptions, n_candidates: int):
    """Picks one pair may take in a batch of ``k`` before it yields (``opts.batch_cap``).

    Never fewer than ``opts.cap_min``, nor than ``opts.cap_even`` times the even share
    ``k / n_candidates``: with few candidate pairs (5 systems: 10 pairs, a batch of 50) a cap of
    5 would force the batch to be round-robin's whatever the objective says.
    """
    if opts.batch_cap is None:
        return k
    even = int(np.ceil(opts.cap_even * k / max(n_candidates, 1)))
    return max(opts.cap_min, int(np.ceil(opts.batch_cap * k)), even)


def capped_argmax(score, taken, cap, cap_yield):
    """Best candidate under the batch cap: a pair holding ``cap`` picks yields to the best
    other candidate unless that one is worth less than ``cap_yield`` of its score."""
    blocked = taken >= cap
    if not blocked.any():
        return int(np.argmax(score))
    t_open = int(np.argmax(np.where(blocked, -np.inf, score))) if not blocked.all() else -1
    t_cap = int(np.argmax(np.where(blocked, score, -np.inf)))
    return t_cap if t_open < 0 or score[t_open] < cap_yield * score[t_cap] else t_open


def _ranking_pool(ctx: SelectionContext, state, ci, cj, info: _Info, size):
    """Indices of the candidates with the largest own-pair misorder gain (ties: the candidates' seeded order)."""
    if ci.size <= size:
        return np.arange(ci.size)
    pick = info.now()
    s, inf_now = pick.s, pick.info
    v = state.var(ci, cj, s)                            # xᵀ Σ x: the verdict's own variance
    c_own = state.var(ci, cj, 0.0 * s)                  # Var(β_i − β_j) now
    cross = c_own + s * (state.cov[ci, -1] - state.cov[cj, -1])     # Cov(β_i − β_j, xᵀθ)
    mu = state.mu if ctx.est_mu is None else ctx.est_mu
    absm = np.abs(mu[ci] - mu[cj])
    s2_new = c_own - inf_now * cross * cross / (1.0 + inf_now * v)
    mode = ctx.opts.ranking_risk
    own = pair_risk(absm, c_own, c_own, mode) - pair_risk(absm, c_own, s2_new, mode)
    return np.sort(np.argsort(-rounded(own), kind="stable")[:size])
