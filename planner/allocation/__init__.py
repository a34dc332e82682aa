"""planner.allocation: ``allocate``'s maths (see docs/architecture.md).

``maths`` holds the strata, the basis per method, bounds and weights (and next-batch's ``plan_strata`` and
``choose_prompts``), ``result`` the typed results, ``learned`` what allocate learns from data and
``apportion`` the integer apportionment. ``from planner.allocation import allocate`` works as before the
package existed; each module is imported when one of its names is first read (:mod:`planner.reexport`).
"""

from planner.reexport import lazy_reexport

__all__, __getattr__, __dir__ = lazy_reexport(__name__, {
    "apportion": ("quotas",),
    "learned": ("pointwise_gaps", "stratum_sd"),
    "maths": ("BY", "METHODS", "ONE_STRATUM", "SHARE_TOLERANCE", "allocate", "choose_prompts", "parse_target",
              "plan_strata", "problems_error", "stratum_label"),
    "result": ("Allocation", "ChosenPrompt", "StratumAllocation"),
})
