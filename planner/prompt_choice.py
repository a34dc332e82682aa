"""Prefer the prompts that separate systems: a shrunk per-prompt score and a seeded choice.

Opt-in (``next-batch --prompts-by discriminative``); the default ``uniform``
leaves prompt choice as :func:`planner.allocation.maths.choose_prompts` does it.

Score. Each counted judgment ``j`` on prompt ``p`` gives ``z_j = +1`` when its
winner is the system the current strengths rank higher, ``-1`` when it is the
other one, ``0`` for a tie or an invalid verdict. ``m_p = E[z]`` is the prompt's
*signed decisive rate*: ``P(agree) - P(disagree)``; under
``P(a beats b | p) = sigma(d_p (beta_a - beta_b))`` without ties it is
``tanh(d_p |Δ| / 2)``, increasing in the prompt's discriminativeness ``d_p``,
and ties pull it toward 0. A prompt whose verdicts are coin flips scores 0.

Shrinkage. Within a stratum, the raw means ``zbar_p`` (``n_p`` judgments) are
shrunk toward the stratum's pooled mean ``m_h`` by the normal–normal empirical
Bayes rule (Efron & Morris 1975; moment estimates as DerSimonian & Laird 1986):
``sigma_w^2`` the pooled within-prompt variance of ``z``, ``tau^2 = max(0,
var_p(zbar_p) - sigma_w^2 * mean_p(1/n_p))`` the between-prompt variance,
``B_p = tau^2 / (tau^2 + sigma_w^2 / n_p)`` and ``s_p = m_h + B_p (zbar_p -
m_h)``. No evidence of heterogeneity (``tau^2 = 0``, fewer than two judged
prompts, or no within-prompt degrees of freedom) gives every prompt ``m_h``:
no preference. Unjudged prompts get ``m_h``.

Choice. Among the candidate prompts ``C`` of a stratum, prompt ``p`` is drawn
with probability ``pi_p = (1 - floor) g_p / sum(g) + floor / |C|`` where
``g_p = max(s_p, 0) ** power`` (uniform when ``sum(g) = 0``), so every
candidate keeps probability ``>= floor / |C|``. Stratum quotas are untouched
(:func:`planner.allocation.maths.plan_strata`); only which prompt *within* a
stratum changes, so a within-stratum estimate then describes the prompts as
weighted by ``pi``, not the stratum's prompts uniformly (docs/guide.md).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from planner.errors import UsageError
from planner.limits import check_choice
from planner.vocabulary import COUNTED_KINDS

#: the values of ``prompts_by``
MODES = ("uniform", "discriminative")
#: uniform share of each draw's probabilities (every candidate keeps >= FLOOR / |C|)
DEFAULT_FLOOR = 0.2
#: exponent on the shrunk score
DEFAULT_POWER = 1.0


def check_mode(mode: str) -> str:
    """``mode`` if it is one of :data:`MODES`, else a one-line usage error naming ``prompts_by``."""
    return check_choice("prompts_by", mode, MODES)


@dataclass(frozen=True)
class StratumShrinkage:
    """One stratum's empirical-Bayes quantities: pooled mean ``m``, ``sigma2_w``, ``tau2`` (None: not estimable)."""

    stratum: str
    n: int
    m: float
    sigma2_w: float | None
    tau2: float


@dataclass(frozen=True)
class PromptScores:
    """Per prompt: judgments ``n``, raw mean ``raw``, shrunk ``score``; per stratum :class:`StratumShrinkage`."""

    n: Mapping[str, int]
    raw: Mapping[str, float]
    score: Mapping[str, float]
    strata: Mapping[str, StratumShrinkage]

    def of(self, prompt: str, stratum: str) -> float:
        """The shrunk score of ``prompt`` (its stratum's mean when unjudged; 0 for an unjudged stratum)."""
        if prompt in self.score:
            return self.score[prompt]
        s = self.strata.get(stratum)
        return 0.0 if s is None else s.m


