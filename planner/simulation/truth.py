"""Known truths for a simulated study: synthetic scenarios and the truth of a fit.

Scenarios with a known truth (strengths on the logit scale unless noted):

* ``linear``: M systems evenly spread over an Elo range (``spread`` points),
  ``beta = elo / (400 / ln 10)``.
* ``arena``: Bradley–Terry coefficients ``xi ~ Beta(1/g, 1/g)`` with ``g = 2``
  used directly as logit strengths, ``P(i beats j) = 1 / (1 + exp(xi_j - xi_i))``
  — the simulation of Chiang et al. (2024), "Chatbot Arena: An Open Platform
  for Evaluating LLMs by Human Preference", ICML, §6.
* ``asap``: Thurstone scores ``s ~ Uniform[0, 5]`` for N systems, observer
  ``P(i beats j) = Phi((s_i - s_j) / 1.4865)`` — the simulation of Mikhailiuk
  et al. (2020), "Active Sampling for Pairwise Comparisons via Approximate
  Message Passing and Information Gain Maximization" (ASAP), ICPR.
* ``prompts``: ``linear`` strengths judged on :data:`N_PROMPTS` prompts that
  differ in discriminativeness ``d_p`` (the first half :data:`PROMPT_D` [0],
  the rest [1]): on prompt ``p`` the gap is ``d_p (beta_a - beta_b)`` and
  equal systems tie at ``1 - (1 - t)(1 + d_p) / 2`` (``t`` the judge's tie
  rate), so a low-``d`` prompt is both less decisive and closer to a coin flip
  (:meth:`planner.simulation.judge.Judge.judge_prompts`).

A replay's or a study's truth is a fit (:func:`truth_from_counts`): the Laplace
posterior mean, with each pair's P(order) so that only settled pairs count as
credibly ordered.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from planner.counts import Counts
from planner.equality import array_eq
from planner.errors import UsageError, check_range
from planner.model import bt
from planner.simulation.metrics import CREDIBLE, pair_order_probs

SCENARIOS = ("linear", "arena", "asap", "prompts")
ASAP_SIGMA = 1.4865  # ASAP observer: P = Phi(delta / 1.4865)
N_PROMPTS = 40              # prompts of the ``prompts`` scenario
PROMPT_D = (1.0, 0.2)       # their discriminativeness: the first half, the second half

__all__ = ["ASAP_SIGMA", "N_PROMPTS", "PROMPT_D", "SCENARIOS", "Truth", "make_truth", "pair_table",
           "synthetic_names", "truth_from_counts"]


@array_eq
@dataclass(frozen=True)
class Truth:
    """A known truth for a simulated study.

    ``strengths`` are centred logit strengths for Bradley–Terry observers; for
    the Thurstone observer (``asap``) they are the Thurstone scores converted to
    the logistic scale with the usual factor 1.702 / 1.4865 (logistic ≈ probit
    × 1.702), used only for interval coverage — the ranking is unaffected.
    """

    systems: tuple[str, ...]
    strengths: np.ndarray
    observer: str = "bt"          # "bt" or "thurstone"
    scores: np.ndarray | None = None  # Thurstone scores (asap only)
    # replay: P(system i is above system j) under the full-pool posterior (M x M); None = exact truth
    pair_prob: np.ndarray | None = None
    # ``prompts`` scenario: each prompt's discriminativeness d_p; None = the judge sees no prompts
    discrimination: np.ndarray | None = None

    def credible(self) -> np.ndarray:
        """Upper-triangle mask of the pairs whose true order is settled.

        A synthetic truth is exact: every pair of unequal strengths. A replay's
        truth is a fit: the pairs whose full-pool P(order) exceeds ``CREDIBLE``.
        """
        m = len(self.systems)
        upper = np.triu(np.ones((m, m), dtype=bool), 1)
        if self.pair_prob is None:
            return upper & (self.strengths[:, None] != self.strengths[None, :])
        return upper & (np.maximum(self.pair_prob, 1 - self.pair_prob) > CREDIBLE)


def synthetic_names(n_systems: int) -> tuple[str, ...]:
    """The system names of every synthetic scenario: sys01, sys02, ..."""
    return tuple(f"sys{i + 1:02d}" for i in range(n_systems))


def make_truth(scenario: str, n_systems: int, rng: np.random.Generator, *,
               spread: float = 400.0, arena_gamma: float = 2.0) -> Truth:
    """Draw the truth of a synthetic scenario (see the module docstring)."""
    if scenario not in SCENARIOS:
        raise UsageError(f"`scenario` ({scenario!r}) must be one of {', '.join(SCENARIOS)}", parameters=('scenario',))
    if n_systems < 2:
        raise UsageError(f"`systems` ({n_systems}) must be at least 2", parameters=('systems',))
    names = synthetic_names(n_systems)
    if scenario == "linear":
        if not spread > 0:
            raise UsageError(f"`spread` ({spread:g}) must be > 0 Elo points", parameters=('spread',))
        elo = np.linspace(spread / 2, -spread / 2, n_systems)
        return Truth(names, elo / bt.ELO_SCALE)
    if scenario == "prompts":
        linear = make_truth("linear", n_systems, rng, spread=spread)
        d = np.where(np.arange(N_PROMPTS) < N_PROMPTS // 2, PROMPT_D[0], PROMPT_D[1])
        return Truth(names, linear.strengths, discrimination=d)
    if scenario == "arena":
        check_range("arena_gamma", arena_gamma, 0, math.inf)
        xi = rng.beta(1.0 / arena_gamma, 1.0 / arena_gamma, size=n_systems)
        return Truth(names, xi - xi.mean())
    s = rng.uniform(0.0, 5.0, size=n_systems)
    return Truth(names, (s - s.mean()) * 1.702 / ASAP_SIGMA, observer="thurstone", scores=s)


def truth_from_counts(counts: Counts) -> Truth:
    """The truth of a fit: the Laplace posterior mean on ``counts``, with each pair's P(order)."""
    from planner.model import fit

    post = fit(counts, engine="laplace", draws=1)
    mean, cov = post.posterior.mean, post.posterior.cov
    return Truth(tuple(counts.systems), mean, pair_prob=pair_order_probs(mean, cov))


def pair_table(truth: Truth) -> tuple[dict[str, Any], ...]:
    """Every pair of a replay truth, least settled first: ``a`` is the one the full pool
    puts above, ``p_order`` = P(a above b), ``gap_elo`` the difference of means (none without
    the pool's pair probabilities)."""
    prob = truth.pair_prob
    if prob is None:
        return ()
    rows: list[dict[str, Any]] = []
    m = len(truth.systems)
    cred = truth.credible()
    for i in range(m):
        for j in range(i + 1, m):
            a, b = (i, j) if truth.strengths[i] >= truth.strengths[j] else (j, i)
            rows.append({"a": truth.systems[a], "b": truth.systems[b], "p_order": float(prob[a, b]),
                         "gap_elo": float((truth.strengths[a] - truth.strengths[b]) * bt.ELO_SCALE),
                         "credible": bool(cred[i, j])})
    rows.sort(key=lambda r: r["p_order"])
    return tuple(rows)
