"""Report diagnostics: pure functions over counts or judgment records.

Nothing here touches the study store or fits a model. Inputs are
:class:`planner.counts.Counts`, numpy arrays, mappings, or sequences of
judgment records. A judgment record is any object with the attributes of
:class:`JudgmentLike` (duck typing; the study's ``Judgment`` qualifies, and so
does :class:`JudgmentRecord`, a small frozen dataclass for tests and
notebooks). Missing optional attributes are read as ``None`` / their default.

Conventions used throughout
---------------------------
* ``verdict`` is relative to the stored orientation ``(a, b)``: ``"A"`` means
  system ``a`` won. ``a_position`` (``"left"`` default, or ``"right"``) says
  where ``a`` was shown; the *position form* of a verdict is
  ``left | right | tie | invalid``.
* *Usable* judgments are A, B and tie; *decisive* ones are A and B. Invalid
  judgments are counted and reported, never folded into ties or dropped
  silently.
* Proportions come with a Wilson score interval (Wilson 1927, JASA 22:209–212)
  at ``confidence_level`` (default 0.95) and, where a test is asked for, the
  exact two-sided binomial test against 0.5 (``scipy.stats.binomtest``).
* Every result is a frozen dataclass; ``planner.jsonable.jsonable`` turns it
  into JSON. Undefined quantities are ``None``, never 0.

Formulas and thresholds are documented in docs/methods.md, section
"Report diagnostics".
"""

from __future__ import annotations

import itertools
import math
from collections import Counter, defaultdict
from dataclasses import dataclass
from typing import Any, Collection, Iterable, Mapping, Protocol, Sequence

import numpy as np

from planner.counts import Counts, half_tie_score
from planner.errors import DataError, UsageError, check_range
from planner.stats.proportions import Proportion, proportion, wilson_interval  # noqa: F401 (re-exported)

# Kinds whose judgments are quality-control or absolute items, not evidence
# about which of two systems is better; reason shares and length bias skip them.
NON_RANKING_KINDS = frozenset({"attention", "acceptability"})

POSITION_BIAS_FLAG_POINTS = 8.0     # issue 4: flag when left-vs-right > 8 points
ATTENTION_FLAG = 0.95               # issue 4: attention-check pass rate < 95%
SWAP_CONSISTENCY_FLAG = 0.80        # issue 4: self-consistency < 80%
KAPPA_FLAG = 0.5                    # issue 4: agreement kappa < 0.5
ALWAYS_LEFT_FLAG = 0.9              # always-left share among decisive > 0.9
ALWAYS_LEFT_MIN_DECISIVE = 10       # ... over at least this many decisive verdicts
NEVER_TIE_MIN_USABLE = 30           # never-tie over >= 30 usable judgments ...
NEVER_TIE_OVERALL_RATE = 0.10       # ... when the overall tie rate is >= 10%
RUN_PVALUE_FLAG = 0.001             # longest identical run: P(run >= L | chance) < 0.001
READING_WPM = 250.0                 # typical silent reading speed, words per minute
SPEED_FACTOR = 2.0                  # "too fast" = faster than SPEED_FACTOR x READING_WPM
FAST_SHARE_FLAG = 0.2               # flag an annotator when > 20% of timed items are too fast


# --------------------------------------------------------------------- records
class JudgmentLike(Protocol):
    """What the diagnostics read from one judgment (duck typing).

    Required: ``a``, ``b`` (system names), ``verdict`` (``"A" | "B" | "tie" |
    "invalid"``; for ``kind == "acceptability"``: ``"pass" | "fail" |
    "invalid"``). Optional (read with ``getattr``, default in brackets):
    ``id``, ``item``, ``prompt``, ``stratum`` [None], ``a_position``
    [``"left"``], ``kind`` [``"regular"``], ``annotator``, ``reason``,
    ``seconds``, ``confidence``, ``batch`` [None].
    """

    a: str
    b: str
    verdict: str


@dataclass(frozen=True)
class JudgmentRecord:
    """A minimal concrete judgment (the fields of the study's ``Judgment``)."""

    a: str
    b: str
    verdict: str
    id: str | None = None
    item: str | None = None
    prompt: str | None = None
    stratum: str | None = None
    a_position: str = "left"
    kind: str = "regular"
    annotator: str | None = None
    reason: str | None = None
    seconds: float | None = None
    confidence: float | None = None
    batch: str | None = None


def _get(j: Any, name: str, default=None):
    value = getattr(j, name, default)
    return default if value is None else value


