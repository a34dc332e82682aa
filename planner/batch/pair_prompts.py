"""Which prompts each system pair can still take: array bookkeeping for ``next-batch``.

A pair (i, j) can be shown a prompt when both systems have a (showable)
response to it; it *takes* the prompts it has not used yet (judged or issued,
any order), or, with ``reuse_prompts``, all of them again once every one is
used. For ``m`` systems that is ``m (m - 1) / 2`` pairs — 44,850 at 300
systems — so the counts are array operations:

* ``n_both[i, j]`` = ``H[i] · H[j]`` with ``H`` the 0/1 systems × prompts
  matrix of responses (one integer matrix product);
* ``n_used[i, j]`` = the used prompts of the pair that both systems answered,
  one ``bincount`` over the flattened usage lists;
* ``capacity = n_both - n_used`` when positive, else ``n_both`` with
  ``reuse_prompts``, else 0; a pair is *allowed* when its capacity is > 0.

The prompt *sets* are built only for the pairs a selection returns
(:meth:`PairPrompts.unused`). Pure: no I/O, no randomness.
"""

from __future__ import annotations

from collections import abc
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import chain, compress, repeat

import numpy as np


@dataclass(frozen=True, eq=False)
class PairPrompts:
    """Prompt bookkeeping of every system pair (pairs ``i < j`` in ``np.triu_indices`` order).

    Attributes
    ----------
    systems : tuple of str
    prompts : tuple of str
        The prompts with at least one showable response, sorted.
    have : ndarray of bool, shape (m, P)
        ``have[s, p]``: system ``s`` has a showable response to prompt ``p``.
    pair_i, pair_j : ndarray of int
        The pairs.
    n_both, n_fresh, capacity : ndarray of int
        Per pair: prompts both systems answered; of those not used yet;
        prompts the pair may take now (``n_fresh``, or ``n_both`` when every
        prompt is used and ``reuse_prompts``; else 0).
    """

    systems: tuple[str, ...]
    prompts: tuple[str, ...]
    have: np.ndarray
    pair_i: np.ndarray
    pair_j: np.ndarray
    n_both: np.ndarray
    n_fresh: np.ndarray
    capacity: np.ndarray
    reuse_prompts: bool
    usage: Mapping[tuple[str, str], frozenset] = field(repr=False, default_factory=dict)

    def allowed(self) -> set[tuple[int, int]]:
        """Pairs with capacity > 0."""
        ok = self.capacity > 0
        return set(zip(self.pair_i[ok].tolist(), self.pair_j[ok].tolist()))

    def capacities(self) -> dict[tuple[int, int], int]:
        """``{(i, j): capacity}`` of the allowed pairs (the ``capacity`` of ``select_pairs``)."""
        ok = self.capacity > 0
        return dict(zip(zip(self.pair_i[ok].tolist(), self.pair_j[ok].tolist()), self.capacity[ok].tolist()))

    def n_reused(self) -> int:
        """Pairs that have used every prompt yet may take one again (``reuse_prompts``)."""
        return int(np.count_nonzero((self.n_both > 0) & (self.n_fresh == 0) & (self.capacity > 0)))

    def missing(self) -> list[tuple[str, str]]:
        """Pairs without any prompt both systems answered, in pair order."""
        idx = np.flatnonzero(self.n_both == 0)
        return [(self.systems[self.pair_i[t]], self.systems[self.pair_j[t]]) for t in idx]

    def unused(self, i: int, j: int) -> set[str]:
        """The prompt ids pair ``(i, j)`` (``i < j``) may take now."""
        both = set(compress(self.prompts, (self.have[i] & self.have[j]).tolist()))
        used = self.usage.get((self.systems[i], self.systems[j]), frozenset())
        return (both - used) or (both if self.reuse_prompts else set())


