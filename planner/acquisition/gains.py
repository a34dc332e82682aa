"""Expected reductions of the objective on the Gaussian posterior, per candidate pair.

:class:`RankingScorer` keeps the misorder sum of the ``ranking``/``top-k``
objectives over the relevant system pairs (risks re-evaluated lazily);
:class:`ClosedForm` scores the ``entropy``/``variance``/``anchor`` objectives
in closed form. :func:`score_sequence` scores a given sequence of picks.
"""

from __future__ import annotations

import numpy as np

from planner.acquisition.objectives import (
    diff_var,
    logistic,
    pair_risk,
    pair_weights,
    sum_to_zero_basis,
    tie_probability,
    value_gaussian,
)
from planner.acquisition.state import Pick, SelectionContext, SelectionState


class RankingScorer:
    """Misorder-sum bookkeeping over the relevant system pairs."""

    def __init__(self, ctx: SelectionContext, state: SelectionState):
        mu = ctx.mu
        self.mode = "oracle" if ctx.est_mu is not None else ctx.opts.ranking_risk
        self.sparse_rel = ctx.opts.sparse_rel
        eps = ctx.opts.risk_eps
        w = pair_weights(mu, ctx.objective, ctx.top_k)
        v0 = diff_var(ctx.cov0)
        gap = mu[:, None] - mu[None, :]
        kr, lr = np.nonzero((w > 0) & (v0 > 0))
        # the risk only falls as information arrives: a pair below risk_eps stays there
        est_mu = ctx.est_mu
        if est_mu is not None:   # the oracle: the risk under the estimate, not the truth
            x = est_mu[:, None] - est_mu[None, :]
            keep = ((pair_risk(x[kr, lr], v0[kr, lr], v0[kr, lr] / 2, "bayes") > eps)
                    | (x[kr, lr] * gap[kr, lr] <= 0))
            self.est = x[kr, lr][keep]
        else:
            keep = pair_risk(gap[kr, lr], v0[kr, lr], v0[kr, lr], self.mode) > eps
            if ctx.opts.tie_margin > 0:     # a pair settled as a practical tie is no longer worth a judgment
                keep &= tie_probability(gap[kr, lr], np.sqrt(v0[kr, lr]), ctx.opts.tie_margin) <= ctx.opts.settle_prob
            self.est = None
        kr, lr = kr[keep], lr[keep]
        self.kr, self.lr = kr, lr
        self.absm = gap[kr, lr]
        self.s0_2 = v0[kr, lr]
        vcur = diff_var(state.cov[:-1, :-1])
        self.s2 = np.minimum(vcur[kr, lr], self.s0_2)
        self.r = self._risk(self.s2)
        self.s2_r = self.s2.copy()          # the variance each stored risk was evaluated at
        self.gk = state.cov[kr, -1] - state.cov[lr, -1]     # Cov(β_k − β_l, γ), kept along with s2
        # the rows of each system (CSR: rows of system k are sys_rows[sys_ptr[k]:sys_ptr[k + 1]])
        ends = np.concatenate([kr, lr])
        order = np.argsort(ends, kind="stable")
        self.sys_rows = np.concatenate([np.arange(kr.size)] * 2)[order]
        self.sys_ptr = np.searchsorted(ends[order], np.arange(mu.size + 1))
        deg = np.diff(self.sys_ptr)
        self.sys_pad = np.full((mu.size, max(int(deg.max(initial=0)), 1)), -1, dtype=np.int64)
        slot = np.arange(self.sys_rows.size) - np.repeat(self.sys_ptr[:-1], deg)
        self.sys_pad[np.repeat(np.arange(mu.size), deg), slot] = self.sys_rows
        self._t = self._s2_at_t = None
        self._look_arrays: dict = {}

    def _risk(self, s2, col=False):
        if col:
            est = None if self.est is None else self.est[:, None]
            return pair_risk(self.absm[:, None], self.s0_2[:, None], s2, self.mode, est)
        return pair_risk(self.absm, self.s0_2, s2, self.mode, self.est)

    def value(self):
        self._refresh(np.arange(self.r.size))
        return float(self.r.sum())

    def _stale(self, rows):
        """Those of ``rows`` whose variance fell by more than ``sparse_rel`` since their risk was stored."""
        s2 = self.s2[rows]
        return np.unique(rows[self.s2_r[rows] - s2 > self.sparse_rel * s2])

    def _refresh(self, rows):
        stale = self._stale(rows)
        if stale.size:
            est = None if self.est is None else self.est[stale]
            self.r[stale] = pair_risk(self.absm[stale], self.s0_2[stale], self.s2[stale], self.mode, est)
            self.s2_r[stale] = self.s2[stale]

    def gains(self, state: SelectionState, ci, cj, pick: Pick, lookahead=(1,), one=False):
        """Expected reduction of the misorder sum for candidates (ci, cj), their next picks ``pick``.

        With ``lookahead`` (L_1, L_2, ...) the score is the best reduction per
        judgment, ``max_L [R − R(after L judgments on the pair)] / L`` (the
        KG(*) remedy for myopia, Frazier & Powell 2010); ``(1,)`` is the plain
        one-judgment gain. With ``one`` also the one-judgment gain (``1`` must
        be among the look-aheads): ``(score, gain)``. Every look-ahead's risks
        go through one :func:`pair_risk` call (the per-call overhead of the
        special functions dominated at batch sizes of a few candidates).

        One judgment has design vector ``x = e_i − e_j + s e_γ`` (its order
        ``pick.s``). ``L > 1`` judgments of a pair that can be shown both ways
        (``pick.free``) alternate orders, so γ cancels from their sum: they are
        scored along ``d = e_i − e_j`` with the mean information of the two
        orders (``pick.bal``); a pair held to one order is scored along ``x``,
        whose information about ``β_i − β_j`` is capped by what is known of γ.
        """
        if self.kr.size == 0:
            z = np.zeros(ci.size)
            return (z, z) if one else z
        look = tuple(lookahead) + ((1,) if one and 1 not in lookahead else ())
        r_all, c_all, d_all, fs = self._moved(state, ci, cj, pick, look)
        s2_all = self.s2[r_all]
        # every look-ahead at once, look-major then row-major (the order of one pass per look-ahead)
        drop = np.stack([f for _, f in fs])[:, c_all] * np.stack([d_all[many] for many, _ in fs])
        keep = drop > self.sparse_rel * s2_all
        rows = np.broadcast_to(r_all, keep.shape)[keep]
        bins = (np.arange(len(look))[:, None] * ci.size + c_all)[keep]
        after_s2 = (s2_all - drop)[keep]
        # stored risks gone stale (see update) are refreshed in the same call
        stale = self._stale(rows)
        every = np.concatenate([rows, stale])
        est = None if self.est is None else self.est[every]
        risk = pair_risk(self.absm[every], self.s0_2[every], np.concatenate([after_s2, self.s2[stale]]),
                         self.mode, est)
        after = risk[:rows.size]
        if stale.size:
            self.r[stale] = risk[rows.size:]
            self.s2_r[stale] = self.s2[stale]
        red = self.r[rows] - after
        g = np.bincount(bins, weights=red, minlength=len(look) * ci.size).reshape(len(look), ci.size)
        g = g / self._looks(look)      # (bincount of nothing is an integer array)
        best = g[[t for t, n in enumerate(look) if n in lookahead]].max(axis=0)
        return (best, g[look.index(1)]) if one else best

    def _moved(self, state: SelectionState, ci, cj, pick: Pick, look):
        """The (pair row, candidate) entries a candidate's look-aheads may move by more than
        ``sparse_rel`` of their variance, row-major; their squared covariance moves per direction
        (False: along ``x``; True: ``L > 1`` judgments along ``d`` for free pairs) and the
        ``(direction, f)`` of each look-ahead. :meth:`gains` keeps, per look-ahead, the entries
        that do move that much.

        A pair row (k, l) moves by ``f (c_k − c_l)²`` ≤ ``2 f (c_k² + c_l²)``, so it can pass only if
        one of its systems has ``4 f c²`` above the smallest threshold of its rows: only the rows
        of those systems (a candidate's own and its strongly correlated ones, usually a few
        dozen of thousands at Arena scale) are returned, in the order a dense pass over every
        row would give them, with the same floats (the selection is the dense one, bit for bit).
        The test uses ``16 f c²``: a factor 2 for the thresholds' bound (:meth:`_thresholds`) and 2
        that keeps rounding from dropping a row.
        """
        cov, size = state.cov, ci.size
        ar = np.arange(size)
        s, info = pick.s, pick.info
        c_d = np.take(cov, ci, axis=1)      # Σ d
        c_d -= np.take(cov, cj, axis=1)
        c_x = c_d + cov[:, -1:] * s          # Σ x
        v_x = c_x[ci, ar] - c_x[cj, ar] + s * c_x[-1]
        n = self._looks(look)
        many_free = bool(n.max() > 1 and pick.free.any())
        f_x = n * info / (1.0 + n * info * v_x)                       # (L, C) along x
        if many_free:
            info_b = np.where(pick.free, pick.bal, info)
            v_b = np.where(pick.free, c_d[ci, ar] - c_d[cj, ar], v_x)
            f_b = n * info_b / (1.0 + n * info_b * v_b)
            fs = [(False, f_x[t]) if look[t] == 1 else (True, f_b[t]) for t in range(len(look))]
        else:
            fs = [(False, f_x[t]) for t in range(len(look))]
        m = cov.shape[0] - 1
        t_sys = self._thresholds()[:, None]
        touched = np.square(c_x[:m]) * (16.0 * np.max([f for mm, f in fs if not mm], axis=0)) > t_sys
        if many_free:
            c_b = np.where(pick.free, c_d[:m], c_x[:m])
            touched |= np.square(c_b) * (16.0 * np.max([f for mm, f in fs if mm], axis=0)) > t_sys
        sysk, cand = np.nonzero(touched)
        rows = self.sys_pad[sysk]                                      # (T, max degree), -1 padded
        mask = np.zeros(self.kr.size * size + 1, dtype=bool)           # the last cell takes the padding
        mask[np.where(rows >= 0, rows * size + cand[:, None], -1)] = True
        mask[-1] = False
        r_all, c_all = np.divmod(np.flatnonzero(mask), size)          # row-major, as a dense pass
        flat = c_d.ravel()
        dc_d = flat[self.kr[r_all] * size + c_all] - flat[self.lr[r_all] * size + c_all]
        dc_x = dc_d + self.gk[r_all] * s[c_all]
        d_all = {False: dc_x * dc_x}
        if many_free:
            dc_b = np.where(pick.free[c_all], dc_d, dc_x)
            d_all[True] = dc_b * dc_b
        # only the entries some look-ahead moves by more than sparse_rel (gains applies each one's own test)
        thr = self.sparse_rel * self.s2[r_all]
        hit = None
        for many, d in d_all.items():
            h = d * np.max([f for mm, f in fs if mm == many], axis=0)[c_all] > thr
            hit = h if hit is None else hit | h
        return r_all[hit], c_all[hit], {k: d[hit] for k, d in d_all.items()}, fs

    def _looks(self, look) -> np.ndarray:
        """The look-ahead sizes as a float column (kept per tuple)."""
        got = self._look_arrays.get(look)
        if got is None:
            got = self._look_arrays[look] = np.array(look, dtype=float)[:, None]
        return got

    def _thresholds(self):
        """Per system, a lower bound of ``sparse_rel · s2`` over its pair rows (inf for a system in none):
        the smallest at the last evaluation, which stays a bound within a factor 2 (:meth:`_moved` has
        that slack) until some row's variance has halved since (:meth:`update` watches)."""
        if self._t is None:
            thr = (self.sparse_rel * self.s2)[self.sys_rows]
            t = np.full(self.sys_ptr.size - 1, np.inf)
            nonempty = np.diff(self.sys_ptr) > 0
            t[nonempty] = np.minimum.reduceat(thr, self.sys_ptr[:-1][nonempty])
            self._t, self._s2_at_t = t, 0.5 * self.s2
        return self._t

    def update(self, c, f):
        """A pick took ``f c cᵀ`` off the covariance: new variances; risks re-evaluated lazily.

        A pair's stored risk is re-evaluated (by :meth:`gains` or :meth:`value`,
        in their own ``pair_risk`` call) once its variance has fallen by more
        than ``sparse_rel`` of itself since its last evaluation (the rule
        :meth:`gains` uses for which pairs a candidate moves); until then it is
        at most that much stale.
        """
        dc = c[self.kr] - c[self.lr]
        self.s2 = self.s2 - f * dc * dc
        self.gk = self.gk - (f * c[-1]) * dc
        if self._t is not None and np.any(self.s2 < self._s2_at_t):
            self._t = None


