"""Turn result dataclasses into plain JSON-ready Python objects.

Numpy scalars and arrays become Python numbers and lists; non-finite floats
become ``None`` (JSON has no NaN); tuples become lists; dataclasses become dicts
of their fields (a dataclass may define ``to_dict()`` to control this).

The plain types (``str``, ``int``, ``float``, ``bool``, ``None``, ``list``, ``tuple``,
``dict``) are recognised by their exact type first: a report at Arena scale holds
about a million of them (44,850 pair rows, a 300 x 300 win matrix), and the general
checks (``to_dict``, ``is_dataclass``, numpy types) cost several times the
conversion itself.

A class whose ``to_dict()`` already returns such plain values (built with this function or written
out by hand) says so with a class attribute ``JSON_READY = True``; its result is then taken as it
is, not walked a second time (a 300-system report's document holds about a million values, and
the second walk cost 0.17 s).
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any

import numpy as np

_PLAIN = (str, int, bool, type(None))
_FIELDS: dict[type, tuple[str, ...]] = {}   # field names per dataclass type, read once


def jsonable(obj: Any) -> Any:
    t = type(obj)
    if t in _PLAIN:
        return obj
    if t is float:
        return obj if math.isfinite(obj) else None
    if t is list or t is tuple:
        return [jsonable(v) for v in obj]
    if t is dict:
        return {str(k): jsonable(v) for k, v in obj.items()}
    if hasattr(obj, "to_dict") and callable(obj.to_dict):
        return obj.to_dict() if getattr(t, "JSON_READY", False) is True else jsonable(obj.to_dict())
    names = _FIELDS.get(t)
    if names is None and dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        names = _FIELDS[t] = tuple(f.name for f in dataclasses.fields(obj))
    if names is not None:
        return {n: jsonable(getattr(obj, n)) for n in names}
    if isinstance(obj, dict):
        return {str(k): jsonable(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [jsonable(v) for v in obj]
    if isinstance(obj, np.ndarray):
        return jsonable(obj.tolist())
    if isinstance(obj, (np.bool_, bool)):
        return bool(obj)
    if isinstance(obj, (np.integer, int)):
        return int(obj)
    if isinstance(obj, (np.floating, float)):
        f = float(obj)
        return f if math.isfinite(f) else None
    return obj