def _left_is_a(j: Any) -> bool | None:
    """Whether ``a`` was shown left; ``None`` when the position is unknown.

    A missing attribute means the documented default ``"left"``; an explicit
    ``None`` (the study's judgments from files without a presentation order)
    means unknown, never a guess.
    """
    pos = getattr(j, "a_position", "left")
    if pos is None:
        return None
    if pos not in ("left", "right"):
        raise DataError(f"judgment {_get(j, 'id', '?')}: a_position ({pos!r}) must be 'left' or 'right'")
    return pos == "left"


def _check_verdict(j: Any) -> str:
    v = j.verdict
    if v not in ("A", "B", "tie", "invalid"):
        raise DataError(f"judgment {_get(j, 'id', '?')}: verdict ({v!r}) must be one of A, B, tie, invalid")
    return v


def position_verdict(j: Any) -> str:
    """The verdict in position form: ``left | right | tie | invalid``, or
    ``unknown`` for a decisive verdict whose presentation order is unknown."""
    v = _check_verdict(j)
    if v in ("tie", "invalid"):
        return v
    left_is_a = _left_is_a(j)
    if left_is_a is None:
        return "unknown"
    return "left" if (v == "A") == left_is_a else "right"


def winner(j: Any) -> str | None:
    """The winning system's name, or ``None`` for tie / invalid."""
    v = _check_verdict(j)
    return j.a if v == "A" else j.b if v == "B" else None


def _ranking(judgments: Iterable[Any]) -> list:
    return [j for j in judgments if _get(j, "kind", "regular") not in NON_RANKING_KINDS]


# ------------------------------------------------------------ proportions
# Proportion, proportion and wilson_interval live in planner.stats.proportions (the one Wilson);
# imported at the top of this module and re-exported for callers of planner.diagnostics.


def _binom_p(k: int, n: int) -> float | None:
    """Exact two-sided binomial p-value against 0.5 (= ``scipy.stats.binomtest(k, n).pvalue``).

    The null is symmetric, so the two-sided p-value is twice the smaller tail
    (1 at the centre). ``scipy.special.bdtr`` keeps ``scipy.stats`` (seconds of
    import) out of the report path (issue 13).
    """
    from scipy.special import bdtr

    if n <= 0:
        return None
    k, n = int(k), int(n)
    m = min(k, n - k)
    if 2 * m == n:
        return 1.0
    return float(min(1.0, 2.0 * bdtr(m, n, 0.5)))


def _check_level(confidence_level: float) -> None:
    check_range("confidence_level", confidence_level, 0.0, 1.0)


# ---------------------------------------------------------------- pair table
@dataclass(frozen=True)
class PairRow:
    """Counts of one unordered pair, oriented to the system earlier in ``systems``.

    ``a_wins``: judgments ``system_a`` won, in either position; ``b_wins``: won
    by ``system_b``. ``score`` is ``system_a``'s half-tie score (``None`` with
    no usable judgment). ``p_a_better`` is P(``system_a`` better than
    ``system_b``) from the model when a probability matrix was given.
    """

    system_a: str
    system_b: str
    a_wins: int
    b_wins: int
    ties: int
    invalid: int
    score: float | None
    p_a_better: float | None


@dataclass(frozen=True)
class PairTable:
    systems: tuple[str, ...]
    rows: tuple[PairRow, ...]


def pair_table(counts: Counts, p_better: np.ndarray | None = None) -> PairTable:
    """Per unordered pair with any judgment: A/B/tie/invalid, half-tie score, P(better).

    Parameters
    ----------
    counts : Counts
        Pooled over positions and strata here.
    p_better : ndarray (M, M), optional
        ``p_better[i, j]`` = posterior P(system i better than system j), from
        the model (the hook for ``planner.model``); rows and columns follow
        ``counts.systems``.

    Each pair is oriented to system order: ``system_a`` is the one with the
    smaller index in ``counts.systems``.
    """
    m = len(counts.systems)
    if p_better is not None:
        p_better = np.asarray(p_better, dtype=float)
        if p_better.shape != (m, m):
            raise UsageError(f"p_better shape ({p_better.shape}) must be ({m}, {m})")
    t = counts.pair_tensor()
    rows = []
    for i, j in itertools.combinations(range(m), 2):
        w, l, ti, inv = (int(x) for x in t[i, j])
        if w + l + ti + inv == 0:
            continue
        rows.append(PairRow(counts.systems[i], counts.systems[j], w, l, ti, inv,
                            half_tie_score(w, l, ti),
                            None if p_better is None else float(p_better[i, j])))
    return PairTable(counts.systems, tuple(rows))


