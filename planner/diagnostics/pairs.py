"""Per-pair figures: the pair table, P(better) from draws, tests against an anchor, tie rates."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from planner.counts import Counts, half_tie_scores
from planner.diagnostics.records import binom_p, check_level
from planner.errors import UsageError
from planner.stats.proportions import proportion, wilson_interval


# ---------------------------------------------------------------- pair table
@dataclass(frozen=True)
class PairRow:
    """Counts of one unordered pair, oriented to the system earlier in ``systems``.

    ``a_wins``: judgments ``system_a`` won, in either position; ``b_wins``: won
    by ``system_b``. ``score`` is ``system_a``'s half-tie score (``None`` with
    no usable judgment). ``p_a_better`` is P(``system_a`` better than
    ``system_b``) from the model when a probability matrix was given;
    ``design_effect`` the variance inflation of their strength difference under
    clustering (cluster-robust over independent) when given.
    """

    system_a: str
    system_b: str
    a_wins: int
    b_wins: int
    ties: int
    invalid: int
    score: float | None
    p_a_better: float | None
    design_effect: float | None = None


@dataclass(frozen=True)
class PairRows(Sequence):
    """The rows of a :class:`PairTable`, held as one tuple per :class:`PairRow` field (in that order).

    A sequence of :class:`PairRow`: indexing and iterating build the rows; the JSON form reads the columns
    directly (a 300-system report has 44,850 rows, and building a frozen row object for each cost more than
    writing it out).
    """

    columns: tuple[tuple, ...]

    def __len__(self) -> int:
        return len(self.columns[0]) if self.columns else 0

    def __getitem__(self, k):
        if isinstance(k, slice):
            return tuple(PairRow(*v) for v in zip(*(c[k] for c in self.columns), strict=True))
        return PairRow(*(c[k] for c in self.columns))

    def __iter__(self):
        return (PairRow(*v) for v in zip(*self.columns, strict=True))


@dataclass(frozen=True)
class PairTable:
    systems: tuple[str, ...]
    rows: PairRows

    JSON_READY = True   # to_dict() gives plain JSON values (planner.jsonable takes them as they are)

    def to_dict(self) -> dict:
        """The JSON form (as :func:`planner.jsonable.jsonable` would give it), written from the columns without the
        generic walk: a 300-system report has 44,850 rows, and the walk's call per value cost half a second."""
        def num(xs):
            return [None if x is None or not math.isfinite(x) else float(x) for x in xs]

        # the counts are Python ints already (pair_table reads them with tolist)
        a, b, w, lo, t, inv, score, p, deff = self.rows.columns if self.rows.columns else ((),) * 9
        return {"systems": list(self.systems),
                "rows": [{"system_a": x, "system_b": y, "a_wins": n_a, "b_wins": n_b, "ties": n_t, "invalid": n_i,
                          "score": sc, "p_a_better": pa, "design_effect": de}
                         for x, y, n_a, n_b, n_t, n_i, sc, pa, de in zip(a, b, w, lo, t, inv, num(score), num(p),
                                                                         num(deff), strict=True)]}


def pair_table(counts: Counts, p_better: np.ndarray | None = None,
               design_effects: np.ndarray | None = None) -> PairTable:
    """Per unordered pair with any judgment: A/B/tie/invalid, half-tie score, P(better).

    Parameters
    ----------
    counts : Counts
        Pooled over positions and strata here.
    p_better : ndarray (M, M), optional
        ``p_better[i, j]`` = posterior P(system i better than system j), from
        the model (the hook for ``planner.model``); rows and columns follow
        ``counts.systems``.
    design_effects : ndarray (M, M), optional
        Variance inflation of each strength difference under clustering
        (:meth:`planner.model.types.Clustering.pair_design_effects`).

    Each pair is oriented to system order: ``system_a`` is the one with the
    smaller index in ``counts.systems``.
    """
    m = len(counts.systems)
    if p_better is not None:
        p_better = np.asarray(p_better, dtype=float)
        if p_better.shape != (m, m):
            raise UsageError(f"`p_better` shape ({p_better.shape}) must be ({m}, {m})", parameters=('p_better',))
    t = counts.pair_tensor()
    # by columns over the pairs with any judgment (300 systems: 44,850 rows; a loop per pair cost 0.7 s)
    i, j = np.triu_indices(m, 1)
    cells = t[i, j]
    keep = cells.sum(axis=1) > 0
    i, j, cells = i[keep], j[keep], cells[keep]
    w, l, ti, inv = (tuple(cells[:, k].tolist()) for k in range(4))
    scores = tuple(half_tie_scores(cells[:, 0], cells[:, 1], cells[:, 2]))
    probs = (None,) * i.size if p_better is None else tuple(p_better[i, j].tolist())
    deffs = ((None,) * i.size if design_effects is None else
             tuple(x if math.isfinite(x) else None for x in np.asarray(design_effects, dtype=float)[i, j].tolist()))
    names = np.array(counts.systems, dtype=object)
    cols = (tuple(names[i].tolist()), tuple(names[j].tolist()), w, l, ti, inv, scores, probs, deffs)
    return PairTable(counts.systems, PairRows(cols))


