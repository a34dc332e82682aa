"""The pairwise judgments one by one, as integer arrays: :meth:`Study.judgment_arrays`.

One ``group_concat`` scan (:func:`planner.store.scans.judged_columns`) gives, per judgment of the
counted kinds, the systems as shown, the outcome, the prompt's place and (when asked) an annotator
code; the strata come from the prompts. The result is the core's
:class:`planner.stats.clusters.JudgmentArrays`, from which both the counts and the cluster ids are
made, so intervals and clusters always describe the same judgments.

Codes: a prompt the study holds is its ``ord``; a prompt it does not hold (judgments imported
without their prompt) gets ``-2 - k`` for the k-th such prompt in storage order, so each is its own
code (read by a second query only when the scan met one).
An annotator is the ``seq`` of its first judgment; -1 when the judgment names none.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence

import numpy as np

from planner.counts import DEFAULT_STRATUM
from planner.errors import DataError
from planner.stats.clusters import JudgmentArrays, dense_codes
from planner.store import scans

#: annotators: the ``seq`` of each one's first judgment
_ANNOTATORS = ("LEFT JOIN (SELECT annotator AS name, min(seq) AS code FROM judgments "
               "WHERE annotator IS NOT NULL GROUP BY annotator) an ON an.name = j.annotator")


def stratum_lut(con: sqlite3.Connection, sidx: dict[str, int]) -> np.ndarray:
    """``lut[ord + 1]`` = the stratum place of the prompt at ``ord``; slot 0 (a prompt the study does not
    hold) is the place of ``"all"`` (-1 when the strata have none)."""
    rows = con.execute("SELECT ord, coalesce(stratum, ?) FROM prompts", (DEFAULT_STRATUM,)).fetchall()
    lut = np.full(max((r[0] for r in rows), default=-1) + 2, sidx.get(DEFAULT_STRATUM, -1), dtype=np.int64)
    for ord_, name in rows:
        lut[ord_ + 1] = sidx[name]
    return lut


def judgment_arrays(con: sqlite3.Connection, systems: tuple[str, ...], strata: tuple[str, ...],
                    kinds: Sequence[str], annotators: bool) -> JudgmentArrays:
    """The pairwise judgments of ``kinds`` as :class:`JudgmentArrays` over ``systems`` and ``strata``.

    ``strata`` are the study's (:meth:`Study.strata`) or ``("all",)`` to put every judgment in one;
    ``annotators``: read annotator codes (otherwise every judgment has -1).
    """
    span, index = scans.system_index(con)
    extra, join = ["coalesce(p.ord, -1)"], "LEFT JOIN prompts p ON p.id = j.prompt"
    if annotators:
        extra.append("coalesce(an.code, -1)")
        join += " " + _ANNOTATORS
    cols = scans.judged_columns(con, kinds, index, span, extra, join)
    left, right, outcome, prompt_code = cols[:4]
    if (prompt_code < 0).any():
        prompt_code = unknown_prompt_codes(con, kinds, prompt_code)
    if len(strata) > 1:
        lut = stratum_lut(con, {s: i for i, s in enumerate(strata)})
        stratum = lut[np.maximum(prompt_code, -1) + 1]
    else:
        stratum = np.zeros_like(left)
    annotator = dense_codes(cols[4]) - (1 if (cols[4] < 0).any() else 0) if annotators else None
    return JudgmentArrays.build(systems, left, right, outcome, stratum=stratum, prompt=prompt_code,
                                annotator=annotator, strata=strata)


def unknown_prompt_codes(con: sqlite3.Connection, kinds: Sequence[str], code: np.ndarray) -> np.ndarray:
    """``code`` with each prompt the study does not hold (-1) given its own code ``-2 - k`` (k-th distinct
    such prompt): those judgments' prompts are read in the scan's (rowid) order, only when there are any."""
    marks = ",".join("?" * len(kinds))
    names = [r[0] for r in con.execute(
        f"SELECT j.prompt FROM judgments j WHERE j.b IS NOT NULL AND j.kind IN ({marks}) "
        "AND j.prompt NOT IN (SELECT id FROM prompts) ORDER BY j.rowid", tuple(kinds))]
    at = np.flatnonzero(code < 0)
    if len(names) != at.size:          # the scans disagree: the table changed between them
        raise DataError("the judgments changed while they were read; run the command again")
    ids = {n: k for k, n in enumerate(dict.fromkeys(names))}
    out = code.copy()
    out[at] = -2 - np.array([ids[n] for n in names], dtype=np.int64)
    return out


__all__ = ["judgment_arrays", "stratum_lut", "unknown_prompt_codes"]