def p_better_from_draws(draws: np.ndarray) -> np.ndarray:
    """``P[i, j]`` = share of posterior draws with ``beta_i > beta_j`` (diagonal 0.5).

    ``draws`` has shape (n_draws, M), e.g. the model's ``beta_draws``; the
    result is the ``p_better`` argument of :func:`pair_table`.
    """
    d = np.asarray(draws, dtype=float)
    if d.ndim != 2 or d.shape[0] == 0:
        raise UsageError(f"draws shape ({d.shape}) must be (n_draws > 0, M)")
    p = (d[:, :, None] > d[:, None, :]).mean(axis=0)
    np.fill_diagonal(p, 0.5)
    return p


# -------------------------------------------------------------- anchor tests
@dataclass(frozen=True)
class AnchorRow:
    """One candidate against the anchor (both positions, all strata pooled).

    ``win_rate = k / n`` with ``k = wins`` and ``n = wins + losses`` under the
    ``"drop"`` tie convention, or ``k = wins + ties/2`` and
    ``n = wins + losses + ties`` under ``"half"``. ``pvalue``: exact two-sided
    binomial test of ``win_rate = 0.5``; under ``"half"`` the test uses ``k``
    rounded toward ``n/2`` (conservative).
    """

    system: str
    wins: int
    losses: int
    ties: int
    invalid: int
    n: int
    win_rate: float | None
    ci_low: float | None
    ci_high: float | None
    pvalue: float | None


@dataclass(frozen=True)
class AnchorTests:
    anchor: str
    ties: str
    confidence_level: float
    rows: tuple[AnchorRow, ...]


def anchor_tests(counts: Counts, anchor: str, ties: str = "drop",
                 confidence_level: float = 0.95) -> AnchorTests:
    """Each candidate's win rate against ``anchor`` with binomial test and Wilson interval.

    Parameters
    ----------
    ties : {"drop", "half"}
        ``"drop"`` (default): ties leave the denominator; ``"half"``: a tie
        counts half a win.
    """
    if ties not in ("drop", "half"):
        raise UsageError(f"ties ({ties!r}) must be 'drop' or 'half'")
    _check_level(confidence_level)
    if anchor not in counts.systems:
        raise UsageError(f"anchor ({anchor!r}) must be one of the systems: {', '.join(counts.systems)}")
    k_anchor = counts.systems.index(anchor)
    t = counts.pair_tensor()
    rows = []
    for i, name in enumerate(counts.systems):
        if i == k_anchor:
            continue
        w, l, ti, inv = (int(x) for x in t[i, k_anchor])
        if w + l + ti + inv == 0:
            continue
        if ties == "drop":
            k, n, k_test = float(w), w + l, w
        else:
            k, n = w + 0.5 * ti, w + l + ti
            k_test = math.floor(k) if k > n / 2 else math.ceil(k)
        lo, hi = wilson_interval(k, n, confidence_level)
        rows.append(AnchorRow(name, w, l, ti, inv, n, k / n if n else None, lo, hi, _binom_p(k_test, n)))
    return AnchorTests(anchor, ties, confidence_level, tuple(rows))


# ------------------------------------------------------------------ tie rate
@dataclass(frozen=True)
class StratumTieRate:
    stratum: str
    ties: int
    usable: int
    rate: float | None
    ci_low: float | None
    ci_high: float | None


@dataclass(frozen=True)
class TieRates:
    """Ties / usable (A + B + tie) judgments, overall and per stratum."""

    overall: StratumTieRate
    per_stratum: tuple[StratumTieRate, ...]


def tie_rates(counts: Counts, confidence_level: float = 0.95) -> TieRates:
    """Tie rate = ties / (A + B + tie); invalid judgments are not in the denominator."""
    _check_level(confidence_level)

    def row(name, ties, usable):
        p = proportion(ties, usable, confidence_level)
        return StratumTieRate(name, int(ties), int(usable), p.rate, p.ci_low, p.ci_high)

    per = []
    for s, name in enumerate(counts.strata):
        sel = counts.stratum == s
        per.append(row(name, counts.ties[sel].sum(), counts.usable[sel].sum()))
    return TieRates(row("all", counts.ties.sum(), counts.usable.sum()), tuple(per))


# ------------------------------------------------------------- position bias
@dataclass(frozen=True)
class PositionBias:
    """Win rate of the left-shown response among decisive judgments.

    ``difference_points = 100 * (left_win_rate - right_win_rate)
    = 100 * (2 * left_win_rate - 1)``; ``flagged`` when its absolute value
    exceeds ``threshold_points`` (8) **and** the Wilson interval of the left
    win rate excludes 50% (so a handful of judgments cannot raise the flag by
    chance). ``gamma`` is the model's position effect
    summary passed through unchanged (e.g. ``(mean, low, high)`` in logits).
    """

    left_wins: int
    right_wins: int
    n_decisive: int
    left_win_rate: float | None
    ci_low: float | None
    ci_high: float | None
    difference_points: float | None
    pvalue: float | None
    threshold_points: float
    flagged: bool
    gamma: Any = None


