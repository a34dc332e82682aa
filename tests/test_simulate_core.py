"""planner.simulation: the simulator's core takes records and arrays, never files: the same runs serve the CLI,
the forecast and the tests without touching a disk.

The replay pool is built from records in core (:func:`pool_from_records`); the workflow only
reads the file. These tests pin that the two paths give the same pool, that the grouping by
pair is the hand-counted one, and that the workflow's names are the core's objects (one home).
"""

from __future__ import annotations

import json

import numpy as np
import pytest

import planner.simulation as core
import planner.workflows.simulate as wf
from planner.errors import DataError
from planner.simulation.replay import ReplayPool, pool_from_records, replay_truth
from planner.simulation.truth import truth_from_counts

RECORDS = [  # x shown first unless a_position says right
    {"a": "x", "b": "y", "verdict": "A"},
    {"a": "y", "b": "x", "verdict": "B"},
    {"a": "x", "b": "z", "verdict": "tie"},
    {"a": "z", "b": "y", "verdict": "invalid"},
    {"a": "x", "b": "y", "verdict": "A", "a_position": "right"},
]


def test_pool_from_records_by_hand():
    pool = pool_from_records(RECORDS, "mem")
    assert pool.systems == ("x", "y", "z") and pool.source == "mem"
    # record 5: a = x shown right, so left = y (1), right = x (0), and "A" (x won) becomes 1 (right won)
    assert pool.left.tolist() == [0, 1, 0, 2, 1]
    assert pool.right.tolist() == [1, 0, 2, 1, 0]
    assert pool.outcome.tolist() == [0, 1, 2, 3, 1]
    # pairs (0,1): records 1, 2, 5; (0,2): record 3; (1,2): record 4 — in file order
    assert {p: v.tolist() for p, v in pool.by_pair.items()} == {(0, 1): [0, 1, 4], (0, 2): [2], (1, 2): [3]}


def test_the_workflow_reads_the_file_into_the_same_pool(tmp_path):
    path = tmp_path / "pool.jsonl"
    path.write_text("".join(json.dumps({"id": str(i), "prompt": "p1", **r}) + "\n" for i, r in enumerate(RECORDS)),
                    encoding="utf-8")
    from_file = wf.read_replay(path)
    assert isinstance(from_file, ReplayPool)
    assert from_file == pool_from_records(RECORDS, str(path))


def test_one_system_is_refused_naming_the_source():
    with pytest.raises(DataError, match=r"^mem: a replay pool needs judgments of at least two systems$"):
        pool_from_records([{"a": "x", "b": "x", "verdict": "A"}], "mem")


def test_replay_truth_is_the_fit_of_the_pool():
    pool = pool_from_records(RECORDS * 4, "mem")
    truth = replay_truth(pool)
    again = truth_from_counts(pool.counts())
    assert truth == again
    assert truth.pair_prob.shape == (3, 3)
    np.testing.assert_allclose(truth.pair_prob + truth.pair_prob.T, 1.0, atol=1e-12)  # P(i>j) + P(j>i) = 1


def test_the_simulators_names_live_in_the_core():
    """One home: the workflow keeps only what it defines or uses; the simulator's pieces live in the core."""
    for name in ("Judge", "Truth", "ReplayPool", "SimulationSpec", "Strategy", "make_truth", "parse_strategies",
                 "parse_target"):
        assert getattr(core, name).__module__.startswith("planner.simulation."), name
        assert name not in getattr(wf, "__all__", ()), name
    assert replay_truth.__module__ == "planner.simulation.replay"
