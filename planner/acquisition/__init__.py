"""Choosing the next comparisons: expected posterior-uncertainty reduction.

The acquisition rules take the Gaussian posterior of the Bradley–Terry–Davidson
strengths and position effect (:class:`planner.model.bt.GaussianPosterior`), what has
been judged and what is pending (:class:`planner.counts.Counts`), and return the
unordered system pairs ``(i, j)`` with ``i < j`` for the next batch, in pick order,
with the system each pick shows first (``Selection.left``).

Core identities (``Σ`` is the joint posterior covariance of ``θ = (β, γ)``, the
strengths' block in the sum-to-zero subspace, singular along the all-ones direction):

* one judgment on ``(i, j)`` shown with ``i`` left (``s = +1``) or right (``s = −1``)
  adds ``I · x xᵀ`` to the precision, ``x = e_i − e_j + s e_γ``, where ``I`` is the
  posterior-predictive expected Fisher information ``E_δ[I(δ)]``,
  ``δ ~ N(μ_i − μ_j + s γ̂, xᵀ Σ x)``, averaged with Gauss–Hermite nodes
  (``planner.model.bt.information``);
* Sherman–Morrison: ``Σ' = Σ − f c cᵀ`` with ``c = Σ x``, ``f = I / (1 + I xᵀ Σ x)``;
  hence for every pair ``(k, l)`` ``Var'(β_k − β_l) = Var(β_k − β_l) − f (c_k − c_l)²``
  — a verdict in one order cannot settle what the position effect hides;
* preposterior (the mean moves when the judgment comes back): the posterior
  mean difference after the update is ``N(m, τ²)`` with
  ``τ² = Var − Var'``, and the expected posterior probability of misordering
  ``(k, l)`` is ``E[Φ(−|X| / s')] = 2 T(|m| / s, s' / τ)`` (Owen's T; derived
  in docs/methods.md "Choosing comparisons").

Reference for the arena rule: W.-L. Chiang et al. (2024), "Chatbot Arena: An
Open Platform for Evaluating LLMs by Human Preference", ICML, eq. 9.

Modules (each imports only those above it):

* :mod:`~planner.acquisition.options` — the vocabulary (``STRATEGIES``,
  ``OBJECTIVES``) and :class:`SelectionOptions`, the frozen bundle of tunables
  passed down every call (no module-global knobs);
* :mod:`~planner.acquisition.objectives` — objective values, expected
  information, the preposterior misorder risk (Owen's T);
* :mod:`~planner.acquisition.ties` — near-ties rounded away before ranking;
* :mod:`~planner.acquisition.positions` — presentation orders and per-order capacity;
* :mod:`~planner.acquisition.clustering` — clustered verdicts (information shares,
  design effects);
* :mod:`~planner.acquisition.state` — checked inputs, the batch-start context
  and the fantasized Gaussian state;
* :mod:`~planner.acquisition.gains` — expected reductions per candidate;
* :mod:`~planner.acquisition.greedy` — the (lazy) greedy batch;
* :mod:`~planner.acquisition.draws` — the same on posterior draws;
* :mod:`~planner.acquisition.baselines` — round-robin, random, anchor, swiss,
  arena and the connected start design;
* :mod:`~planner.acquisition.stopping` — the stopping advice;
* :mod:`~planner.acquisition.results` — :class:`Selection`, :class:`CandidateGains`;
* :mod:`~planner.acquisition.select` — :func:`select_pairs`, :func:`candidate_gains`;
* :mod:`~planner.acquisition.exact` — the exact one-pair preposterior (audit).
"""

from __future__ import annotations

from planner.acquisition.baselines import arena_weights, connected_start
from planner.acquisition.objectives import TAIL_A, expected_information, misorder_after, objective_value, pair_risk
from planner.acquisition.options import OBJECTIVES, STRATEGIES, SelectionOptions
from planner.acquisition.results import CandidateGains, Selection
from planner.acquisition.select import candidate_gains, select_pairs

__all__ = [
    "OBJECTIVES", "STRATEGIES", "TAIL_A",
    "CandidateGains", "Selection", "SelectionOptions",
    "arena_weights", "candidate_gains", "connected_start", "expected_information", "misorder_after",
    "objective_value", "pair_risk", "select_pairs",
]
