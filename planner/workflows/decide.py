"""Release gates: is a candidate system at least as good as a baseline, per stratum?

``planner decide STUDY --candidate X --baseline Y`` answers a gate question
rather than a ranking: *does X regress against Y on any stratum?* Per stratum
(and pooled over strata, re-weighted to the stratum weights) it reports

* the candidate's **win rate** against the baseline — the half-tie score
  ``(wins + ties/2) / (wins + losses + ties)`` over their direct comparisons,
  both positions pooled — with a trinomial score interval (ties' sampling
  error included; Wilson when there are no ties);
* two one-sided tests, Holm–Bonferroni across strata: *pass* rejects
  ``H0: win rate <= theta_pass`` and *regress* rejects
  ``H0: win rate >= theta_regress``, where ``theta_regress = 0.5 - margin`` and
  ``theta_pass = 0.5 - margin`` (non-inferiority) or ``0.5`` (superiority);
* the posterior probability ``P(win probability >= theta_pass)`` from the
  Bayesian Bradley–Terry–Davidson model (:func:`planner.model.fit`,
  ``by_stratum=True``), the win probability at neutral position being
  ``P(A) + P(tie)/2`` of :func:`planner.model.bt.outcome_probs` with ``gamma = 0``;
* a verdict ``pass`` / ``regress`` / ``undecided`` and, when undecided, how
  many more comparisons the stratum needs (from :func:`planner.stats.power.size`);

plus an acceptability gate on the absolute pass/fail verdicts, one overall
verdict with an exit code (0 pass, 3 regress, 4 undecided) and one sentence.

Each judgment scores 1 (win), 1/2 (tie) or 0 (loss); the counts are a
trinomial and the half-tie win rate ``S = pW + pT/2`` is its mean score. Tests
and intervals are **score** procedures for that mean with the tie share as a
nuisance parameter estimated under the null
(:func:`planner.stats.proportions.half_tie_score_z`,
:func:`planner.stats.proportions.half_tie_interval`): ``z = (S_hat - theta) /
sqrt(V(theta)/N)``, ``V`` the score variance at the restricted MLE. With no
ties they are exactly the Wilson score test and interval. Earlier versions
conditioned on the observed tie share (``t/2 + (1-t)·Wilson(W, W+L)``): the
interval collapsed onto the estimate (1–0–1 gave 75.0% (35.3–75.0)) and the
non-inferiority test was liberal when ties were common. A test at one look
without multiplicity passes exactly when the interval's lower end is above
``theta_pass`` (regresses when its upper end is below ``theta_regress``).
Formulas and references: docs/methods.md, "Release gates".
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache
from typing import Sequence

import numpy as np
from planner.stats import distributions as stats  # stats.norm without importing scipy.stats (issue 13)

from planner.model import bt
from planner.counts import Counts
from planner.errors import UsageError, check_range
from planner.stats.sequential import check_look
from planner.stats.proportions import half_tie_interval, half_tie_score_z, newcombe_difference, wilson_interval

MODES = ("non-inferiority", "superiority")
ENGINES = ("laplace", "nuts")
BOUNDARIES = ("obrien-fleming", "pocock")
VERDICTS = ("pass", "regress", "undecided")
#: exit codes scripts can gate on (data/usage errors keep 1 and 2)
EXIT_CODES = {"pass": 0, "regress": 3, "undecided": 4}
#: power of the sample-size rule behind ``more_comparisons``
PLANNING_POWER = 0.8
#: smallest decisive-scale effect the "more comparisons" rule plans for; below
#: it the figure would be tens of thousands and is reported as None instead
MIN_PLANNING_EFFECT = 0.02
#: tie share above which the conditional thresholds degenerate (capped here)
MAX_TIE_SHARE = 0.95


# --------------------------------------------------------------------------- #
# Results
# --------------------------------------------------------------------------- #


@dataclass(frozen=True)
class StratumDecision:
    """One stratum's gate (or the pooled row, ``stratum == "pooled"``).

    Attributes
    ----------
    stratum : str
    weight : float
        Normalised stratum weight (summed prompt weight, or prompt count when
        prompts carry no weight); sums to 1 over strata.
    wins, losses, ties, invalid : int
        The candidate's direct comparisons with the baseline, both positions.
    n : int
        Usable judgments ``wins + losses + ties``.
    win_rate : float or None
        Half-tie score of the candidate; None without usable judgments.
    ci_low, ci_high : float or None
        ``confidence`` Wilson interval of the win rate (unadjusted for the
        number of strata; conditional on the ties, see module docstring).
    tie_rate : float or None
        ``ties / n``.
    z_pass, z_regress : float or None
        Score statistics of the two one-sided tests (``+`` favours the
        candidate in both). None without decisive judgments.
    p_pass, p_regress : float or None
        One-sided p-values (normal), unadjusted.
    p_pass_holm, p_regress_holm : float or None
        Holm-adjusted one-sided p-values (single look only; compare with
        ``alpha / 2``).
    crit_pass, crit_regress : float or None
        The critical z of the Holm step at which the stratum was tested
        (group-sequential boundary with ``--looks``).
    posterior_mean, posterior_low, posterior_high : float or None
        Posterior mean and equal-tailed ``confidence`` credible interval of the
        win probability ``P(A) + P(tie)/2`` at neutral position.
    p_posterior : float or None
        Posterior probability that the win probability is ``>= theta_pass``.
        Not a p-value; needs no multiplicity or sequential correction.
    verdict : {'pass', 'regress', 'undecided'} or None
        None for the pooled row (the gate is per stratum).
    more_comparisons : int or None
        Undecided strata: further judgments of this pair in this stratum the
        power rule asks for (None when no sensible figure exists: see
        ``note``).
    needed_total : int or None
        The total those figures come from (judgments, invalid included).
    note : str
        Plain-English explanation of the verdict or figure.
    """

    stratum: str
    weight: float
    wins: int
    losses: int
    ties: int
    invalid: int
    n: int
    win_rate: float | None
    ci_low: float | None
    ci_high: float | None
    tie_rate: float | None
    z_pass: float | None = None
    z_regress: float | None = None
    p_pass: float | None = None
    p_regress: float | None = None
    p_pass_holm: float | None = None
    p_regress_holm: float | None = None
    crit_pass: float | None = None
    crit_regress: float | None = None
    posterior_mean: float | None = None
    posterior_low: float | None = None
    posterior_high: float | None = None
    p_posterior: float | None = None
    verdict: str | None = None
    more_comparisons: int | None = None
    needed_total: int | None = None
    note: str = ""


@dataclass(frozen=True)
class AcceptabilityGate:
    """The absolute pass/fail check of candidate and baseline.

    Attributes
    ----------
    status : {'pass', 'fail', 'undecided', 'not-applicable'}
        ``fail``: the candidate's pass rate is credibly below the baseline's
        (the Newcombe difference interval lies entirely below 0) or credibly
        below ``min_pass_rate`` (its Wilson interval lies below it);
        ``undecided``: the point estimate is below ``min_pass_rate`` but not
        credibly, or ``min_pass_rate`` was given and the candidate has no
        verdicts; ``not-applicable``: nothing to check.
    candidate_passed, candidate_failed, baseline_passed, baseline_failed : int
    candidate_rate, baseline_rate : float or None
        Pass rates ``passed / (passed + failed)`` (invalid excluded).
    candidate_low, candidate_high, baseline_low, baseline_high : float or None
        Wilson intervals at ``confidence``.
    difference, difference_low, difference_high : float or None
        Candidate minus baseline pass rate with Newcombe's hybrid score
        interval (method 10).
    min_pass_rate : float or None
    message : str
    """

    status: str
    candidate_passed: int
    candidate_failed: int
    baseline_passed: int
    baseline_failed: int
    candidate_rate: float | None
    candidate_low: float | None
    candidate_high: float | None
    baseline_rate: float | None
    baseline_low: float | None
    baseline_high: float | None
    difference: float | None
    difference_low: float | None
    difference_high: float | None
    min_pass_rate: float | None
    message: str


@dataclass(frozen=True)
class Decision:
    """The release-gate answer for one candidate against one baseline.

    Attributes
    ----------
    candidate, baseline, mode : str
    margin : float
        Non-inferiority margin on the win-rate (half-tie score) scale.
    confidence : float
        Interval level; the tests run one-sided at ``alpha/2`` each with
        ``alpha = 1 - confidence``, family-wise over strata (Holm).
    threshold_pass, threshold_regress : float
        ``theta_pass`` and ``theta_regress`` (see module docstring).
    strata : tuple of StratumDecision
        In study stratum order.
    pooled : StratumDecision
        Re-weighted to the stratum weights; informative, not part of the gate.
    acceptability : AcceptabilityGate
    verdict : {'pass', 'regress', 'undecided'}
        ``regress`` if any stratum regresses or the acceptability gate fails;
        else ``undecided`` if any stratum (or the acceptability gate) is
        undecided; else ``pass``.
    exit_code : int
        0 pass, 3 regress, 4 undecided.
    sentence : str
        The answer in one sentence.
    multiplicity : str
        How the family-wise error is controlled (Holm–Bonferroni over strata).
    look, looks, boundary : int, int, str or None
        Group-sequential analysis (``looks > 1``).
    engine : str
    seed : int
    notes : tuple of str
        Conventions and warnings worth showing.
    """

    candidate: str
    baseline: str
    mode: str
    margin: float
    confidence: float
    alpha: float
    threshold_pass: float
    threshold_regress: float
    strata: tuple[StratumDecision, ...]
    pooled: StratumDecision
    acceptability: AcceptabilityGate
    verdict: str
    exit_code: int
    sentence: str
    multiplicity: str
    look: int | None
    looks: int
    boundary: str | None
    engine: str
    seed: int
    notes: tuple[str, ...]


# --------------------------------------------------------------------------- #
# Statistics helpers
# --------------------------------------------------------------------------- #


def conditional_threshold(theta: float, tie_rate: float) -> float:
    """Decisive-win-rate threshold equivalent to half-tie score ``theta`` given tie share ``t``.

    ``S = t/2 + (1 - t) p`` so ``S > theta`` iff ``p > (theta - t/2)/(1 - t)``;
    clipped to (1e-9, 1 - 1e-9).
    """
    t = min(tie_rate, MAX_TIE_SHARE)
    return float(min(max((theta - t / 2) / (1 - t), 1e-9), 1 - 1e-9))


def score_z(wins: int, decisive: int, p0: float) -> float | None:
    """Score statistic ``(W - D p0) / sqrt(D p0 (1 - p0))`` (None when ``D == 0``)."""
    if decisive <= 0:
        return None
    return (wins - decisive * p0) / math.sqrt(decisive * p0 * (1 - p0))


def holm(z: Sequence[float | None], critical) -> tuple[list[bool], list[float | None]]:
    """Holm's step-down procedure on one-sided statistics (larger = more evidence).

    Parameters
    ----------
    z : sequence of float or None
        One statistic per hypothesis (None: untestable, never rejected but
        counted in the family).
    critical : callable m -> float
        Critical value of a test at level ``alpha/m`` (Holm 1979: the j-th
        smallest p-value is compared with ``alpha/(K - j + 1)``).

    Returns
    -------
    rejected : list of bool
    crit : list of float
        The critical value at the step each hypothesis was tested at.
    """
    K = len(z)
    order = sorted(range(K), key=lambda i: (-(z[i] if z[i] is not None else -math.inf), i))
    rejected = [False] * K
    crit: list[float | None] = [None] * K
    going = True
    for step, i in enumerate(order):
        c = critical(K - step)
        crit[i] = c
        if going and z[i] is not None and z[i] >= c:
            rejected[i] = True
        else:
            going = False
    return rejected, crit


def holm_adjusted(p: Sequence[float | None]) -> list[float | None]:
    """Holm-adjusted p-values ``max_{i<=j} min(1, (K - i + 1) p_(i))`` (None stays None)."""
    K = len(p)
    order = sorted(range(K), key=lambda i: (p[i] if p[i] is not None else math.inf, i))
    out: list[float | None] = [None] * K
    running = 0.0
    for step, i in enumerate(order):
        if p[i] is None:
            continue
        running = max(running, min(1.0, (K - step) * p[i]))
        out[i] = running
    return out


@lru_cache(maxsize=256)
def _critical(m: int, alpha: float, look: int, looks: int, boundary: str) -> float:
    """Critical z of one one-sided test at Holm step level ``alpha/m``.

    Single look: ``z_{1 - alpha/(2m)}`` (each side of a two-sided level-alpha/m
    test). ``looks > 1``: the two-sided group-sequential boundary at level
    ``alpha/m`` at ``look`` (:func:`planner.stats.power.sequential_design`).
    """
    if looks <= 1:
        return float(stats.norm.isf(alpha / (2 * m)))
    from planner.stats.sequential import sequential_design

    return float(sequential_design(looks, alpha / m, PLANNING_POWER, boundary, "two-sided").z_boundaries[look - 1])


@lru_cache(maxsize=256)
def _needed(delta: float, tie_rate: float, invalid_rate: float, alpha: float, looks: int,
            boundary: str) -> int | None:
    """Judgments one stratum needs to detect a half-tie distance ``delta`` (power 0.8).

    :func:`planner.stats.power.size` with ``ties='half'``: the decisive effect
    ``d = delta / (1 - t)`` shifts the half-tie score by ``delta``; two-sided at
    ``alpha`` (the Bonferroni level alpha/K of Holm's first step), observed
    invalid rate; with ``looks > 1`` the group-sequential maximum ``n_max``.
    """
    from planner.stats import power as pw

    t = min(tie_rate, MAX_TIE_SHARE)
    d = delta / (1 - t)
    if not d >= MIN_PLANNING_EFFECT:
        return None
    d = min(d, 0.49)
    design = pw.Design(alpha=alpha, power=PLANNING_POWER, alternative="two-sided", ties="half",
                       tie_rate=t, invalid_rate=min(invalid_rate, 0.9))
    res = pw.size(d, design, looks=looks, boundary=boundary)
    return int(res.sequential.n_max) if looks > 1 else int(res.judgments_per_pair)


# --------------------------------------------------------------------------- #
# Core
# --------------------------------------------------------------------------- #


def _pair_tallies(counts: Counts, ci: int, bi: int) -> np.ndarray:
    """(K, 4) wins, losses, ties, invalid of system ``ci`` against ``bi`` per stratum."""
    return counts.pair_tensor(by_stratum=True)[:, ci, bi, :]


def _position_shares(counts: Counts, ci: int, bi: int) -> list[tuple[str, float, int]]:
    """(stratum, share of usable judgments with the candidate shown first, usable) per stratum."""
    out = []
    usable = counts.usable
    for k, name in enumerate(counts.strata):
        st = counts.stratum == k
        first = int(usable[st & (counts.a == ci) & (counts.b == bi)].sum())
        second = int(usable[st & (counts.a == bi) & (counts.b == ci)].sum())
        if first + second:
            out.append((name, first / (first + second), first + second))
    return out


def _interval(w: int, l: int, t: int, confidence: float):
    """Half-tie score, tie share and the trinomial score interval (ties' sampling error included)."""
    n = w + l + t
    if n == 0:
        return None, None, None, None
    lo, hi = half_tie_interval(w, l, t, confidence)
    return (w + t / 2) / n, t / n, lo, hi


def _finite(z: float) -> float:
    """Clip an infinite score statistic (zero null variance) to a large finite value for Holm/JSON."""
    return float(min(max(z, -1e6), 1e6))


def _pooled(rows: list[StratumDecision], confidence: float, post: tuple) -> StratumDecision:
    """Stratified estimate ``sum w_h S_h`` over strata with data (weights renormalised).

    Variance ``sum w_h^2 V_h / N_h`` with ``V_h = pW + pT/4 - S_h²`` the
    plug-in variance of one judgment's score (ties' sampling error included);
    Wilson interval with the effective sample size ``S (1 - S) / Var`` (Korn &
    Graubard 1998), capped at the number of usable judgments.
    """
    have = [r for r in rows if r.n > 0]
    tot = [int(sum(getattr(r, f) for r in rows)) for f in ("wins", "losses", "ties", "invalid")]
    n_all = tot[0] + tot[1] + tot[2]
    s = lo = hi = tie = None
    wsum = sum(r.weight for r in have)
    if have and wsum > 0:
        w = [r.weight / wsum for r in have]
        s = float(sum(wi * r.win_rate for wi, r in zip(w, have)))
        var = 0.0
        for wi, r in zip(w, have):
            v = (r.wins + r.ties / 4) / r.n - r.win_rate ** 2
            var += wi * wi * max(v, 0.0) / r.n
        n_eff = n_all if var <= 0 else min(n_all, s * (1 - s) / var)
        lo, hi = wilson_interval(s * n_eff, n_eff, confidence) if n_eff > 0 else (None, None)
        tie = tot[2] / n_all
    elif have:  # every stratum with data has weight 0: fall back to the raw pooled score
        s, tie, lo, hi = _interval(tot[0], tot[1], tot[2], confidence)
    return StratumDecision("pooled", 1.0, tot[0], tot[1], tot[2], tot[3], n_all, s, lo, hi, tie,
                           posterior_mean=post[0], posterior_low=post[1], posterior_high=post[2],
                           p_posterior=post[3],
                           note="re-weighted to the stratum weights; informative, not part of the gate")


def _posterior(fit, ci: int, bi: int, weights: np.ndarray, theta: float, confidence: float):
    """Per-stratum and pooled posterior summaries of ``P(A) + P(tie)/2`` at gamma = 0."""
    draws = fit.stratum_draws  # (S, K, M)
    pa, _, pt = bt.outcome_probs(draws[:, :, ci] - draws[:, :, bi], fit.posterior.nu)
    win = pa + pt / 2  # (S, K)
    pooled = win @ weights
    q = (1 - confidence) / 2

    def summ(x):
        lo, hi = np.quantile(x, [q, 1 - q])
        return float(x.mean()), float(lo), float(hi), float(np.mean(x >= theta))

    return [summ(win[:, k]) for k in range(win.shape[1])], summ(pooled)


def _acceptability_gate(acc, ci: int, bi: int, min_pass_rate: float | None,
                        confidence: float, candidate: str, baseline: str) -> AcceptabilityGate:
    if acc is None:
        cp = cf = bp = bf = 0
    else:
        cp, cf = int(np.asarray(acc.passed)[ci].sum()), int(np.asarray(acc.failed)[ci].sum())
        bp, bf = int(np.asarray(acc.passed)[bi].sum()), int(np.asarray(acc.failed)[bi].sum())
    cn, bn = cp + cf, bp + bf
    cr = cp / cn if cn else None
    br = bp / bn if bn else None
    cl, ch = wilson_interval(cp, cn, confidence)
    bl, bh = wilson_interval(bp, bn, confidence)
    d, dl, dh = newcombe_difference(cp, cn, bp, bn, confidence)
    pct = lambda v: f"{100 * v:.0f}%"  # noqa: E731
    fails, undecided, fine = [], [], []
    if d is not None:
        if dh < 0:
            fails.append(f"{candidate}'s pass rate {pct(cr)} is credibly below {baseline}'s {pct(br)} "
                         f"(difference {100 * d:+.0f} points, {confidence:.0%} Newcombe interval "
                         f"[{100 * dl:+.0f}, {100 * dh:+.0f}])")
        else:
            fine.append(f"pass rate {pct(cr)} vs {baseline}'s {pct(br)} (difference {100 * d:+.0f} points, "
                        f"{confidence:.0%} interval [{100 * dl:+.0f}, {100 * dh:+.0f}])")
    if min_pass_rate is not None:
        if cr is None:
            undecided.append(f"{candidate} has no acceptability verdicts to check against "
                             f"--min-pass-rate {pct(min_pass_rate)}")
        elif ch < min_pass_rate:
            fails.append(f"{candidate}'s pass rate {pct(cr)} ({confidence:.0%} interval {pct(cl)}–{pct(ch)}) "
                         f"is credibly below --min-pass-rate {pct(min_pass_rate)}")
        elif cr < min_pass_rate:
            undecided.append(f"{candidate}'s pass rate {pct(cr)} is below --min-pass-rate {pct(min_pass_rate)} "
                             f"but not credibly (interval {pct(cl)}–{pct(ch)}): collect more acceptability items")
        else:
            fine.append(f"pass rate {pct(cr)} meets --min-pass-rate {pct(min_pass_rate)}")
    if fails:
        status, msg = "fail", "; ".join(fails)
    elif undecided:
        status, msg = "undecided", "; ".join(undecided)
    elif fine:
        status, msg = "pass", f"{candidate}: " + "; ".join(fine)
    else:
        status = "not-applicable"
        msg = ("no acceptability verdicts for the two systems" if cn + bn == 0 else
               f"acceptability verdicts for only one of the two systems ({candidate}: {cn}, {baseline}: {bn})")
    return AcceptabilityGate(status, cp, cf, bp, bf, cr, cl, ch, br, bl, bh, d, dl, dh, min_pass_rate, msg)


def check_systems(systems: Sequence[str], candidate: str, baseline: str) -> None:
    """UsageError unless both names are systems of the study and differ (names the allowed ones)."""
    allowed = ", ".join(systems)
    for opt, name in (("--candidate", candidate), ("--baseline", baseline)):
        if name not in systems:
            raise UsageError(f"{opt} ({name}) is not a system of the study; expected one of {allowed}")
    if candidate == baseline:
        raise UsageError(f"--candidate and --baseline ({candidate}) must be different systems")


def decide_counts(counts: Counts, candidate: str, baseline: str, *,
                  stratum_weights: dict[str, float] | None = None, acceptability=None,
                  margin: float = 0.05, mode: str = "non-inferiority", confidence: float = 0.95,
                  min_pass_rate: float | None = None, engine: str = "laplace",
                  look: int | None = None, looks: int = 1, boundary: str = "obrien-fleming",
                  seed: int = 0, fit=None) -> Decision:
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
    confidence : float
        In (0, 1); ``alpha = 1 - confidence``, each one-sided test at
        ``alpha/2`` before Holm.
    min_pass_rate : float, optional
        Absolute acceptability floor in [0, 1].
    engine : {'laplace', 'nuts'}
    look, looks, boundary :
        Group-sequential analysis number ``look`` of ``looks``; the tests use
        the matching two-sided boundary (:func:`planner.stats.power.sequential_design`).
    seed : int
        Seeds the posterior draws.
    fit : planner.model.Fit, optional
        A ready by-stratum fit of ``counts`` (tests; skips fitting).

    Returns
    -------
    Decision
    """
    systems = tuple(counts.systems)
    check_systems(systems, candidate, baseline)
    check_range("--margin", margin, 0, 0.5, low_open=False)
    check_range("--confidence", confidence, 0, 1)
    if mode not in MODES:
        raise UsageError(f"--mode ({mode!r}) must be one of {', '.join(MODES)}")
    if engine not in ENGINES:
        raise UsageError(f"--engine ({engine!r}) must be one of {', '.join(ENGINES)}")
    if boundary not in BOUNDARIES:
        raise UsageError(f"--boundary ({boundary!r}) must be one of {', '.join(BOUNDARIES)}")
    if min_pass_rate is not None:
        check_range("--min-pass-rate", min_pass_rate, 0, 1, low_open=False, high_open=False)
    look = check_look(look, looks)

    alpha = 1 - confidence
    strata = tuple(counts.strata)
    K = len(strata)
    theta_reg = 0.5 - margin
    theta_pass = theta_reg if mode == "non-inferiority" else 0.5
    ci, bi = systems.index(candidate), systems.index(baseline)

    raw = np.array([float((stratum_weights or {}).get(s, 0.0)) for s in strata]) \
        if stratum_weights is not None else np.ones(K)
    if stratum_weights is not None:
        unknown = sorted(set(stratum_weights) - set(strata))
        if unknown:
            raise UsageError(f"stratum weights name unknown strata {unknown}; known strata are {list(strata)}")
        if np.any(~np.isfinite(raw)) or np.any(raw < 0):
            raise UsageError(f"stratum weights ({stratum_weights!r}) must be finite and >= 0")
    weights = raw / raw.sum() if raw.sum() > 0 else np.full(K, 1.0 / K)

    tally = _pair_tallies(counts, ci, bi)
    pair_total = tally.sum(axis=0)
    pair_n = int(pair_total[:3].sum())
    pooled_tie = pair_total[2] / pair_n if pair_n else 0.0
    pooled_inv = pair_total[3] / (pair_n + pair_total[3]) if pair_n + pair_total[3] else 0.0

    # ---- Bayesian model
    notes: list[str] = []
    post_rows: list = [(None, None, None, None)] * K
    post_pool = (None, None, None, None)
    if fit is None and counts.n_cells > 0:
        from planner.model import fit as fit_model

        fit = fit_model(counts, engine=engine, by_stratum=True,
                        stratum_weights={s: float(w) for s, w in zip(strata, weights)}, seed=seed)
    if fit is not None:
        post_rows, post_pool = _posterior(fit, ci, bi, weights, theta_pass, confidence)
        notes.extend(f"model: {w}" for w in fit.diagnostics.warnings)
    else:
        notes.append("no judgments in the study: no posterior")

    # ---- frequentist tests per stratum
    z_p, z_r, p_p, p_r, basics = [], [], [], [], []
    for k in range(K):
        w, l, t, inv = (int(v) for v in tally[k])
        s, tie, lo, hi = _interval(w, l, t, confidence)
        basics.append((w, l, t, inv, s, tie, lo, hi))
        zp = zr = None
        if w + l + t > 0:   # trinomial score tests: the tie share is estimated under H0, not taken as known
            zp = _finite(half_tie_score_z(w, l, t, theta_pass))
            zr = _finite(-half_tie_score_z(w, l, t, theta_reg))
        z_p.append(zp)
        z_r.append(zr)
        p_p.append(None if zp is None else float(stats.norm.sf(zp)))
        p_r.append(None if zr is None else float(stats.norm.sf(zr)))

    def critical(m: int) -> float:
        return _critical(m, alpha, look, looks, boundary)

    pass_rej, crit_p = holm(z_p, critical)
    reg_rej, crit_r = holm(z_r, critical)
    single = looks == 1
    p_p_holm = holm_adjusted(p_p) if single else [None] * K
    p_r_holm = holm_adjusted(p_r) if single else [None] * K

    rows: list[StratumDecision] = []
    alpha_each = alpha / K
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
            more, needed, note = _more(n, inv, tie, s, margin, theta_pass, theta_reg, pooled_tie,
                                       pooled_inv, alpha_each, looks, boundary, candidate, baseline)
            for zz, cc, side in ((z_r[k], crit_r[k], "below"), (z_p[k], crit_p[k], "above")):
                if K > 1 and zz is not None and zz >= critical(1):
                    stop = ", Holm stopped at an earlier step" if zz >= cc else ""
                    note = (f"{side} the threshold only without the adjustment for {K} strata "
                            f"(z {zz:.3f}; its Holm step needs {cc:.3f}{stop}); " + note)
        pm = post_rows[k]
        rows.append(StratumDecision(
            name, float(weights[k]), w, l, t, inv, n, s, lo, hi, tie,
            z_pass=z_p[k], z_regress=z_r[k], p_pass=p_p[k], p_regress=p_r[k],
            p_pass_holm=p_p_holm[k], p_regress_holm=p_r_holm[k], crit_pass=crit_p[k], crit_regress=crit_r[k],
            posterior_mean=pm[0], posterior_low=pm[1], posterior_high=pm[2], p_posterior=pm[3],
            verdict=verdict, more_comparisons=more, needed_total=needed, note=note))

    pooled = _pooled(rows, confidence, post_pool)
    gate = _acceptability_gate(acceptability, ci, bi, min_pass_rate, confidence, candidate, baseline)

    if any(r.verdict == "regress" for r in rows) or gate.status == "fail":
        verdict = "regress"
    elif any(r.verdict == "undecided" for r in rows) or gate.status == "undecided":
        verdict = "undecided"
    else:
        verdict = "pass"

    multiplicity = (f"Holm–Bonferroni across {K} strat{'um' if K == 1 else 'a'} "
                    f"(family-wise alpha {alpha:g}, each one-sided test at alpha/2 = {alpha / 2:g} before adjustment)")
    notes.insert(0, multiplicity)
    if looks > 1:
        notes.append(f"look {look} of {looks}: the tests use the two-sided {boundary} group-sequential boundary "
                     f"at each Holm step's level (|z| >= {critical(K):.3f} at the strictest step) instead of the "
                     f"fixed-sample threshold {float(stats.norm.isf(alpha / (2 * K))):.3f}")
    notes.append(f"the model columns (win probability and P(win >= {theta_pass:.0%})) come from the "
                 "Bradley-Terry-Davidson model fitted per stratum to every system's judgments (strata partially "
                 "pooled, indirect comparisons through other systems included, position effect removed), so "
                 "they can be far surer than this pair's direct W-L-T; P(win >= ...) is a posterior "
                 "probability: it needs no correction for strata or looks, but it is not a p-value and does "
                 "not decide the verdict")
    for name, share, used in _position_shares(counts, ci, bi):
        if used >= 20 and abs(share - 0.5) > 0.1:
            notes.append(f"positions unbalanced in {name}: {candidate} was shown first in {share:.0%} of {used} "
                         "judgments; the win rate includes any position bias (the posterior corrects for it)")
    if pair_n == 0:
        notes.append(f"no comparisons between {candidate} and {baseline} yet: every stratum is undecided")
    if stratum_weights is None:
        notes.append("strata weighted equally (no stratum weights given)")

    sentence = _sentence(verdict, rows, gate, candidate, baseline, mode, margin, theta_reg, confidence, K)
    return Decision(candidate, baseline, mode, margin, confidence, alpha, theta_pass, theta_reg,
                    tuple(rows), pooled, gate, verdict, EXIT_CODES[verdict], sentence, multiplicity,
                    look if looks > 1 else None, looks, boundary if looks > 1 else None, engine, seed,
                    tuple(notes))


def _more(n, inv, tie, s, margin, theta_pass, theta_reg, pooled_tie, pooled_inv, alpha_each,
          looks, boundary, candidate, baseline):
    """(more_comparisons, needed_total, note) for an undecided stratum.

    Planning distance = the margin (the distance between "equal" and the
    threshold) or, when larger, the observed distance of the win rate from the
    nearer threshold; judgments needed for it from :func:`_needed`, minus the
    judgments collected (invalid included). When the stratum already has that
    many, re-plan for the (smaller) observed distance; None when even that is
    met or below :data:`MIN_PLANNING_EFFECT`. Rule and rationale:
    docs/methods.md, "Release gates".
    """
    t = tie if n > 0 else pooled_tie
    r = inv / (n + inv) if n + inv > 0 else pooled_inv
    have = n + inv
    dist = None if s is None else min(abs(s - theta_pass), abs(s - theta_reg))
    plan = margin if dist is None else max(margin, dist)
    level = f"power {PLANNING_POWER:g}, two-sided Bonferroni level {alpha_each:.3g}"
    needed = _needed(plan, t, r, alpha_each, looks, boundary) if plan > 0 else None
    if needed is not None and needed > have:
        basis = (f"the margin {margin:g} (a true win rate of 50%)" if dist is None or dist <= margin
                 else f"the observed distance {dist:.3f} from the threshold")
        return needed - have, needed, f"{needed:,} judgments to detect {basis}, {level}; {have:,} collected"
    if s is None:
        return None, None, (f"no comparisons between {candidate} and {baseline} in this stratum, and margin 0 "
                            "leaves no distance to plan for")
    if dist < plan:  # already past the margin's size: the win rate sits closer to the threshold
        again = _needed(dist, t, r, alpha_each, looks, boundary)
        if again is not None and again > have:
            return again - have, again, (f"{again:,} judgments to detect the observed distance {dist:.3f} from the "
                                         f"threshold (less than the margin), {level}; {have:,} collected")
    thresholds = f"{theta_reg:.0%}" + ("" if theta_pass == theta_reg else f"/{theta_pass:.0%}")
    return None, needed, (f"the win rate {s:.1%} sits at the threshold ({thresholds}) with {have:,} judgments "
                          "collected: more comparisons may not decide it")


def _sentence(verdict, rows, gate, candidate, baseline, mode, margin, theta_reg, confidence, K) -> str:
    def names(rs):
        xs = [r.stratum for r in rs]
        return xs[0] if len(xs) == 1 else ", ".join(xs[:-1]) + " and " + xs[-1]

    where = "" if K == 1 and rows[0].stratum == "all" else " in "
    if verdict == "regress":
        bad = [r for r in rows if r.verdict == "regress"]
        parts = []
        if bad:
            def fig(r):
                return f"{r.win_rate:.0%}, upper {confidence:.0%} bound {r.ci_high:.0%}"

            if where:
                listed = [f"{r.stratum} ({fig(r)})" for r in bad]
                scope = listed[0] if len(listed) == 1 else ", ".join(listed[:-1]) + " and " + listed[-1]
                parts.append(f"{candidate}'s win rate against {baseline} is credibly below "
                             f"{theta_reg:.0%} in {scope}")
            else:
                parts.append(f"{candidate}'s win rate against {baseline} is credibly below "
                             f"{theta_reg:.0%} ({fig(bad[0])})")
        if gate.status == "fail":
            parts.append(f"acceptability: {gate.message}")
        return "Release gate: REGRESS — " + "; ".join(parts) + "."
    if verdict == "undecided":
        und = [r for r in rows if r.verdict == "undecided"]
        parts = ["no stratum regresses" if where else f"{candidate} neither passes nor regresses yet"]
        if not any(r.n for r in rows):
            figs = [r.more_comparisons for r in rows]
            total = f" — about {sum(figs):,} comparisons needed" if all(f is not None for f in figs) else ""
            per = " over all strata" if len(rows) > 1 and total else ""
            parts = [f"{candidate} and {baseline} have not been compared yet{total}{per}"]
        elif not where:
            f = und[0].more_comparisons
            if f is not None:
                parts[-1] += f" — about {f:,} more comparisons needed"
            else:
                parts[-1] += " — more comparisons may not settle it (see notes)"
        elif und:
            figs = [r.more_comparisons for r in und]
            verb = "is" if len(und) == 1 else "are"
            label = names(und) if where else "the comparison"
            known = [f for f in figs if f is not None]
            if len(und) > 3:
                tail = [f"about {sum(known):,} more comparisons in all"] if known else []
                if len(known) < len(figs):
                    tail.append(f"{len(figs) - len(known)} may not settle with more data")
                parts[-1] += f"; {len(und)} strata are undecided ({label}) — " + ", ".join(tail)
            elif len(known) == len(figs):
                if len(und) == 1:
                    more = f"about {figs[0]:,} more comparisons there"
                else:
                    more = (f"about {', '.join(f'{f:,}' for f in figs[:-1])} and {figs[-1]:,} more comparisons "
                            f"there ({sum(figs):,} in all)")
                parts[-1] += f"; {label} {verb} undecided — {more}"
            else:
                parts[-1] += f"; {label} {verb} undecided — more comparisons may not settle it (see notes)"
        if gate.status == "undecided":
            parts.append(f"acceptability undecided: {gate.message}")
        return "Release gate: UNDECIDED — " + "; ".join(parts) + "."
    claim = (f"non-inferior to {baseline} (margin {margin:g})" if mode == "non-inferiority"
             else f"better than {baseline}" + (f" (margin {margin:g} for regressions)" if margin else ""))
    scope = f" in all {K} strata" if K > 1 else (f" in {rows[0].stratum}" if where else "")
    tail = f"; acceptability OK ({gate.message})" if gate.status == "pass" else ""
    return f"Release gate: PASS — {candidate} is {claim}{scope}{tail}."


# --------------------------------------------------------------------------- #
# Study entry point
# --------------------------------------------------------------------------- #


def decide(path, candidate: str, baseline: str, *, margin: float = 0.05, mode: str = "non-inferiority",
           confidence: float = 0.95, min_pass_rate: float | None = None, engine: str = "laplace",
           look: int | None = None, looks: int = 1, boundary: str = "obrien-fleming",
           seed: int | None = None, style_control: bool = False) -> Decision:
    """Release gate of ``candidate`` against ``baseline`` on a study; see :func:`decide_counts`.

    ``style_control``: the posterior columns come from the style-controlled
    model (:func:`planner.workflows.style_report.controlled_fit_by_stratum`).

    Reads the study's by-stratum counts (QC kinds excluded), its stratum
    weights (:func:`planner.strata.stratum_weights`, the one rule) and its
    acceptability verdicts.
    ``seed`` defaults to the study's seed.

    Raises
    ------
    DataError
        ``path`` is not a study.
    UsageError
        Unknown or identical systems, or an option out of range (named with
        the allowed values).
    """
    from planner.limits import check_seed
    from planner.strata import stratum_weights
    from planner.store.study import Study

    check_seed("--seed", seed)
    with Study.open(path) as study:
        check_systems(study.systems, candidate, baseline)
        counts = study.counts(by_stratum=True)
        sw = stratum_weights(study.prompts(), counts.strata)
        weights, how = sw.weights, sw.note
        acc = study.acceptability_counts(by_stratum=False)
        if seed is None:
            seed = int(study.config.get("seed", 0))
        fit = None
        if style_control:
            from planner.workflows.style_report import controlled_fit_by_stratum

            fit = controlled_fit_by_stratum(study, counts.strata, engine=engine, seed=seed)
    res = decide_counts(counts, candidate, baseline, stratum_weights=weights, acceptability=acc,
                        margin=margin, mode=mode, confidence=confidence, min_pass_rate=min_pass_rate,
                        engine=engine, look=look, looks=looks, boundary=boundary, seed=seed, fit=fit)
    from dataclasses import replace

    notes = tuple(n for n in res.notes if not n.startswith("strata weighted equally")) + (
        f"stratum weights: {how}",)
    if style_control:
        from planner.workflows.style_report import STYLE_DECIDE_NOTE

        notes += (STYLE_DECIDE_NOTE,)
    return replace(res, notes=notes)
