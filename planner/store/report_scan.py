"""One scan of the judgments for `report`: counts by stratum and the judgment-level figures.

The report needs :meth:`Study.counts` (by stratum), the A/B/tie/invalid totals, the
judgments per kind, the length-bias tallies (verdict x sign of the length difference)
and the reason shares. They used to come from ``Study.counts`` plus a ``GROUP BY``
over the judgments joined twice to the responses (at Arena scale, 1,000,000 rows:
~1.4 s and ~2.6 s). Here one ``group_concat`` scan
(:func:`planner.store.scans.split_scan`) reads every judgment once as a single integer::

    key = (((a * span + b + 1) * q + ord + 1) * 2 + annotated) * 128
          + right * 64 + verdict * 16 + kind * 2 + has_reason

(``b + 1`` 0 for single-response judgments, ``ord + 1`` 0 for a prompt the study does
not hold, ``verdict`` 0 A, 1 B, 2 tie, 3 anything else, ``kind`` the place in
:data:`planner.vocabulary.JUDGMENT_KINDS` or 7 for another word, ``has_reason`` the
reason is not NULL, ``annotated`` the judgment names an annotator); the response lengths
are looked up with array operations, and only the judgments that carry a reason are read
as text (their own ``GROUP BY``). ``tests/test_report_scan.py`` checks every figure against the queries it replaces.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from planner.counts import Counts
from planner.diagnostics.records import NON_RANKING_KINDS
from planner.stats.clusters import JudgmentArrays
from planner.store import scans
from planner.store.judged import stratum_lut, unknown_prompt_codes
from planner.vocabulary import COUNTED_KINDS, JUDGMENT_KINDS, OUTCOMES  # OUTCOMES: the scan's verdict codes

#: kinds whose judgments are no evidence about which of two systems is better (no reasons, no lengths)
NON_RANKING = tuple(sorted(NON_RANKING_KINDS))
_OTHER_KIND = 7
#: (prompt, system) slots up to which response lengths are looked up in a dense table (32 MB of int64)
DENSE_LENGTHS = 1 << 22


@dataclass(frozen=True)
class ReportScan:
    """What one scan gives the report.

    Attributes
    ----------
    judged : Counts
        :meth:`Study.counts` ``(by_stratum=True)``.
    arrays : planner.stats.clusters.JudgmentArrays
        The same judgments one by one (:meth:`Study.judgment_arrays` without annotator codes), for the
        clusters of the report's intervals.
    totals : dict
        ``A``/``B``/``tie``/``invalid`` over pairwise judgments of the counted kinds.
    kinds : dict
        Stored judgments per kind (every kind, single-response ones too), sorted by kind.
    length_rows : tuple of (verdict, sign or None, n) or None
        Ranking judgments (pairwise, kinds other than attention and acceptability) by
        verdict and ``sign(len(a's response) - len(b's response))`` (None: a length is
        unknown); the rows of :func:`planner.diagnostics.length_bias_counts`. None when
        no judgment has both lengths.
    reason_rows : tuple of (a, b, verdict, reason, n)
        Ranking judgments that carry a reason (the raw text, blank ones included).
    no_reason_wins, no_reason_losses : tuple of int
        Per system (study order): decisive ranking judgments without a reason, won / lost.
    annotated : int
        Stored judgments (every kind) that name an annotator: with none, annotator quality control
        has nothing to read and its query is skipped.
    """

    judged: Counts
    arrays: JudgmentArrays
    totals: dict
    kinds: dict
    length_rows: tuple | None
    reason_rows: tuple
    no_reason_wins: tuple[int, ...]
    no_reason_losses: tuple[int, ...]
    annotated: int = 0


def _key_sql(span: int, q: int) -> str:
    kind = " ".join(f"WHEN '{k}' THEN {i}" for i, k in enumerate(JUDGMENT_KINDS))
    return (f"(((j.a * {span} + coalesce(j.b, -1) + 1) * {q} + coalesce(p.ord, -1) + 1) * 2 "
            f"+ (j.annotator IS NOT NULL)) * 128 "
            f"+ {scans.RIGHT} * 64 + ({scans.VERDICT}) * 16 + (CASE j.kind {kind} ELSE {_OTHER_KIND} END) * 2 "
            f"+ (j.reason IS NOT NULL)")


def report_scan(con, systems: tuple[str, ...]) -> ReportScan:
    """Counts by stratum, totals, kinds, length tallies and reasons from one scan of the judgments."""
    span, index = scans.system_index(con)
    span += 1                                   # b + 1 in 0..span - 1
    q = scans.prompt_span(con)
    key = scans.split_scan(con, _key_sql(span, q))
    rest, low = np.divmod(key, 128)
    low = low.astype(np.uint8)     # the seven low bits: one byte per judgment for the flags cut from them
    annotated = int(np.count_nonzero(rest & 1))
    rest >>= 1
    ab, code = np.divmod(rest, q)
    a, b1 = np.divmod(ab, span)
    right, verdict, kind, has_reason = (low & 64) == 64, (low >> 4) & 3, (low >> 1) & 7, (low & 1) == 1
    pairwise = b1 > 0
    counted = pairwise & np.isin(kind, [JUDGMENT_KINDS.index(k) for k in COUNTED_KINDS])
    strata = scans.strata_of(con, bool(np.any(code == 0)))
    lut = stratum_lut(con, {s: i for i, s in enumerate(strata)})
    cut = _cutter(counted)
    ab_c = cut(a) * (span - 1) + cut(b1) - 1
    # the counts are the judgments one by one aggregated: made once, with the arrays
    arrays, judged = _arrays(con, systems, strata, lut, index, span - 1, ab_c, cut(code), cut(right), cut(verdict))
    totals = dict(zip(OUTCOMES, (int(x) for x in np.bincount(cut(verdict), minlength=4))))
    kinds = _kinds(con, kind)
    ranking = pairwise & ~np.isin(kind, [JUDGMENT_KINDS.index(k) for k in NON_RANKING])
    decisive = ranking & (verdict < 2)
    cut = _cutter(pairwise)
    length_rows = _length_rows(con, span - 1, cut(a), cut(b1) - 1, cut(code), cut(verdict), cut(decisive))
    plain = decisive & ~has_reason
    win = np.where(verdict[plain] == 0, a[plain], b1[plain] - 1)
    lose = np.where(verdict[plain] == 0, b1[plain] - 1, a[plain])
    m = len(systems)
    wins = tuple(int(x) for x in np.bincount(index[win], minlength=m))
    losses = tuple(int(x) for x in np.bincount(index[lose], minlength=m))
    return ReportScan(judged, arrays, totals, kinds, length_rows, _reason_rows(con) if has_reason.any() else (), wins,
                      losses, annotated)


def _cutter(mask: np.ndarray):
    """``x -> x[mask]``, or the array itself when ``mask`` keeps every judgment (at scale, every judgment is
    usually pairwise and of a counted kind: no copy of a million values)."""
    if mask.all():
        return lambda x: x
    return lambda x: x[mask]


def _arrays(con, systems, strata, lut, index, span, ab, code, right, verdict) -> tuple[JudgmentArrays, Counts]:
    """The counted judgments as :class:`JudgmentArrays` (prompt codes as :mod:`planner.store.judged` gives them)
    and their counts by stratum (:meth:`Study.counts`, as :func:`planner.store.scans.judged_counts` gives them)."""
    left, right_sys, outcome = scans.shown_cells(index, span, ab, right, verdict)
    prompt = code - 1
    if (prompt < 0).any():
        prompt = unknown_prompt_codes(con, COUNTED_KINDS, prompt)
    arrays, judged = JudgmentArrays.build_with_counts(systems, left, right_sys, outcome, stratum=lut[code],
                                                      prompt=prompt, strata=strata)
    return arrays, judged if ab.size else Counts.empty(systems, strata)


def _kinds(con, kind: np.ndarray) -> dict:
    """Judgments per kind, from the scan's kind codes (another word: read by name, a rare case)."""
    n = np.bincount(kind, minlength=_OTHER_KIND + 1)
    out = {k: int(n[i]) for i, k in enumerate(JUDGMENT_KINDS) if n[i]}
    if n[_OTHER_KIND]:
        marks = ",".join("?" * len(JUDGMENT_KINDS))
        out.update((k, int(c)) for k, c in con.execute(
            f"SELECT kind, count(*) FROM judgments WHERE kind NOT IN ({marks}) GROUP BY kind", JUDGMENT_KINDS))
    return dict(sorted(out.items()))


