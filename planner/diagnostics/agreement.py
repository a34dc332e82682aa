"""Annotators: chance-corrected agreement (Cohen, Fleiss) and per-annotator quality control."""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from planner.diagnostics.records import check_verdict, left_is_a, position_verdict, value_of, winner
from planner.errors import UsageError, check_range

ATTENTION_FLAG = 0.95               # flag: attention-check pass rate < 95%
SWAP_CONSISTENCY_FLAG = 0.80        # flag: self-consistency < 80%
KAPPA_FLAG = 0.5                    # flag: agreement kappa < 0.5
ALWAYS_LEFT_FLAG = 0.9              # always-left share among decisive > 0.9
ALWAYS_LEFT_MIN_DECISIVE = 10       # ... over at least this many decisive verdicts
NEVER_TIE_MIN_USABLE = 30           # never-tie over >= 30 usable judgments ...
NEVER_TIE_OVERALL_RATE = 0.10       # ... when the overall tie rate is >= 10%
RUN_PVALUE_FLAG = 0.001             # longest identical run: P(run >= L | chance) < 0.001
READING_WPM = 250.0                 # typical silent reading speed, words per minute
SPEED_FACTOR = 2.0                  # "too fast" = faster than SPEED_FACTOR x READING_WPM
FAST_SHARE_FLAG = 0.2               # flag an annotator when > 20% of timed items are too fast


# ------------------------------------------------------------------- kappa
@dataclass(frozen=True)
class Agreement:
    """Chance-corrected agreement on overlap items.

    ``method`` is ``"cohen"`` (exactly two annotators), ``"fleiss"`` (more) or
    ``None`` (no comparison judged by two or more annotators). A comparison is
    a prompt and an unordered pair (item ids and positions do not matter);
    categories are the winner (either system) or tie; invalid judgments are
    left out.
    """

    method: str | None
    kappa: float | None
    n_items: int
    n_annotators: int
    flagged: bool


def cohen_kappa(x: Sequence[str], y: Sequence[str]) -> float | None:
    """Cohen's (1960) κ = (p_o - p_e) / (1 - p_e) for two raters' labels on the same items.

    ``None`` when undefined (no items, or ``p_e = 1``: both raters used one
    and the same label throughout).
    """
    if len(x) != len(y):
        raise UsageError(f"cohen_kappa needs equal-length label lists ({len(x)} vs {len(y)})", parameters=('x', 'y'))
    n = len(x)
    if n == 0:
        return None
    po = sum(a == b for a, b in zip(x, y)) / n
    cx, cy = Counter(x), Counter(y)
    pe = sum(cx[c] * cy[c] for c in cx) / (n * n)
    if pe >= 1.0:
        return None
    return (po - pe) / (1.0 - pe)


def fleiss_kappa(table: np.ndarray) -> float | None:
    """Fleiss' (1971) κ from an (items, categories) table of rating counts.

    ``P_i = (Σ_j n_ij² - n_i) / (n_i (n_i - 1))``, ``P̄`` = mean of ``P_i``,
    ``p_j = Σ_i n_ij / Σ_i n_i``, ``P̄_e = Σ_j p_j²``,
    ``κ = (P̄ - P̄_e) / (1 - P̄_e)``. Items may have different numbers of
    ratings (each needs ``n_i ≥ 2``); with a constant ``n_i`` this is exactly
    Fleiss (1971) and matches ``statsmodels.stats.inter_rater.fleiss_kappa``.
    ``None`` when undefined.
    """
    t = np.asarray(table, dtype=float)
    if t.ndim != 2 or t.shape[0] == 0:
        return None
    ni = t.sum(axis=1)
    t, ni = t[ni >= 2], ni[ni >= 2]
    if t.shape[0] == 0:
        return None
    p_i = ((t * t).sum(axis=1) - ni) / (ni * (ni - 1))
    p_bar = p_i.mean()
    p_j = t.sum(axis=0) / ni.sum()
    pe = float((p_j * p_j).sum())
    if pe >= 1.0:
        return None
    return float((p_bar - pe) / (1.0 - pe))


