"""Quality-control items of a batch: repeats, overlap copies, attention checks, acceptability items.

Pure functions, no I/O; every random choice comes from the batch's one
``rng`` (in :class:`Context`), in a fixed order, so the same input and seed
give the same items. The counts per kind come from :func:`qc_targets` (the
rule in :mod:`planner.batch`'s docstring).

* **repeat** — an earlier regular item of the same annotator, positions swapped.
* **overlap** — a copy of a regular item (same positions) for a second
  annotator, who has the fewest items so far (ties in a random order).
* **attention** — a planned comparison with one side obviously broken: a text
  from the ``attention_pool``, or the broken system's answer to another prompt
  (``off-topic``, from another stratum when one exists), or its answer cut to
  3..6 words (``truncated``); the expected verdict is the unbroken side.
* **acceptability** — one response, pass/fail, spread across systems and strata.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple

import numpy as np

from planner.batch.items import Ids, Item, PlannedComparison, swapped
from planner.batch.textnorm import ShownTexts, count_words, normalize_text, truncate_words
from planner.errors import UsageError

ATTENTION_WORDS = (3, 6)      # a truncated attention side keeps 3..6 words
ATTENTION_MIN_WORDS = 12      # ... of a response at least this long


class Issuable(NamedTuple):
    """A planned comparison that can be shown: its prompt text and both (fitted) response texts."""

    plan: PlannedComparison
    prompt: str
    text_i: str
    text_j: str


@dataclass
class Context:
    """What every QC step shares: the one rng, the ids, the shown texts, the annotators and their loads."""

    rng: np.random.Generator
    ids: Ids
    texts: ShownTexts
    annotators: list[str] | None
    load: dict[str, int] = field(default_factory=dict)

    def deal(self, count: int) -> list[str | None]:
        """Annotators for ``count`` items: round robin from a random start (None without annotators)."""
        ann = self.annotators
        if not ann:
            return [None] * count
        start = int(self.rng.integers(0, len(ann)))
        return [ann[(start + c) % len(ann)] for c in range(count)]

    def add_load(self, items: Iterable[Item]) -> None:
        for it in items:
            if it.annotator is not None:
                self.load[it.annotator] += 1


def round_half_up(x: float) -> int:
    return int(math.floor(x + 0.5 + 1e-12))


def qc_targets(rates: Mapping[str, float], n_base: int) -> dict[str, int]:
    """``k_x = round_half_up(r_x * n_base / (1 - sum(r)))`` items of each QC kind."""
    total_rate = sum(rates.values())
    return {k: round_half_up(r * n_base / (1.0 - total_rate)) for k, r in rates.items()}


def repeat_items(regular: Sequence[Item], k: int, rate: float, ctx: Context) -> list[Item]:
    """``k`` regular items again, positions swapped, for the same annotator."""
    if k > len(regular):
        raise UsageError(f"`repeat` ({rate:g}) asks for {k} repeat items but the batch has "
                         f"only {len(regular)} regular items to repeat; lower the QC rates", parameters=('repeat',))
    repeats = [swapped(regular[int(c)], "repeat", ctx.ids)
               for c in sorted(ctx.rng.choice(len(regular), size=k, replace=False))]
    ctx.add_load(repeats)
    return repeats


def overlap_items(regular: Sequence[Item], k: int, rate: float, ctx: Context) -> list[Item]:
    """``k`` copies of regular items (same positions), each for an annotator who does not hold it yet."""
    if not k:
        return []
    ann, rng, load = ctx.annotators, ctx.rng, ctx.load
    if ann is None:     # batch.py refuses overlap without two annotators before it gets here
        raise ValueError("overlap copies need the annotators")
    capacity = len(regular) * (len(ann) - 1)
    if k > capacity:
        raise UsageError(f"`overlap` ({rate:g}) asks for {k} overlap copies but "
                         f"{len(regular)} regular items over {len(ann)} annotators allow at most {capacity}",
                         parameters=('overlap',))
    holders: dict[str, set[str | None]] = {it.item_id: {it.annotator} for it in regular}
    order = [int(c) for c in rng.permutation(len(regular))]
    tie_rank = {a: int(r) for a, r in zip(ann, rng.permutation(len(ann)))}
    overlaps: list[Item] = []
    for c in range(k):
        src = regular[order[c % len(order)]]
        free = [a for a in ann if a not in holders[src.item_id]]
        dest = min(free, key=lambda a: (load[a], tie_rank[a]))
        holders[src.item_id].add(dest)
        load[dest] += 1
        overlaps.append(Item(ctx.ids.new(), "overlap", src.prompt_id, src.prompt, src.left_system,
                             src.right_system, src.left_text, src.right_text, src.stratum, dest,
                             src.item_id))
    return overlaps


class _PromptsOf:
    """Prompts with a response from a system, sorted on first use."""

    def __init__(self, keys: Iterable[tuple[str, str]]):
        self._by_system: dict[str, list[str]] = defaultdict(list)
        for (pid, sysname) in keys:
            self._by_system[sysname].append(pid)
        self._sorted: dict[str, list[str]] = {}

    def get(self, system: str) -> Sequence[str]:
        if system not in self._sorted:
            self._sorted[system] = sorted(self._by_system.get(system, ()))
        return self._sorted[system] or ()


@dataclass
class _Attention:
    """The shared inputs of the attention items (pool, prompts per system, strata of the kept prompts)."""

    pool: list[str]
    prompts_of: _PromptsOf
    stratum_of: dict[str, Any]
    fallbacks: int = 0


def _off_topic(p: PlannedComparison, bad_sys: str, att: _Attention, ctx: Context) -> str | None:
    """The broken system's answer to another prompt (another stratum first), or None."""
    texts, rng = ctx.texts, ctx.rng
    others = [q for q in att.prompts_of.get(bad_sys) if q != p.prompt_id]
    other_strata = [q for q in others if q in att.stratum_of and att.stratum_of[q] != p.stratum]
    for cands in (other_strata, others):
        for k_ in rng.permutation(len(cands)):  # first usable one in a random order
            text, words = texts.shown(cands[int(k_)], bad_sys)
            if text is not None and not texts.too_long(words):
                return texts.fit(text)
    return None


