"""The selection's fast paths (issue 14, Arena scale) against the code they replace.

Four changes in planner/acquisition, each meant to give the same floats:
``_Ranking.gains`` gathers the moved pairs' covariance differences with ``np.take``
and finds them with ``flatnonzero`` + ``divmod`` instead of fancy indexing and a 2-D
``nonzero``; ``_State.apply`` scales the outer product in place; the lazy greedy's
top candidates come from a partition (``greedy._top``) instead of a full stable
sort; ``state._capacity`` builds its pair index from ``tolist()``. The old code
is written out below; a whole ``select_pairs`` run with the old
code patched in must give exactly the same picks, gains and values (ranking and
top-k, with judged and pending counts, capacities and a batch cap).
"""

from __future__ import annotations

import numpy as np
import pytest

from planner.acquisition import gains as gains_mod
from planner.acquisition import greedy, select_pairs, state
from planner.acquisition.objectives import pair_risk
from planner.counts import Counts
from planner.errors import UsageError
from planner.model import fit


def _old_gains(self, state_, ci, cj, info, lookahead=(1,), one=False):
    if self.kr.size == 0:
        z = np.zeros(ci.size)
        return (z, z) if one else z
    c = state_.cov[:, ci] - state_.cov[:, cj]
    ar = np.arange(ci.size)
    v = c[ci, ar] - c[cj, ar]
    dc2 = c[self.kr] - c[self.lr]
    dc2 *= dc2
    rows_l, cols_l, after_s2, seg = [], [], [], [0]
    look = tuple(lookahead) + ((1,) if one and 1 not in lookahead else ())
    fs = [n * info / (1.0 + n * info * v) for n in look]
    f_max = np.max(fs, axis=0)
    r_all, c_all = np.nonzero(dc2 * f_max > self.sparse_rel * self.s2[:, None])
    d_all, s2_all = dc2[r_all, c_all], self.s2[r_all]
    for f in fs:
        drop = f[c_all] * d_all
        keep = drop > self.sparse_rel * s2_all
        rows_l.append(r_all[keep])
        cols_l.append(c_all[keep])
        after_s2.append(s2_all[keep] - drop[keep])
        seg.append(seg[-1] + rows_l[-1].size)
    rows = np.concatenate(rows_l)
    stale = self._stale(rows)
    every = np.concatenate([rows, stale])
    est = None if self.est is None else self.est[every]
    risk = pair_risk(self.absm[every], self.s0_2[every], np.concatenate(after_s2 + [self.s2[stale]]),
                     self.mode, est)
    after = risk[:rows.size]
    if stale.size:
        self.r[stale] = risk[rows.size:]
        self.s2_r[stale] = self.s2[stale]
    red = self.r[rows] - after
    best = g1 = None
    for t, n in enumerate(look):
        lo, hi = seg[t], seg[t + 1]
        g = np.bincount(cols_l[t], weights=red[lo:hi], minlength=ci.size) / n
        if n in lookahead:
            best = g if best is None else np.maximum(best, g)
        if n == 1:
            g1 = g
    return (best, g1) if one else best


def _old_apply(self, i, j, info):
    c = self.cov[:, i] - self.cov[:, j]
    f = info / (1.0 + info * (c[i] - c[j]))
    self.cov -= f * np.outer(c, c)
    return c, f


def _old_top(x, n):
    return np.argsort(-x, kind="stable")[:n]


def _old_capacity(capacity, ci, cj):
    if capacity is None:
        return None
    capv = np.full(ci.size, np.inf)
    index = {(int(i), int(j)): t for t, (i, j) in enumerate(zip(ci, cj))}
    for p, n in capacity.items():
        t = index.get((min(int(p[0]), int(p[1])), max(int(p[0]), int(p[1]))))
        if t is not None:
            if n is None or n < 0:
                raise UsageError(f"capacity of pair {p!r} ({'missing' if n is None else n}) must be >= 0")
            capv[t] = float(n)
    return capv


