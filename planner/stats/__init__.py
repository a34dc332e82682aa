"""planner.stats: the statistics of pairwise comparisons (see docs/architecture.md).

``from planner.stats import wilson_interval`` names any public function of the
package; each module is imported when one of its names is first read
(:mod:`planner.reexport`), so ``import planner.stats.clusters`` does not pay
for :mod:`planner.stats.power`.
"""

from planner.reexport import lazy_reexport

__all__, __getattr__, __dir__ = lazy_reexport(__name__, {
    "blas": ("blas_policy", "one_blas_thread"),
    "clusters": ("ClusterCells", "IccEstimate", "JudgmentArrays", "MIN_APPLIED_DESIGN_EFFECT", "applied_design_effect",
                 "check_cluster_by", "cluster_cells", "cluster_ids", "dense_codes", "design_effects_against",
                 "icc_oneway", "mean_design_effect", "pair_design_effect", "pair_scores", "verdict_icc"),
    "conventions": ("ALTERNATIVES", "BOUNDARIES", "DESIGNS", "TIE_CONVENTIONS", "z_alpha"),
    "design": ("Design", "check_effect", "effect_from_win_rate"),
    "distributions": ("binom", "norm"),
    "multiplicity": ("holm", "holm_adjusted"),
    "optim": ("brentq", "minimize_scalar_bounded", "nelder_mead_bounded"),
    "pass_rate": ("PassRateSize", "pass_rate_size"),
    "power": ("ExactSize", "SizeResult", "TABLE_EFFECTS", "convention_text", "critical_wins", "mde_exact",
              "mde_exact_headline", "mde_normal", "n_exact", "n_normal", "power_exact", "power_exact_decisive",
              "power_normal", "sigmas", "size"),
    "proportions": ("CONTINUITY", "Proportion", "half_tie_interval", "half_tie_score_z", "half_tie_z",
                    "newcombe_difference", "proportion", "tie_share_at", "wilson_half_width", "wilson_interval",
                    "z_two_sided"),
    "sequential": ("SequentialDesign", "check_look", "crossing_probabilities", "sequential_design"),
    "significance": ("Interval", "SignificanceResult"),   # significance() itself: planner.stats.significance
})
