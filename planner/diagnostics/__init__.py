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

Submodules (this package re-exports their public names):
``records`` (judgment records, position form, winner), ``pairs`` (pair table,
anchor tests, tie rates), ``bias`` (position, length), ``consistency``
(circular triads), ``reasons`` (reason shares), ``agreement`` (kappa,
annotator QC), ``acceptability`` (pass rates), ``letters`` (the compact letter
display) and ``ranking`` (exact Gaussian separation, rank intervals, comparisons
with the leader).
"""

from __future__ import annotations

from planner.diagnostics.acceptability import Acceptability, SystemAcceptability, acceptability
from planner.diagnostics.agreement import (
    ALWAYS_LEFT_FLAG,
    ALWAYS_LEFT_MIN_DECISIVE,
    ATTENTION_FLAG,
    FAST_SHARE_FLAG,
    KAPPA_FLAG,
    NEVER_TIE_MIN_USABLE,
    NEVER_TIE_OVERALL_RATE,
    READING_WPM,
    RUN_PVALUE_FLAG,
    SPEED_FACTOR,
    SWAP_CONSISTENCY_FLAG,
    Agreement,
    AnnotatorQC,
    AnnotatorReport,
    annotator_qc,
    cohen_kappa,
    fleiss_kappa,
    longest_run,
    run_probability,
)
from planner.diagnostics.bias import (
    POSITION_BIAS_FLAG_POINTS,
    LengthBias,
    PositionBias,
    length_bias,
    length_bias_counts,
    position_bias,
)
from planner.diagnostics.consistency import CircularTriads, circular_triads, circular_triads_from_scores
from planner.diagnostics.letters import LETTERS_MAX_SYSTEMS, compact_letters, letter_name
from planner.diagnostics.pairs import (
    AnchorRow,
    AnchorTests,
    PairRow,
    PairRows,
    PairTable,
    StratumTieRate,
    TieRates,
    anchor_tests,
    p_better_from_draws,
    pair_table,
    tie_rates,
)
from planner.diagnostics.ranking import (
    NEAR_THRESHOLD_SE,
    RANK_BLOCK,
    RANK_MC_SD,
    NearThreshold,
    RankGroups,
    gaussian_draws,
    gaussian_rank_intervals,
    p_better_fit,
    p_better_gaussian,
    pair_z,
    rank_draws_needed,
    rank_fit,
    rank_groups,
    rank_intervals,
)
from planner.diagnostics.reasons import ReasonShare, ReasonShares, SystemReasons, reason_shares, reason_shares_counts
from planner.diagnostics.records import (
    NON_RANKING_KINDS,
    JudgmentLike,
    JudgmentRecord,
    binom_p,
    check_level,
    check_verdict,
    left_is_a,
    position_verdict,
    ranking_judgments,
    value_of,
    winner,
)

# the one Wilson interval lives in planner.stats.proportions; re-exported for callers of planner.diagnostics
from planner.stats.proportions import Proportion, proportion, wilson_interval

__all__ = [
    "ALWAYS_LEFT_FLAG",
    "ALWAYS_LEFT_MIN_DECISIVE",
    # agreement
    "ATTENTION_FLAG",
    "FAST_SHARE_FLAG",
    "KAPPA_FLAG",
    # letters and ranking
    "LETTERS_MAX_SYSTEMS",
    "NEAR_THRESHOLD_SE",
    "NEVER_TIE_MIN_USABLE",
    "NEVER_TIE_OVERALL_RATE",
    # records
    "NON_RANKING_KINDS",
    # bias
    "POSITION_BIAS_FLAG_POINTS",
    "RANK_BLOCK",
    "RANK_MC_SD",
    "READING_WPM",
    "RUN_PVALUE_FLAG",
    "SPEED_FACTOR",
    "SWAP_CONSISTENCY_FLAG",
    "Acceptability",
    "Agreement",
    "AnchorRow",
    "AnchorTests",
    "AnnotatorQC",
    "AnnotatorReport",
    # consistency
    "CircularTriads",
    "JudgmentLike",
    "JudgmentRecord",
    "LengthBias",
    "NearThreshold",
    # pairs
    "PairRow",
    "PairRows",
    "PairTable",
    "PositionBias",
    # proportions (re-exported from planner.stats.proportions)
    "Proportion",
    "RankGroups",
    # reasons
    "ReasonShare",
    "ReasonShares",
    "StratumTieRate",
    # acceptability
    "SystemAcceptability",
    "SystemReasons",
    "TieRates",
    "acceptability",
    "anchor_tests",
    "annotator_qc",
    "binom_p",
    "check_level",
    "check_verdict",
    "circular_triads",
    "circular_triads_from_scores",
    "cohen_kappa",
    "compact_letters",
    "fleiss_kappa",
    "gaussian_draws",
    "gaussian_rank_intervals",
    "left_is_a",
    "length_bias",
    "length_bias_counts",
    "letter_name",
    "longest_run",
    "p_better_fit",
    "p_better_from_draws",
    "p_better_gaussian",
    "pair_table",
    "pair_z",
    "position_bias",
    "position_verdict",
    "proportion",
    "rank_draws_needed",
    "rank_fit",
    "rank_groups",
    "rank_intervals",
    "ranking_judgments",
    "reason_shares",
    "reason_shares_counts",
    "run_probability",
    "tie_rates",
    "value_of",
    "wilson_interval",
    "winner",
]