def p_better_from_draws(draws: np.ndarray, chunk: int = 64) -> np.ndarray:
    """``P[i, j]`` = share of posterior draws with ``beta_i > beta_j`` (diagonal 0.5).

    ``draws`` has shape (n_draws, M), e.g. the model's ``beta_draws``; the
    result is the ``p_better`` argument of :func:`pair_table`.
    """
    d = np.asarray(draws, dtype=float)
    if d.ndim != 2 or d.shape[0] == 0:
        raise UsageError(f"`draws` shape ({d.shape}) must be (n_draws > 0, M)", parameters=('draws',))
    m = d.shape[1]
    p = np.empty((m, m))
    for i in range(0, m, chunk):   # at most n_draws x chunk x M booleans at a time (300 systems: 20 MB)
        p[i:i + chunk] = (d[:, i:i + chunk, None] > d[:, None, :]).mean(axis=0)
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
    rounded toward ``n/2`` (conservative). ``design_effect`` (>= 1): the
    variance inflation of the win rate under clustering; interval and test
    then use the effective sample ``n / design_effect`` (Kish 1965).
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
    design_effect: float = 1.0


@dataclass(frozen=True)
class AnchorTests:
    anchor: str
    ties: str
    confidence_level: float
    rows: tuple[AnchorRow, ...]


def anchor_tests(counts: Counts, anchor: str, ties: str = "drop",
                 confidence_level: float = 0.95, design_effects: dict[str, float] | None = None) -> AnchorTests:
    """Each candidate's win rate against ``anchor`` with binomial test and Wilson interval.

    Parameters
    ----------
    ties : {"drop", "half"}
        ``"drop"`` (default): ties leave the denominator; ``"half"``: a tie
        counts half a win.
    design_effects : dict candidate -> float, optional
        Variance inflation (>= 1) of each candidate's win rate under clustering
        (:func:`planner.stats.clusters.pair_design_effect`): the Wilson interval
        and the test use ``k / deff`` of ``n / deff`` (Kish's effective sample).
    """
    if ties not in ("drop", "half"):
        raise UsageError(f"`ties` ({ties!r}) must be 'drop' or 'half'", parameters=('ties',))
    check_level(confidence_level)
    if anchor not in counts.systems:
        raise UsageError(f"`anchor` ({anchor!r}) must be one of the systems: {', '.join(counts.systems)}",
                         parameters=('anchor',))
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
        deff = max(1.0, float((design_effects or {}).get(name, 1.0)))
        lo, hi = wilson_interval(k / deff, n / deff, confidence_level)
        p = binom_p(k_test, n)
        if deff > 1.0 and n:
            n_eff = max(1, round(n / deff))
            k_eff = k * n_eff / n
            p = binom_p(math.floor(k_eff) if k_eff > n_eff / 2 else math.ceil(k_eff), n_eff)
        rows.append(AnchorRow(name, w, l, ti, inv, n, k / n if n else None, lo, hi, p, deff))
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
    check_level(confidence_level)

    def row(name, ties, usable):
        p = proportion(ties, usable, confidence_level)
        return StratumTieRate(name, int(ties), int(usable), p.rate, p.ci_low, p.ci_high)

    per = []
    for s, name in enumerate(counts.strata):
        sel = counts.stratum == s
        per.append(row(name, counts.ties[sel].sum(), counts.usable[sel].sum()))
    return TieRates(row("all", counts.ties.sum(), counts.usable.sum()), tuple(per))