def test_capacity_is_the_old_mapping():
    rng = np.random.default_rng(5)
    ci, cj = np.triu_indices(12, 1)
    ci, cj = ci[::2].astype(np.int64), cj[::2].astype(np.int64)   # not every pair is a candidate
    for _ in range(50):
        cap = {}
        for _ in range(int(rng.integers(0, 40))):
            x, y = (int(v) for v in rng.integers(-1, 13, 2))   # either order, some outside the range
            cap[(x, y) if rng.random() < 0.5 else (np.int64(x), np.int64(y))] = int(rng.integers(0, 5))
        np.testing.assert_array_equal(state._capacity(cap, ci, cj), _old_capacity(cap, ci, cj))
    assert state._capacity(None, ci, cj) is None
    named = (int(cj[2]), int(ci[2]))   # a candidate, named in the other order
    for bad in (None, -1):
        with pytest.raises(UsageError) as new:
            state._capacity({(0, 1): 2, named: bad}, ci, cj)
        with pytest.raises(UsageError) as old:
            _old_capacity({(0, 1): 2, named: bad}, ci, cj)
        assert str(new.value) == str(old.value)


def test_top_is_the_stable_argsort_prefix():
    rng = np.random.default_rng(3)
    for trial in range(400):
        size = int(rng.integers(1, 60))
        x = rng.integers(-4, 5, size).astype(float)           # many ties
        x[rng.random(size) < 0.3] = -np.inf
        if trial % 5 == 0:
            x[rng.random(size) < 0.2] = np.nan
        if trial % 7 == 0:
            x[:] = -np.inf
        for n in (1, 3, 8, size, size + 4):
            np.testing.assert_array_equal(greedy._top(x, n), _old_top(x, n), err_msg=f"{x} {n}")


@pytest.fixture(scope="module")
def problem():
    """40 systems, every pair judged unevenly (some barely), some pending; the Laplace posterior."""
    rng = np.random.default_rng(11)
    m = 40
    systems = tuple(f"s{k:02d}" for k in range(m))
    truth = np.linspace(-1.5, 1.5, m)
    i, j = np.triu_indices(m, 1)
    per = rng.integers(1, 30, i.size)
    a, b = np.repeat(i, per), np.repeat(j, per)
    o = (rng.random(a.size) > 1.0 / (1.0 + np.exp(-(truth[a] - truth[b])))).astype(int)
    judged = Counts.from_arrays(systems, a, b, o)
    pend = rng.choice(i.size, 30, replace=False)
    pending = Counts.from_arrays(systems, i[pend], j[pend], np.full(pend.size, 2))
    post = fit(judged, engine="laplace", seed=0, progressbar=False).posterior
    capacity = {(int(x), int(y)): int(rng.integers(0, 6)) for x, y in zip(i, j)}
    return post, judged, pending, capacity


@pytest.mark.parametrize("objective, top_k", [("ranking", None), ("top-k", 5)])
def test_selection_identical_to_the_old_code(problem, monkeypatch, objective, top_k):
    post, judged, pending, capacity = problem

    def run():
        return select_pairs(post, 150, objective=objective, top_k=top_k, judged=judged, pending=pending,
                            rng=np.random.default_rng(4), capacity=capacity)

    new = run()
    monkeypatch.setattr(gains_mod._Ranking, "gains", _old_gains)
    monkeypatch.setattr(state._State, "apply", _old_apply)
    monkeypatch.setattr(greedy, "_top", _old_top)
    monkeypatch.setattr(state, "_capacity", _old_capacity)
    old = run()
    assert new.pairs == old.pairs and len(set(new.pairs)) > 20
    np.testing.assert_array_equal(new.gains, old.gains)
    assert (new.expected_reduction, new.value_before, new.value_after) == \
        (old.expected_reduction, old.value_before, old.value_after)