class PairUsage(abc.Mapping):
    """``{(x, y): used prompt ids}`` held as sorted arrays (:meth:`Study.pair_prompt_usage_codes`).

    The same mapping as :meth:`planner.store.study.Study.pair_prompt_usage` for the
    prompts the study holds, without a Python set per pair: :func:`pair_prompts`
    counts from the arrays, and a pair's set is built only when asked for.

    ``x``, ``y`` (``x < y``) are places in ``systems``, ``names[code]`` the prompt
    ids; rows sorted by ``(x, y, code)`` and distinct.
    """

    def __init__(self, systems: Sequence[str], x: np.ndarray, y: np.ndarray, code: np.ndarray,
                 names: Sequence[str | None]):
        self.systems = tuple(systems)
        self.x, self.y, self.code, self.names = x, y, code, tuple(names)
        self._key = x * len(self.systems) + y
        self._place = {s: k for k, s in enumerate(self.systems)}

    def _span(self, pair) -> tuple[int, int]:
        a, b = self._place.get(pair[0], -1), self._place.get(pair[1], -1)
        if a < 0 or b <= a:
            return 0, 0
        key = a * len(self.systems) + b
        return int(np.searchsorted(self._key, key, "left")), int(np.searchsorted(self._key, key, "right"))

    def __getitem__(self, pair) -> frozenset:
        lo, hi = self._span(pair)
        if lo == hi:
            raise KeyError(pair)
        return frozenset(self.names[c] for c in self.code[lo:hi].tolist())

    def __contains__(self, pair) -> bool:
        lo, hi = self._span(pair)
        return hi > lo

    def __iter__(self) -> Iterator[tuple[str, str]]:
        keys = np.unique(self._key)
        return iter([(self.systems[k // len(self.systems)], self.systems[k % len(self.systems)])
                     for k in keys.tolist()])

    def __len__(self) -> int:
        return int(np.unique(self._key).size)


def pair_prompts(systems: Sequence[str], responses: Iterable[tuple[str, str]],
                 usage: Mapping[tuple[str, str], frozenset], *, reuse_prompts: bool = False) -> PairPrompts:
    """The :class:`PairPrompts` of ``systems``.

    Parameters
    ----------
    systems : the study's systems, in its order (pair ``(i, j)`` means ``i < j``).
    responses : ``(prompt_id, system)`` of every showable response.
    usage : ``{(x, y): prompt ids}`` with ``x`` before ``y`` in ``systems``
        (:meth:`planner.store.study.Study.pair_prompt_usage`), or a :class:`PairUsage`
        of the same ``systems`` (counted from its arrays).
    reuse_prompts : let a pair that has used every prompt take one again.
    """
    systems = tuple(systems)
    m = len(systems)
    s_index = {s: k for k, s in enumerate(systems)}
    rows = [(p, s_index[s]) for p, s in responses if s in s_index]
    prompts = tuple(sorted({p for p, _ in rows}))
    p_index = {p: k for k, p in enumerate(prompts)}
    have = np.zeros((m, len(prompts)), dtype=bool)
    if rows:
        have[np.fromiter((s for _, s in rows), np.int64, len(rows)),
             np.fromiter((p_index[p] for p, _ in rows), np.int64, len(rows))] = True
    pi, pj = np.triu_indices(m, 1)
    h = have.astype(np.int32)
    n_both = (h @ h.T)[pi, pj].astype(np.int64)
    n_used = _used_and_answered(systems, s_index, p_index, have, usage, pi.size)
    n_fresh = n_both - n_used
    capacity = np.where(n_fresh > 0, n_fresh, n_both if reuse_prompts else 0)
    return PairPrompts(systems, prompts, have, pi, pj, n_both, n_fresh, capacity, bool(reuse_prompts), usage)


def _used_and_answered(systems, s_index, p_index, have, usage, n_pairs) -> np.ndarray:
    """Per pair: its used prompts that both systems answered (one bincount over all usage lists)."""
    m = len(systems)
    if isinstance(usage, PairUsage) and usage.systems == tuple(systems):
        return _used_and_answered_codes(usage, p_index, have, n_pairs)
    keys = [(s_index.get(x), s_index.get(y)) for x, y in usage]
    sizes = np.fromiter((len(v) for v in usage.values()), np.int64, len(usage))
    ok = np.fromiter((a is not None and b is not None and a < b for a, b in keys), bool, len(keys))
    if not ok.any():
        return np.zeros(n_pairs, dtype=np.int64)
    a = np.array([k[0] if good else 0 for k, good in zip(keys, ok)], dtype=np.int64)
    b = np.array([k[1] if good else 1 for k, good in zip(keys, ok)], dtype=np.int64)
    pair = a * m - a * (a + 1) // 2 + (b - a - 1)          # index of (a, b) in np.triu_indices order
    total = int(sizes.sum())
    prompt = np.fromiter(map(p_index.get, chain.from_iterable(usage.values()), repeat(-1)), np.int64, total)
    rep_pair = np.repeat(pair, sizes)
    rep_ok = np.repeat(ok, sizes) & (prompt >= 0)
    a_rep, b_rep = np.repeat(a, sizes), np.repeat(b, sizes)
    keep = rep_ok.copy()
    keep[rep_ok] = have[a_rep[rep_ok], prompt[rep_ok]] & have[b_rep[rep_ok], prompt[rep_ok]]
    return np.bincount(rep_pair[keep], minlength=n_pairs).astype(np.int64)


def _used_and_answered_codes(usage: PairUsage, p_index, have, n_pairs) -> np.ndarray:
    """:func:`_used_and_answered` from :class:`PairUsage` arrays (no per-pair Python objects)."""
    m = len(usage.systems)
    column = np.array([-1 if n is None else p_index.get(n, -1) for n in usage.names], dtype=np.int64)
    col = column[usage.code] if usage.code.size else np.zeros(0, dtype=np.int64)
    a, b = usage.x, usage.y
    keep = col >= 0
    keep[keep] = have[a[keep], col[keep]] & have[b[keep], col[keep]]
    pair = a * m - a * (a + 1) // 2 + (b - a - 1)
    return np.bincount(pair[keep], minlength=n_pairs).astype(np.int64)
