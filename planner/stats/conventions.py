"""The options of the win-rate tests and their one check (``size``, ``significance``).

The vocabularies (alternatives, tie conventions, designs, sequential
boundaries; a value is checked against them with :func:`planner.limits.check_choice`)
and :func:`z_alpha`, the critical z of a level under an alternative. Shared by
:mod:`planner.stats.design`, :mod:`planner.stats.power`,
:mod:`planner.stats.sequential` and :mod:`planner.stats.significance`.
"""

from __future__ import annotations

from planner.stats.distributions import norm  # scipy.stats' values without importing scipy.stats

ALTERNATIVES = ("two-sided", "greater")
TIE_CONVENTIONS = ("drop", "half")
DESIGNS = ("anchor", "round-robin")
BOUNDARIES = ("obrien-fleming", "pocock")


def z_alpha(alpha: float, alternative: str) -> float:
    """Critical z of a level-``alpha`` test: ``z_{1-alpha/2}`` two-sided, ``z_{1-alpha}`` greater."""
    return float(norm.isf(alpha / 2 if alternative == "two-sided" else alpha))
