"""The one stratum-weight rule: how much of the population each stratum stands for.

Population ranking (``report``), the release gate (``decide``) and batch
composition (``next_batch``) all re-weight per-stratum figures to the same
population shares, computed here and nowhere else (copies of a rule drift: three
of them once gave 1.00/0.00, 0.50/0.50 and 0.67/0.33 on the same prompts).

The rule
--------
A prompt stands for ``weight`` units of production traffic; a prompt **without
a weight counts as 1** (one prompt = one unit, the same unit a study without
any weights uses). A stratum's weight is the sum over its prompts divided by the
sum over all prompts of the strata asked for, so the weights sum to 1::

    w_h = sum_{p in h} u_p / sum_p u_p,    u_p = weight_p if given else 1

Edge cases, each named in :attr:`StratumWeights.source` / ``note``:

* no prompt has a weight -> every ``u_p = 1``: strata weigh by their number of
  prompts (``"stratum sizes"``);
* some prompts have a weight, others not -> the missing ones count as 1
  (``"prompt weights"``; the note says how many were missing);
* a weight of 0 is kept: that prompt (or a stratum of only such prompts) stands
  for no traffic and gets weight 0;
* every prompt weighs 0 (the sum is 0) -> the weights carry no population
  information: strata weigh by their number of prompts (``"stratum sizes"``);
* no prompts at all in the strata asked for -> equal weights ``1/K``
  (``"equal"``);
* a stratum asked for that holds no prompt (e.g. ``"all"`` for judgments on
  prompts the study does not know) -> weight 0, unless every stratum would
  be 0 (then the previous two rules apply);
* a prompt whose stratum is not asked for is outside the population here.

Example: stratum ``a`` with weights 3 and 1, stratum ``b`` with two
prompts without a weight -> ``a = 4/6 = 0.667``, ``b = 2/6 = 0.333``.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from planner.counts import DEFAULT_STRATUM
from planner.errors import DataError, quote

SOURCES = ("prompt weights", "stratum sizes", "equal")


@dataclass(frozen=True)
class StratumWeights:
    """Population share per stratum (sums to 1 over ``strata``).

    Attributes
    ----------
    strata : tuple of str
        The strata, in the order asked for.
    weights : dict str -> float
        Share of the population per stratum, in ``[0, 1]``, summing to 1.
    source : str
        One of :data:`SOURCES`: ``"prompt weights"`` (at least one prompt has
        a positive weight), ``"stratum sizes"`` (prompt counts: no weights, or
        all 0), ``"equal"`` (no prompts).
    note : str
        One sentence saying how the weights were obtained (for reports/notes).
    """

    strata: tuple[str, ...]
    weights: dict[str, float] = field(hash=False)
    source: str
    note: str

    def __getitem__(self, stratum: str) -> float:
        return self.weights[stratum]

    def as_list(self) -> list[float]:
        """The weights in the order of :attr:`strata`."""
        return [self.weights[s] for s in self.strata]


def stratum_of(prompt: Any) -> str:
    """A prompt's stratum label: its ``stratum``, or ``"all"`` when it has none."""
    s = getattr(prompt, "stratum", None)
    return DEFAULT_STRATUM if s is None or (isinstance(s, str) and not s.strip()) else str(s)


def _units(prompt: Any) -> tuple[float, bool]:
    """``(u_p, had_weight)``; a bad weight is a DataError naming the prompt."""
    w = getattr(prompt, "weight", None)
    if w is None:
        return 1.0, False
    if isinstance(w, bool) or not isinstance(w, (int, float)) or not math.isfinite(w) or w < 0:
        raise DataError(f"prompt {quote(getattr(prompt, 'id', '?'))}: weight {quote(w)}; "
                        "expected a finite number >= 0 (or no weight)")
    return float(w), True


def stratum_weights(prompts: Iterable[Any], strata: Sequence[str] | None = None) -> StratumWeights:
    """Population share of each stratum by the one rule of this module.

    Parameters
    ----------
    prompts : iterable of records with ``stratum`` and ``weight`` attributes
        E.g. ``planner.store.study.Prompt``; ``weight`` None = no weight (counts 1).
    strata : sequence of str, optional
        The strata to weigh (e.g. ``Counts.strata``); default: the prompts'
        strata in first-appearance order (``["all"]`` when there are none).

    Returns
    -------
    StratumWeights

    Raises
    ------
    DataError
        A prompt weight that is not a finite number >= 0.
    """
    prompts = list(prompts)
    if strata is None:
        strata = tuple(dict.fromkeys(stratum_of(p) for p in prompts)) or (DEFAULT_STRATUM,)
    strata = tuple(strata)
    if not strata:
        return StratumWeights((), {}, "equal", "no strata")
    units = {s: 0.0 for s in strata}
    sizes = {s: 0 for s in strata}
    weighted = missing = 0
    for p in prompts:
        s = stratum_of(p)
        u, had = _units(p)
        if s not in units:
            continue
        units[s] += u
        sizes[s] += 1
        weighted += had
        missing += not had
    n = weighted + missing
    if n == 0:
        k = len(strata)
        return StratumWeights(strata, {s: 1.0 / k for s in strata}, "equal",
                              "equal (no prompts in these strata)")
    total = sum(units.values())
    if weighted and total > 0:
        note = "summed prompt weight per stratum"
        if missing:
            note += f" ({missing} of {n} prompts have no weight and count as 1)"
        return StratumWeights(strata, {s: units[s] / total for s in strata}, "prompt weights", note)
    note = "prompts per stratum" + (" (every prompt weight is 0)" if weighted else "")
    return StratumWeights(strata, {s: sizes[s] / n for s in strata}, "stratum sizes", note)
