"""Stratified allocation of a comparison budget over prompt strata.

A *stratum* is a group of prompts (a category, a difficulty level, ...). Given a
budget of ``n`` prompts, :func:`allocate` decides how many come from each stratum
(``n_h``, summing exactly to ``n``), which prompts those are, and the
**sampling weight** of each chosen prompt, so that pooled figures can be
re-weighted back to the population.

Methods (the *basis* ``b_h`` each stratum's exact quota ``n * b_h / sum(b)`` is
proportional to):

* ``proportional``: ``b_h = N_h``, the number of prompts in the stratum;
* ``frequency``: ``b_h = sum of the prompts' weight`` (production frequency);
* ``equal``: ``b_h = 1``;
* ``neyman``: ``b_h = N_h * S_h`` (Neyman 1934; Cochran 1977, *Sampling
  Techniques*, 3rd ed., §5.5), ``S_h`` the standard deviation of the half-tie
  score within the stratum (see :func:`planner.allocation.learned.stratum_sd`);
* ``target``: ``b_h`` = the user's target share.

Quotas become integers by the largest-remainder (Hamilton) method with bounds:
every stratum gets at least ``min(min_per_stratum, cap_h)`` and at most its cap
``cap_h`` (the prompts it has, unless sampling with replacement); the share a
capped stratum cannot take is redistributed over the others in proportion to
their basis (water-filling, :func:`planner.allocation.apportion.apportion`).

Sampling weight of stratum ``h``: ``w_h = P_h / (n_h / n)``, the population
share over the sample share. The population share ``P_h`` is the share of the
summed prompt ``weight`` for ``method="frequency"`` and the share of prompts
(``N_h / N``) for every other method. A weighted mean ``sum(w_i y_i) / sum(w_i)``
over the chosen prompts then estimates the population mean.

Pure: prompt records, judgment records and numbers in, frozen results out;
reading and writing the files is :mod:`planner.workflows.allocate`'s job.

Library API used by ``next-batch``: :func:`plan_strata` (how many of the next
``k`` comparisons go to each stratum given the target shares and what each
stratum already received) and :func:`choose_prompts` (which prompts, not yet
used, to take in one stratum).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np

from planner.allocation.apportion import apportion, quotas
from planner.allocation.result import Allocation, ChosenPrompt, StratumAllocation
from planner.errors import DataError, UsageError
from planner.limits import check_choice

METHODS = ("proportional", "frequency", "equal", "neyman", "target")
BY = ("stratum", "difficulty")
ONE_STRATUM = "all"
SHARE_TOLERANCE = 1e-6  # target shares must sum to 1 within this (rounding in a hand-written --target)


# ---------------------------------------------------------------------------
# Next-batch API


def plan_strata(target_shares: Mapping[str, float], already: Mapping[str, int], k: int,
                available: Mapping[str, int] | None = None) -> dict[str, int]:
    """How many of the next ``k`` comparisons go to each stratum.

    Aims at the target composition counting what each stratum has already
    received: with ``T = sum(already) + k``, the deficit of stratum ``h`` is
    ``d_h = max(0, target_h * T - already_h)`` and ``k`` is apportioned in
    proportion to ``d_h`` (largest remainder, :func:`apportion`), never more than
    ``available[h]``. Since ``sum(d_h) >= k``, no stratum overshoots its target by
    more than rounding. When every deficit is 0 (cannot happen with shares
    summing to 1, kept for safety) the targets themselves are the basis.

    Parameters
    ----------
    target_shares : mapping stratum -> share in [0, 1], summing to 1 (±1e-6).
    already : mapping stratum -> int
        Comparisons each stratum already received (issued, including pending).
        Strata missing here count as 0; strata not in ``target_shares`` are
        ignored.
    k : int >= 0
        Comparisons in the next batch.
    available : mapping stratum -> int, optional
        Cap per stratum (e.g. unused prompts for the pair); no cap when omitted.

    Returns
    -------
    dict stratum -> int over the keys of ``target_shares``, summing to ``k``.

    Raises
    ------
    UsageError
        Bad shares, or ``k`` larger than the total available.
    """
    shares = _check_shares(target_shares, known=None)
    total = sum(int(already.get(h, 0)) for h in shares) + k
    deficit = {h: max(0.0, s * total - int(already.get(h, 0))) for h, s in shares.items()}
    basis = deficit if any(v > 0 for v in deficit.values()) else dict(shares)
    if not any(v > 0 for v in basis.values()):
        basis = {h: 1.0 for h in shares}
    upper = None if available is None else {h: int(available.get(h, 0)) for h in shares}
    if upper is not None and k > sum(upper.values()):
        raise UsageError(f"`k` ({k}) must be <= {sum(upper.values())}, the comparisons available over all strata",
                         parameters=('k',))
    return apportion(basis, k, upper=upper)


def choose_prompts(prompts: Iterable[Any], stratum: str, n: int, used: set[str] | frozenset[str],
                   rng: np.random.Generator, frozen_first: bool = True,
                   pointwise: Mapping[str, float] | None = None, *, by: str = "stratum",
                   gap: float | None = None) -> list[str]:
    """Choose up to ``n`` prompt ids of one stratum, skipping ``used`` ones.

    Order: frozen prompts first (when ``frozen_first``), then the most contested
    (smallest pointwise gap, see :func:`planner.allocation.learned.pointwise_gaps`; prompts without a gap
    last), then a seeded random order; the random permutation is drawn from
    ``rng`` over the prompts sorted by id, so input order does not matter.

    Parameters
    ----------
    prompts : iterable of records with ``id``, ``stratum``, ``difficulty``,
        ``frozen`` attributes (``planner.store.study.Prompt`` or the allocation
        loader's rows).
    stratum : str
        Stratum label (prompts with no label belong to ``"all"``).
    n : int >= 0
    used : set of prompt ids to skip (e.g. already used for this system pair).
    rng : numpy.random.Generator
    frozen_first : bool
    pointwise : mapping prompt id -> gap, optional
    by : {"stratum", "difficulty"}
        Which attribute defines the stratum.
    gap : float, optional
        Keep only prompts whose gap is <= ``gap`` (the contested-only design).

    Returns
    -------
    list of prompt ids, at most ``n`` (fewer when the stratum runs out).
    """
    pool = [p for p in prompts if stratum_label(p, by) == stratum and p.id not in used]
    ordered = _order(pool, rng, frozen_first, pointwise, gap)
    return [p.id for p in ordered[:max(0, int(n))]]


def _order(pool: list[Any], rng: np.random.Generator, frozen_first: bool,
           gaps: Mapping[str, float] | None, gap: float | None) -> list[Any]:
    pool = sorted(pool, key=lambda p: p.id)
    if gaps is not None and gap is not None:
        pool = [p for p in pool if p.id in gaps and gaps[p.id] <= gap]
    rank = rng.permutation(len(pool)) if pool else np.zeros(0, dtype=int)

    def key(i: int):
        p = pool[i]
        g = None if gaps is None else gaps.get(p.id)
        return (not (frozen_first and bool(p.frozen)), g is None, 0.0 if g is None else g, int(rank[i]))

    return [pool[i] for i in sorted(range(len(pool)), key=key)]


def stratum_label(p: Any, by: str) -> str:
    """The stratum of prompt record ``p`` by attribute ``by``: ``"all"`` when it has none; ``2.0`` reads ``2``."""
    v = getattr(p, by, None)
    if v is None or (isinstance(v, str) and v.strip() == ""):
        return ONE_STRATUM
    if isinstance(v, float) and v.is_integer():
        v = int(v)
    return str(v)


# ---------------------------------------------------------------------------
# Allocation


def parse_target(text: str) -> dict[str, float]:
    """Parse ``"common=0.4,factual=0.3"`` into ``{"common": 0.4, "factual": 0.3}``."""
    out: dict[str, float] = {}
    for part in [s for s in text.split(",") if s.strip()]:
        name, sep, value = part.partition("=")
        try:
            if not sep or not name.strip():
                raise ValueError
            out[name.strip()] = float(value)
        except ValueError:
            raise UsageError(f"`target` ({part.strip()!r}) must look like stratum=share,"
                             " e.g. common=0.4,factual=0.6", parameters=('target',)) from None
    if not out:
        raise UsageError(f"`target` ({text!r}) names no stratum; e.g. common=0.4,factual=0.6", parameters=('target',))
    return out


def _check_shares(shares: Mapping[str, float], known: Sequence[str] | None) -> dict[str, float]:
    for h, s in shares.items():
        if not (isinstance(s, (int, float)) and math.isfinite(s) and 0 <= s <= 1):
            raise UsageError(f"`target` share of {h!r} ({s}) must be in [0, 1]", parameters=('target',))
    total = float(sum(shares.values()))
    if abs(total - 1.0) > SHARE_TOLERANCE:
        raise UsageError(f"`target` shares sum to {total:g}; they must sum to 1 (within {SHARE_TOLERANCE:g})",
                         parameters=('target',))
    if known is not None:
        unknown = sorted(set(shares) - set(known))
        if unknown:
            raise UsageError(f"`target` names unknown strata {', '.join(unknown)}; "
                             f"allowed: {', '.join(sorted(known))}", parameters=('target',))
    return dict(shares)


def allocate(prompts: Sequence[Any], budget: int, *, method: str = "proportional",
             by: str | None = None, target: Mapping[str, float] | None = None,
             min_per_stratum: int = 0, with_replacement: bool = False,
             frozen_first: bool = False, pointwise: Mapping[str, float] | None = None,
             gap: float | None = None, sd: Mapping[str, float] | None = None,
             rng: np.random.Generator | None = None, seed: int | None = None) -> Allocation:
    """Allocate ``budget`` prompts over strata and choose them.

    Parameters
    ----------
    prompts : sequence of prompt records
        Attributes ``id``, ``stratum``, ``weight``, ``difficulty``, ``frozen``
        (``planner.store.study.Prompt`` or :class:`planner.formats.prompts.PromptRow`).
    budget : int > 0
        Number of prompts to choose (``n``).
    method : {"proportional", "frequency", "equal", "neyman", "target"}
    by : {"stratum", "difficulty"} or None
        Attribute defining strata. ``None`` means ``"stratum"``, and when no
        prompt has one, all prompts form one stratum (with a note); an explicit
        ``"stratum"`` / ``"difficulty"`` that no prompt has is an error.
    target : mapping stratum -> share, for ``method="target"`` (sum 1 ± 1e-6).
    min_per_stratum : int >= 0
        Every stratum gets at least ``min(min_per_stratum, available_h)``.
    with_replacement : bool
        Allow ``n_h > available_h``: a stratum's ordered prompts are then
        cycled, so each is used ``floor`` or ``ceil`` of ``n_h / available_h`` times.
    frozen_first : bool
        Frozen prompts take the first places of their stratum.
    pointwise : mapping prompt id -> gap, optional (:func:`planner.allocation.learned.pointwise_gaps`)
        Contested (small-gap) prompts first.
    gap : float, optional
        Contested-only: keep only prompts with a gap <= ``gap`` (needs ``pointwise``).
    sd : mapping stratum -> S_h, for ``neyman`` (:func:`planner.allocation.learned.stratum_sd`). Strata
        without a value get the mean of the known ones; with no value at all,
        ``neyman`` falls back to ``proportional`` (both said in ``notes``).
    rng : numpy.random.Generator, optional
        Defaults to ``np.random.default_rng(seed)``.
    seed : int, optional
        Recorded in the result (and used when ``rng`` is omitted).

    Raises
    ------
    UsageError (exit 2)
        Bad option values: method, budget, target, minimum, gap.
    DataError (exit 1)
        Bad prompts: duplicate ids, negative/NaN/all-zero weights, missing strata.
    """
    _check_options(method, by, budget, min_per_stratum, gap, pointwise, target)
    if rng is None:
        rng = np.random.default_rng(seed)
    notes: list[str] = []
    _check_prompts(prompts)
    key = by or "stratum"
    strata = _strata(prompts, by, key, notes)
    names = sorted(strata)
    size = {h: len(strata[h]) for h in names}
    pool = {h: [p for p in strata[h] if gap is None or (p.id in pointwise and pointwise[p.id] <= gap)]
            for h in names}
    avail = {h: len(pool[h]) for h in names}
    if gap is not None:
        notes.append(f"contested only (gap <= {gap:g}): {sum(avail.values())} of {len(prompts)} prompts eligible")
    weight_sum = {h: sum(_weight(p) for p in strata[h]) for h in names}
    pop = _population_shares(method, prompts, names, size, weight_sum)
    basis, sds = _basis(method, names, size, weight_sum, target, sd, notes)
    lower, upper = _bounds(names, avail, budget, min_per_stratum, with_replacement, notes)
    x, counts = quotas(basis, budget, lower=lower, upper=upper)
    rows, chosen = [], []
    for i, h in enumerate(names):
        n_h = counts[h]
        share = n_h / budget
        w = pop[h] / share if n_h else None
        rows.append(StratumAllocation(h, size[h], avail[h], pop[h], float(x[i]), n_h, share, w,
                                      sds.get(h) if method == "neyman" and sds else None))
        ordered = _order(pool[h], rng, frozen_first, pointwise, None)
        for j in range(n_h):
            p = ordered[j % len(ordered)]
            chosen.append(ChosenPrompt(p.id, h, w, j, bool(p.frozen),
                                       None if pointwise is None else pointwise.get(p.id), getattr(p, "text", "")))
        if n_h == 0 and pop[h] > 0:
            notes.append(f"stratum {h} gets no prompts: pooled estimates do not cover it")
    return Allocation(method, key, budget, seed,
                      with_replacement, min_per_stratum, tuple(rows), tuple(chosen), tuple(notes))


def _check_options(method: str, by: str | None, budget: int, min_per_stratum: int, gap: float | None,
                   pointwise: Mapping[str, float] | None, target: Mapping[str, float] | None) -> None:
    check_choice("method", method, METHODS)
    if by is not None and by not in BY:
        raise UsageError(f"`by` ({by!r}) must be one of {', '.join(BY)}", parameters=('by',))
    if isinstance(budget, bool) or int(budget) != budget or budget <= 0:
        raise UsageError(f"`budget` ({budget}) must be an integer >= 1", parameters=('budget',))
    if isinstance(min_per_stratum, bool) or int(min_per_stratum) != min_per_stratum or min_per_stratum < 0:
        raise UsageError(f"`min_per_stratum` ({min_per_stratum}) must be an integer >= 0",
                         parameters=('min_per_stratum',))
    if gap is not None:
        if pointwise is None:
            raise UsageError("`contested_only`/`gap` needs `pointwise` FILE",
                             parameters=('contested_only', 'gap', 'pointwise'))
        if not (math.isfinite(gap) and gap >= 0):
            raise UsageError(f"`gap` ({gap:g}) must be a finite number >= 0", parameters=('gap',))
    if method == "target" and target is None:
        raise UsageError("`method` target needs `target` stratum=share,...", parameters=('method', 'target'))
    if method != "target" and target is not None:
        raise UsageError(f"`target` is used only with `method` target (got `method` {method})",
                         parameters=('target', 'method'))


def _strata(prompts: Sequence[Any], by: str | None, key: str, notes: list[str]) -> dict[str, list[Any]]:
    """The prompts grouped by their ``key`` label (all in ``"all"`` when none has one and ``by`` is None)."""
    labelled = [p for p in prompts if stratum_label(p, key) != ONE_STRATUM]
    if not labelled:
        if by is not None:
            raise DataError(f"no prompt has a {key!r}; `by` {key} needs one "
                            f"(without `by`, all prompts form one stratum)", parameters=('by',))
        notes.append("prompts have no stratum: all prompts form one stratum 'all'")
    elif len(labelled) < len(prompts):
        missing = [f"{_where(p)}: prompt {p.id!r} has no {key}" for p in prompts
                   if stratum_label(p, key) == ONE_STRATUM]
        raise problems_error(missing, f"prompts without a {key} (others have one)")
    strata: dict[str, list[Any]] = {}
    for p in prompts:
        strata.setdefault(stratum_label(p, key), []).append(p)
    return strata


def _population_shares(method: str, prompts: Sequence[Any], names: list[str], size: Mapping[str, int],
                       weight_sum: Mapping[str, float]) -> dict[str, float]:
    """``P_h``: the weight-sum share for ``frequency``, the prompt share otherwise."""
    if method != "frequency":
        return {h: size[h] / len(prompts) for h in names}
    if any(getattr(p, "weight", None) is None for p in prompts):
        missing = [f"{_where(p)}: prompt {p.id!r} has no weight" for p in prompts
                   if getattr(p, "weight", None) is None]
        raise problems_error(missing, "prompts without a weight (--method frequency needs one for every prompt)")
    if sum(weight_sum.values()) <= 0:
        raise DataError("all prompt weights are 0; `method` frequency needs positive weights", parameters=('method',))
    return {h: weight_sum[h] / sum(weight_sum.values()) for h in names}


def _basis(method: str, names: list[str], size: Mapping[str, int], weight_sum: Mapping[str, float],
           target: Mapping[str, float] | None, sd: Mapping[str, float] | None,
           notes: list[str]) -> tuple[dict[str, float], dict[str, float]]:
    """``b_h`` of ``method`` (see the module docstring) and the ``S_h`` Neyman used."""
    if method == "proportional":
        return {h: float(size[h]) for h in names}, {}
    if method == "frequency":
        return {h: weight_sum[h] for h in names}, {}
    if method == "equal":
        return {h: 1.0 for h in names}, {}
    if method == "target":
        shares = _check_shares(target, known=names)
        basis = {h: float(shares.get(h, 0.0)) for h in names}
        zero = [h for h in names if basis[h] == 0]
        if zero:
            notes.append(f"target share 0 for {', '.join(zero)}: only --min-per-stratum prompts there")
        return basis, {}
    known = {h: float(v) for h, v in (sd or {}).items() if h in size and v is not None and math.isfinite(v)}
    if not known:
        notes.append("neyman: no judgments to estimate S_h; fell back to proportional allocation")
        return {h: float(size[h]) for h in names}, {}
    fill = float(np.mean(list(known.values())))
    lacking = [h for h in names if h not in known]
    if lacking:
        notes.append(f"neyman: no S_h for {', '.join(lacking)}; used the mean of the others ({fill:.4g})")
    sds = {h: known.get(h, fill) for h in names}
    basis = {h: size[h] * sds[h] for h in names}
    if not any(v > 0 for v in basis.values()):
        notes.append("neyman: every S_h is 0; fell back to proportional allocation")
        basis = {h: float(size[h]) for h in names}
    return basis, sds


def _bounds(names: list[str], avail: Mapping[str, int], budget: int, min_per_stratum: int,
            with_replacement: bool, notes: list[str]) -> tuple[dict[str, int], dict[str, int | None]]:
    """Each stratum's minimum and cap (None = no cap) for :func:`planner.allocation.apportion.quotas`."""
    if not with_replacement and budget > sum(avail.values()):
        raise UsageError(f"`budget` ({budget}) must be <= {sum(avail.values())}, the prompts available "
                         "(or pass `with_replacement`)", parameters=('budget', 'with_replacement'))
    lower = {h: min(min_per_stratum, avail[h]) if not with_replacement else
             (min_per_stratum if avail[h] else 0) for h in names}
    if sum(lower.values()) > budget:
        raise UsageError(f"`min_per_stratum` ({min_per_stratum}) over {len(names)} strata needs "
                         f"{sum(lower.values())} prompts, more than `budget` ({budget})",
                         parameters=('min_per_stratum', 'budget'))
    short = [h for h in names if avail[h] < min_per_stratum]
    if short and not with_replacement:
        notes.append(f"--min-per-stratum {min_per_stratum} exceeds the prompts of {', '.join(short)}: "
                     "all of them taken")
    upper: dict[str, int | None] = {h: (None if avail[h] else 0) for h in names} if with_replacement else dict(avail)
    return lower, upper


def problems_error(problems: list[str], what: str) -> DataError:
    """One DataError: the first problem as the message, the rest listed after it."""
    more = f" (and {len(problems) - 1} more {what} below)" if len(problems) > 1 else ""
    return DataError(problems[0] + more, problems=problems[1:])


def _weight(p: Any) -> float:
    w = getattr(p, "weight", None)
    return 1.0 if w is None else float(w)


def _where(p: Any) -> str:
    return getattr(p, "where", None) or f"prompt {p.id}"


def _check_prompts(prompts: Sequence[Any]) -> None:
    if not prompts:
        raise DataError("no prompts to allocate")
    problems: list[str] = []
    seen: dict[str, str] = {}
    for p in prompts:
        if p.id in seen:
            problems.append(f"{_where(p)}: duplicate prompt id {p.id!r} (first at {seen[p.id]})")
        else:
            seen[p.id] = _where(p)
        w = getattr(p, "weight", None)
        if w is not None and not (isinstance(w, (int, float)) and math.isfinite(w) and w >= 0):
            problems.append(f"{_where(p)}: weight ({w}) must be a finite number >= 0")
    if problems:
        raise problems_error(problems, "bad prompts")