def _broken_side(p: PlannedComparison, bad_sys: str, good_text: str, att: _Attention,
                 ctx: Context) -> tuple[str, str]:
    """(broken text, how it was made) for an attention item whose broken slot is ``bad_sys``'s."""
    texts, rng = ctx.texts, ctx.rng
    bad_raw, _ = texts.shown(p.prompt_id, bad_sys)
    if att.pool:
        return att.pool[int(rng.integers(0, len(att.pool)))], "pool"
    method = "truncated" if rng.integers(0, 2) else "off-topic"
    if method == "off-topic":
        bad_text = _off_topic(p, bad_sys, att, ctx)
        if bad_text is not None:
            return bad_text, "off-topic"
    if bad_raw is not None and count_words(bad_raw) >= ATTENTION_MIN_WORDS:
        keep = int(rng.integers(ATTENTION_WORDS[0], ATTENTION_WORDS[1] + 1))
        return truncate_words(bad_raw, keep, marker=False), "truncated"
    # neither works: fall back to the other method's best effort
    att.fallbacks += 1
    others = [q for q in att.prompts_of.get(bad_sys) if q != p.prompt_id]
    if others:
        q = others[int(rng.integers(0, len(others)))]
        return truncate_words(texts.shown(q, bad_sys)[0], ATTENTION_WORDS[1], marker=False), "off-topic"
    return truncate_words(good_text, ATTENTION_WORDS[0], marker=False), "truncated"


def _attention_inputs(kept: Sequence[Issuable], attention_pool: Sequence[str] | None,
                      ctx: Context) -> _Attention:
    texts = ctx.texts
    pool = [texts.fit(normalize_text(t, texts.style)) for t in (attention_pool or ())]
    pool = [t for t in pool if t.strip() and not texts.too_long(count_words(t))]
    if attention_pool is not None and not pool:
        raise UsageError("`attention_pool` has no usable text (empty, or every text exceeds `max_words`)",
                         parameters=('attention_pool', 'max_words'))
    return _Attention(pool, _PromptsOf(texts.response_text.keys()), {p.prompt_id: p.stratum for p, *_ in kept})