def position_bias(counts: Counts, gamma: Any = None,
                  threshold_points: float = POSITION_BIAS_FLAG_POINTS,
                  confidence_level: float = 0.95) -> PositionBias:
    """Left-vs-right win rates from counts (cell ``a`` is always the left one)."""
    _check_level(confidence_level)
    left, right = int(counts.a_wins.sum()), int(counts.b_wins.sum())
    n = left + right
    p = proportion(left, n, confidence_level)
    diff = 100.0 * (left - right) / n if n else None
    credible = n > 0 and (p.ci_low > 0.5 or p.ci_high < 0.5)
    flagged = diff is not None and abs(diff) > threshold_points and credible
    return PositionBias(left, right, n, p.rate, p.ci_low, p.ci_high, diff, _binom_p(left, n),
                        threshold_points, flagged, gamma)


# --------------------------------------------------------------- length bias
@dataclass(frozen=True)
class LengthBias:
    """Share of decisive verdicts won by the longer response.

    Judgments with equal lengths (``n_equal``) or a missing length
    (``n_missing``) are left out of ``n``. ``flagged`` when ``ci_low > 0.5``
    (clearly above 50%).
    """

    longer_wins: int
    shorter_wins: int
    n: int
    n_equal: int
    n_missing: int
    share: float | None
    ci_low: float | None
    ci_high: float | None
    pvalue: float | None
    flagged: bool


def length_bias(judgments: Iterable[Any], lengths: Mapping[tuple[str, str], int],
                confidence_level: float = 0.95) -> LengthBias:
    """Length bias over decisive ranking judgments.

    Parameters
    ----------
    judgments : iterable of JudgmentLike
        Needs ``prompt``, ``a``, ``b``, ``verdict``; attention and
        acceptability judgments are skipped.
    lengths : mapping ``(prompt, system) -> int``
        Response length in any unit (words or characters — the caller's
        choice; only the comparison matters).
    """
    def signs():
        for j in _ranking(judgments):
            v = _check_verdict(j)
            if v in ("A", "B"):
                prompt = _get(j, "prompt")
                la, lb = lengths.get((prompt, j.a)), lengths.get((prompt, j.b))
                yield v, None if la is None or lb is None else (la > lb) - (la < lb), 1

    return length_bias_counts(signs(), confidence_level)


def length_bias_counts(rows: Iterable[tuple[str, int | None, int]],
                       confidence_level: float = 0.95) -> LengthBias:
    """Length bias from tallied rows ``(verdict, sign, n)`` — the one definition.

    ``sign`` = sign(length of a - length of b) (``None`` when a length is
    missing); ``n`` judgments with that verdict and sign. Only ``A``/``B``
    verdicts count; the caller leaves out non-ranking kinds. The longer
    response won when the sign agrees with the verdict; flagged when the
    Wilson interval of the longer-wins share lies above 0.5.
    """
    _check_level(confidence_level)
    longer = shorter = equal = missing = 0
    for v, sign, n in rows:
        if v not in ("A", "B"):
            continue
        if sign is None:
            missing += n
        elif sign == 0:
            equal += n
        elif (sign > 0) == (v == "A"):
            longer += n
        else:
            shorter += n
    n = longer + shorter
    p = proportion(longer, n, confidence_level)
    return LengthBias(longer, shorter, n, equal, missing, p.rate, p.ci_low, p.ci_high,
                      _binom_p(longer, n), p.ci_low is not None and p.ci_low > 0.5)


# ---------------------------------------------------------- circular triads
@dataclass(frozen=True)
class CircularTriads:
    """Kendall–Babington Smith circular triads of the majority tournament.

    ``d``: number of circular triads (expected value when some pair's majority
    is tied, see below); ``d_max``: ``(m³ - m)/24`` for odd m, ``(m³ - 4m)/24``
    for even m; ``zeta = 1 - d/d_max`` (Kendall's coefficient of consistency;
    1 = transitive). ``scores``: per system, majority wins (a tied pair gives
    each side 0.5). ``zeta`` is ``None`` when ``m < 3`` or any pair is
    unobserved (``n_unobserved_pairs``); ``d`` then counts only triads whose
    three pairs are observed. ``examples``: up to ``max_examples`` circular
    triads ``(x, y, z)`` meaning x beat y, y beat z, z beat x (decided pairs
    only), in system order.
    """

    systems: tuple[str, ...]
    m: int
    d: float
    d_max: float
    zeta: float | None
    scores: tuple[float, ...]
    n_tied_pairs: int
    n_unobserved_pairs: int
    examples: tuple[tuple[str, str, str], ...]


