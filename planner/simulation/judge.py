"""The synthetic judge of the simulator: ties, a left-position shift and label-flip noise.

Ties come from Davidson's model with ``nu`` chosen so that equal systems tie
with probability ``tie_rate``: ``nu = 2 t / (1 - t)``; ``position`` is a
left-position logit shift; a decisive verdict is reversed with probability
``flip``. A Thurstone truth (``asap``) is judged by its probit observer, ties
drawn at rate ``tie_rate`` independently of the strengths.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

import numpy as np

from planner.model import bt
from planner.simulation.truth import ASAP_SIGMA

if TYPE_CHECKING:
    from planner.simulation.truth import Truth

__all__ = ["Judge", "Uniforms"]


class Uniforms(Protocol):
    """Where the judge's uniforms come from: a ``numpy.random.Generator``, or the per-pair stream rows
    (:class:`planner.simulation.streams.ColumnRng`)."""

    def random(self, size: int) -> np.ndarray: ...


@dataclass(frozen=True)
class Judge:
    """A synthetic judge: ties, a left-position shift and label-flip noise."""

    tie_rate: float = 0.0
    position: float = 0.0
    flip: float = 0.0

    @property
    def nu(self) -> float:
        return 2.0 * self.tie_rate / (1.0 - self.tie_rate)

    def judge(self, truth: Truth, left: np.ndarray, right: np.ndarray,
              rng: Uniforms) -> np.ndarray:
        """Outcome codes (0 = left won, 1 = right won, 2 = tie) for each comparison."""
        u = rng.random(left.size)
        if truth.observer == "thurstone":
            from scipy.stats import norm

            scores = truth.scores
            if scores is None:
                raise ValueError("a Thurstone truth carries its observer's scores")

            d = (scores[left] - scores[right]) / ASAP_SIGMA + self.position / 1.702
            p_left = norm.cdf(d)
            tie = u < self.tie_rate
            u2 = rng.random(left.size)
            out = np.where(u2 < p_left, 0, 1)
            out = np.where(tie, 2, out)
        else:
            pa, pb, _ = bt.outcome_probs(truth.strengths[left] - truth.strengths[right] + self.position,
                                         self.nu)
            out = np.where(u < pa, 0, np.where(u < pa + pb, 1, 2))
        if self.flip > 0:
            flip = (rng.random(left.size) < self.flip) & (out < 2)
            out = np.where(flip, 1 - out, out)
        return out.astype(np.int64)

    def prompt_tie_rate(self, d: np.ndarray) -> np.ndarray:
        """Tie rate of equal systems on prompts of discriminativeness ``d``: ``1 - (1 - t)(1 + d) / 2``."""
        return 1.0 - (1.0 - self.tie_rate) * (1.0 + np.asarray(d, dtype=float)) / 2.0

    def judge_prompts(self, truth: Truth, left: np.ndarray, right: np.ndarray, prompt: np.ndarray,
                      rng: Uniforms) -> np.ndarray:
        """Outcome codes on the ``prompts`` scenario: Davidson with gap ``d_p (beta_l - beta_r) + position``
        and the tie rate of :meth:`prompt_tie_rate`; decisive verdicts flipped with probability ``flip``."""
        if truth.discrimination is None:
            raise ValueError("the prompts scenario's truth carries each prompt's discrimination")
        d = truth.discrimination[prompt]
        t = self.prompt_tie_rate(d)
        pa, pb, _ = bt.outcome_probs(d * (truth.strengths[left] - truth.strengths[right]) + self.position,
                                     2.0 * t / (1.0 - t))
        u = rng.random(left.size)
        out = np.where(u < pa, 0, np.where(u < pa + pb, 1, 2))
        if self.flip > 0:
            flip = (rng.random(left.size) < self.flip) & (out < 2)
            out = np.where(flip, 1 - out, out)
        return out.astype(np.int64)
