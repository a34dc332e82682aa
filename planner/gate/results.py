"""The release gate's results: one stratum's gate, the acceptability gate, the decision; their vocabularies."""

from __future__ import annotations

from dataclasses import dataclass

MODES = ("non-inferiority", "superiority")
VERDICTS = ("pass", "regress", "undecided")
#: exit codes scripts can gate on (data/usage errors keep 1 and 2)
EXIT_CODES = {"pass": 0, "regress": 3, "undecided": 4}


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
    design_effect : float
        Variance inflation applied to the tests and interval for clustered judgments (>= 1;
        1 when the judgments are treated as independent).
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
    design_effect: float = 1.0


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