def _triad_circular_probability(e_ij: float, e_jk: float, e_ki: float) -> float:
    """P(triad i, j, k is circular) given P(i→j), P(j→k), P(k→i) (0, 0.5 or 1)."""
    return e_ij * e_jk * e_ki + (1 - e_ij) * (1 - e_jk) * (1 - e_ki)


def circular_triads(data: Counts | np.ndarray, systems: Sequence[str] | None = None,
                    max_examples: int = 10) -> CircularTriads:
    """Circular triads ``d`` and Kendall's coefficient of consistency ``zeta``.

    Parameters
    ----------
    data : Counts or ndarray (M, M)
        A win matrix ``W[i, j]`` = wins of i over j (count ties as you wish,
        e.g. half each), or Counts, from which ``W[i, j]`` = i's wins over j
        plus half the ties, pooled over positions and strata.
    systems : sequence of str, optional
        Names for a matrix input (default ``"0"``, ``"1"``, …).

    Notes
    -----
    Pair (i, j) is decided for i when ``W[i, j] > W[j, i]``; a pair with
    ``W[i, j] == W[j, i] > 0`` is a *tied majority* and is broken by a fair
    coin **in expectation**: a triad containing tied pairs contributes its
    probability of being circular (0, 1/4 or 1/2), so ``d`` may be a multiple
    of 1/4. Without tied pairs ``d`` equals
    ``m(m-1)(2m-1)/12 - ½ Σ s_i²`` (Kendall & Babington Smith 1940,
    Biometrika 31:324–345). Pairs with no usable judgment are unobserved.
    """
    if isinstance(data, Counts):
        names = data.systems
        t = data.pair_tensor()
        w = t[:, :, 0] + 0.5 * t[:, :, 2]
        observed = (t[:, :, :3].sum(axis=2)) > 0
    else:
        w = np.asarray(data, dtype=float)
        if w.ndim != 2 or w.shape[0] != w.shape[1]:
            raise UsageError(f"win matrix shape ({w.shape}) must be square (M, M)")
        names = tuple(systems) if systems is not None else tuple(str(i) for i in range(w.shape[0]))
        if len(names) != w.shape[0]:
            raise UsageError(f"systems ({len(names)} names) must match the win matrix size ({w.shape[0]})")
        if np.any(w < 0):
            raise DataError("win matrix entries must be >= 0")
        observed = (w + w.T) > 0
    m = len(names)
    # e[i, j] = P(i beats j in the majority tournament): 1, 0 or 0.5 (tied majority)
    e = np.where(w > w.T, 1.0, np.where(w < w.T, 0.0, 0.5))
    np.fill_diagonal(e, 0.0)
    np.fill_diagonal(observed, True)
    scores = tuple(float(x) for x in e.sum(axis=1))
    iu = np.triu_indices(m, 1)
    n_unobserved = int((~observed[iu]).sum())
    n_tied = int(((e[iu] == 0.5) & observed[iu]).sum())
    d = 0.0
    examples = []
    for i, j, k in itertools.combinations(range(m), 3):
        if not (observed[i, j] and observed[j, k] and observed[i, k]):
            continue
        pc = _triad_circular_probability(e[i, j], e[j, k], e[k, i])
        d += pc
        if pc == 1.0 and len(examples) < max_examples:
            x, y, z = (i, j, k) if e[i, j] == 1.0 else (i, k, j)
            examples.append((names[x], names[y], names[z]))
    d_max = (m ** 3 - m) / 24.0 if m % 2 else (m ** 3 - 4 * m) / 24.0
    zeta = None if (m < 3 or n_unobserved) else 1.0 - d / d_max
    return CircularTriads(tuple(names), m, d, d_max, zeta, scores, n_tied, n_unobserved, tuple(examples))


def circular_triads_from_scores(scores: Sequence[float]) -> float:
    """``d = m(m-1)(2m-1)/12 - ½ Σ s_i²`` for a complete tournament (Kendall & Babington Smith 1940)."""
    s = np.asarray(scores, dtype=float)
    m = s.size
    return m * (m - 1) * (2 * m - 1) / 12.0 - 0.5 * float((s * s).sum())


# ------------------------------------------------------------- reason shares
@dataclass(frozen=True)
class ReasonShare:
    reason: str | None      # None = no reason given
    count: int
    share: float


@dataclass(frozen=True)
class SystemReasons:
    """One system's decisive judgments by reason code (``None`` = no reason)."""

    system: str
    wins: int
    losses: int
    win_reasons: tuple[ReasonShare, ...]
    loss_reasons: tuple[ReasonShare, ...]


