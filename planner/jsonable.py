"""Turn result dataclasses into plain JSON-ready Python objects.

Numpy scalars and arrays become Python numbers and lists; non-finite floats
become ``None`` (JSON has no NaN); tuples become lists; dataclasses become dicts
of their fields (a dataclass may define ``to_dict()`` to control this).
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any

import numpy as np


def jsonable(obj: Any) -> Any:
    if hasattr(obj, "to_dict") and callable(obj.to_dict):
        return jsonable(obj.to_dict())
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return {f.name: jsonable(getattr(obj, f.name)) for f in dataclasses.fields(obj)}
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
