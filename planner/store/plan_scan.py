"""One scan of the judgments for `next-batch`'s plan: counts by stratum, pair-prompt usage, strata.

The plan needs :meth:`Study.counts` (by stratum), :meth:`Study.pair_prompt_usage_codes`
and, for both counts, :meth:`Study.strata`. Each of those reads the whole judgments
table (at Arena scale, 1,000,000 rows: ~1.8 s, ~1 s and ~0.3 s twice). Here one
``group_concat`` scan (:func:`planner.store.scans.int_columns`) reads every judgment
once as a single integer::

    key = ((a * span + b) * q + ord + 1) * 32 + right * 16 + verdict * 4 + counted * 2 + pairwise

(``b`` 0 for single-response judgments, ``ord + 1`` 0 for a prompt the study does not
hold, ``counted``: the kind is one of ``kinds``), and the three answers are cut from
it with array operations. Each answer equals the method's own (``tests/test_arena_scan.py``
checks them against those methods).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from planner.counts import Counts
from planner.store import scans
from planner.store.judged import stratum_lut
from planner.vocabulary import COUNTED_KINDS


@dataclass(frozen=True)
class PlanScan:
    """What one scan gives: ``strata`` (:meth:`Study.strata`), ``judged``
    (:meth:`Study.counts` by stratum) and ``usage`` (:meth:`Study.pair_prompt_usage_codes`)."""

    strata: tuple[str, ...]
    judged: Counts
    usage: tuple


def _key_sql(span: int, q: int, kinds) -> str:
    """The scan's one integer per judgment; ``kinds`` (the library's own names) as SQL string literals,
    since :func:`planner.store.scans.int_columns` binds parameters only after its rowid bounds."""
    literals = ",".join("'" + str(k).replace("'", "''") + "'" for k in kinds)
    return (f"((j.a * {span} + coalesce(j.b, 0)) * {q} + coalesce(p.ord, -1) + 1) * 32 + {scans.RIGHT} * 16 "
            f"+ ({scans.VERDICT}) * 4 + (j.kind IN ({literals})) * 2 + (j.b IS NOT NULL)")


def plan_scan(con, systems: tuple[str, ...], kinds=COUNTED_KINDS) -> PlanScan:
    """The strata, the judged counts by stratum and the pair-prompt usage codes, from one scan."""
    span, index = scans.system_index(con)
    q = scans.prompt_span(con)
    names: list = [None] * q
    for ord_, name in con.execute("SELECT ord, id FROM prompts").fetchall():
        names[ord_ + 1] = name
    key = scans.split_scan(con, _key_sql(span, q, kinds))
    rest, low = np.divmod(key, 32)
    ab, code = np.divmod(rest, q)
    strata = scans.strata_of(con, bool(np.any(code == 0)))
    pairwise = (low & 1) == 1
    keep = pairwise & ((low & 2) == 2)
    lut = stratum_lut(con, {s: i for i, s in enumerate(strata)})
    judged = scans.judged_counts(systems, strata, lut, index, span, ab[keep], code[keep],
                                 (low[keep] & 16) == 16, (low[keep] >> 2) & 3)
    usage = _usage(con, span, q, index, ab[pairwise] * q + code[pairwise], names)
    return PlanScan(strata, judged, usage)


def _usage(con, span: int, q: int, index, judged, names) -> tuple:
    """:meth:`Study.pair_prompt_usage_codes` from the scan's pairwise ``(a * span + b) * q + code`` values."""
    codes = scans.distinct_pair_codes(np.concatenate([judged, scans.issued_pair_codes(con, span, q)]), span, q)
    return (*scans.usage_arrays(codes, span, q, index), tuple(names))