@dataclass(frozen=True)
class ReasonShares:
    """Reason codes on decisive (A/B) ranking judgments.

    ``share_without_reason`` = decisive judgments without a reason /
    ``n_decisive`` (``None`` when there is none). Ties and invalid judgments
    are not asked for a reason and are not counted.
    """

    rows: tuple[SystemReasons, ...]
    n_decisive: int
    n_without_reason: int
    share_without_reason: float | None


def _shares(counter: Counter, total: int) -> tuple[ReasonShare, ...]:
    items = sorted(counter.items(), key=lambda kv: (-kv[1], kv[0] is None, kv[0] or ""))
    return tuple(ReasonShare(r, c, c / total) for r, c in items)


def reason_shares(judgments: Iterable[Any], systems: Sequence[str] | None = None) -> ReasonShares:
    """Share of each system's wins and of its losses by reason code.

    Empty or blank reasons count as "no reason". Systems are listed in
    ``systems`` order if given, else in order of first appearance.
    """
    rows = ((j.a, j.b, _check_verdict(j), _get(j, "reason"), 1) for j in _ranking(judgments))
    return reason_shares_counts(rows, systems)


def reason_shares_counts(rows: Iterable[tuple[str, str, str, Any, int]],
                         systems: Sequence[str] | None = None) -> ReasonShares:
    """Reason shares from tallied rows ``(a, b, verdict, reason, n)`` — the one definition.

    The caller leaves out non-ranking kinds; only ``A``/``B`` verdicts count;
    a blank reason is no reason. Systems in ``systems`` order, then any other
    in order of first appearance.
    """
    wins: dict[str, Counter] = defaultdict(Counter)
    losses: dict[str, Counter] = defaultdict(Counter)
    seen: list[str] = list(systems) if systems is not None else []
    known = set(seen)
    n = without = 0
    for a, b, v, reason, c in rows:
        for s in (a, b):
            if s not in known:
                known.add(s)
                seen.append(s)
        if v not in ("A", "B"):
            continue
        reason = (reason.strip() if isinstance(reason, str) else reason) or None
        n += c
        without += c if reason is None else 0
        win, lose = (a, b) if v == "A" else (b, a)
        wins[win][reason] += c
        losses[lose][reason] += c
    out = []
    for s in seen:
        nw, nl = sum(wins[s].values()), sum(losses[s].values())
        out.append(SystemReasons(s, nw, nl, _shares(wins[s], nw), _shares(losses[s], nl)))
    return ReasonShares(tuple(out), n, without, without / n if n else None)


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
        raise UsageError(f"cohen_kappa needs equal-length label lists ({len(x)} vs {len(y)})")
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
        ann = _get(j, "annotator")
        if ann is None or j.verdict == "invalid":
            continue
        by_cmp[(_get(j, "prompt"), frozenset((j.a, j.b)))].setdefault(ann, winner(j) or "tie")
    return {k: d for k, d in by_cmp.items() if len(d) >= 2}


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
    js = [j for j in judgments if _get(j, "kind", "regular") != "acceptability"]
    for j in js:
        _check_verdict(j)
    usable_all = [j for j in js if j.verdict != "invalid"]
    overall_tie = (sum(j.verdict == "tie" for j in usable_all) / len(usable_all)) if usable_all else None

    overlap = _overlap([j for j in js if _get(j, "item") not in attention_expected])
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
    agreement = Agreement(method, agreement_kappa, len(overlap), len(ann_set),
                          agreement_kappa is not None and agreement_kappa < KAPPA_FLAG)

    by_ann: dict[str, list] = defaultdict(list)
    for j in js:
        ann = _get(j, "annotator")
        if ann is not None:
            by_ann[ann].append(j)

    rows = []
    for ann in sorted(by_ann, key=str):
        mine = by_ann[ann]
        flags = []
        # attention checks
        att = [j for j in mine if _get(j, "item") in attention_expected]
        passed, checkable = 0, []
        for j in att:
            exp = attention_expected[j.item]
            exp = {exp} if isinstance(exp, str) else set(exp)
            pv = position_verdict(j)
            if j.verdict not in exp and pv == "unknown" and exp & {"left", "right"}:
                continue  # a position-form expectation cannot be checked without the position
            checkable.append(j)
            passed += j.verdict in exp or pv in exp
        att = checkable
        att_rate = passed / len(att) if att else None
        if att_rate is not None and att_rate < ATTENTION_FLAG:
            flags.append("attention")
        regular = [j for j in mine if _get(j, "item") not in attention_expected]
        # swapped repeats
        groups: dict[tuple, dict[str, list]] = defaultdict(lambda: defaultdict(list))
        for j in regular:
            left_is_a = _left_is_a(j)
            if j.verdict == "invalid" or left_is_a is None:
                continue
            left = j.a if left_is_a else j.b
            groups[(_get(j, "prompt"), frozenset((j.a, j.b)))][left].append(winner(j))
        pairs = consistent = 0
        for sides in groups.values():
            if len(sides) != 2:
                continue
            first, second = sides.values()
            for w1, w2 in zip(first, second):
                pairs += 1
                consistent += w1 == w2
        swap_rate = consistent / pairs if pairs else None
        if swap_rate is not None and swap_rate < SWAP_CONSISTENCY_FLAG:
            flags.append("swap-consistency")
        # agreement with the others' majority on overlap items
        mine_v, others_v = [], []
        for d in overlap.values():
            if ann not in d:
                continue
            votes = Counter(v for a, v in d.items() if a != ann).most_common()
            if len(votes) > 1 and votes[0][1] == votes[1][1]:
                continue
            mine_v.append(d[ann])
            others_v.append(votes[0][0])
        kappa = cohen_kappa(mine_v, others_v)
        if kappa is not None and kappa < KAPPA_FLAG:
            flags.append("agreement")
        # speed
        timed, fast = 0, []
        for j in mine:
            sec, words = _get(j, "seconds"), item_words.get(_get(j, "item"))
            if sec is None or words is None:
                continue
            timed += 1
            if sec < 60.0 * words / (reading_wpm * speed_factor):
                fast.append(str(_get(j, "item")))
        fast_share = len(fast) / timed if timed else None
        if fast_share is not None and fast_share > FAST_SHARE_FLAG:
            flags.append("speed")
        # degenerate patterns (regular items only)
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
        rows.append(AnnotatorQC(str(ann), len(mine), len(att), passed, att_rate, pairs, consistent,
                                swap_rate, len(mine_v), kappa, timed, len(fast), fast_share,
                                tuple(fast[:max_listed]), n_dec, left_share, ties, usable, run,
                                run_label, run_p, tuple(flags)))
    return AnnotatorReport(tuple(rows), overall_tie, agreement)


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
    _check_level(confidence_level)
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
            if _get(r, "kind", "regular") != "acceptability":
                continue
            system, verdict = _get(r, "system", r.a), r.verdict
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
            message = (f"{leader}: ranked first, acceptable {100 * lead.pass_rate:.0f}% "
                       f"± {100 * lead.half_width:.0f}%")
    return Acceptability(tuple(rows), confidence_level, min_pass_rate, leader, flagged, message)


