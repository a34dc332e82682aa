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
  score within the stratum (see :func:`stratum_sd`);
* ``target``: ``b_h`` = the user's target share.

Quotas become integers by the largest-remainder (Hamilton) method with bounds:
every stratum gets at least ``min(min_per_stratum, cap_h)`` and at most its cap
``cap_h`` (the prompts it has, unless sampling with replacement); the share a
capped stratum cannot take is redistributed over the others in proportion to
their basis (water-filling, :func:`apportion`).

Sampling weight of stratum ``h``: ``w_h = P_h / (n_h / n)``, the population
share over the sample share. The population share ``P_h`` is the share of the
summed prompt ``weight`` for ``method="frequency"`` and the share of prompts
(``N_h / N``) for every other method. A weighted mean ``sum(w_i y_i) / sum(w_i)``
over the chosen prompts then estimates the population mean.

Library API used by ``next-batch``: :func:`plan_strata` (how many of the next
``k`` comparisons go to each stratum given the target shares and what each
stratum already received) and :func:`choose_prompts` (which prompts, not yet
used, to take in one stratum).
"""

from __future__ import annotations

import csv
import json
import math
import os
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

import numpy as np

from planner.errors import DataError, UsageError

METHODS = ("proportional", "frequency", "equal", "neyman", "target")
BY = ("stratum", "difficulty")
ONE_STRATUM = "all"
SHARE_TOLERANCE = 1e-6  # target shares must sum to 1 within this (issue 5)
_VERDICT_SCORE = {"A": 1.0, "B": 0.0, "tie": 0.5}  # half-tie score of system `a`; invalid excluded


# ---------------------------------------------------------------------------
# Results


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


# ---------------------------------------------------------------------------
# Integer apportionment


def apportion(basis: Mapping[str, float], n: int, *,
              lower: Mapping[str, int] | None = None,
              upper: Mapping[str, int | None] | None = None) -> dict[str, int]:
    """Split ``n`` into integers proportional to ``basis`` within bounds.

    Largest-remainder (Hamilton) apportionment with lower and upper bounds:
    first the continuous allocation ``x_h = clip(lam * basis_h, lower_h,
    upper_h)`` with ``sum(x) = n`` (water-filling: what a capped stratum cannot
    take goes to the others in proportion to their basis), then every stratum
    gets ``floor(x_h)`` and the ``n - sum(floor)`` leftover units go to the largest
    fractional parts. Ties: larger ``x_h`` first, then stratum name (ascending),
    so the result is deterministic. Strata with basis 0 get their lower bound,
    unless the others' caps cannot absorb ``n``; then the rest is split equally
    among the zero-basis strata.

    When no bound binds, every ``n_h`` is ``floor`` or ``ceil`` of the exact
    quota ``n * basis_h / sum(basis)``.

    Parameters
    ----------
    basis : mapping stratum -> float >= 0, not all 0.
    n : int >= 0
    lower : mapping stratum -> int, optional (default 0)
    upper : mapping stratum -> int or None, optional (None = no cap)

    Returns
    -------
    dict stratum -> int, summing to ``n``, same keys as ``basis``.

    Raises
    ------
    UsageError
        ``n`` negative, bounds inconsistent, or ``n`` outside
        ``[sum(lower), sum(upper)]``.
    """
    names = list(basis)
    x = _fill(names, basis, n, lower, upper)
    lo = np.array([(lower or {}).get(k, 0) for k in names], dtype=float)
    hi = np.array([_cap((upper or {}).get(k)) for k in names], dtype=float)
    return _round(names, x, n, lo, hi)


def _cap(value: int | None) -> float:
    return math.inf if value is None else float(value)


def _fill(names: list[str], basis: Mapping[str, float], n: int,
          lower: Mapping[str, int] | None, upper: Mapping[str, int | None] | None):
    """Continuous water-filling; returns ``x`` in ``names`` order."""
    if isinstance(n, bool) or int(n) != n or n < 0:
        raise UsageError(f"budget ({n}) must be an integer >= 0")
    w = np.array([float(basis[k]) for k in names], dtype=float)
    if len(w) == 0:
        raise UsageError("no strata to allocate over")
    if not np.all(np.isfinite(w)) or np.any(w < 0) or not np.any(w > 0):
        raise UsageError(f"stratum basis {dict(basis)} must be finite, >= 0 and not all 0")
    lo = np.array([(lower or {}).get(k, 0) for k in names], dtype=float)
    hi = np.array([_cap((upper or {}).get(k)) for k in names], dtype=float)
    if np.any(lo < 0) or np.any(lo > hi):
        raise UsageError("each stratum's minimum must be >= 0 and <= its cap")
    if n < lo.sum() or n > hi.sum():
        raise UsageError(f"budget ({n}) must be in [{lo.sum():g}, {hi.sum():g}] "
                         "given the per-stratum minimums and caps")
    w = w / w.max()
    w[w < 1e-12] = 0.0  # relative basis below 1e-12 counts as 0 (keeps the breakpoints finite)
    pos = w > 0

    def f(lam: float) -> float:
        return float(np.clip(lam * w, lo, hi).sum())

    top = float(np.where(pos, hi, lo).sum())
    if top < n:  # positive-basis strata are full: spread the rest over zero-basis ones
        x = np.where(pos, hi, lo)
        rest = n - top
        idx = [i for i in range(len(names)) if not pos[i]]
        sub = _fill([names[i] for i in idx], {names[i]: 1.0 for i in idx}, int(round(rest + lo[idx].sum())),
                    {names[i]: int(lo[i]) for i in idx},
                    {names[i]: (None if math.isinf(hi[i]) else int(hi[i])) for i in idx})
        x[idx] = sub
        return x
    lam0, f0 = 0.0, f(0.0)
    if f0 >= n:
        return lo.copy()
    breaks = sorted({float(v) for v in np.concatenate([lo[pos] / w[pos], hi[pos] / w[pos]]) if math.isfinite(v)})
    for lam1 in breaks:
        if lam1 <= lam0:
            continue
        f1 = f(lam1)
        if f1 >= n:
            lam = lam0 + (n - f0) * (lam1 - lam0) / (f1 - f0)
            return np.clip(lam * w, lo, hi)
        lam0, f0 = lam1, f1
    slope = float(w[pos & np.isinf(hi)].sum())
    if slope == 0:  # f reached n only up to float error at the last breakpoint
        return np.where(pos, hi, lo)
    lam = lam0 + (n - f0) / slope
    return np.clip(lam * w, lo, hi)


def _round(names: list[str], x: np.ndarray, n: int, lo: np.ndarray, hi: np.ndarray) -> dict[str, int]:
    fl = np.clip(np.floor(x + 1e-9), lo, hi)  # 1e-9: absorb float error of the fill (x is O(budget))
    left = int(n - fl.sum())
    frac = x - fl
    order = sorted((i for i in range(len(names)) if fl[i] < hi[i]),
                   key=lambda i: (-round(frac[i], 12), -round(x[i], 12), names[i]))
    for i in order[:left]:
        fl[i] += 1
    return {k: int(v) for k, v in zip(names, fl)}


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
        raise UsageError(f"k ({k}) must be <= {sum(upper.values())}, the comparisons available over all strata")
    return apportion(basis, k, upper=upper)


def choose_prompts(prompts: Iterable[Any], stratum: str, n: int, used: set[str] | frozenset[str],
                   rng: np.random.Generator, frozen_first: bool = True,
                   pointwise: Mapping[str, float] | None = None, *, by: str = "stratum",
                   gap: float | None = None) -> list[str]:
    """Choose up to ``n`` prompt ids of one stratum, skipping ``used`` ones.

    Order: frozen prompts first (when ``frozen_first``), then the most contested
    (smallest pointwise gap, see :func:`pointwise_gaps`; prompts without a gap
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
    pool = [p for p in prompts if _label(p, by) == stratum and p.id not in used]
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


def _label(p: Any, by: str) -> str:
    v = getattr(p, by, None)
    if v is None or (isinstance(v, str) and v.strip() == ""):
        return ONE_STRATUM
    if isinstance(v, float) and v.is_integer():
        v = int(v)
    return str(v)


# ---------------------------------------------------------------------------
# Stratum statistics


def pointwise_gaps(records: Iterable[Mapping[str, Any]]) -> dict[str, float]:
    """Per-prompt pointwise score gap: ``max(score) - min(score)`` over systems.

    A small gap means the systems' pointwise scores are close — the comparison is
    *contested* and a pairwise judgment is informative; a large gap is already
    decided by the pointwise scores. Prompts scored for fewer than two systems
    get no gap. Records: ``{"prompt", "system", "score"}``.
    """
    scores: dict[str, list[float]] = {}
    for r in records:
        scores.setdefault(str(r["prompt"]), []).append(float(r["score"]))
    return {p: max(v) - min(v) for p, v in scores.items() if len(v) >= 2}


def stratum_sd(judgments: Iterable[Mapping[str, Any]], stratum_of: Mapping[str, str]) -> dict[str, float]:
    """``S_h``: SD of the half-tie score within each stratum, pooled over system pairs.

    Each usable judgment (verdict A, B or tie; invalid excluded) gives the
    half-tie score ``y`` of the pair's alphabetically first system (1 win, 0.5
    tie, 0 loss). Within stratum ``h``, with ``m`` the pairs and ``J`` the
    judgments, ``S_h^2 = sum_pairs sum_j (y_j - ybar_pair)^2 / (J - m)`` — the
    pooled within-pair variance, so the SD does not depend on which system of
    a pair is called first. Strata with ``J - m < 1`` get no value.

    Parameters
    ----------
    judgments : records with ``prompt``, ``a``, ``b``, ``verdict``.
    stratum_of : mapping prompt id -> stratum; judgments on other prompts are skipped.
    """
    groups: dict[str, dict[tuple[str, str], list[float]]] = {}
    for j in judgments:
        h = stratum_of.get(str(j["prompt"]))
        y = _VERDICT_SCORE.get(str(j["verdict"]))
        if h is None or y is None:
            continue
        a, b = str(j["a"]), str(j["b"])
        if b < a:
            a, b, y = b, a, 1.0 - y
        groups.setdefault(h, {}).setdefault((a, b), []).append(y)
    out = {}
    for h, pairs in groups.items():
        ss = sum(float(((np.array(v) - np.mean(v)) ** 2).sum()) for v in pairs.values())
        df = sum(len(v) for v in pairs.values()) - len(pairs)
        if df >= 1:
            out[h] = math.sqrt(ss / df)
    return out


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
            raise UsageError(f"--target ({part.strip()!r}) must look like stratum=share,"
                             " e.g. common=0.4,factual=0.6") from None
    if not out:
        raise UsageError(f"--target ({text!r}) names no stratum; e.g. common=0.4,factual=0.6")
    return out


def _check_shares(shares: Mapping[str, float], known: Sequence[str] | None) -> dict[str, float]:
    for h, s in shares.items():
        if not (isinstance(s, (int, float)) and math.isfinite(s) and 0 <= s <= 1):
            raise UsageError(f"--target share of {h!r} ({s}) must be in [0, 1]")
    total = float(sum(shares.values()))
    if abs(total - 1.0) > SHARE_TOLERANCE:
        raise UsageError(f"--target shares sum to {total:g}; they must sum to 1 (within {SHARE_TOLERANCE:g})")
    if known is not None:
        unknown = sorted(set(shares) - set(known))
        if unknown:
            raise UsageError(f"--target names unknown strata {', '.join(unknown)}; "
                             f"allowed: {', '.join(sorted(known))}")
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
    pointwise : mapping prompt id -> gap, optional (:func:`pointwise_gaps`)
        Contested (small-gap) prompts first.
    gap : float, optional
        Contested-only: keep only prompts with a gap <= ``gap`` (needs ``pointwise``).
    sd : mapping stratum -> S_h, for ``neyman`` (:func:`stratum_sd`). Strata
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
    if method not in METHODS:
        raise UsageError(f"--method ({method!r}) must be one of {', '.join(METHODS)}")
    if by is not None and by not in BY:
        raise UsageError(f"--by ({by!r}) must be one of {', '.join(BY)}")
    if isinstance(budget, bool) or int(budget) != budget or budget <= 0:
        raise UsageError(f"--budget ({budget}) must be an integer >= 1")
    if isinstance(min_per_stratum, bool) or int(min_per_stratum) != min_per_stratum or min_per_stratum < 0:
        raise UsageError(f"--min-per-stratum ({min_per_stratum}) must be an integer >= 0")
    if gap is not None:
        if pointwise is None:
            raise UsageError("--contested-only/--gap needs --pointwise FILE")
        if not (math.isfinite(gap) and gap >= 0):
            raise UsageError(f"--gap ({gap:g}) must be a finite number >= 0")
    if method == "target" and target is None:
        raise UsageError("--method target needs --target stratum=share,...")
    if method != "target" and target is not None:
        raise UsageError(f"--target is used only with --method target (got --method {method})")
    if rng is None:
        rng = np.random.default_rng(seed)
    notes: list[str] = []
    _check_prompts(prompts)
    key = by or "stratum"
    labelled = [p for p in prompts if _label(p, key) != ONE_STRATUM]
    if not labelled:
        if by is not None:
            raise DataError(f"no prompt has a {key!r}; --by {key} needs one "
                            f"(without --by, all prompts form one stratum)")
        notes.append("prompts have no stratum: all prompts form one stratum 'all'")
    elif len(labelled) < len(prompts):
        missing = [f"{_where(p)}: prompt {p.id!r} has no {key}" for p in prompts if _label(p, key) == ONE_STRATUM]
        raise _bad(missing, f"prompts without a {key} (others have one)")

    strata: dict[str, list[Any]] = {}
    for p in prompts:
        strata.setdefault(_label(p, key), []).append(p)
    names = sorted(strata)
    size = {h: len(strata[h]) for h in names}
    pool = {h: [p for p in strata[h] if gap is None or (p.id in pointwise and pointwise[p.id] <= gap)]
            for h in names}
    avail = {h: len(pool[h]) for h in names}
    if gap is not None:
        notes.append(f"contested only (gap <= {gap:g}): {sum(avail.values())} of {len(prompts)} prompts eligible")

    weight_sum = {h: sum(_weight(p) for p in strata[h]) for h in names}
    if method == "frequency":
        if any(getattr(p, "weight", None) is None for p in prompts):
            missing = [f"{_where(p)}: prompt {p.id!r} has no weight" for p in prompts
                       if getattr(p, "weight", None) is None]
            raise _bad(missing, "prompts without a weight (--method frequency needs one for every prompt)")
        if sum(weight_sum.values()) <= 0:
            raise DataError("all prompt weights are 0; --method frequency needs positive weights")
        pop = {h: weight_sum[h] / sum(weight_sum.values()) for h in names}
    else:
        pop = {h: size[h] / len(prompts) for h in names}

    sds: dict[str, float] = {}
    if method == "proportional":
        basis = {h: float(size[h]) for h in names}
    elif method == "frequency":
        basis = {h: weight_sum[h] for h in names}
    elif method == "equal":
        basis = {h: 1.0 for h in names}
    elif method == "target":
        shares = _check_shares(target, known=names)
        basis = {h: float(shares.get(h, 0.0)) for h in names}
        zero = [h for h in names if basis[h] == 0]
        if zero:
            notes.append(f"target share 0 for {', '.join(zero)}: only --min-per-stratum prompts there")
    else:
        known = {h: float(v) for h, v in (sd or {}).items() if h in size and v is not None and math.isfinite(v)}
        if not known:
            notes.append("neyman: no judgments to estimate S_h; fell back to proportional allocation")
            basis = {h: float(size[h]) for h in names}
        else:
            fill = float(np.mean(list(known.values())))
            lacking = [h for h in names if h not in known]
            if lacking:
                notes.append(f"neyman: no S_h for {', '.join(lacking)}; used the mean of the others ({fill:.4g})")
            sds = {h: known.get(h, fill) for h in names}
            basis = {h: size[h] * sds[h] for h in names}
            if not any(v > 0 for v in basis.values()):
                notes.append("neyman: every S_h is 0; fell back to proportional allocation")
                basis = {h: float(size[h]) for h in names}

    if not with_replacement and budget > sum(avail.values()):
        raise UsageError(f"--budget ({budget}) must be <= {sum(avail.values())}, the prompts available "
                         "(or pass --with-replacement)")
    lower = {h: min(min_per_stratum, avail[h]) if not with_replacement else
             (min_per_stratum if avail[h] else 0) for h in names}
    if sum(lower.values()) > budget:
        raise UsageError(f"--min-per-stratum ({min_per_stratum}) over {len(names)} strata needs "
                         f"{sum(lower.values())} prompts, more than --budget ({budget})")
    short = [h for h in names if avail[h] < min_per_stratum]
    if short and not with_replacement:
        notes.append(f"--min-per-stratum {min_per_stratum} exceeds the prompts of {', '.join(short)}: "
                     "all of them taken")
    upper = {h: (None if avail[h] else 0) for h in names} if with_replacement else dict(avail)
    x = _fill(names, basis, budget, lower, upper)
    counts = _round(names, x, budget,
                    np.array([lower[h] for h in names], dtype=float),
                    np.array([_cap(upper[h]) for h in names], dtype=float))

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


def _bad(problems: list[str], what: str) -> DataError:
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
    problems, seen = [], {}
    for p in prompts:
        if p.id in seen:
            problems.append(f"{_where(p)}: duplicate prompt id {p.id!r} (first at {seen[p.id]})")
        else:
            seen[p.id] = _where(p)
        w = getattr(p, "weight", None)
        if w is not None and not (isinstance(w, (int, float)) and math.isfinite(w) and w >= 0):
            problems.append(f"{_where(p)}: weight ({w}) must be a finite number >= 0")
    if problems:
        raise _bad(problems, "bad prompts")


# ---------------------------------------------------------------------------
# Files


def _records(path: str | os.PathLike, option: str) -> list[tuple[str, dict]]:
    """Rows of a CSV or JSONL file as ``("name:line", dict)`` via the shared readers.

    Unreadable lines (malformed JSON/CSV, not UTF-8) raise :class:`DataError`
    naming ``file:line``; empty CSV cells are ``None``.
    """
    from planner.formats.readers import iter_table

    p = Path(path)
    if not p.is_file():
        raise UsageError(f"{option} ({path}): no such file")
    rows, problems = [], []
    for line, rec, problem in iter_table(p):
        if problem:
            problems.append(problem)
        else:
            rows.append((f"{p.name}:{line}", rec))
    if problems:
        raise _bad(problems, "unreadable lines")
    return rows


def read_prompts(path: str | os.PathLike, option: str = "--prompts") -> list:
    """Read a prompts file with the one prompts reader (:func:`planner.formats.prompts.read_prompts`).

    Returns :class:`planner.formats.prompts.PromptRow` records. Bad rows and
    duplicate ids raise one :class:`DataError` naming ``file:line``.
    """
    from planner.formats.prompts import read_prompts as read_prompt_rows

    rows, problems = read_prompt_rows(path, option)
    if problems:
        raise _bad(problems, "bad prompt rows")
    return rows


def read_pointwise(path: str | os.PathLike, known: set[str]) -> dict[str, float]:
    """Read ``{"prompt", "system", "score"}`` rows (JSONL or CSV) into per-prompt gaps."""
    problems, seen, recs = [], {}, []
    for where, rec in _records(path, "--pointwise"):
        prompt, system, score = rec.get("prompt"), rec.get("system"), rec.get("score")
        try:
            score = float(score) if not isinstance(score, bool) else float("nan")
        except (TypeError, ValueError):
            score = float("nan")
        if prompt is None or system is None:
            problems.append(f"{where}: needs prompt, system and score")
        elif str(prompt) not in known:
            problems.append(f"{where}: unknown prompt {prompt!r}")
        elif not math.isfinite(score):
            problems.append(f"{where}: score ({rec.get('score')!r}) must be a finite number")
        elif (str(prompt), str(system)) in seen:
            problems.append(f"{where}: duplicate score for prompt {prompt!r}, system {system!r} "
                            f"(first at {seen[(str(prompt), str(system))]})")
        else:
            seen[(str(prompt), str(system))] = where
            recs.append({"prompt": str(prompt), "system": str(system), "score": score})
    if problems:
        raise _bad(problems, "bad pointwise rows")
    return pointwise_gaps(recs)


def read_pilot(path: str | os.PathLike, known: set[str]) -> list[dict]:
    """Read normalized judgments for Neyman's ``S_h``, with the reader ``ingest`` uses.

    Accepts exactly what ``planner ingest`` accepts
    (:func:`planner.formats.normalized.load_normalized`); judgments on prompts
    not in ``known`` are an error naming ``file:line``.
    """
    from planner.formats.normalized import load_normalized

    return [{"prompt": r["prompt"], "a": r["a"], "b": r["b"], "verdict": r["verdict"]}
            for r in load_normalized(path, "--pilot", prompts=known)]


#: the prompts-file format (``id, text, stratum, weight, frozen``: ``planner init --prompts`` reads it, issue 13)
#: plus the allocation's ``order`` and ``gap``
OUT_FIELDS = ("id", "text", "stratum", "weight", "frozen", "order", "gap")
_OUT_ATTR = {"id": "prompt"}


def write_prompts(result: Allocation, path: str | os.PathLike, *, force: bool = False) -> None:
    """Write the chosen prompts as CSV or JSONL (by extension), atomically.

    Columns / keys: ``id, text, stratum, weight, frozen, order, gap`` — a
    prompts file ``planner init --prompts`` accepts (``weight`` = the sampling
    weight, so per-stratum sums are proportional to the population). Refuses to
    overwrite an existing file unless ``force``. Written to a temporary file in
    the same directory (mode 0o666 minus the umask), then ``os.replace``d into
    place. CSV text cells that begin with ``= + - @``, a tab or a carriage
    return get a leading ``'`` (OWASP CSV injection; the same rule as batch
    files, :func:`planner.csvcell.neutralize_cell`); numbers are
    written as numbers.
    """
    from planner.csvcell import neutralize_cell
    from planner.errors import quote

    p = _check_out(path, force)
    if p.is_dir():
        raise UsageError(f"--out: {quote(str(p))} is a directory; give a file name")
    tmp = p.with_name(f".{p.name}.{os.getpid()}.tmp")
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o666)
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as fh:
            rows = [{k: getattr(c, _OUT_ATTR.get(k, k)) for k in OUT_FIELDS} for c in result.prompts]
            if p.suffix.lower() == ".csv":
                # CRLF rows (RFC 4180): csv quotes a cell holding a CR only when CR is in the terminator
                w = csv.DictWriter(fh, fieldnames=OUT_FIELDS, lineterminator="\r\n")
                w.writeheader()
                for r in rows:
                    w.writerow({k: neutralize_cell(v) if isinstance(v, str) else _cell(v) for k, v in r.items()})
            else:
                for r in rows:
                    fh.write(json.dumps(r, ensure_ascii=False) + "\n")
        os.replace(tmp, p)
    except BaseException as exc:
        if os.path.exists(tmp):
            os.unlink(tmp)
        if isinstance(exc, OSError):
            raise UsageError(f"--out: cannot write {quote(str(p))} ({exc.strerror or exc})") from None
        raise