class ClosedForm:
    """Gains of the entropy / variance / anchor objectives for all candidates.

    On the joint ``Σ`` of ``(β, γ)`` with ``x = e_i − e_j + s e_γ``, ``c = Σ x``,
    ``f = I / (1 + I xᵀΣx)`` and ``c_β`` the strengths' part of ``c``:
    ``entropy`` ``−½ log(1 − f c_βᵀ Σ_ββ⁺ c_β)`` (the strengths' marginal entropy;
    ``½ log(1 + I v)`` when γ is known); ``variance`` ``f ‖c_β‖² = f xᵀ G x`` with
    ``G = Σ_{·β} Σ_{β·}``; ``anchor`` ``f Σ_c w_c (c_c − c_anchor)² = f xᵀ G x`` with
    ``G = Dᵀ diag(w) D``, ``D = Σ_{β·} − 1 Σ_{anchor,·}``, ``w_c = (p_c (1 − p_c))²``.
    ``G`` (and for entropy ``Σ_ββ⁺``) is formed once and then updated in O(M²) per pick.
    """

    def __init__(self, ctx: SelectionContext, state: SelectionState):
        self.objective = ctx.objective
        self.a = ctx.a_idx
        cov = state.cov
        m = cov.shape[0] - 1
        if self.objective == "variance":
            self.g = cov[:, :m] @ cov[:m, :]
        elif self.objective == "anchor":
            p = logistic(ctx.mu - ctx.mu[self.a])
            self.wv = (p * (1 - p)) ** 2
            self.dm = cov[:m] - cov[self.a][None, :]
            self.g = (self.dm * self.wv[:, None]).T @ self.dm
        elif self.objective == "entropy":
            q = sum_to_zero_basis(m)
            self.pinv = q @ np.linalg.inv(q.T @ cov[:m, :m] @ q) @ q.T       # Σ_ββ⁺
            self.h = self.pinv @ cov[:m, m]                                   # Σ_ββ⁺ Σ_βγ

    def gains(self, state: SelectionState, ci, cj, s, info):
        v = state.var(ci, cj, s)
        f = info / (1.0 + info * v)
        if self.objective == "entropy":
            cov = state.cov
            m = cov.shape[0] - 1
            q = state.var(ci, cj, 0.0 * s) + 2.0 * s * (cov[ci, m] - cov[cj, m]) + s * s * (cov[:m, m] @ self.h)
            return -0.5 * np.log1p(-np.minimum(f * q, 1.0 - 1e-15))
        g, gd = self.g, np.diag(self.g)
        return f * (gd[ci] + gd[cj] - 2.0 * g[ci, cj] + s * s * gd[-1] + 2.0 * s * (g[ci, -1] - g[cj, -1]))

    def update(self, state: SelectionState, c, f):
        """Σ had ``f c cᵀ`` subtracted; bring ``G`` along (``state.cov`` is already updated)."""
        m = c.size - 1
        cb = c[:m]
        if self.objective == "variance":
            sc = state.cov[:, :m] @ cb + f * (cb @ cb) * c          # Σ_old[:, β] c_β
            self.g = self.g - f * (np.outer(sc, c) + np.outer(c, sc)) + f * f * (cb @ cb) * np.outer(c, c)
        elif self.objective == "anchor":
            u = cb - cb[self.a]
            z = self.dm.T @ (self.wv * u)
            self.g = self.g - f * (np.outer(c, z) + np.outer(z, c)) + f * f * (u @ (self.wv * u)) * np.outer(c, c)
            self.dm = self.dm - f * np.outer(u, c)
        elif self.objective == "entropy":
            # (A − f c cᵀ)⁺ = A⁺ + f A⁺c cᵀA⁺ / (1 − f cᵀA⁺c), c in the range of A (sums to zero)
            pc = self.pinv @ cb
            self.pinv = self.pinv + np.outer(pc, pc) * (f / (1.0 - f * (cb @ pc)))
            self.h = self.pinv @ state.cov[:m, m]