# -------------------------------------------------------------- rank groups
@dataclass(frozen=True)
class RankGroups:
    """Leaderboard summaries that never group credibly separated systems.

    ``order``: systems by decreasing mean. ``letters`` (following ``order``):
    a compact letter display (Piepho 2004, insert-absorb): two systems share a
    letter **if and only if** the interval of their difference includes 0, so
    no letter ever holds two separated systems (earlier versions also showed
    chained "groups" of neighbours, which could hold A and C although A ≻ C;
    they are gone). ``rank_low``/``rank_high``: the (1-level)/2 and
    (1+level)/2 quantiles of each system's rank over draws (1 = best; Chatbot
    Arena's rank intervals), ``p_best``: share of draws where the system ranks
    first; all three follow ``order`` and are ``None`` without draws.

    ``p_leader_better`` (following ``order``): P(leader > system), the leader
    being ``order[0]`` (``None`` for the leader itself); from the draws, or
    the normal approximation with ``sds``. ``tied_with_leader``: systems
    (leader included) with ``p_leader_better < level`` — not credibly below
    the top (one-sided, e.g. P < 0.95). This is a comparison with the leader
    only, not a group: two systems tied with the leader may still be
    separated from each other (their letters say so).
    """

    order: tuple[str, ...]
    means: tuple[float, ...]
    rank_low: tuple[int, ...] | None
    rank_high: tuple[int, ...] | None
    p_best: tuple[float, ...] | None
    confidence_level: float
    letters: tuple[str, ...] = ()
    p_leader_better: tuple[float | None, ...] = ()
    tied_with_leader: tuple[str, ...] = ()


def _letter(k: int) -> str:
    alphabet = "abcdefghijklmnopqrstuvwxyz"
    out = ""
    k += 1
    while k:
        k, r = divmod(k - 1, 26)
        out = alphabet[r] + out
    return out


