"""Replays in the planned presentation order: per-order capacity, fixed-order variants, the note.

References: counts by hand on small pools written here; the walk checked draw by draw against
the pool's own rows.
"""

from __future__ import annotations

import json

import numpy as np
import pytest
from typer.testing import CliRunner

from planner.simulation.loop import run_one
from planner.simulation.replay import ReplayWalk, fixed_order, order_balance, pool_from_records, replay_truth
from planner.simulation.spec import SimulationSpec, parse_strategies


def _records(n=6, both=True):
    """3 systems, every pair n times, the first system winning 2 of 3; both orders alternate (or x
    always left of y and z, y of z)."""
    out = []
    for k in range(n):
        for a, b in (("x", "y"), ("y", "z"), ("x", "z")):
            left, right = (a, b) if (not both or k % 2 == 0) else (b, a)
            first_wins = k % 3 != 0
            verdict = "A" if first_wins == (left == a) else "B"
            out.append({"id": f"{a}{b}{k}", "prompt": f"q{k // 2}", "a": left, "b": right, "verdict": verdict})
    return out


def test_fixed_order_keeps_one_order_per_pair_by_a_seeded_coin():
    pool = pool_from_records(_records(8), "t")
    assert len(pool.by_order()) == 6
    v = fixed_order(pool, np.random.default_rng(0))
    assert v.size == 12 and len(v.by_order()) == 3 and set(v.by_pair) == set(pool.by_pair)
    # the same coin gives the same variant; the kept judgments are the pool's own rows in one order
    w = fixed_order(pool, np.random.default_rng(0))
    assert np.array_equal(v.left, w.left) and np.array_equal(v.outcome, w.outcome)
    for (a, b), idx in v.by_order().items():
        assert idx.size == 4 and all(v.left[t] == a and v.right[t] == b for t in idx)
    # another seed may keep other orders (over 20 seeds both choices occur for a pair)
    kept = {tuple(sorted(fixed_order(pool, np.random.default_rng(s)).by_order())) for s in range(20)}
    assert len(kept) > 1
    assert v.prompt is not None and v.prompt.size == v.size


def test_order_balance_and_its_note():
    both = pool_from_records(_records(8), "t")
    assert order_balance(both).note() is None
    assert order_balance(both).minority == pytest.approx(0.5)
    one = pool_from_records(_records(8, both=False), "t")
    bal = order_balance(one)
    assert (bal.pairs, bal.one_order, bal.skewed, bal.minority) == (3, 3, 3, 0.0)
    assert bal.note().startswith("3 of 3 pairs are judged in one presentation order only")
    # 1 of 4 judgments in the rarer order is not skewed (a quarter); 1 of 5 is
    rows = _records(8, both=False)[:9] + [{"id": "r", "prompt": "q9", "a": "y", "b": "x", "verdict": "B"}]
    bal = order_balance(pool_from_records(rows, "t"))
    assert (bal.one_order, bal.skewed) == (2, 2)
    rows.append({"id": "s", "prompt": "q9", "a": "x", "b": "y", "verdict": "A"})
    assert order_balance(pool_from_records(rows, "t")).skewed == 3


def test_walk_offers_only_the_orders_left_and_draws_in_the_planned_one():
    pool = pool_from_records(_records(4), "t")
    walk = ReplayWalk(pool, np.random.default_rng(1))
    x, y = pool.systems.index("x"), pool.systems.index("y")
    p = (min(x, y), max(x, y))
    assert walk.order_capacity()[(x, y)] == 2 and walk.order_capacity()[(y, x)] == 2
    got, n = walk.draw([p, p, p], [y, y, y], pool.systems)          # y shown left three times: two exist
    assert n == 2 and got.a.tolist() == [y] and int(got.usable.sum()) == 2
    assert (y, x) not in walk.order_capacity() and walk.capacity()[p] == 2
    # the drawn verdicts are the pool's own rows of that order, in the walk's order
    rows = walk.order[(y, x)]
    assert sorted(pool.outcome[rows].tolist()) == sorted([0] * int(got.a_wins.sum()) + [1] * int(got.b_wins.sum()))
    # clusters: both draws were of prompt q0/q1 (one each); one more draw from (x, y) repeats one of them
    cl = walk.clusters(icc=0.3)
    assert cl.icc == 0.3 and cl.fresh[p] == 0
    assert cl.share[p] == pytest.approx((1 - 0.3) / (1 + 0.3))          # every verdict left joins a cluster of 1
    assert cl.deff[p] == pytest.approx(1.0)                              # two clusters of one


def test_fixed_order_run_never_asks_for_a_missing_order():
    pool = pool_from_records(_records(40, both=False), "t")
    spec = SimulationSpec("replay", parse_strategies("active,round-robin"), n_systems=3, budget=90, batch=10,
                          reps=1, truth=replay_truth(pool), replay=pool)
    for s in (0, 1):
        tr = run_one(spec, s, 0)
        assert tr.totals["A"] + tr.totals["B"] == 90                    # every pick found a verdict


def test_simulate_replay_says_when_orders_are_unbalanced(tmp_path):
    from cli.main import app

    path = tmp_path / "one_order.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in _records(30, both=False)))
    r = CliRunner().invoke(app, ["simulate", "--replay", str(path), "--reps", "1", "--budget", "30", "--batch",
                                 "10", "--strategies", "round-robin", "--target", "tau=0.5"])
    assert r.exit_code == 0, r.output
    assert "note: 3 of 3 pairs are judged in one presentation order only" in r.output
    balanced = tmp_path / "both.jsonl"
    balanced.write_text("".join(json.dumps(r) + "\n" for r in _records(30)))
    r = CliRunner().invoke(app, ["simulate", "--replay", str(balanced), "--reps", "1", "--budget", "30",
                                 "--batch", "10", "--strategies", "round-robin", "--target", "tau=0.5"])
    assert r.exit_code == 0 and "presentation order" not in r.output
