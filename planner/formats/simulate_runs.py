"""The simulator's results file (``simulate --out``/``--resume``): one finished run per JSON line.

Each line carries ``format`` (``planner-simulate-run/1``), the simulation's
``fingerprint`` (:func:`planner.services.simulation_tasks.fingerprint`), the
strategy index and repetition, and the run's trace; floats round-trip exactly
(NaN as ``NaN``). A torn last line (the process was killed mid-write) is
ignored on reading; any other bad line is an error naming ``file:line``.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from planner.errors import DataError, UsageError, quote
from planner.simulation.loop import Trace

__all__ = ["FORMAT", "read_results", "trace_line"]

FORMAT = "planner-simulate-run/1"
_REQUIRED = {"fingerprint", "s_index", "strategy", "rep", "spent", "values", "exhausted", "totals"}


def trace_line(fp: str, s_index: int, trace) -> str:
    """One finished run as a JSON line (floats round-trip exactly; NaN as ``NaN``)."""
    doc = {"format": FORMAT, "fingerprint": fp, "s_index": s_index, "strategy": trace.strategy,
           "rep": trace.rep, "spent": [int(x) for x in trace.spent],
           "values": {k: [float(x) for x in v] for k, v in trace.values.items()},
           "exhausted": bool(trace.exhausted), "totals": trace.totals,
           "fallbacks": trace.fallbacks, "fallback_reason": trace.fallback_reason}
    return json.dumps(doc) + "\n"


def _trace_from(doc: dict) -> Trace:
    return Trace(doc["strategy"], int(doc["rep"]), np.asarray(doc["spent"], dtype=np.int64),
                 {k: np.asarray(v, dtype=float) for k, v in doc["values"].items()},
                 bool(doc["exhausted"]), dict(doc["totals"]), int(doc.get("fallbacks", 0)),
                 str(doc.get("fallback_reason", "")))


def read_results(path: Path, fp: str, spec) -> dict[tuple[int, int], Trace]:
    """Finished runs in ``path`` keyed by (strategy index, rep). A torn last line
    (the process was killed mid-write) is ignored; anything else wrong is an error."""
    done: dict[tuple[int, int], Trace] = {}
    lines = path.read_text(encoding="utf-8").splitlines()
    for n, text in enumerate(lines, 1):
        if not text.strip():
            continue
        try:
            doc = json.loads(text)
            if doc.get("format") != FORMAT or not doc.keys() >= _REQUIRED:
                raise ValueError
            trace = _trace_from(doc)
            s_index, rep = int(doc["s_index"]), int(doc["rep"])
        except (ValueError, AttributeError, TypeError):
            if n == len(lines):
                continue  # torn last line: that run is simply run again
            raise DataError(f"{path}:{n}: not a planner simulate results line ({quote(text[:80])})") from None
        if doc["fingerprint"] != fp:
            raise UsageError(f"`resume`: {path}:{n} was written by a different simulation (fingerprint "
                             f"{doc['fingerprint']}, this one {fp}); use the same options or another `out` file",
                             parameters=('resume', 'out'))
        if s_index < len(spec.strategies) and rep < spec.reps:
            done[(s_index, rep)] = trace
    return done