def agreement(judgments: Iterable[Any], strengths: Mapping[str, float]) -> dict[str, list[int]]:
    """Each prompt's ``z`` values (+1 agree, -1 disagree, 0 tie/invalid) in judgment order.

    ``judgments``: records with ``prompt``, ``a``, ``b``, ``verdict``, ``kind``
    (:class:`planner.store.records.Judgment`); only :data:`COUNTED_KINDS`, two
    systems both in ``strengths``. A pair the strengths tie exactly predicts no
    winner and is skipped.
    """
    z: dict[str, list[int]] = {}
    for j in judgments:
        if j.kind not in COUNTED_KINDS or j.b is None or j.a not in strengths or j.b not in strengths:
            continue
        gap = float(strengths[j.a]) - float(strengths[j.b])
        if gap == 0.0:
            continue
        if j.verdict in ("A", "B"):
            z.setdefault(j.prompt, []).append(1 if (j.verdict == "A") == (gap > 0) else -1)
        elif j.verdict in ("tie", "invalid"):
            z.setdefault(j.prompt, []).append(0)
    return z


def shrink(z: Mapping[str, Sequence[int]], stratum_of: Mapping[str, str]) -> PromptScores:
    """Shrunk scores from each prompt's ``z`` values, within the strata of ``stratum_of`` (module docstring)."""
    groups: dict[str, list[str]] = {}
    for p in sorted(z):
        if len(z[p]) and p in stratum_of:
            groups.setdefault(stratum_of[p], []).append(p)
    n, raw, score, strata = {}, {}, {}, {}
    for h, ps in sorted(groups.items()):
        vals = [np.asarray(z[p], dtype=float) for p in ps]
        counts = np.array([len(v) for v in vals], dtype=float)
        means = np.array([v.mean() for v in vals])
        total = float(counts.sum())
        m = float(sum(v.sum() for v in vals) / total)
        df = total - len(ps)
        sigma2 = float(sum(((v - v.mean()) ** 2).sum() for v in vals) / df) if df >= 1 else None
        tau2 = 0.0
        if sigma2 is not None and len(ps) >= 2:
            tau2 = max(0.0, float(np.var(means, ddof=1)) - sigma2 * float(np.mean(1.0 / counts)))
        strata[h] = StratumShrinkage(h, int(total), m, sigma2, tau2)
        for p, c, mu in zip(ps, counts, means):
            b = 0.0 if tau2 == 0.0 else tau2 / (tau2 + sigma2 / c)
            n[p], raw[p], score[p] = int(c), float(mu), m + b * (float(mu) - m)
    return PromptScores(n, raw, score, strata)


def prompt_scores(judgments: Iterable[Any], strengths: Mapping[str, float],
                  stratum_of: Mapping[str, str]) -> PromptScores:
    """:func:`agreement` then :func:`shrink`: the shrunk score of every judged prompt."""
    return shrink(agreement(judgments, strengths), stratum_of)


def probabilities(scores: Sequence[float], floor: float = DEFAULT_FLOOR, power: float = DEFAULT_POWER) -> np.ndarray:
    """``pi = (1 - floor) g / sum(g) + floor / len(g)``, ``g = max(score, 0) ** power`` (uniform if ``sum(g) = 0``)."""
    if not 0.0 <= floor <= 1.0:
        raise UsageError(f"`floor` ({floor}) must be in [0, 1]", parameters=("floor",))
    if not power > 0:
        raise UsageError(f"`power` ({power}) must be > 0", parameters=("power",))
    k = len(scores)
    if k == 0:
        return np.zeros(0)
    g = np.maximum(np.asarray(scores, dtype=float), 0.0) ** power
    uniform = np.full(k, 1.0 / k)
    if not g.sum() > 0:
        return uniform
    return (1.0 - floor) * g / g.sum() + floor * uniform


def choose_prompt(candidates: Sequence[Any], stratum: str, scores: PromptScores, rng: np.random.Generator,
                  frozen_first: bool = True, floor: float = DEFAULT_FLOOR,
                  power: float = DEFAULT_POWER) -> tuple[str, float] | None:
    """One prompt of ``stratum`` from ``candidates`` and its draw probability, or None when it has none.

    Candidates are sorted by id (input order does not matter); with
    ``frozen_first`` and any frozen candidate only the frozen ones are drawn
    from (as :func:`planner.allocation.maths.choose_prompts` puts them first). One
    uniform from ``rng`` per call.
    """
    from planner.allocation.maths import stratum_label

    pool = sorted((p for p in candidates if stratum_label(p, "stratum") == stratum), key=lambda p: p.id)
    if frozen_first and any(bool(p.frozen) for p in pool):
        pool = [p for p in pool if bool(p.frozen)]
    if not pool:
        return None
    pi = probabilities([scores.of(p.id, stratum) for p in pool], floor, power)
    i = min(int(np.searchsorted(np.cumsum(pi), rng.random() * pi.sum(), side="right")), len(pool) - 1)
    return pool[i].id, float(pi[i])
