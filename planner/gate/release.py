"""The release gate on aggregated counts: :func:`decide_counts` (method: :mod:`planner.gate`).

One pass: check the options → normalise the stratum weights → the posterior
columns (the Bayesian model, all systems) → per-stratum trinomial score tests,
Holm across strata (group-sequential boundaries with looks) → verdicts and
"more comparisons" → the pooled row, the acceptability gate, the overall
verdict, notes and sentence.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from planner.counts import Counts
from planner.errors import UsageError, check_range, parameters_of, shown
from planner.gate.acceptability import acceptability_gate
from planner.gate.estimates import finite, pair_tallies, pooled_row, position_shares, posterior_columns, score_interval
from planner.gate.planning import PLANNING_POWER, plan_more
from planner.gate.results import EXIT_CODES, MODES, Decision, StratumDecision
from planner.gate.text import decision_notes, decision_sentence, multiplicity_note
from planner.limits import check_choice
from planner.stats import distributions as stats  # stats.norm without importing scipy.stats (seconds of import)
from planner.stats.clusters import ClusterCells, applied_design_effect
from planner.stats.conventions import BOUNDARIES
from planner.stats.multiplicity import holm, holm_adjusted
from planner.stats.proportions import half_tie_score_z
from planner.stats.sequential import check_look
from planner.vocabulary import ENGINES


def score_z(wins: int, decisive: int, p0: float) -> float | None:
    """Score statistic ``(W - D p0) / sqrt(D p0 (1 - p0))`` (None when ``D == 0``)."""
    if decisive <= 0:
        return None
    return (wins - decisive * p0) / math.sqrt(decisive * p0 * (1 - p0))


@lru_cache(maxsize=256)
def _critical(m: int, alpha: float, look: int, looks: int, boundary: str) -> float:
    """Critical z of one one-sided test at Holm step level ``alpha/m``.

    Single look: ``z_{1 - alpha/(2m)}`` (each side of a two-sided level-alpha/m
    test). ``looks > 1``: the two-sided group-sequential boundary at level
    ``alpha/m`` at ``look`` (:func:`planner.stats.sequential.sequential_design`).
    """
    if looks <= 1:
        return float(stats.norm.isf(alpha / (2 * m)))
    from planner.stats.sequential import sequential_design

    return float(sequential_design(looks, alpha / m, PLANNING_POWER, boundary, "two-sided").z_boundaries[look - 1])


@dataclass(frozen=True)
class _Question:
    """The checked options of one gate: who against whom, thresholds, level, looks."""

    candidate: str
    baseline: str
    ci: int
    bi: int
    mode: str
    margin: float
    confidence: float
    alpha: float
    theta_pass: float
    theta_reg: float
    look: int
    looks: int
    boundary: str

    def critical(self, m: int) -> float:
        """Critical z of one one-sided test at Holm step level ``alpha/m`` (this look)."""
        return _critical(m, self.alpha, self.look, self.looks, self.boundary)


def check_systems(systems: Sequence[str], candidate: str, baseline: str) -> None:
    """UsageError unless both names are systems of the study and differ (names the allowed ones)."""
    allowed = ", ".join(systems)
    for opt, name in (("candidate", candidate), ("baseline", baseline)):
        if name not in systems:
            raise UsageError(f"{shown(opt)} ({name}) is not a system of the study; expected one of {allowed}",
                             parameters=parameters_of(opt))
    if candidate == baseline:
        raise UsageError(f"`candidate` and `baseline` ({candidate}) must be different systems",
                         parameters=('candidate', 'baseline'))


def decide_counts(counts: Counts, candidate: str, baseline: str, *,
                  stratum_weights: dict[str, float] | None = None, acceptability=None,
                  margin: float = 0.05, mode: str = "non-inferiority", confidence_level: float = 0.95,
                  min_pass_rate: float | None = None, engine: str = "laplace",
                  look: int | None = None, looks: int = 1, boundary: str = "obrien-fleming",
                  seed: int = 0, fit=None, design_effects: dict[str, float] | None = None,
                  clusters: ClusterCells | None = None) -> Decision:
    """The release gate on aggregated counts (no study needed).

    Parameters
    ----------
    counts : planner.counts.Counts
        By-stratum counts of the whole study (all systems: the Bayesian model
        uses indirect comparisons too; the tests use the direct ones only).
    candidate, baseline : str
        System names in ``counts.systems``; must differ.
    stratum_weights : dict stratum -> weight, optional
        Population weight of each stratum (normalised here); default equal.
    acceptability : planner.store.study.AcceptabilityCounts-like, optional
        ``systems`` order as ``counts``; ``passed``/``failed`` arrays with
        systems as rows (any further axes are summed).
    margin : float
        Non-inferiority margin on the win-rate (half-tie score) scale, [0, 0.5).
    mode : {'non-inferiority', 'superiority'}
    confidence_level : float
        In (0, 1); ``alpha = 1 - confidence_level``, each one-sided test at
        ``alpha/2`` before Holm.
    min_pass_rate : float, optional
        Absolute acceptability floor in [0, 1].
    engine : {'laplace', 'nuts'}
    look, looks, boundary :
        Group-sequential analysis number ``look`` of ``looks``; the tests use
        the matching two-sided boundary (:func:`planner.stats.sequential.sequential_design`).
    seed : int
        Seeds the posterior draws.
    fit : planner.model.Fit, optional
        A ready by-stratum fit of ``counts`` (tests; skips fitting).
    design_effects : dict stratum -> float, optional
        Variance inflation of the candidate's win rate in each stratum under clustering
        (:func:`planner.stats.clusters.pair_design_effect`; applied as at least 1): the tests, the
        intervals, the pooled row and "more comparisons" use it. Default: judgments independent.
    clusters : planner.stats.clusters.ClusterCells, optional
        The study's judgments tallied per cluster: the posterior columns are cluster-robust.

    Returns
    -------
    Decision
    """
    systems = tuple(counts.systems)
    q = _question(systems, candidate, baseline, margin=margin, mode=mode, confidence_level=confidence_level,
                  min_pass_rate=min_pass_rate, engine=engine, look=look, looks=looks, boundary=boundary)
    strata = tuple(counts.strata)
    K = len(strata)
    weights = _normalised_weights(stratum_weights, strata)

    tally = pair_tallies(counts, q.ci, q.bi)
    pair_total = tally.sum(axis=0)
    pair_n = int(pair_total[:3].sum())
    pooled_tie = pair_total[2] / pair_n if pair_n else 0.0
    pooled_inv = pair_total[3] / (pair_n + pair_total[3]) if pair_n + pair_total[3] else 0.0

    deffs = [applied_design_effect((design_effects or {}).get(s)) for s in strata]
    post_rows, post_pool, model_notes = _model_columns(counts, fit, engine, strata, weights, seed, q, clusters)
    rows = _stratum_rows(q, strata, weights, tally, post_rows, pooled_tie, pooled_inv, deffs)
    pooled = pooled_row(rows, confidence_level, post_pool)
    gate = acceptability_gate(acceptability, q.ci, q.bi, min_pass_rate, confidence_level, candidate, baseline)
    verdict = _overall(rows, gate)

    multiplicity = multiplicity_note(q.alpha, K)
    notes = decision_notes([multiplicity, *model_notes], look=q.look, looks=looks, boundary=boundary,
                           strictest=q.critical(K), fixed=float(stats.norm.isf(q.alpha / (2 * K))),
                           theta_pass=q.theta_pass, positions=position_shares(counts, q.ci, q.bi),
                           candidate=candidate, baseline=baseline, pair_n=pair_n,
                           weighted=stratum_weights is not None)
    sentence = decision_sentence(verdict, rows, gate, candidate, baseline, mode, margin, q.theta_reg,
                                 confidence_level, K)
    return Decision(candidate, baseline, mode, margin, confidence_level, q.alpha, q.theta_pass, q.theta_reg,
                    tuple(rows), pooled, gate, verdict, EXIT_CODES[verdict], sentence, multiplicity,
                    q.look if looks > 1 else None, looks, boundary if looks > 1 else None, engine, seed,
                    tuple(notes))


def _question(systems: tuple[str, ...], candidate: str, baseline: str, *, margin: float, mode: str,
              confidence_level: float, min_pass_rate: float | None, engine: str, look: int | None, looks: int,
              boundary: str) -> _Question:
    """Check the options (in the order the messages are documented) and derive the thresholds."""
    check_systems(systems, candidate, baseline)
    check_range("margin", margin, 0, 0.5, low_open=False)
    check_range("confidence_level", confidence_level, 0, 1)
    check_choice("mode", mode, MODES)
    check_choice("engine", engine, ENGINES)
    check_choice("boundary", boundary, BOUNDARIES)
    if min_pass_rate is not None:
        check_range("min_pass_rate", min_pass_rate, 0, 1, low_open=False, high_open=False)
    look = check_look(look, looks)
    theta_reg = 0.5 - margin
    theta_pass = theta_reg if mode == "non-inferiority" else 0.5
    return _Question(candidate, baseline, systems.index(candidate), systems.index(baseline), mode, margin,
                     confidence_level, 1 - confidence_level, theta_pass, theta_reg, look, looks, boundary)


def _normalised_weights(stratum_weights: dict[str, float] | None, strata: tuple[str, ...]) -> np.ndarray:
    """Stratum weights in ``strata`` order, summing to 1 (equal when none are given or all are 0)."""
    K = len(strata)
    raw = np.array([float((stratum_weights or {}).get(s, 0.0)) for s in strata]) \
        if stratum_weights is not None else np.ones(K)
    if stratum_weights is not None:
        unknown = sorted(set(stratum_weights) - set(strata))
        if unknown:
            raise UsageError(f"stratum weights name unknown strata {unknown}; known strata are {list(strata)}",
                             parameters=('stratum_weights',))
        if np.any(~np.isfinite(raw)) or np.any(raw < 0):
            raise UsageError(f"stratum weights ({stratum_weights!r}) must be finite and >= 0",
                             parameters=('stratum_weights',))
    return raw / raw.sum() if raw.sum() > 0 else np.full(K, 1.0 / K)


def _model_columns(counts: Counts, fit, engine: str, strata: tuple[str, ...], weights: np.ndarray, seed: int,
                   q: _Question, clusters: ClusterCells | None = None) -> tuple[list, tuple, list[str]]:
    """Posterior rows per stratum, the pooled posterior and the model's notes (fits when ``fit`` is None)."""
    K = len(strata)
    notes: list[str] = []
    post_rows: list = [(None, None, None, None)] * K
    post_pool = (None, None, None, None)
    if fit is None and counts.n_cells > 0:
        from planner.model import fit as fit_model

        fit = fit_model(counts, engine=engine, by_stratum=True,
                        stratum_weights={s: float(w) for s, w in zip(strata, weights)}, seed=seed, clusters=clusters)
    if fit is not None:
        post_rows, post_pool = posterior_columns(fit, q.ci, q.bi, weights, q.theta_pass, q.confidence)
        notes.extend(f"model: {w}" for w in fit.diagnostics.warnings)
    else:
        notes.append("no judgments in the study: no posterior")
    return post_rows, post_pool, notes


