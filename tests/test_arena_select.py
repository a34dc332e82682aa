"""The selection's fast paths (Arena scale: hundreds of systems) against the code they replace.

The lazy greedy's top candidates come from a partition (``greedy._top``) instead of a
full stable sort; ``state.pair_capacity`` builds its pair index from ``tolist()``. The old
code is written out below and must give the same answers. (The whole-selection
comparison with the old ``RankingScorer.gains``/``SelectionState.apply`` went when the objective
moved to the joint Gaussian of strengths and position effect: there is no old code
for it to be identical to.)
"""

from __future__ import annotations

from itertools import groupby

import numpy as np
import pytest

from planner.acquisition import greedy, state
from planner.errors import UsageError


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
        np.testing.assert_array_equal(state.pair_capacity(cap, ci, cj), _old_capacity(cap, ci, cj))
    assert state.pair_capacity(None, ci, cj) is None
    named = (int(cj[2]), int(ci[2]))   # a candidate, named in the other order
    for bad in (None, -1):
        with pytest.raises(UsageError) as new:
            state.pair_capacity({(0, 1): 2, named: bad}, ci, cj)
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


def _dense_moved(self, state, ci, cj, pick, look):
    """The moved (row, candidate) entries by a dense pass over every pair row: the reference
    ``RankingScorer._moved`` must equal bit for bit (it evaluates only the rows of touched systems)."""
    cov, ar = state.cov, np.arange(ci.size)
    s, info = pick.s, pick.info
    c = cov[:, ci] - cov[:, cj]
    v_d = c[ci, ar] - c[cj, ar]
    v_x = state.var(ci, cj, s)
    dc_d = c[self.kr] - c[self.lr]
    dc_x = dc_d + self.gk[:, None] * s
    many_free = any(n > 1 for n in look) and pick.free.any()
    info_b = np.where(pick.free, pick.bal, info)
    v_b = np.where(pick.free, v_d, v_x)
    fs = [(False, n * info / (1.0 + n * info * v_x)) if n == 1 or not many_free
          else (True, n * info_b / (1.0 + n * info_b * v_b)) for n in look]
    dc2 = {False: dc_x * dc_x}
    if many_free:
        dc_b = np.where(pick.free, dc_d, dc_x)
        dc2[True] = dc_b * dc_b
    thr = self.sparse_rel * self.s2[:, None]
    hit = np.zeros(dc_x.shape, bool)
    for many, d in dc2.items():
        hit |= d * np.max([f for mm, f in fs if mm == many], axis=0) > thr
    r_all, c_all = np.nonzero(hit)
    return r_all, c_all, {k: d[r_all, c_all] for k, d in dc2.items()}, fs


@pytest.fixture(scope="module")
def problem():
    """40 systems, every pair judged unevenly (some barely, some in one order only), some pending;
    the Laplace posterior (with its position effect)."""
    from planner.counts import Counts
    from planner.model import fit

    rng = np.random.default_rng(11)
    m = 40
    systems = tuple(f"s{k:02d}" for k in range(m))
    truth = np.linspace(-1.5, 1.5, m)
    i, j = np.triu_indices(m, 1)
    per = rng.integers(1, 30, i.size)
    flip = rng.random(i.size) < 0.5
    a, b = np.repeat(np.where(flip, j, i), per), np.repeat(np.where(flip, i, j), per)
    o = (rng.random(a.size) > 1.0 / (1.0 + np.exp(-(truth[a] - truth[b] + 0.4)))).astype(int)
    judged = Counts.from_arrays(systems, a, b, o)
    pend = rng.choice(i.size, 30, replace=False)
    pending = Counts.from_arrays(systems, i[pend], j[pend], np.full(pend.size, 2))
    post = fit(judged, engine="laplace", seed=0, progressbar=False).posterior
    orders = {}
    for x, y in zip(i.tolist(), j.tolist()):
        orders[(x, y)] = int(rng.integers(0, 6))
        if rng.random() < 0.7:            # the rest: one order only
            orders[(y, x)] = int(rng.integers(0, 6))
    return post, judged, pending, orders


@pytest.mark.parametrize("objective, top_k", [("ranking", None), ("top-k", 5)])
def test_sparse_rows_give_the_dense_selection_bit_for_bit(problem, monkeypatch, objective, top_k):
    from planner.acquisition import gains as gains_mod
    from planner.acquisition import select_pairs

    post, judged, pending, orders = problem

    def run():
        return select_pairs(post, 150, objective=objective, top_k=top_k, judged=judged, pending=pending,
                            rng=np.random.default_rng(4), order_capacity=orders)

    new = run()
    monkeypatch.setattr(gains_mod.RankingScorer, "_moved", _dense_moved)
    old = run()
    assert new.pairs == old.pairs and new.left == old.left and len(set(new.pairs)) > 20
    np.testing.assert_array_equal(new.gains, old.gains)
    assert (new.expected_reduction, new.value_before, new.value_after) == \
        (old.expected_reduction, old.value_before, old.value_after)


def test_large_batches_take_a_few_judgments_per_greedy_step(problem):
    # a batch larger than greedy_steps takes ceil(k / greedy_steps) judgments of the chosen pair per step;
    # the design it ends at is as good as the one-at-a-time greedy's (objective after the batch, evaluated
    # afresh on the fantasized picks, within 0.5 % of the reduction; measured 0.07 % at Arena scale), and
    # the reported reduction is that objective's exact change
    from planner.acquisition import SelectionOptions, select_pairs
    from planner.acquisition.gains import RankingScorer
    from planner.acquisition.state import setup

    post, judged, pending, _orders = problem

    def after(sel):
        su = setup(post, "ranking", None, None, judged, pending, None, None, None, SelectionOptions())
        for (i, j), lf in zip(sel.pairs, sel.left):
            s = 1.0 if lf == i else -1.0
            su.state.apply(i, j, s, float(su.state.info(np.array([i]), np.array([j]), np.array([s]))[0]))
        return RankingScorer(su.ctx, su.state).value()

    one = select_pairs(post, 300, judged=judged, pending=pending, rng=np.random.default_rng(4))
    three = select_pairs(post, 300, judged=judged, pending=pending, rng=np.random.default_rng(4),
                         options=SelectionOptions(greedy_steps=100))
    assert len(three.pairs) == 300
    runs = [len(list(g)) for _, g in groupby(three.pairs)]
    assert max(runs) >= 3 and sum(r % 3 == 0 for r in runs) >= 0.8 * len(runs)
    red_one, red_three = one.value_before - after(one), three.value_before - after(three)
    assert red_three == pytest.approx(red_one, rel=0.005)
    # information is re-read per pick by after(); the greedy fixes it at the batch start: 1 % agreement
    assert three.expected_reduction == pytest.approx(red_three, rel=0.01)