def _cell(v: Any) -> str:
    if v is None:
        return ""
    if isinstance(v, bool):
        return "true" if v else "false"
    return repr(v) if isinstance(v, float) else str(v)


def _check_out(path: str | os.PathLike, force: bool) -> Path:
    p = Path(path)
    if p.suffix.lower() not in (".csv", ".jsonl"):
        raise UsageError(f"--out ({path}) must end in .csv or .jsonl")
    if p.exists() and not force:
        raise UsageError(f"--out ({path}) exists; pass --force to overwrite it")
    if not p.parent.is_dir():
        raise UsageError(f"--out ({path}): directory {p.parent} does not exist")
    return p


def allocate_files(*, budget: int, prompts: str | os.PathLike | None = None,
                   study: str | os.PathLike | None = None, pointwise: str | os.PathLike | None = None,
                   pilot: str | os.PathLike | None = None, contested_only: bool = False,
                   gap: float | None = None, target: str | None = None,
                   out: str | os.PathLike | None = None, force: bool = False,
                   seed: int | None = 0, **options: Any) -> Allocation:
    """The ``planner allocate`` command: read files, :func:`allocate`, write ``out``.

    Exactly one of ``prompts`` (a prompts file) or ``study`` (a study directory;
    Neyman then uses its judgments) is required. ``target`` is the
    ``"stratum=share,..."`` text. ``contested_only`` needs ``gap`` and
    ``pointwise``. Other keyword options go to :func:`allocate`. The output
    file is checked before any work and written atomically after.
    """
    from planner.limits import check_allocate_options

    check_allocate_options(budget=budget, seed=seed, min_per_stratum=options.get("min_per_stratum", 0), gap=gap)
    if (prompts is None) == (study is None):
        raise UsageError("give exactly one of --prompts FILE or --study STUDY")
    if contested_only and gap is None:
        raise UsageError("--contested-only needs --gap G (keep prompts whose pointwise scores differ by <= G)")
    if gap is not None and not contested_only:
        raise UsageError("--gap is used only with --contested-only")
    if contested_only and pointwise is None:
        raise UsageError("--contested-only needs --pointwise FILE")
    method = options.get("method", "proportional")
    if pilot is not None and method != "neyman":
        raise UsageError(f"--pilot is used only with --method neyman (got --method {method})")
    if out is not None:
        _check_out(out, force)
    judgments: list = []
    if study is not None:
        try:
            from planner.store.study import Study
        except ImportError:
            raise UsageError("--study is not available yet in this version; use --prompts FILE") from None
        with Study.open(study) as st:
            rows = list(st.prompts())
            if method == "neyman" and pilot is None:
                judgments = [_as_dict(j) for j in st.judgments() if getattr(j, "b", None) is not None]
    else:
        rows = read_prompts(prompts)
    known = {p.id for p in rows}
    if pilot is not None:
        judgments = read_pilot(pilot, known)
    gaps = read_pointwise(pointwise, known) if pointwise is not None else None
    sd = None
    if method == "neyman":
        by = options.get("by") or "stratum"
        sd = stratum_sd(judgments, {p.id: _label(p, by) for p in rows})
    result = allocate(rows, budget, target=None if target is None else parse_target(target),
                      pointwise=gaps, gap=gap if contested_only else None, sd=sd, seed=seed, **options)
    if out is not None:
        write_prompts(result, out, force=force)
        result = replace(result, out=str(out))
    return result


def _as_dict(j: Any) -> dict:
    if isinstance(j, Mapping):
        return dict(j)
    return {k: getattr(j, k, None) for k in ("prompt", "a", "b", "verdict")}
