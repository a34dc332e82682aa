"""Frozen dataclasses holding numpy arrays compare by value (``Counts == Counts`` must not raise
the ambiguous-truth-value error of an array comparison)."""

from __future__ import annotations

import numpy as np
import pytest

from planner.counts import Counts
from planner.equality import values_equal
from planner.simulation.replay import ReplayPool
from planner.simulation.truth import Truth

SYSTEMS = ("x", "y", "z")


def _counts(extra=()):
    recs = [("x", "y", "A"), ("y", "x", "tie"), ("z", "x", "invalid"), *extra]
    return Counts.from_records(SYSTEMS, recs)


def test_counts_compare_by_value():
    a, b = _counts(), _counts()
    assert a is not b and a == b and a == b
    assert a != _counts([("x", "z", "B")])                       # one more judgment
    assert a != Counts.from_records(("x", "y", "w"), [("x", "y", "A"), ("y", "x", "tie"),
                                                       ("w", "x", "invalid")])  # other systems
    assert Counts.empty(SYSTEMS) == Counts.empty(SYSTEMS)
    assert Counts.empty(SYSTEMS) != Counts.empty(SYSTEMS, ("s1", "s2"))
    assert a.pooled() == a.pooled()
    assert (a == "not counts") is False


def test_counts_are_unhashable():
    with pytest.raises(TypeError, match="unhashable"):
        hash(_counts())


def test_simulate_records_compare_by_value():
    t1 = Truth(SYSTEMS, np.array([0.5, 0.0, -0.5]), "thurstone", np.array([np.nan, 1.0, 2.0]))
    t2 = Truth(SYSTEMS, np.array([0.5, 0.0, -0.5]), "thurstone", np.array([np.nan, 1.0, 2.0]))
    assert t1 == t2                                               # NaN equals NaN in float arrays
    assert t1 != Truth(SYSTEMS, np.array([0.5, 0.0, -0.4]), "thurstone", t1.scores)
    assert t1 != Truth(SYSTEMS, t1.strengths, "bt", t1.scores)
    idx = {(0, 1): np.array([0, 1])}
    p1 = ReplayPool(SYSTEMS[:2], np.array([0, 1]), np.array([1, 0]), np.array([0, 2]), idx)
    p2 = ReplayPool(SYSTEMS[:2], np.array([0, 1]), np.array([1, 0]), np.array([0, 2]), {(0, 1): np.array([0, 1])})
    assert p1 == p2
    assert p1 != ReplayPool(SYSTEMS[:2], np.array([0, 1]), np.array([1, 0]), np.array([0, 2]),
                            {(0, 1): np.array([1, 0])})


def test_values_equal_shapes_and_types():
    assert not values_equal(np.zeros(2), np.zeros(3))
    assert not values_equal(np.zeros(2), [0.0, 0.0])
    assert values_equal({"a": (np.arange(3),)}, {"a": (np.arange(3),)})
    assert not values_equal((1, 2), [1, 2])
