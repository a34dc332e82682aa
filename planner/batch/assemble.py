"""Batch assembly: turn planned comparisons into blinded, shuffled batch items.

Pure functions only (no file I/O); the writers in :mod:`planner.formats.writers`
turn a :class:`Batch` into files. The item types and ids live in
:mod:`planner.batch.items`, the annotator-facing text handling in
:mod:`planner.batch.textnorm`, the QC items in :mod:`planner.batch.qc_items`; their public
names are re-exported here. Randomness comes only from the explicit
``rng`` (a :class:`numpy.random.Generator`), so the same input and the same seed
give an identical :class:`Batch`.

Vocabulary
----------
* **planned comparison** — ``(prompt_id, system_i, system_j, stratum)`` chosen by
  acquisition + allocation.
* **item** — one thing shown to an annotator: a comparison (``left``/``right``)
  or, for ``kind == "acceptability"``, a single response. The map from position
  to system (``left_system``/``right_system``) is the **key**; it is never
  written to an annotator-facing file.
* **kind** — ``regular`` (a planned comparison), ``swap`` (the same comparison
  in the other order, ``both_orders``), ``repeat`` (an earlier item of the same
  annotator re-presented later with positions swapped), ``overlap`` (a copy of
  a regular item given to a second annotator, same positions, for
  inter-annotator agreement), ``attention`` (one side obviously broken; the
  expected verdict is recorded), ``acceptability`` (one response, pass/fail).

QC counts
---------
With ``n_base`` regular + swap items and QC rates ``r_x`` (attention, repeat,
overlap, acceptability) summing to ``S < 1``, the batch gets
``k_x = round(r_x * n_base / (1 - S))`` items of kind ``x`` (round half up), so
that each QC kind makes up the fraction ``r_x`` of the final batch up to
rounding: ``|k_x - r_x * N| < 1`` with ``N`` the batch size (each ``k_x`` is off
by at most 1/2, and the batch size by at most ``m/2`` for ``m`` kinds, which
``r_x < 1`` scales below 1/2).

Positions
---------
Within each system pair the regular items are split half left / half right
(exactly, when the pair has an even count); the odd items of each pair put on
the left the system that has been on the left less often so far in the batch
(ties broken by ``rng``), so every system is on the left about half the time
across the batch too. The orientations are then shuffled within the pair.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field, fields, replace
from typing import Any

import numpy as np

from planner.batch.items import KINDS, Ids, Item, PlannedComparison, Skipped, as_planned, previous_ids, swapped
from planner.batch.qc_items import (
    Context,
    Issuable,
    acceptability_items,
    attention_items,
    overlap_items,
    qc_targets,
    repeat_items,
)
from planner.batch.textnorm import NORMALIZE_STYLES, ShownTexts, count_words
from planner.errors import DataError, UsageError, quote
from planner.limits import check_choice, check_float
from planner.names import annotator_name_problem
from planner.vocabulary import QC_KINDS

__all__ = ["Batch", "BatchManifest", "assemble_batch", "build_manifest"]

# --------------------------------------------------------------------- types
@dataclass(frozen=True)
class BatchManifest:
    """The JSON summary of an assembled batch (stored in the study as ``batch_manifest``).

    Counts per kind / pair / stratum / annotator, QC rates and counts, left/right
    length-ratio statistics, truncations, blinding warnings and the options.
    :meth:`to_json` gives exactly the dict the study stores (same keys, same
    order); :meth:`from_json` reads one back, including manifests of older
    studies: a key they lack is ``None`` here (and left out again by
    :meth:`to_json`), a key this version does not know is kept in ``extra``.
    """

    n_items: int | None = None
    n_comparisons: int | None = None
    kinds: dict | None = None
    per_pair: list | None = None
    per_stratum: dict | None = None
    per_annotator: dict | None = None
    left_share: dict | None = None
    qc: dict | None = None
    qc_rule: str | None = None
    n_base: int | None = None
    acceptability_shortfall: int | None = None
    attention_fallbacks: int | None = None
    length_ratio: dict | None = None
    truncated_texts: int | None = None
    skipped: dict | None = None
    blinding_warnings: list | None = None
    options: dict | None = None
    extra: dict = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        doc = {f.name: getattr(self, f.name) for f in fields(self) if f.name != "extra"}
        doc = {k: v for k, v in doc.items() if v is not None}
        doc.update(self.extra)
        return doc

    @classmethod
    def from_json(cls, doc: Mapping[str, Any]) -> BatchManifest:
        if not isinstance(doc, Mapping):
            raise DataError(f"batch manifest ({type(doc).__name__}) must be a JSON object")
        known = {f.name for f in fields(cls)} - {"extra"}
        return cls(**{k: v for k, v in doc.items() if k in known},
                   extra={k: v for k, v in doc.items() if k not in known})


@dataclass(frozen=True)
class Batch:
    """An assembled batch.

    Attributes
    ----------
    items : tuple of Item
        In presentation order, grouped by annotator (in the order of
        ``annotators``), shuffled within each annotator.
    skipped : tuple of Skipped
        Planned comparisons not issued (missing data, ``max_words``), with
        reasons. Never silent.
    manifest : BatchManifest
        Summary: counts per kind / pair / stratum / annotator, QC rates and
        counts, left/right length-ratio statistics, truncations, blinding
        warnings, options (``manifest.to_json()`` for the JSON).
    """

    items: tuple[Item, ...]
    skipped: tuple[Skipped, ...]
    manifest: BatchManifest = field(default_factory=BatchManifest)

    @property
    def annotators(self) -> tuple[str | None, ...]:
        seen: dict[str | None, None] = {}
        for it in self.items:
            seen.setdefault(it.annotator, None)
        return tuple(seen)

    def systems(self) -> tuple[str, ...]:
        """Every system named in the key (for blinding checks)."""
        names = {s for it in self.items for s in (it.left_system, it.right_system) if s}
        names |= {s for sk in self.skipped for s in (sk.system_i, sk.system_j) if s}
        return tuple(sorted(names))

    def to_dict(self) -> dict[str, Any]:
        return {
            "manifest": self.manifest.to_json(),
            "skipped": [vars_(s) for s in self.skipped],
            "items": [it.key() for it in self.items],
        }


def vars_(obj: Any) -> dict[str, Any]:
    return asdict(obj)


# ------------------------------------------------------------------ helpers
def check_qc_rate(name: str, value) -> float:
    """A QC rate (``attention``, ``repeat``, ``overlap``, ``acceptability``): a fraction of the final batch
    in [0, 1)."""
    return check_float(name, value, 0.0, 1.0, high_open=True)


def _check_options(attention, repeat, overlap, acceptability, annotators, max_words, truncate,
                   normalize_style) -> dict[str, float]:
    rates = {"attention": attention, "repeat": repeat, "overlap": overlap, "acceptability": acceptability}
    for name, value in rates.items():
        rates[name] = check_qc_rate(name, value)
    total = sum(rates.values())
    if total >= 1.0:
        raise UsageError(
            "QC rates `attention` + `repeat` + `overlap` + `acceptability` "
            f"({total:g}) must sum to less than 1", parameters=QC_KINDS)
    check_choice("normalize_style", normalize_style, NORMALIZE_STYLES)
    if max_words is not None and (isinstance(max_words, bool) or int(max_words) != max_words or max_words < 1):
        raise UsageError(f"`max_words` ({max_words}) must be a whole number >= 1", parameters=('max_words',))
    if truncate and max_words is None:
        raise UsageError("`truncate` needs `max_words`", parameters=('truncate', 'max_words'))
    if annotators is not None:
        if len(annotators) == 0:
            raise UsageError("`annotators` must name at least one annotator", parameters=('annotators',))
        bad = [a for a in annotators if annotator_name_problem(a)]
        if bad:
            raise UsageError(f"`annotators`: {quote(bad[0])} {annotator_name_problem(bad[0])}",
                             parameters=('annotators',))
        dup = sorted({a for a in annotators if list(annotators).count(a) > 1})
        if dup:
            raise UsageError(f"`annotators`: {dup[0]!r} is listed twice", parameters=('annotators',))
    if overlap > 0 and (annotators is None or len(annotators) < 2):
        raise UsageError(f"`overlap` ({overlap:g}) needs at least two annotators (`annotators`)",
                         parameters=('overlap', 'annotators'))
    return rates


def _balanced_orientations(pairs: list[tuple[str, str]], rng: np.random.Generator) -> list[bool]:
    """For each planned pair (i, j): True when i goes left. See module docstring."""
    by_pair: dict[tuple[str, str], list[int]] = defaultdict(list)
    for idx, (i, j) in enumerate(pairs):
        by_pair[(min(i, j), max(i, j))].append(idx)
    imbalance: dict[str, int] = defaultdict(int)   # (# left) - (# right) per system
    flips: dict[tuple[str, str], list[bool]] = {}  # per pair: True = first (sorted) system left
    keys = sorted(by_pair)
    for key in keys:
        m = len(by_pair[key])
        flips[key] = [True] * (m // 2) + [False] * (m // 2)
    for pos in rng.permutation(len(keys)):
        key = keys[int(pos)]
        if len(by_pair[key]) % 2:
            a, b = key
            if imbalance[a] != imbalance[b]:
                first_left = imbalance[a] < imbalance[b]
            else:
                first_left = bool(rng.integers(0, 2))
            flips[key].append(first_left)
            imbalance[a] += 1 if first_left else -1
            imbalance[b] += -1 if first_left else 1
    out = [False] * len(pairs)
    for key in keys:
        order = rng.permutation(len(flips[key]))
        for idx, o in zip(by_pair[key], order):
            first_left = flips[key][int(o)]
            i, _ = pairs[idx]
            out[idx] = first_left if i == key[0] else not first_left
    return out


def _ratio_stats(items: Sequence[Item]) -> dict[str, Any]:
    ratios = []
    for it in items:
        if it.kind in ("acceptability", "attention"):
            continue
        nl, nr = count_words(it.left_text), count_words(it.right_text or "")
        ratios.append((nl + 1) / (nr + 1))
    if not ratios:
        return {"n": 0, "median": None, "geometric_mean": None, "p10": None, "p90": None,
                "share_beyond_2x": None, "share_left_longer": None}
    r = np.asarray(ratios)
    return {
        "n": int(r.size),
        "median": float(np.median(r)),
        "geometric_mean": float(np.exp(np.mean(np.log(r)))),
        "p10": float(np.quantile(r, 0.1)),
        "p90": float(np.quantile(r, 0.9)),
        "share_beyond_2x": float(np.mean((r > 2) | (r < 0.5))),
        "share_left_longer": float(np.mean(r > 1)),
    }


def _name_mentions(items: Sequence[Item], systems: Sequence[str]) -> list[dict[str, str]]:
    if not systems:
        return []
    by_lower = {s.lower(): s for s in systems}
    names = sorted(systems, key=len, reverse=True)  # longest first: "gpt-4-turbo" before "gpt-4"
    rx = re.compile(r"(?<![\w-])(" + "|".join(re.escape(s) for s in names) + r")(?![\w-])", re.IGNORECASE)
    out: list[dict[str, str]] = []
    for it in items:
        found: dict[str, None] = {}
        for text in (it.prompt, it.left_text, it.right_text):
            for m in rx.finditer(text or ""):
                found.setdefault(by_lower.get(m.group(1).lower(), m.group(1)), None)
        out.extend({"item": it.item_id, "system": name} for name in found)
    return out


# --------------------------------------------------------------------- main
def assemble_batch(
    planned: Sequence[Any],
    *,
    prompt_text: Mapping[str, str],
    response_text: Mapping[tuple[str, str], str],
    rng: np.random.Generator,
    attention: float = 0.0,
    repeat: float = 0.0,
    overlap: float = 0.0,
    both_orders: bool = False,
    acceptability: float = 0.0,
    annotators: Sequence[str] | None = None,
    attention_pool: Sequence[str] | None = None,
    max_words: int | None = None,
    truncate: bool = False,
    normalize_style: str = "none",
    previous_items: Iterable[Any] | None = None,
) -> Batch:
    """Assemble a blinded batch from planned comparisons.

    Parameters
    ----------
    planned : sequence
        Planned comparisons: :class:`PlannedComparison`, objects with
        ``prompt_id``/``system_i``/``system_j``/``stratum`` attributes, or
        tuples ``(prompt_id, system_i, system_j[, stratum])``.
    prompt_text : mapping prompt_id -> str
    response_text : mapping (prompt_id, system) -> str
        Stored responses; only read, never modified.
    rng : numpy.random.Generator
        The only source of randomness (ids, positions, QC picks, order).
    attention, repeat, overlap, acceptability : float in [0, 1)
        Target fraction of the final batch for each QC kind (sum < 1); see the
        module docstring for the rounding rule.
    both_orders : bool
        Also issue every regular comparison in the swapped order
        (kind ``swap``, same annotator, linked to the regular item).
    annotators : sequence of str, optional
        Split the batch over these annotators. Regular items are dealt round
        robin; swaps and repeats go to the annotator of their original;
        overlap copies go to a different annotator than their original.
    attention_pool : sequence of str, optional
        Texts used as the broken side of attention items (instead of
        truncated or off-topic responses built from the study's data).
    max_words : int, optional
        Longest text (in words, counted on the annotator-facing text) shown.
        A comparison with a longer side is skipped (recorded in ``skipped``),
        or with ``truncate`` the text is cut with a visible marker.
    normalize_style : {"none", "markdown", "full"}
        See :func:`normalize_text`; annotator-facing text only.
    previous_items : iterable of str or objects with ``item_id``, optional
        Ids already used in the study (new ids never collide with them).

    Returns
    -------
    Batch

    Raises
    ------
    UsageError
        Bad option values (rates, style, ``max_words``, annotators), QC rates
        that ask for more repeats/overlap copies than the batch can supply,
        every comparison skipped by ``max_words``.
    DataError
        No comparison left because prompts/responses are missing.
    """
    rates = _check_options(attention, repeat, overlap, acceptability, annotators, max_words, truncate,
                           normalize_style)
    max_words = None if max_words is None else int(max_words)
    plan = [as_planned(p, k) for k, p in enumerate(planned)]
    if not plan:
        raise UsageError("the batch has no planned comparisons (batch size must be > 0)", parameters=('planned',))
    ann = list(annotators) if annotators is not None else None
    texts = ShownTexts(response_text, max_words=max_words, truncate=truncate, style=normalize_style)
    ctx = Context(rng, Ids(rng, previous_ids(previous_items)), texts, ann, {a: 0 for a in ann or ()})
    kept, skipped = _issuable(plan, prompt_text, texts)
    regular = _regular_items(kept, ctx)
    swaps = [swapped(it, "swap", ctx.ids) for it in regular] if both_orders else []
    ctx.add_load(swaps)
    n_base = len(regular) + len(swaps)
    target = qc_targets(rates, n_base)
    repeats = repeat_items(regular, target["repeat"], repeat, ctx)
    overlaps = overlap_items(regular, target["overlap"], overlap, ctx)
    attention_, n_attention_fallback = attention_items(kept, target["attention"], attention_pool, ctx)
    accept_, shortfall = acceptability_items(kept, target["acceptability"], prompt_text, ctx)
    ordered = _presentation_order(regular + swaps + repeats + overlaps + attention_ + accept_, ann, rng)
    options = dict(attention=attention, repeat=repeat, overlap=overlap, both_orders=both_orders,
                   acceptability=acceptability, annotators=ann,
                   attention_pool=None if attention_pool is None else len(attention_pool),
                   max_words=max_words, truncate=truncate, normalize_style=normalize_style)
    manifest = build_manifest(ordered, skipped, rates, target, n_base, texts.n_truncated, shortfall,
                              n_attention_fallback, options)
    return Batch(tuple(ordered), tuple(skipped), manifest)


def _skip_reason(p: PlannedComparison, texts: ShownTexts) -> tuple[str | None, str | None, str | None]:
    """(reason the comparison cannot be shown or None, text_i, text_j) for a planned comparison."""
    ti, wi = texts.shown(p.prompt_id, p.system_i)
    tj, wj = texts.shown(p.prompt_id, p.system_j)
    missing = [s for s, t in ((p.system_i, ti), (p.system_j, tj)) if t is None]
    if missing:
        return "no response from " + " and ".join(repr(s) for s in missing), ti, tj
    long_ = [(s, w) for s, w in ((p.system_i, wi), (p.system_j, wj)) if texts.too_long(w)]
    if long_:
        max_words = texts.max_words
        return ("; ".join(f"response of {s!r} has {w} words > --max-words {max_words}"
                          for s, w in long_)), ti, tj
    return None, ti, tj


def _issuable(plan: Sequence[PlannedComparison], prompt_text: Mapping[str, str],
              texts: ShownTexts) -> tuple[list[Issuable], list[Skipped]]:
    """The planned comparisons that can be shown, and the skipped ones with reasons (never silent)."""
    skipped: list[Skipped] = []
    kept: list[Issuable] = []
    for p in plan:
        if p.system_i == p.system_j:
            raise DataError(f"planned comparison of {p.system_i!r} with itself on prompt {p.prompt_id!r}")
        ptext = prompt_text.get(p.prompt_id)
        if ptext is None:
            skipped.append(Skipped(p.prompt_id, p.system_i, p.system_j, p.stratum, "no prompt text"))
            continue
        reason, ti, tj = _skip_reason(p, texts)
        if reason is not None:
            skipped.append(Skipped(p.prompt_id, p.system_i, p.system_j, p.stratum, reason))
            continue
        kept.append(Issuable(p, ptext, texts.fit(ti), texts.fit(tj)))
    if not kept:
        max_words = texts.max_words
        problems = [f"prompt {s.prompt_id!r} ({s.system_i} vs {s.system_j}): {s.reason}" for s in skipped]
        if all("--max-words" in s.reason for s in skipped):
            raise UsageError(f"`max_words` ({max_words}) skips every planned comparison; "
                             "raise it or use `truncate`", problems=problems, parameters=('max_words', 'truncate'))
        raise DataError("no planned comparison can be issued (missing prompts or responses)",
                        problems=problems)
    return kept, skipped


def _regular_items(kept: Sequence[Issuable], ctx: Context) -> list[Item]:
    """Balanced positions, opaque ids, then annotators dealt round robin after a shuffle."""
    orient = _balanced_orientations([(p.system_i, p.system_j) for p, *_ in kept], ctx.rng)
    regular: list[Item] = []
    for (p, ptext, ti, tj), i_left in zip(kept, orient):
        ls, rs, lt, rt = (p.system_i, p.system_j, ti, tj) if i_left else (p.system_j, p.system_i, tj, ti)
        regular.append(Item(ctx.ids.new(), "regular", p.prompt_id, ptext, ls, rs, lt, rt, p.stratum))
    ann = ctx.annotators
    if not ann:
        return regular
    assign: dict[str, str | None] = {it.item_id: None for it in regular}
    for slot, idx in enumerate(ctx.rng.permutation(len(regular))):
        a = ann[slot % len(ann)]
        assign[regular[int(idx)].item_id] = a
        ctx.load[a] += 1
    return [replace(it, annotator=assign[it.item_id]) for it in regular]


def _presentation_order(everything: Sequence[Item], ann: list[str] | None,
                        rng: np.random.Generator) -> list[Item]:
    """Per annotator (in the order of ``ann``), shuffled; a repeat moved after its original."""
    keys: list[str | None] = list(ann) if ann else [None]
    groups: dict[str | None, list[Item]] = {a: [] for a in keys}
    for it in everything:
        groups[it.annotator].append(it)
    ordered: list[Item] = []
    for members in groups.values():
        seq = [members[int(k)] for k in rng.permutation(len(members))]
        pos = {it.item_id: n for n, it in enumerate(seq)}
        for n in range(len(seq)):
            link = seq[n].link           # a repeat's original
            if seq[n].kind == "repeat" and link is not None and pos[link] > n:
                m = pos[link]
                seq[n], seq[m] = seq[m], seq[n]
                pos[seq[n].item_id], pos[seq[m].item_id] = n, m
        ordered.extend(seq)
    return ordered


def build_manifest(items: list[Item], skipped: list[Skipped], rates: dict[str, float], target: dict[str, int],
              n_base: int, n_truncated: int, shortfall: int, n_attention_fallback: int,
              options: dict[str, Any]) -> BatchManifest:
    """The batch's :class:`BatchManifest` from its ordered items, skips and QC bookkeeping."""
    kinds = {k: 0 for k in KINDS}
    per_pair: dict[tuple[str, str], int] = defaultdict(int)
    per_stratum: dict[str, int] = defaultdict(int)
    per_annotator: dict[str, dict[str, int]] = {}
    left_count: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for it in items:
        kinds[it.kind] += 1
        if it.annotator is not None:
            per_annotator.setdefault(it.annotator, {k: 0 for k in KINDS})[it.kind] += 1
        left, right = it.left_system, it.right_system
        if it.kind in ("regular", "swap") and left is not None and right is not None:   # both: a comparison
            per_pair[(min(left, right), max(left, right))] += 1
            per_stratum[str(it.stratum)] += 1
            left_count[left][0] += 1
            left_count[right][1] += 1
    systems = sorted({s for it in items for s in (it.left_system, it.right_system) if s})
    skipped_prompts = sorted({s.prompt_id for s in skipped})
    return BatchManifest(
        n_items=len(items),
        n_comparisons=kinds["regular"] + kinds["swap"],
        kinds=kinds,
        per_pair=[{"systems": [a, b], "n": n} for (a, b), n in sorted(per_pair.items())],
        per_stratum=dict(sorted(per_stratum.items())),
        per_annotator=per_annotator,
        left_share={s: (lc[0] / (lc[0] + lc[1]) if lc[0] + lc[1] else None)
                       for s, lc in sorted(left_count.items())},
        qc={k: {"rate": rates[k], "target": target[k], "n": kinds[k]} for k in QC_KINDS},
        qc_rule="k = round_half_up(rate * n_base / (1 - sum(rates))), n_base = regular + swap items",
        n_base=n_base,
        acceptability_shortfall=shortfall,
        attention_fallbacks=n_attention_fallback,
        length_ratio=_ratio_stats(items),
        truncated_texts=n_truncated,
        skipped={"n": len(skipped), "prompts": skipped_prompts},
        blinding_warnings=_name_mentions(items, systems),
        options=options,
    )