def compact_letters(separated: np.ndarray) -> tuple[str, ...]:
    """Compact letter display for systems already in display order (best first).

    ``separated[p, q]`` is True when systems ``p`` and ``q`` are credibly
    different. Insert-absorb (H.-P. Piepho 2004, "An algorithm for a
    letter-based representation of all-pairwise comparisons", J. Comput.
    Graph. Stat. 13:456–466): start with one letter shared by all; for each
    separated pair split every letter holding both into two (one without each
    system); drop letters contained in another. Letters are then named in the
    order of their best member, so the top system gets ``a``. With more than
    26 letters they are ``aa``, ``ab``, ... and a system's letters are
    separated by commas.
    """
    m = separated.shape[0]
    cols: list[frozenset] = [frozenset(range(m))] if m else []
    for p in range(m):
        for q in range(p + 1, m):
            if not separated[p, q]:
                continue
            new = []
            for c in cols:
                if p in c and q in c:
                    new.extend([c - {p}, c - {q}])
                else:
                    new.append(c)
            new = list(dict.fromkeys(new))
            cols = [c for c in new if c and not any(c < d for d in new)]
    cols.sort(key=lambda c: (min(c), sorted(c)))
    labels: list[list[str]] = [[] for _ in range(m)]
    for k, c in enumerate(cols):
        for i in c:
            labels[i].append(_letter(k))
    sep_char = "" if len(cols) <= 26 else ","   # past z the letters are aa, ab, ...: keep them apart
    return tuple(sep_char.join(x) for x in labels)


def rank_groups(systems: Sequence[str], means: Sequence[float], sds: Sequence[float] | None = None,
                draws: np.ndarray | None = None, confidence_level: float = 0.95) -> RankGroups:
    """Letter display, comparisons with the leader, rank intervals and P(best).

    Parameters
    ----------
    systems, means : sequences of length M
        Any scale (logit or Elo), larger = better.
    sds : sequence of float, optional
        Standard errors; the difference interval between two systems is
        ``Δ ± z sqrt(sd_i² + sd_j²)`` (independent normal approximation).
    draws : ndarray (n_draws, M), optional
        Posterior draws (same scale); when given, the difference interval is
        the central ``confidence_level`` quantile interval of the drawn
        differences (keeps their correlation), and rank intervals and P(best)
        are computed. One of ``sds`` or ``draws`` is required.
    """
    from scipy.special import ndtr, ndtri

    _check_level(confidence_level)
    mu = np.asarray(means, dtype=float)
    m = mu.size
    if len(systems) != m:
        raise UsageError(f"systems ({len(systems)}) and means ({m}) must have the same length")
    if sds is None and draws is None:
        raise UsageError("rank_groups needs sds or draws")
    if draws is not None:
        draws = np.asarray(draws, dtype=float)
        if draws.ndim != 2 or draws.shape[1] != m:
            raise UsageError(f"draws shape ({draws.shape}) must be (n_draws, {m})")
    order = np.argsort(-mu, kind="stable")
    lo_q, hi_q = (1 - confidence_level) / 2, (1 + confidence_level) / 2
    z = float(ndtri(hi_q))
    # every pair's separation (central interval of the difference) for the letter display
    sep = np.zeros((m, m), dtype=bool)
    for a_ in range(m - 1):
        p_, rest = order[a_], order[a_ + 1:]
        if draws is not None:
            low, high = np.quantile(draws[:, [p_]] - draws[:, rest], [lo_q, hi_q], axis=0)
        else:
            se = np.hypot(float(sds[p_]), np.asarray(sds, dtype=float)[rest])
            low, high = mu[p_] - mu[rest] - z * se, mu[p_] - mu[rest] + z * se
        sep[a_, a_ + 1:] = sep[a_ + 1:, a_] = ~((low <= 0.0) & (0.0 <= high))
    letters = compact_letters(sep)
    rank_low = rank_high = p_best = None
    if draws is not None:
        ranks = (-draws).argsort(axis=1).argsort(axis=1) + 1     # 1 = best in that draw
        rank_low = tuple(int(np.quantile(ranks[:, i], lo_q, method="lower")) for i in order)
        rank_high = tuple(int(np.quantile(ranks[:, i], hi_q, method="higher")) for i in order)
        p_best = tuple(float((ranks[:, i] == 1).mean()) for i in order)
    p_lead: list[float | None] = [None] if m else []
    for i in order[1:]:
        if draws is not None:
            p_lead.append(float((draws[:, order[0]] > draws[:, i]).mean()))
        else:
            se = math.hypot(float(sds[order[0]]), float(sds[i]))
            p_lead.append(float(ndtr((mu[order[0]] - mu[i]) / se)) if se > 0 else float(mu[order[0]] > mu[i]))
    names = tuple(systems[i] for i in order)
    tied = tuple(s for s, p in zip(names, p_lead) if p is None or p < confidence_level)
    return RankGroups(names, tuple(float(mu[i]) for i in order), rank_low, rank_high, p_best,
                      confidence_level, letters, tuple(p_lead), tied)