# ------------------------------------------------------------- annotator QC
@dataclass(frozen=True)
class AnnotatorQC:
    """Quality-control figures of one annotator (rates ``None`` when undefined).

    attention: ``attention_passed`` of ``attention_n`` attention items gave the
    expected verdict (invalid counts as a fail); flag < 0.95.
    swap: ``swap_consistent`` of ``swap_pairs`` position-swapped pairs of the
    same comparison (same prompt and pair) agree — same winner or both tie;
    invalid judgments are left out; flag < 0.80.
    kappa: Cohen's κ between this annotator and the leave-one-out majority of
    the other annotators on comparisons judged by several annotators
    (``overlap_items``; a comparison = prompt + unordered pair, labels = winner
    or tie; comparisons whose other-annotator majority is tied are left out);
    flag < 0.5.
    speed: ``fast_items`` of ``timed_items`` were answered faster than
    ``60 * words / (reading_wpm * speed_factor)`` seconds; flag when the share
    exceeds 0.2.
    degenerate: ``left_share`` of decisive verdicts went left (flag > 0.9 over
    ≥ 10 decisive); ``never_tie`` over ≥ 30 usable judgments while the overall
    tie rate is ≥ 10%; ``longest_run`` of identical position verdicts in the
    given order, with ``run_pvalue`` = P(longest run ≥ observed) for i.i.d.
    verdicts with the annotator's own frequencies (flag < 0.001).
    ``flags`` names every raised flag.

    A judgment whose presentation order is unknown (``a_position`` None: files
    that do not record it) is left out of every position-based figure — swap
    pairs, ``left_share``, the run test, and attention items whose expected
    verdict is in position form — instead of being taken as shown left.
    """

    annotator: str
    n_judgments: int
    attention_n: int
    attention_passed: int
    attention_rate: float | None
    swap_pairs: int
    swap_consistent: int
    swap_rate: float | None
    overlap_items: int
    kappa: float | None
    timed_items: int
    fast_items: int
    fast_share: float | None
    fast_item_ids: tuple[str, ...]
    n_decisive: int
    left_share: float | None
    ties: int
    n_usable: int
    longest_run: int
    longest_run_verdict: str | None
    run_pvalue: float | None
    flags: tuple[str, ...]


@dataclass(frozen=True)
class AnnotatorReport:
    annotators: tuple[AnnotatorQC, ...]
    overall_tie_rate: float | None
    agreement: Agreement


def longest_run(labels: Sequence[str]) -> tuple[int, str | None]:
    """Length and label of the longest run of identical consecutive labels."""
    best, best_label, run = 0, None, 0
    for i, lab in enumerate(labels):
        run = run + 1 if i and labels[i - 1] == lab else 1
        if run > best:
            best, best_label = run, lab
    return best, best_label


def run_probability(n: int, probs: Sequence[float], length: int) -> float:
    """P(longest run of identical labels ≥ ``length``) in ``n`` i.i.d. draws.

    Exact, by dynamic programming over (current label, current run length);
    ``probs`` are the label probabilities.
    """
    p = np.asarray([x for x in probs if x > 0], dtype=float)
    p = p / p.sum()
    if length <= 1:
        return 1.0 if n >= 1 else 0.0
    if n < length:
        return 0.0
    k = p.size
    # state[c, r-1]: last label c with current run r (1 <= r <= length-1), no run >= length yet
    state = np.zeros((k, length - 1))
    state[:, 0] = p
    for _ in range(n - 1):
        new = np.zeros_like(state)
        total = state.sum(axis=1)                      # mass ending in label c
        new[:, 0] = p * (total.sum() - total)          # switch to a different label
        new[:, 1:] = state[:, :-1] * p[:, None]        # extend the run (runs reaching `length` drop out)
        state = new
    return float(max(0.0, 1.0 - state.sum()))


def _overlap(judgments: list) -> dict:
    """Comparisons judged by ≥ 2 annotators: ``(prompt, pair) -> {annotator: label}``.

    A comparison is a prompt and an unordered pair of systems, whatever the
    item ids and the positions; the label is the winner's name or ``"tie"``, so
    it does not depend on orientation. Invalid judgments are left out; an
    annotator who judged a comparison more than once counts with the first.
    """
    by_cmp: dict[tuple, dict[str, str]] = defaultdict(dict)
    for j in judgments:
        ann = value_of(j, "annotator")
        if ann is None or j.verdict == "invalid":
            continue
        by_cmp[(value_of(j, "prompt"), frozenset((j.a, j.b)))].setdefault(ann, winner(j) or "tie")
    return {k: d for k, d in by_cmp.items() if len(d) >= 2}


