"""The result types of :func:`planner.allocation.maths.allocate`: each stratum's allocation, each chosen prompt
with its sampling weight, and the whole allocation."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class StratumAllocation:
    """One stratum's row of an :class:`Allocation`.

    Attributes
    ----------
    stratum : str
    size : int
        ``N_h``, prompts in the stratum.
    available : int
        Prompts that may be chosen (``size``, or fewer with ``contested_only``).
    population_share : float
        ``P_h`` (weight-sum share for ``frequency``, size share otherwise).
    quota : float
        Exact, unrounded quota after caps/minimums (continuous water-filling).
    allocated : int
        ``n_h``.
    sample_share : float
        ``n_h / n``.
    weight : float or None
        Sampling weight ``P_h / (n_h / n)``; ``None`` when ``n_h = 0``.
    sd : float or None
        ``S_h`` used by ``neyman`` (``None`` for other methods).
    """

    stratum: str
    size: int
    available: int
    population_share: float
    quota: float
    allocated: int
    sample_share: float
    weight: float | None
    sd: float | None = None


@dataclass(frozen=True)
class ChosenPrompt:
    """One chosen prompt: id, stratum, sampling weight, order within its stratum.

    ``gap`` is the pointwise score gap (max - min over systems) when pointwise
    scores were given, else ``None``. With replacement, a prompt may appear more
    than once (different ``order``).
    """

    prompt: str
    stratum: str
    weight: float
    order: int
    frozen: bool
    gap: float | None = None
    text: str = ""


@dataclass(frozen=True)
class Allocation:
    """The result of :func:`allocate`.

    Attributes
    ----------
    method, by : str
    budget : int
        ``n``; ``sum(s.allocated for s in strata) == budget``.
    seed : int or None
    with_replacement : bool
    min_per_stratum : int
    strata : tuple of StratumAllocation
        Sorted by stratum name.
    prompts : tuple of ChosenPrompt
        Chosen prompts, stratum by stratum, in within-stratum order.
    notes : tuple of str
        Fallbacks and caveats (e.g. Neyman without data fell back to proportional).
    out : str or None
        The file the chosen prompts were written to, if any.
    """

    method: str
    by: str
    budget: int
    seed: int | None
    with_replacement: bool
    min_per_stratum: int
    strata: tuple[StratumAllocation, ...]
    prompts: tuple[ChosenPrompt, ...]
    notes: tuple[str, ...] = ()
    out: str | None = None
