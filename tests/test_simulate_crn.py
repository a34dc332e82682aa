"""Common random numbers: the n-th judgment of a pair is the same whichever strategy asks for it."""

from __future__ import annotations

import json

import numpy as np
import pytest

from planner.simulation.judge import Judge
from planner.simulation.loop import _judge_synthetic, _rngs, run_one
from planner.simulation.replay import ReplayWalk, replay_truth
from planner.simulation.spec import SimulationSpec, parse_strategies
from planner.simulation.streams import COLUMNS, ColumnRng, PairStreams
from planner.simulation.truth import make_truth
from planner.workflows.simulate import read_replay


def _seq(rep=0):
    return _rngs(7, 0, rep)[2]


def test_the_verdict_seed_depends_on_the_repetition_not_the_strategy():
    a = np.random.default_rng(_rngs(7, 0, 3)[2]).random(4)
    b = np.random.default_rng(_rngs(7, 5, 3)[2]).random(4)
    c = np.random.default_rng(_rngs(7, 0, 4)[2]).random(4)
    assert np.array_equal(a, b) and not np.array_equal(a, c)
    # the truth and the run's own generator are what they were before the verdict streams
    t_old = np.random.default_rng(np.random.SeedSequence(7).spawn(2)[0].spawn(4)[3]).random(3)
    assert np.array_equal(_rngs(7, 2, 3)[0].random(3), t_old)


def test_a_pairs_nth_row_does_not_depend_on_the_order_of_requests():
    one, two = PairStreams(_seq()), PairStreams(_seq())
    o1, r1 = one.next(np.array([[0, 1], [2, 1], [1, 0]]))
    _o2a, r2a = two.next(np.array([[1, 2]]))
    _o2b, r2b = two.next(np.array([[1, 0], [0, 1]]))
    assert o1.tolist() == [[0, 1], [1, 2], [0, 1]]
    assert np.array_equal(r1[1], r2a[0])                # (1, 2), first time
    assert np.array_equal(r1[[0, 2]], r2b)              # (0, 1), first and second time
    assert not np.array_equal(r1[0], r1[2]) and r1.shape == (3, COLUMNS)


def test_streams_longer_than_a_block_are_one_stream():
    whole = PairStreams(_seq()).next(np.tile([[3, 4]], (150, 1)))[1]
    s = PairStreams(_seq())
    parts = np.vstack([s.next(np.tile([[4, 3]], (n, 1)))[1] for n in (10, 60, 80)])
    assert np.array_equal(whole, parts)
    assert len({tuple(r) for r in whole}) == 150         # no block repeated


def test_the_synthetic_judge_gives_the_same_verdicts_to_the_same_picks():
    spec = SimulationSpec("linear", parse_strategies("active,round-robin"), n_systems=6, budget=100, batch=10)
    truth = make_truth("linear", 6, np.random.default_rng(0))
    picks = np.array([[0, 1], [2, 3], [0, 1], [4, 5]])
    a = _judge_synthetic(spec, truth, picks, PairStreams(_seq()))
    # another strategy asks for the same comparisons in another order and orientation, in two batches
    s = PairStreams(_seq())
    b = _judge_synthetic(spec, truth, np.array([[5, 4], [1, 0]]), s) + \
        _judge_synthetic(spec, truth, np.array([[3, 2], [1, 0]]), s)
    assert a == b


def test_column_rng_hands_out_its_columns_in_turn_and_no_more():
    u = np.arange(6.0).reshape(3, 2) / 10
    rng = ColumnRng(u)
    assert rng.random(3).tolist() == [0.0, 0.2, 0.4] and rng.random(3).tolist() == [0.1, 0.3, 0.5]
    with pytest.raises(ValueError):
        rng.random(3)
    with pytest.raises(ValueError):
        ColumnRng(u).random(2)
    # Judge draws one uniform per column: with a position effect of 0 and no ties, u < P(left wins)
    truth = make_truth("linear", 2, np.random.default_rng(0))
    p = 1 / (1 + np.exp(-(truth.strengths[0] - truth.strengths[1])))
    out = Judge(tie_rate=0.0).judge(truth, np.zeros(2, int), np.ones(2, int),
                                    ColumnRng(np.array([[p - 1e-6, 0, 0], [p + 1e-6, 0, 0]])))
    assert out.tolist() == [0, 1]


def test_replay_walks_each_pairs_pool_in_the_same_order_for_every_strategy(tmp_path):
    rows = [{"id": f"j{k}", "prompt": f"p{k}", "a": a, "b": b, "verdict": "AAB"[k % 3]}
            for k, (a, b) in enumerate([("x", "y"), ("y", "z"), ("x", "z")] * 20)]
    path = tmp_path / "pool.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    pool = read_replay(path)
    first = ReplayWalk(pool, np.random.default_rng(_rngs(0, 0, 1)[2]))
    second = ReplayWalk(pool, np.random.default_rng(_rngs(0, 3, 1)[2]))
    assert all(np.array_equal(first.order[p], second.order[p]) for p in first.order)
    # a whole run: round-robin at strategy index 0 and 1 (own tie-break streams) judges each of the
    # 3 pairs once per batch of 3, so it must draw the same verdicts at both indexes, batch after batch
    rr = parse_strategies("round-robin")[0]
    spec = SimulationSpec("replay", (rr, rr), budget=30, batch=3, reps=1, truth=replay_truth(pool), replay=pool)
    a, b = run_one(spec, 0, 0), run_one(spec, 1, 0)
    assert a.totals == b.totals and np.array_equal(a.values["tau"], b.values["tau"], equal_nan=True)
    assert np.array_equal(a.values["rmse"], b.values["rmse"])