def _agreement(overlap: dict) -> Agreement:
    """Cohen's κ (exactly two annotators) or Fleiss' κ (more) over the overlap comparisons."""
    ann_set = sorted({a for d in overlap.values() for a in d})
    if len(ann_set) == 2:
        x = [d[ann_set[0]] for d in overlap.values()]
        y = [d[ann_set[1]] for d in overlap.values()]
        agreement_kappa, method = cohen_kappa(x, y), "cohen"
    elif len(ann_set) > 2:
        table = np.array([[sum(v == a for v in d.values()) for a in (*sorted(pair, key=str), "tie")]
                          for (_, pair), d in overlap.items()])
        agreement_kappa, method = fleiss_kappa(table), "fleiss"
    else:
        agreement_kappa, method = None, None
    return Agreement(method, agreement_kappa, len(overlap), len(ann_set),
                     agreement_kappa is not None and agreement_kappa < KAPPA_FLAG)


def _attention(mine: list, attention_expected: Mapping) -> tuple[int, int]:
    """``(checked, passed)`` attention items of one annotator (invalid counts as a fail)."""
    passed, checked = 0, 0
    for j in mine:
        if value_of(j, "item") not in attention_expected:
            continue
        exp = attention_expected[j.item]
        exp = {exp} if isinstance(exp, str) else set(exp)
        pv = position_verdict(j)
        if j.verdict not in exp and pv == "unknown" and exp & {"left", "right"}:
            continue  # a position-form expectation cannot be checked without the position
        checked += 1
        passed += j.verdict in exp or pv in exp
    return checked, passed


def _swap_consistency(regular: list) -> tuple[int, int]:
    """``(pairs, consistent)``: position-swapped judgments of the same comparison that agree."""
    groups: dict[tuple, dict[str, list]] = defaultdict(lambda: defaultdict(list))
    for j in regular:
        a_left = left_is_a(j)
        if j.verdict == "invalid" or a_left is None:
            continue
        left = j.a if a_left else j.b
        groups[(value_of(j, "prompt"), frozenset((j.a, j.b)))][left].append(winner(j))
    pairs = consistent = 0
    for sides in groups.values():
        if len(sides) != 2:
            continue
        first, second = sides.values()
        for w1, w2 in zip(first, second):
            pairs += 1
            consistent += w1 == w2
    return pairs, consistent


def _kappa_with_majority(ann: str, overlap: dict) -> tuple[int, float | None]:
    """``(comparisons, κ)`` of ``ann`` against the leave-one-out majority of the others (ties of it skipped)."""
    mine_v, others_v = [], []
    for d in overlap.values():
        if ann not in d:
            continue
        votes = Counter(v for a, v in d.items() if a != ann).most_common()
        if len(votes) > 1 and votes[0][1] == votes[1][1]:
            continue
        mine_v.append(d[ann])
        others_v.append(votes[0][0])
    return len(mine_v), cohen_kappa(mine_v, others_v)


def _fast_items(mine: list, item_words: Mapping, reading_wpm: float, speed_factor: float) -> tuple[int, list[str]]:
    """``(timed, fast item ids)``: items answered faster than the reading-time floor."""
    timed, fast = 0, []
    for j in mine:
        sec, words = value_of(j, "seconds"), item_words.get(value_of(j, "item"))
        if sec is None or words is None:
            continue
        timed += 1
        if sec < 60.0 * words / (reading_wpm * speed_factor):
            fast.append(str(value_of(j, "item")))
    return timed, fast


def _position_patterns(regular: list, overall_tie: float | None) -> tuple[tuple, list[str]]:
    """Degenerate patterns: ``(n_dec, left_share, ties, usable, run, run_label, run_p)`` and their flags."""
    flags = []
    pos = [v for v in map(position_verdict, regular) if v != "unknown"]
    n_left, n_right = pos.count("left"), pos.count("right")
    n_dec = n_left + n_right
    left_share = n_left / n_dec if n_dec else None
    if left_share is not None and n_dec >= ALWAYS_LEFT_MIN_DECISIVE and left_share > ALWAYS_LEFT_FLAG:
        flags.append("always-left")
    ties = pos.count("tie")
    usable = n_dec + ties
    if (usable >= NEVER_TIE_MIN_USABLE and ties == 0 and overall_tie is not None
            and overall_tie >= NEVER_TIE_OVERALL_RATE):
        flags.append("never-tie")
    run, run_label = longest_run(pos)
    freq = Counter(pos)
    run_p = run_probability(len(pos), [c / len(pos) for c in freq.values()], run) if pos else None
    if run_p is not None and run_p < RUN_PVALUE_FLAG:
        flags.append("long-run")
    return (n_dec, left_share, ties, usable, run, run_label, run_p), flags


