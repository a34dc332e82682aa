"""Value equality for frozen dataclasses that hold numpy arrays.

A ``@dataclass(frozen=True)`` keeps ``eq=True``: its generated ``__eq__``
compares field tuples, and ``ndarray == ndarray`` is an array, so
``Counts(...) == Counts(...)`` raised ``ValueError: The truth value of an
array ... is ambiguous``. :func:`array_eq` gives such a class a
working ``__eq__``: same type, and every field equal — arrays by
:func:`numpy.array_equal` (same shape and values; NaN equals NaN in float
arrays), tuples/lists/dicts element by element, anything else by ``==``.
Instances stay unhashable (``__hash__ = None``): the arrays are mutable.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np


def values_equal(x: Any, y: Any) -> bool:
    """Deep equality that understands numpy arrays inside containers and dataclasses."""
    if isinstance(x, np.ndarray) or isinstance(y, np.ndarray):
        if not (isinstance(x, np.ndarray) and isinstance(y, np.ndarray)) or x.shape != y.shape:
            return False
        nan_ok = x.dtype.kind in "fc" and y.dtype.kind in "fc"
        return bool(np.array_equal(x, y, equal_nan=nan_ok))
    if isinstance(x, (tuple, list)):
        return (type(x) is type(y) and len(x) == len(y)
                and all(values_equal(a, b) for a, b in zip(x, y)))
    if isinstance(x, dict):
        return (isinstance(y, dict) and x.keys() == y.keys()
                and all(values_equal(x[k], y[k]) for k in x))
    if dataclasses.is_dataclass(x) and not isinstance(x, type):
        if type(x) is not type(y):
            return False
        try:
            return bool(x == y)
        except ValueError:      # a dataclass with array fields and the generated __eq__
            return fields_equal(x, y)
    try:
        return bool(x == y)
    except ValueError:
        return False


def fields_equal(x: Any, y: Any) -> bool:
    """Same type and every compared dataclass field :func:`values_equal`."""
    if type(x) is not type(y):
        return False
    return all(values_equal(getattr(x, f.name), getattr(y, f.name))
               for f in dataclasses.fields(x) if f.compare)


def array_eq(cls):
    """Class decorator (put it *above* ``@dataclass``): value ``__eq__`` over array fields."""

    def __eq__(self, other):
        if type(other) is not type(self):
            return NotImplemented
        return fields_equal(self, other)

    cls.__eq__ = __eq__
    cls.__hash__ = None
    return cls