def attention_items(kept: Sequence[Issuable], k: int, attention_pool: Sequence[str] | None,
                    ctx: Context) -> tuple[list[Item], int]:
    """``k`` attention items, half with the broken side on the left; returns (items, fallbacks)."""
    if not k:
        return [], 0
    rng = ctx.rng
    att = _attention_inputs(kept, attention_pool, ctx)
    broken_left = [bool(c % 2) for c in range(k)]
    if rng.integers(0, 2):
        broken_left = [not b for b in broken_left]
    broken_left = [broken_left[int(c)] for c in rng.permutation(k)]
    items: list[Item] = []
    for c, who in zip(range(k), ctx.deal(k)):
        p, ptext, ti, tj = kept[int(rng.integers(0, len(kept)))]
        good_is_i = bool(rng.integers(0, 2))
        good_sys, bad_sys = (p.system_i, p.system_j) if good_is_i else (p.system_j, p.system_i)
        good_text = ti if good_is_i else tj
        bad_text, source = _broken_side(p, bad_sys, good_text, att, ctx)
        if broken_left[c]:
            ls, rs, lt, rt, expected = bad_sys, good_sys, bad_text, good_text, "right"
        else:
            ls, rs, lt, rt, expected = good_sys, bad_sys, good_text, bad_text, "left"
        items.append(Item(ctx.ids.new(), "attention", p.prompt_id, ptext, ls, rs, lt, rt, p.stratum,
                          who, None, expected, source))
    return items, att.fallbacks


def _usable_prompt(pools: Iterable[list[str]], system: str, used: set[tuple[str, str]],
                   ctx: Context) -> str | None:
    """The first prompt (pools in order, each in a random order) with a showable, unused response."""
    for pool_ in pools:
        cands = [q for q in pool_ if (q, system) not in used]
        for k_ in ctx.rng.permutation(len(cands)):  # first usable prompt in a random order
            q = cands[int(k_)]
            text, words = ctx.texts.shown(q, system)
            if text is not None and not ctx.texts.too_long(words):
                return q
    return None


def acceptability_items(kept: Sequence[Issuable], k: int, prompt_text: Mapping[str, str],
                        ctx: Context) -> tuple[list[Item], int]:
    """``k`` single-response items across systems and strata; returns (items, shortfall)."""
    if not k:
        return [], 0
    rng = ctx.rng
    systems = sorted({s for p, *_ in kept for s in (p.system_i, p.system_j)})
    strata = sorted({p.stratum for p, *_ in kept}, key=lambda s: (s is None, s or ""))
    prompts_by_stratum: dict[Any, list[str]] = defaultdict(list)
    for p, *_ in kept:
        if p.prompt_id not in prompts_by_stratum[p.stratum]:
            prompts_by_stratum[p.stratum].append(p.prompt_id)
    sys_order = [systems[int(c)] for c in rng.permutation(len(systems))]
    str_order = [strata[int(c)] for c in rng.permutation(len(strata))]
    used: set[tuple[str, str]] = set()
    items: list[Item] = []
    shortfall = 0
    for c, who in zip(range(k), ctx.deal(k)):
        system = sys_order[c % len(sys_order)]
        stratum = str_order[(c + c // len(sys_order)) % len(str_order)]
        every = [q for s in strata for q in prompts_by_stratum[s]]
        chosen = _usable_prompt((prompts_by_stratum[stratum], every), system, used, ctx)
        if chosen is None:
            shortfall += 1
            continue
        used.add((chosen, system))
        st = next(p.stratum for p, *_ in kept if p.prompt_id == chosen)
        items.append(Item(ctx.ids.new(), "acceptability", chosen, prompt_text[chosen], system, None,
                          ctx.texts.fit(ctx.texts.shown(chosen, system)[0]), None, st, who))
    return items, shortfall