def _annotator_row(ann, mine: list, overlap: dict, overall_tie: float | None, attention_expected: Mapping,
                   item_words: Mapping, reading_wpm: float, speed_factor: float, max_listed: int) -> AnnotatorQC:
    """One annotator's :class:`AnnotatorQC`; flags in the order attention, swap, agreement, speed, patterns."""
    flags = []
    n_att, passed = _attention(mine, attention_expected)
    att_rate = passed / n_att if n_att else None
    if att_rate is not None and att_rate < ATTENTION_FLAG:
        flags.append("attention")
    regular = [j for j in mine if value_of(j, "item") not in attention_expected]
    pairs, consistent = _swap_consistency(regular)
    swap_rate = consistent / pairs if pairs else None
    if swap_rate is not None and swap_rate < SWAP_CONSISTENCY_FLAG:
        flags.append("swap-consistency")
    n_overlap, kappa = _kappa_with_majority(ann, overlap)
    if kappa is not None and kappa < KAPPA_FLAG:
        flags.append("agreement")
    timed, fast = _fast_items(mine, item_words, reading_wpm, speed_factor)
    fast_share = len(fast) / timed if timed else None
    if fast_share is not None and fast_share > FAST_SHARE_FLAG:
        flags.append("speed")
    (n_dec, left_share, ties, usable, run, run_label, run_p), pattern_flags = _position_patterns(regular, overall_tie)
    flags += pattern_flags
    return AnnotatorQC(str(ann), len(mine), n_att, passed, att_rate, pairs, consistent, swap_rate, n_overlap,
                       kappa, timed, len(fast), fast_share, tuple(fast[:max_listed]), n_dec, left_share, ties,
                       usable, run, run_label, run_p, tuple(flags))


def annotator_qc(judgments: Iterable[Any],
                 attention_expected: Mapping[str, str | Collection[str]] | None = None,
                 item_words: Mapping[str, int] | None = None,
                 reading_wpm: float = READING_WPM, speed_factor: float = SPEED_FACTOR,
                 max_listed: int = 20) -> AnnotatorReport:
    """Per-annotator quality control (see :class:`AnnotatorQC` for every rule).

    Parameters
    ----------
    judgments : iterable of JudgmentLike
        In the order the annotator produced them (the run statistics use it).
        Judgments without an annotator are skipped; acceptability judgments
        are skipped.
    attention_expected : mapping item -> verdict or collection of verdicts
        For attention items, the accepted verdict(s), in A/B/tie form
        (relative to the stored orientation) or position form (``left`` /
        ``right``). Judgments on these items are attention checks whatever
        their ``kind``, and are left out of every other check.
    item_words : mapping item -> int
        Words an annotator has to read for the item (prompt + both responses);
        needed for the speed check together with ``seconds``.
    reading_wpm, speed_factor : float
        Reading-time floor ``60 * words / (reading_wpm * speed_factor)``
        seconds (defaults 250 wpm and factor 2: faster than 500 words a minute
        is not reading).
    """
    check_range("reading_wpm", reading_wpm, 0.0, math.inf)
    check_range("speed_factor", speed_factor, 0.0, math.inf)
    attention_expected = attention_expected or {}
    item_words = item_words or {}
    js = [j for j in judgments if value_of(j, "kind", "regular") != "acceptability"]
    for j in js:
        check_verdict(j)
    usable_all = [j for j in js if j.verdict != "invalid"]
    overall_tie = (sum(j.verdict == "tie" for j in usable_all) / len(usable_all)) if usable_all else None

    overlap = _overlap([j for j in js if value_of(j, "item") not in attention_expected])
    agreement = _agreement(overlap)

    by_ann: dict[str, list] = defaultdict(list)
    for j in js:
        ann = value_of(j, "annotator")
        if ann is not None:
            by_ann[ann].append(j)
    rows = [_annotator_row(ann, by_ann[ann], overlap, overall_tie, attention_expected, item_words,
                           reading_wpm, speed_factor, max_listed)
            for ann in sorted(by_ann, key=str)]
    return AnnotatorReport(tuple(rows), overall_tie, agreement)
