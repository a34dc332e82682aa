"""Counts.from_arrays: one bincount, checked against a tally written out by hand and a per-record loop."""

import numpy as np
import pytest

from planner.counts import Counts
from planner.errors import DataError


def test_hand_tally():
    # judgments (a, b, outcome, stratum) on systems x, y, z and strata s0, s1:
    # x-y A (s0), x-y A (s0), x-y tie (s1), y-x B (s0), z-x invalid (s1)
    c = Counts.from_arrays(["x", "y", "z"], [0, 0, 0, 1, 2], [1, 1, 1, 0, 0], [0, 0, 2, 1, 3],
                           [0, 0, 1, 0, 1], strata=["s0", "s1"])
    t = c.pair_tensor(by_stratum=True)     # (stratum, i, j, (i wins, j wins, ties, invalid))
    assert t[0, 0, 1].tolist() == [3, 0, 0, 0]      # x beat y twice as A and once when shown right (y-x B)
    assert t[1, 0, 1].tolist() == [0, 0, 1, 0]
    assert t[1, 2, 0].tolist() == [0, 0, 0, 1]
    assert c.totals() == {"A": 2, "B": 1, "tie": 1, "invalid": 1}


def test_matches_record_loop():
    rng = np.random.default_rng(7)
    m, s, n = 6, 3, 5000
    a = rng.integers(0, m, n)
    b = (a + rng.integers(1, m, n)) % m
    o = rng.integers(0, 4, n)
    st = rng.integers(0, s, n)
    systems, strata = [f"s{i}" for i in range(m)], [f"h{k}" for k in range(s)]
    fast = Counts.from_arrays(systems, a, b, o, st, strata=strata)
    verdict = ["A", "B", "tie", "invalid"]
    slow = Counts.from_records(systems, [(systems[i], systems[j], verdict[v], strata[h])
                                         for i, j, v, h in zip(a, b, o, st)], strata=strata)
    assert np.array_equal(fast.pair_tensor(by_stratum=True), slow.pair_tensor(by_stratum=True))
    assert sum(fast.totals().values()) == n


@pytest.mark.parametrize("stratum", [[2], [-1]])
def test_stratum_out_of_range_is_refused(stratum):
    # before: index 2 of 2 strata landed in the next pair's cell (a silent miscount)
    with pytest.raises(DataError, match="stratum index out of range"):
        Counts.from_arrays(["x", "y", "z"], [0], [1], [0], stratum, strata=["s0", "s1"])


def test_lengths_must_agree():
    with pytest.raises(DataError, match="differ in length"):
        Counts.from_arrays(["x", "y"], [0, 0], [1], [0, 0])


def test_empty():
    c = Counts.from_arrays(["x", "y"], [], [], [])
    assert c.totals() == {"A": 0, "B": 0, "tie": 0, "invalid": 0}