def _length_rows(con, span: int, a: np.ndarray, b: np.ndarray, code: np.ndarray, verdict: np.ndarray,
                 keep: np.ndarray):
    """``(verdict, sign, n)`` rows of the ``keep`` judgments among pairwise ones (system ids ``a``, ``b``,
    prompt codes ``code``); None when no pairwise judgment at all has both lengths.

    A response's length is found by its key ``code * span + system id`` (a judgment on a
    prompt the study does not hold has no response), in a dense table of every key up to
    :data:`DENSE_LENGTHS` keys, else in the sorted keys of the responses.
    """
    # one group_concat per column, not a tuple per response (90,000 at Arena scale: 0.07 -> 0.03 s)
    got = np.stack(scans.int_columns(con, "responses", "r", ["p.ord + 1", "r.system", "r.length"],
                                     "JOIN prompts p ON p.id = r.prompt"), axis=1).reshape(-1, 3)
    q = int(max(code.max(initial=0), got[:, 0].max(initial=0))) + 1
    if q * span <= DENSE_LENGTHS:   # a (prompt, system) table: one gather per judgment
        table = np.full(q * span, -1, dtype=np.int64)
        table[got[:, 0] * span + got[:, 1]] = got[:, 2]

        def length(sys_ids):
            v = table[code * span + sys_ids]
            return v, v >= 0
    else:                           # sorted keys: a binary search per judgment
        keys = got[:, 0] * span + got[:, 1]
        order = np.argsort(keys)
        keys, lengths = keys[order], got[order, 2]

        def length(sys_ids):
            k = code * span + sys_ids
            at = np.minimum(np.searchsorted(keys, k), max(keys.size - 1, 0))
            found = (keys[at] == k) if keys.size else np.zeros(k.size, dtype=bool)
            return np.where(found, lengths[at] if keys.size else 0, 0), found

    la, fa = length(a)
    lb, fb = length(b)
    known = fa & fb
    if not known.any():
        return None
    sign = np.where(known, np.sign(la - lb) + 1, 3)        # 0, 1, 2: sign + 1; 3: a length unknown
    n = np.bincount(verdict[keep] * 4 + sign[keep], minlength=8)
    return tuple((OUTCOMES[v], None if s == 3 else s - 1, int(n[v * 4 + s]))
                 for v in (0, 1) for s in range(4) if n[v * 4 + s])


def _reason_rows(con) -> tuple:
    """``(a, b, verdict, reason, n)`` of the ranking judgments that carry a reason."""
    names = dict(con.execute("SELECT id, name FROM systems").fetchall())
    marks = ",".join("?" * len(NON_RANKING))
    rows = con.execute(
        f"SELECT a, b, verdict, reason, count(*) FROM judgments WHERE reason IS NOT NULL AND b IS NOT NULL "
        f"AND kind NOT IN ({marks}) GROUP BY 1, 2, 3, 4", NON_RANKING).fetchall()
    return tuple((names[a], names[b], v, r, int(n)) for a, b, v, r, n in rows)


__all__ = ["ReportScan", "report_scan"]
