"""The design of a pairwise study: from the comparisons a test needs to the judgments to collect.

:class:`Design` holds the level, power, alternative, tie convention, invalid
rate, both orders, clustering on prompts and the number of systems, and turns
a test's sample size into judgments (:meth:`Design.judgments`) and a budget
back into a test's sample size (:meth:`Design.n_test_for_budget`). Conventions
of ``effect`` and of the counts: :mod:`planner.stats.power`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from planner import limits
from planner.errors import UsageError, check_range
from planner.stats.conventions import ALTERNATIVES, DESIGNS, TIE_CONVENTIONS


@dataclass(frozen=True)
class Design:
    """How judgments are collected; turns test sample sizes into judgments.

    Parameters
    ----------
    alpha : float
        Family-wise significance level (two-sided total when ``alternative`` is
        two-sided), in (0, 1).
    power : float
        Target power per comparison, in (0, 1).
    alternative : {'two-sided', 'greater'}
    tie_rate : float
        Share of judgments that are ties, in [0, 1).
    ties : {'drop', 'half'}
        ``drop``: ties are discarded and the test runs on decisive judgments;
        ``half``: a tie scores 0.5 (half-tie score).
    invalid_rate : float
        Share of unusable judgments (judge failures), in [0, 1); inflates by
        ``1/(1-R)``.
    both_orders : bool
        Each comparison judged twice, positions swapped (judgments assumed
        independent; use ``per_prompt``/``icc`` if they are not).
    per_prompt : int
        ``K`` judgments share a prompt (K >= 1).
    icc : float
        Intra-prompt correlation ``rho`` in [0, 1]; design effect ``1+(K-1)rho``.
    systems : int
        Number of systems ``M >= 2``.
    design : {'anchor', 'round-robin'}
        ``anchor``: M-1 candidates each against one anchor; ``round-robin``:
        all M(M-1)/2 pairs.
    """

    alpha: float = 0.05
    power: float = 0.8
    alternative: str = "two-sided"
    tie_rate: float = 0.0
    ties: str = "drop"
    invalid_rate: float = 0.0
    both_orders: bool = False
    per_prompt: int = 1
    icc: float = 0.0
    systems: int = 2
    design: str = "anchor"

    def validated(self) -> Design:
        check_range("alpha", self.alpha, 0, 1)
        check_range("power", self.power, 0, 1)
        limits.check_choice("alternative", self.alternative, ALTERNATIVES)
        limits.check_choice("ties", self.ties, TIE_CONVENTIONS)
        limits.check_choice("design", self.design, DESIGNS)
        check_range("tie_rate", self.tie_rate, 0, 1, low_open=False)
        check_range("invalid_rate", self.invalid_rate, 0, 1, low_open=False)
        limits.check_int("per_prompt", self.per_prompt, 1, limits.MAX_PER_PROMPT)
        check_range("icc", self.icc, 0, 1, low_open=False, high_open=False)
        limits.check_int("systems", self.systems, 2, limits.MAX_SYSTEMS)
        if self.alpha_per_pair < limits.MIN_ALPHA_PER_PAIR:
            raise UsageError(f"`alpha` ({self.alpha:g}) gives {self.alpha_per_pair:.3g} per pair, below "
                             f"{limits.MIN_ALPHA_PER_PAIR:g}, where the exact test's tail cannot be "
                             "computed in double precision", parameters=('alpha',))
        return self

    @property
    def pairs(self) -> int:
        """Number of pairwise comparisons (hypotheses) in the family."""
        m = self.systems
        return m - 1 if self.design == "anchor" else m * (m - 1) // 2

    @property
    def alpha_per_pair(self) -> float:
        """Bonferroni level ``alpha/m``: the level of Holm's first (strictest) step.

        Sizing every comparison at ``alpha/m`` guarantees the per-comparison power
        under Holm–Bonferroni (Holm 1979), which is never less powerful than
        Bonferroni.
        """
        return self.alpha / self.pairs

    @property
    def design_effect(self) -> float:
        """Kish design effect ``1 + (K-1) rho``."""
        return 1.0 + (self.per_prompt - 1) * self.icc

    @property
    def judgments_per_test_unit(self) -> float:
        """Judgments to collect per comparison the test needs (one pair)."""
        f = 1.0 / (1.0 - self.invalid_rate) * self.design_effect
        if self.ties == "drop":
            f /= 1.0 - self.tie_rate
        return f

    def judgments(self, n_test: int) -> tuple[int, int, int]:
        """(judgments per pair, comparisons shown per pair, total judgments)."""
        per_pair = math.ceil(n_test * self.judgments_per_test_unit - 1e-9)
        if self.both_orders:
            per_pair += per_pair % 2
            shown = per_pair // 2
        else:
            shown = per_pair
        return per_pair, shown, per_pair * self.pairs

    def n_test_for_budget(self, budget: float) -> int:
        """Comparisons available to one pair's test out of ``budget`` judgments."""
        return int(math.floor(budget / self.pairs / self.judgments_per_test_unit + 1e-9))


def check_effect(d: float) -> float:
    """``d`` if it is a valid effect, in (0, 0.5)."""
    return check_range("effect", d, 0, 0.5)


def effect_from_win_rate(p: float) -> float:
    """Effect ``d = p - 0.5`` for a win rate ``p`` in (0.5, 1)."""
    check_range("win_rate", p, 0.5, 1)
    return p - 0.5
