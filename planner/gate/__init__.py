"""Release gates: is a candidate system at least as good as a baseline, per stratum?

``planner decide STUDY --candidate X --baseline Y`` answers a gate question
rather than a ranking: *does X regress against Y on any stratum?* Per stratum
(and pooled over strata, re-weighted to the stratum weights) it reports

* the candidate's **win rate** against the baseline — the half-tie score
  ``(wins + ties/2) / (wins + losses + ties)`` over their direct comparisons,
  both positions pooled — with Tango's score interval (ties' sampling error
  included; Wilson's with continuity correction when there are no ties),
  widened by the stratum's design effect when verdicts are clustered;
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
and intervals are Tango's (1998) paired **score** procedures for that mean with
the tie share as a nuisance parameter estimated under the null
(:func:`planner.stats.proportions.half_tie_score_z`,
:func:`planner.stats.proportions.half_tie_interval`): ``z = (|W + T/2 - N theta|
- 1/2) / sqrt(deff N V(theta))`` with its sign, ``V`` the score variance at the
restricted MLE, Yates' half keeping the exact size at most 0.027 per side at the
nominal 0.025, ``deff`` the stratum's design effect. With no ties and no
clustering they are Wilson's score test and interval with continuity correction. Earlier versions
conditioned on the observed tie share (``t/2 + (1-t)·Wilson(W, W+L)``): the
interval collapsed onto the estimate (1–0–1 gave 75.0% (35.3–75.0)) and the
non-inferiority test was liberal when ties were common. A test at one look
without multiplicity passes exactly when the interval's lower end is above
``theta_pass`` (regresses when its upper end is below ``theta_regress``).
Formulas and references: docs/methods.md, "Release gates".

The package is pure (Counts in, a frozen :class:`Decision` out); the
``decide`` workflow (:mod:`planner.workflows.decide`) opens the study and calls
:func:`decide_counts`. Modules: ``results`` (the result types and
vocabularies), ``release`` (:func:`decide_counts`), ``estimates`` (tallies,
score interval, pooled row, posterior columns), ``planning`` (more
comparisons), ``acceptability`` (the pass/fail gate), ``text`` (the sentence
and notes); Holm is :mod:`planner.stats.multiplicity`.
"""

from __future__ import annotations

from planner.gate.acceptability import acceptability_gate
from planner.gate.planning import MAX_TIE_SHARE, MIN_PLANNING_EFFECT, PLANNING_POWER, conditional_threshold
from planner.gate.release import check_systems, decide_counts, score_z
from planner.gate.results import EXIT_CODES, MODES, VERDICTS, AcceptabilityGate, Decision, StratumDecision
from planner.stats.multiplicity import holm, holm_adjusted

__all__ = [
                                  "EXIT_CODES",
                                  "MAX_TIE_SHARE",
                                  "MIN_PLANNING_EFFECT",
                                  "MODES",
                                  "PLANNING_POWER",
                                  "VERDICTS",
                                  "AcceptabilityGate",
                                  "Decision",
                                  "StratumDecision",
                                  "acceptability_gate",
                                  "check_systems",
                                  "conditional_threshold",
                                  "decide_counts",
                                  "holm",
                                  "holm_adjusted",
                                  "score_z",
]
