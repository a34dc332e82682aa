"""planner.jsonable: the exact-type fast path gives what the general checks gave (commit b1b322f, written out)."""

from __future__ import annotations

import dataclasses
import json
import math
from typing import Any, NamedTuple

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from planner.jsonable import jsonable


def reference(obj: Any) -> Any:
    """planner.jsonable.jsonable as of b1b322f (no fast path)."""
    if hasattr(obj, "to_dict") and callable(obj.to_dict):
        return reference(obj.to_dict())
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return {f.name: reference(getattr(obj, f.name)) for f in dataclasses.fields(obj)}
    if isinstance(obj, dict):
        return {str(k): reference(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [reference(v) for v in obj]
    if isinstance(obj, np.ndarray):
        return reference(obj.tolist())
    if isinstance(obj, (np.bool_, bool)):
        return bool(obj)
    if isinstance(obj, (np.integer, int)):
        return int(obj)
    if isinstance(obj, (np.floating, float)):
        f = float(obj)
        return f if math.isfinite(f) else None
    return obj


@dataclasses.dataclass(frozen=True)
class Row:
    name: str
    value: float | None
    items: tuple


class Pair(NamedTuple):
    x: int
    y: float


class WithDict:
    def to_dict(self):
        return {"arr": np.array([1.5, np.nan]), "n": np.int64(3)}


leaves = st.one_of(st.none(), st.booleans(), st.integers(-10**20, 10**20), st.floats(allow_nan=True),
                   st.text(max_size=5), st.sampled_from([np.float64(np.inf), np.int32(-7), np.bool_(True),
                                                         np.float32(0.25), np.array([[1, 2], [3, 4]]),
                                                         Pair(1, float("nan")), WithDict()]))
trees = st.recursive(leaves, lambda kids: st.one_of(
    st.lists(kids, max_size=4), st.lists(kids, max_size=4).map(tuple),
    st.dictionaries(st.one_of(st.text(max_size=3), st.integers(0, 9)), kids, max_size=4),
    st.tuples(st.text(max_size=3), kids, st.lists(kids, max_size=3).map(tuple)).map(lambda t: Row(*t))),
    max_leaves=25)


@settings(max_examples=300, deadline=None)
@given(trees)
def test_fast_path_equals_the_general_one(tree):
    got, want = jsonable(tree), reference(tree)
    assert json.dumps(got, sort_keys=True) == json.dumps(want, sort_keys=True)
    assert json.dumps(got, allow_nan=False)   # no NaN or inf reaches the JSON