def chunked(fn, n, size=64):
    return np.concatenate([fn(np.arange(s, min(n, s + size))) for s in range(0, n, size)]) \
        if n else np.zeros(0)


def gaussian_gains(ctx, state, ci, cj, orders):
    """One-judgment gains of every candidate in the order its next pick takes (``orders``)."""
    pick = Pick.of(state, ci, cj, orders)
    if ctx.objective in ("ranking", "top-k"):
        rk = RankingScorer(ctx, state)
        return chunked(lambda t: rk.gains(state, ci[t], cj[t], pick.subset(t)), ci.size)
    return ClosedForm(ctx, state).gains(state, ci, cj, pick.s, pick.info)


def _current_value(ctx, state, rk=None):
    if rk is not None:
        return rk.value()
    return value_gaussian(ctx.objective, ctx.mu, state.cov[:-1, :-1], ctx.top_k, ctx.a_idx, ctx.opts.ranking_risk)


def score_sequence(ctx: SelectionContext, state: SelectionState, pairs, left):
    """Gains of a given sequence of picks (``left``: the system shown left in each) under the objective."""
    ranking = ctx.objective in ("ranking", "top-k")
    rk = RankingScorer(ctx, state) if ranking else None
    cf = None if ranking else ClosedForm(ctx, state)
    before = _current_value(ctx, state, rk)
    gains = []
    for (i, j), lf in zip(pairs, left):
        ci, cj, s = np.array([i]), np.array([j]), np.array([1.0 if lf == i else -1.0])
        info = state.info(ci, cj, s)
        if rk is not None:       # ranking and top-k: the pair-risk ranking; else the closed form
            g = rk.gains(state, ci, cj, Pick(s, info, np.zeros(1, bool), info))[0]
            c, f = state.apply(i, j, s[0], info[0])
            rk.update(c, f)
        else:
            assert cf is not None    # built whenever rk is not
            g = cf.gains(state, ci, cj, s, info)[0]
            cf.update(state, *state.apply(i, j, s[0], info[0]))
        gains.append(float(g))
    return gains, before
