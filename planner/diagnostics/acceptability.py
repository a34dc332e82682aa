"""Acceptability: pass rates per system with a Wilson interval, and the leader check."""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from planner.diagnostics.records import check_level, value_of
from planner.errors import DataError, check_range
from planner.sentences import acceptability_message
from planner.stats.proportions import proportion


# ------------------------------------------------------------ acceptability
@dataclass(frozen=True)
class SystemAcceptability:
    """Pass rate = passed / (passed + failed); invalid kept and reported."""

    system: str
    passed: int
    failed: int
    invalid: int
    pass_rate: float | None
    ci_low: float | None
    ci_high: float | None
    half_width: float | None


@dataclass(frozen=True)
class Acceptability:
    """Pass rates per system, and the leader check.

    ``leader`` is the first system of the ranking given (``None`` without
    one); ``leader_flagged`` when the leader's pass rate is below
    ``min_pass_rate``; ``message`` then reads e.g.
    ``"gpt-4: ranked first, acceptable 41% ± 7%"`` (± = half the Wilson
    interval width).
    """

    rows: tuple[SystemAcceptability, ...]
    confidence_level: float
    min_pass_rate: float
    leader: str | None
    leader_flagged: bool
    message: str | None


_PASS = {"pass": "pass", True: "pass", "fail": "fail", False: "fail", "invalid": "invalid"}


def acceptability(records: Iterable[Any], ranking: Sequence[str] | None = None,
                  min_pass_rate: float = 0.8, confidence_level: float = 0.95) -> Acceptability:
    """Acceptability pass rate per system with a Wilson interval.

    Parameters
    ----------
    records : iterable, or an AcceptabilityCounts-like object
        An object with ``systems`` and ``passed`` / ``failed`` / ``invalid``
        arrays (rows = systems, e.g. ``planner.store.study.AcceptabilityCounts``),
        or an iterable of ``(system, verdict)`` tuples or judgment objects: only those with
        ``kind == "acceptability"`` are used, the system is ``a`` (or a
        ``system`` attribute). Verdicts: ``"pass"``, ``"fail"``, ``"invalid"``
        (or ``True`` / ``False``).
    ranking : sequence of str, optional
        Systems best first; rows follow it, and its first entry is checked.
    min_pass_rate : float
        The leader is flagged when its pass rate is below this (default 0.8).
    """
    check_level(confidence_level)
    check_range("min_pass_rate", min_pass_rate, 0.0, 1.0, low_open=False, high_open=False)
    tally: dict[str, Counter] = defaultdict(Counter)
    if all(hasattr(records, f) for f in ("systems", "passed", "failed", "invalid")):
        for i, name in enumerate(records.systems):
            tally[name]  # every system gets a row, judged or not
            for key, arr in (("pass", records.passed), ("fail", records.failed), ("invalid", records.invalid)):
                tally[name][key] += int(np.asarray(arr)[i].sum())
        records = ()
    for r in records:
        if isinstance(r, tuple):
            system, verdict = r[0], r[1]
        else:
            if value_of(r, "kind", "regular") != "acceptability":
                continue
            system, verdict = value_of(r, "system", r.a), r.verdict
        key = _PASS.get(verdict) if isinstance(verdict, (str, bool)) else None
        if key is None:
            raise DataError(f"acceptability verdict ({verdict!r}) must be one of pass, fail, invalid")
        tally[system][key] += 1
    order = list(ranking) if ranking is not None else []
    order += sorted(s for s in tally if s not in order)
    rows = []
    for s in order:
        c = tally.get(s, Counter())
        n = c["pass"] + c["fail"]
        p = proportion(c["pass"], n, confidence_level)
        hw = None if p.ci_low is None else (p.ci_high - p.ci_low) / 2.0
        rows.append(SystemAcceptability(s, c["pass"], c["fail"], c["invalid"], p.rate, p.ci_low, p.ci_high, hw))
    leader = ranking[0] if ranking else None
    flagged, message = False, None
    if leader is not None:
        lead = rows[0]
        if lead.pass_rate is not None and lead.pass_rate < min_pass_rate:
            flagged = True
            message = acceptability_message(leader, lead.pass_rate, lead.half_width)
    return Acceptability(tuple(rows), confidence_level, min_pass_rate, leader, flagged, message)