def _score_tests(tally: np.ndarray, q: _Question, deffs: list[float]):
    """Per stratum: (W, L, T, invalid, score, tie share, interval) and the two one-sided z and p."""
    z_p, z_r, p_p, p_r, basics = [], [], [], [], []
    for k in range(len(tally)):
        w, l, t, inv = (int(v) for v in tally[k])
        s, tie, lo, hi = score_interval(w, l, t, q.confidence, deffs[k])
        basics.append((w, l, t, inv, s, tie, lo, hi))
        zp = zr = None
        if w + l + t > 0:   # trinomial score tests: the tie share is estimated under H0, not taken as known
            up = half_tie_score_z(w, l, t, q.theta_pass, deffs[k])
            down = half_tie_score_z(w, l, t, q.theta_reg, deffs[k])
            zp = None if up is None else finite(up)
            zr = None if down is None else finite(-down)
        z_p.append(zp)
        z_r.append(zr)
        p_p.append(None if zp is None else float(stats.norm.sf(zp)))
        p_r.append(None if zr is None else float(stats.norm.sf(zr)))
    return basics, z_p, z_r, p_p, p_r


def _stratum_rows(q: _Question, strata: tuple[str, ...], weights: np.ndarray, tally: np.ndarray,
                  post_rows: list, pooled_tie: float, pooled_inv: float, deffs: list[float]) -> list[StratumDecision]:
    """One gated row per stratum: the tests, Holm across strata, the verdict and what an undecided one needs."""
    K = len(strata)
    basics, z_p, z_r, p_p, p_r = _score_tests(tally, q, deffs)
    pass_rej, crit_p = holm(z_p, q.critical)
    reg_rej, crit_r = holm(z_r, q.critical)
    single = q.looks == 1
    p_p_holm = holm_adjusted(p_p) if single else [None] * K
    p_r_holm = holm_adjusted(p_r) if single else [None] * K
    theta_pass, theta_reg, look = q.theta_pass, q.theta_reg, q.look

    rows: list[StratumDecision] = []
    alpha_each = q.alpha / K
    for k, name in enumerate(strata):
        w, l, t, inv, s, tie, lo, hi = basics[k]
        n = w + l + t
        more = needed = None
        if reg_rej[k]:
            verdict = "regress"
            note = (f"upper end of the win-rate interval below {theta_reg:.0%} at the Holm-adjusted level"
                    if single else f"z {z_r[k]:.2f} beyond the look-{look} boundary {crit_r[k]:.2f} (Holm step)")
        elif pass_rej[k]:
            verdict = "pass"
            note = (f"lower end of the win-rate interval above {theta_pass:.0%} at the Holm-adjusted level"
                    if single else f"z {z_p[k]:.2f} beyond the look-{look} boundary {crit_p[k]:.2f} (Holm step)")
        else:
            verdict = "undecided"
            more, needed, note = plan_more(n, inv, tie, s, q.margin, theta_pass, theta_reg, pooled_tie,
                                           pooled_inv, alpha_each, q.looks, q.boundary, q.candidate, q.baseline,
                                           deffs[k])
            for zz, cc, side in ((z_r[k], crit_r[k], "below"), (z_p[k], crit_p[k], "above")):
                if K > 1 and zz is not None and zz >= q.critical(1):
                    stop = ", Holm stopped at an earlier step" if zz >= cc else ""
                    note = (f"{side} the threshold only without the adjustment for {K} strata "
                            f"(z {zz:.3f}; its Holm step needs {cc:.3f}{stop}); " + note)
        pm = post_rows[k]
        rows.append(StratumDecision(
            name, float(weights[k]), w, l, t, inv, n, s, lo, hi, tie,
            z_pass=z_p[k], z_regress=z_r[k], p_pass=p_p[k], p_regress=p_r[k],
            p_pass_holm=p_p_holm[k], p_regress_holm=p_r_holm[k], crit_pass=crit_p[k], crit_regress=crit_r[k],
            posterior_mean=pm[0], posterior_low=pm[1], posterior_high=pm[2], p_posterior=pm[3],
            verdict=verdict, more_comparisons=more, needed_total=needed, note=note, design_effect=deffs[k]))
    return rows


def _overall(rows: list[StratumDecision], gate) -> str:
    """``regress`` if any stratum regresses or acceptability fails; else ``undecided`` if any is; else ``pass``."""
    if any(r.verdict == "regress" for r in rows) or gate.status == "fail":
        return "regress"
    if any(r.verdict == "undecided" for r in rows) or gate.status == "undecided":
        return "undecided"
    return "pass"
