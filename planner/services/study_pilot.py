"""A pilot read from an open study: its counted judgments for ``plan`` and ``simulate --from-study``,
and its human votes against a surrogate judge's verdicts for the hybrid (human + judge) money split.

* :func:`read_pilot`: the counted judgments (a surrogate judge's left out), the prompts each pair can
  still be shown on, as a :class:`planner.simulation.pilot.Pilot` (``plan``, ``simulate --from-study``).
* :func:`hybrid_votes`: the study's items exactly as ``report --surrogate`` builds them (counted kinds
  only, other ``planner judge`` models left out; :func:`planner.hybrid.items.items_from_verdicts`),
  with the votes per annotator and the other judges' verdicts the report's notes count.
* :func:`rho_from_study`: ρ̂, the human–judge score correlation within pairs on those items
  (``plan --surrogate``, ``size --hybrid --pilot``).

Each function takes an open study and never opens one.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

import numpy as np

from planner.errors import DataError, UsageError, quote
from planner.hybrid.items import HybridItems, items_from_verdicts
from planner.simulation.pilot import Pilot

__all__ = ["HybridVotes", "hybrid_votes", "items_from_study", "read_pilot", "rho_from_study"]


@dataclass(frozen=True)
class HybridVotes:
    """The study's hybrid items, the counted votes per annotator (the surrogate's included) and the
    verdicts of other ``planner judge`` models (left out of the target)."""

    items: HybridItems
    annotators: dict[str, int]
    other_judges: dict[str, int]


def hybrid_votes(study, surrogate: str) -> HybridVotes:
    """:class:`HybridVotes` from the open ``study``'s judgments, ``surrogate`` the judge's annotator name.

    A ``surrogate`` with no judgments in the study is a usage error (exit 2), as ``lc_anchor`` naming no
    system is."""
    from planner.store.study import COUNTED_KINDS

    rows: list[tuple] = []
    annotators: defaultdict[str, int] = defaultdict(int)
    other_judges: defaultdict[str, int] = defaultdict(int)
    for j in study.judgments():
        if j.kind not in COUNTED_KINDS:        # attention checks, repeats and acceptability are QC, not votes
            continue
        if j.annotator != surrogate and j.id.startswith("judge:"):      # another `planner judge` model
            other_judges[j.annotator] += 1
            continue
        annotators[j.annotator] += 1
        rows.append((j.prompt, j.a, j.b, j.verdict, j.annotator))
    if surrogate not in annotators:
        known = ", ".join(sorted(a for a in annotators if a)) or "none"
        raise UsageError(f"`surrogate`: no judgments by {quote(surrogate)} in {study.path}; "
                         f"annotators: {known[:200]}", parameters=('surrogate',))
    return HybridVotes(items_from_verdicts(tuple(study.systems), rows, surrogate), dict(annotators),
                       dict(other_judges))


def items_from_study(study, surrogate: str) -> HybridItems:
    """The open ``study``'s items and scores exactly as ``report --surrogate`` builds them
    (``simulate --hybrid``'s replay)."""
    return hybrid_votes(study, surrogate).items


def rho_from_study(study, surrogate: str) -> tuple[float, int]:
    """(ρ̂, items used): the human–judge score correlation within pairs on the open pilot ``study``'s items
    that carry human votes (:func:`planner.hybrid.budget.rho_from_items` on :func:`items_from_study`)."""
    from planner.hybrid.budget import rho_from_items

    items = items_from_study(study, surrogate)
    return rho_from_items(items.pairs, items.y, items.yhat)


def _prompts_per_pair(study, systems, codes: dict[str, int]) -> tuple[np.ndarray, str]:
    """Prompts each pair can be shown on: those with both systems' responses (or every prompt)."""
    from planner.simulation.study_pool import pair_index

    m = len(systems)
    keys = study.response_keys()
    i, j = pair_index(m)
    if not keys:
        return np.full(i.size, len(codes), dtype=np.int64), ("the study holds no responses: every pair counts "
                                                              f"all {len(codes):,} prompts")
    six = {s: k for k, s in enumerate(systems)}
    has = np.zeros((m, len(codes)), dtype=bool)
    for p, s in keys:
        if p in codes and s in six:
            has[six[s], codes[p]] = True
    return (has[i] & has[j]).sum(axis=1).astype(np.int64), ""


def read_pilot(study, *, surrogate: str | None = None, prompts: int | tuple | None = None,
               otherwise: tuple[str, tuple[str, ...]] = ("plan from assumptions (`systems`, `spread`)",
                                                         ("systems", "spread"))) -> tuple[Pilot, list[str]]:
    """The pilot in the open ``study`` (counted judgments; a ``surrogate`` judge's left out) and notes.

    ``otherwise``: what the error of a study without judgments advises instead, and its parameters."""
    from planner.simulation.pilot import pilot_from_records
    from planner.store.study import COUNTED_KINDS

    notes: list[str] = []
    systems = tuple(study.systems)
    if len(systems) < 2:
        raise DataError(f"{study.path}: a forecast needs at least two systems")
    records = [{"prompt": j.prompt, "a": j.a, "b": j.b, "verdict": j.verdict, "a_position": j.a_position}
               for j in study.judgments()
               if j.kind in COUNTED_KINDS and j.b is not None and (surrogate is None or j.annotator != surrogate)]
    if not records:
        raise DataError(f"{study.path}: the study holds no judgments to forecast from; ingest a pilot first, "
                        f"or {otherwise[0]}", parameters=otherwise[1])
    codes = {p.id: k for k, p in enumerate(study.prompts())}
    per_pair, note = _prompts_per_pair(study, systems, codes)
    if isinstance(prompts, tuple):
        if len(prompts) != per_pair.size:
            raise UsageError(f"`prompts` gives {len(prompts)} pairs' pools; the study has {per_pair.size} pairs",
                             parameters=("prompts",))
        per_pair = np.asarray(prompts, dtype=np.int64)
    elif prompts is not None:
        per_pair = np.full(per_pair.size, int(prompts), dtype=np.int64)
    elif note:
        notes.append(note)
    return pilot_from_records(systems, records, per_pair, codes), notes
