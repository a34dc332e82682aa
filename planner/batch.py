"""Batch assembly: turn planned comparisons into blinded, shuffled batch items.

Pure functions only (no file I/O); the writers in :mod:`planner.formats.writers`
turn a :class:`Batch` into files. Randomness comes only from the explicit
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

import math
import re
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping, Sequence

import numpy as np

from planner.errors import DataError, UsageError, check_range

KINDS = ("regular", "swap", "repeat", "overlap", "attention", "acceptability")
QC_KINDS = ("attention", "repeat", "overlap", "acceptability")
NORMALIZE_STYLES = ("none", "markdown", "full")
ID_PREFIX = "it-"
# Crockford base32 (no i, l, o, u), lower case; 12 symbols = 60 random bits.
ID_ALPHABET = "0123456789abcdefghjkmnpqrstvwxyz"
ID_LENGTH = 12
TRUNCATION_MARKER = "[… truncated by planner: {shown} of {total} words shown]"
ATTENTION_WORDS = (3, 6)      # a truncated attention side keeps 3..6 words
ATTENTION_MIN_WORDS = 12      # ... of a response at least this long
_ANNOTATOR_RE = re.compile(r"^[A-Za-z0-9_-]+$")
_WORD_RE = re.compile(r"\S+")


# --------------------------------------------------------------------- types
@dataclass(frozen=True)
class PlannedComparison:
    """One comparison chosen by acquisition/allocation (system order is irrelevant)."""

    prompt_id: str
    system_i: str
    system_j: str
    stratum: str | None = None


@dataclass(frozen=True)
class Item:
    """One batch item.

    Attributes
    ----------
    item_id : str
        Opaque random id (``"it-"`` + 12 base32 symbols from ``rng``), never
        derived from names.
    kind : str
        One of :data:`KINDS`.
    prompt_id, prompt : str
        Prompt id (key side) and prompt text (annotator-facing).
    left_system, right_system : str or None
        The **key**: which system produced each side. ``right_system`` is
        ``None`` for acceptability items; for attention items the broken side's
        key is the system whose slot was broken (its text came from elsewhere
        when ``qc_source`` is ``"pool"`` or ``"off-topic"``), so the study's key
        always names two different systems.
    left_text, right_text : str or None
        Annotator-facing texts after style normalization / truncation
        (``right_text`` is ``None`` for acceptability items).
    stratum : str or None
        Stratum of the prompt.
    annotator : str or None
        Annotator the item goes to (``None`` when the batch is not split).
    link : str or None
        For ``repeat``, ``swap`` and ``overlap``: the id of the original item.
    expected : str or None
        For ``attention``: the verdict a careful annotator gives
        (``"left"``/``"right"``: the unbroken side).
    qc_source : str or None
        For ``attention``: how the broken side was made
        (``"truncated"``, ``"off-topic"``, ``"pool"``).
    """

    item_id: str
    kind: str
    prompt_id: str
    prompt: str
    left_system: str | None
    right_system: str | None
    left_text: str
    right_text: str | None
    stratum: str | None = None
    annotator: str | None = None
    link: str | None = None
    expected: str | None = None
    qc_source: str | None = None

    @property
    def is_pairwise(self) -> bool:
        return self.kind != "acceptability"

    def key(self) -> dict[str, Any]:
        """The key side of the item (no texts): what the study stores."""
        return {
            "item_id": self.item_id, "kind": self.kind, "prompt_id": self.prompt_id,
            "left_system": self.left_system, "right_system": self.right_system,
            "stratum": self.stratum, "annotator": self.annotator, "link": self.link,
            "expected": self.expected, "qc_source": self.qc_source,
        }


@dataclass(frozen=True)
class Skipped:
    """A planned comparison (or prompt) left out of the batch, and why."""

    prompt_id: str
    system_i: str | None
    system_j: str | None
    stratum: str | None
    reason: str


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
    manifest : dict
        JSON-ready summary: counts per kind / pair / stratum / annotator, QC
        rates and counts, left/right length-ratio statistics, truncations,
        blinding warnings, options.
    """

    items: tuple[Item, ...]
    skipped: tuple[Skipped, ...]
    manifest: dict = field(default_factory=dict)

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
            "manifest": self.manifest,
            "skipped": [vars_(s) for s in self.skipped],
            "items": [it.key() for it in self.items],
        }


def vars_(obj: Any) -> dict[str, Any]:
    from dataclasses import asdict

    return asdict(obj)


# ------------------------------------------------------------ text handling
def count_words(text: str) -> int:
    """Number of whitespace-separated words."""
    return len(_WORD_RE.findall(text))


def truncate_words(text: str, max_words: int, *, marker: bool = True) -> str:
    """Cut ``text`` after ``max_words`` words (whitespace kept as is).

    With ``marker`` a visible line ``[… truncated by planner: N of M words
    shown]`` is appended; text within the limit is returned unchanged.
    """
    words = list(_WORD_RE.finditer(text))
    if len(words) <= max_words:
        return text
    cut = text[: words[max_words - 1].end()] if max_words > 0 else ""
    if not marker:
        return cut
    note = TRUNCATION_MARKER.format(shown=max_words, total=len(words))
    return f"{cut}\n\n{note}"


_FENCE_RE = re.compile(r"^\s*(```|~~~)")
_HEADING_RE = re.compile(r"^(\s{0,3})#{1,6}\s+(.*?)(\s+#+\s*)?$")
_SETEXT_RE = re.compile(r"^\s{0,3}(=+|-+)\s*$")
_BULLET_RE = re.compile(r"^(\s*)[-*+•]\s+")
_BOLD_RE = re.compile(r"(\*\*|__)(?=\S)(.+?)(?<=\S)\1")
_ITALIC_STAR_RE = re.compile(r"(?<![\w*])\*(?=[^\s*])([^*\n]+?)(?<=[^\s*])\*(?![\w*])")
_ITALIC_UNDERSCORE_RE = re.compile(r"(?<![\w_])_(?=[^\s_])([^_\n]+?)(?<=[^\s_])_(?![\w_])")

# Self-identifying openings stripped by ``normalize_style="full"`` (documented in
# docs/methods.md). Each pattern is applied at the start of the text (after
# earlier ones), case-insensitively, until none matches.
SELF_ID_OPENINGS: tuple[str, ...] = (
    # "As an AI language model, ..." / "As an AI assistant developed by X, ..."
    r"as an? (?:ai|artificial intelligence)(?:[- ](?:language model|assistant|model|chatbot|system))?"
    r"(?: (?:developed|created|trained|made|built) by [\w .-]+?)?\s*,\s*",
    # "I'm ChatGPT, a large language model trained by OpenAI." (whole sentence)
    r"(?:hi|hello)?[,!.]?\s*(?:i'm|i am|this is|my name is) (?:chatgpt|gpt-?[\w.]*|bard|gemini|claude|"
    r"llama[\w.-]*|vicuna[\w.-]*|guanaco[\w.-]*|alpaca[\w.-]*|an ai(?: language model| assistant)?|"
    r"a large language model|an? (?:ai|language) model)\b[^.!?\n]*[.!?]\s*",
    # Greetings: "Hello!", "Hi there,"
    r"(?:hello|hi|hey|greetings)(?: there)?\s*[!,.]\s*",
    # Eager interjections: "Sure!", "Certainly,", "Of course."
    r"(?:sure(?: thing)?|certainly|of course|absolutely|great question|good question|okay|ok)\s*[!,.]\s*",
    # "I'd be happy to help (with that)!" / "I can do that."
    r"(?:i'd|i would|i'll|i will|i'm|i am) (?:be )?(?:happy|glad|delighted) to (?:help|assist|explain)"
    r"[^.!?:\n]*[.!?:]\s*",
    r"i can (?:do|help with) that[.!]\s*",
    # "Here's a ... :" / "Here is one possible ...:" (first line only, ends with a colon)
    r"here(?:'s|’s| is| are)\b[^\n]*?:\s*\n",
)
# Self-identifications stripped wherever they occur ("I'm sorry, but as an AI
# language model, I cannot ..." -> "I'm sorry, but I cannot ...").
SELF_ID_ANYWHERE: tuple[str, ...] = (
    r"\bas an? (?:ai|artificial intelligence)[- ](?:language model|assistant|model|chatbot)"
    r"(?: (?:developed|created|trained|made|built) by [\w .-]+?)?\s*,\s*",
)
# Trailing signatures stripped by ``normalize_style="full"``: applied at the end
# of the text (last sentence or line), until none matches.
TRAILING_SIGNATURES: tuple[str, ...] = (
    r"(?:i )?hope (?:this|that|it) helps\b[^\n]*",
    r"i hope (?:this|that|the above|my) (?:information |answer |response |explanation )?(?:was|is) (?:helpful|useful)"
    r"[^\n]*",
    r"if you have any (?:other |more |further |additional )?questions\b[^\n]*",
    r"(?:please )?(?:let me know|feel free to (?:ask|reach out)|don't hesitate to ask)\b[^\n]*",
    r"is there anything else[^\n]*",
    r"(?:good luck|happy coding|cheers)[!.]*(?:\s*[\U0001F300-\U0001FAFF☺-♂])*",
    r"(?:--|—|–)\s*(?:chatgpt|gpt-?[\w.]*|bard|gemini|claude|llama[\w.-]*|vicuna[\w.-]*|guanaco[\w.-]*|"
    r"your (?:ai )?assistant|an ai (?:language model|assistant))\b[^\n]*",
)
_OPENING_RES = tuple(re.compile(r"^\s*" + p, re.IGNORECASE) for p in SELF_ID_OPENINGS)
_ANYWHERE_RES = tuple(re.compile(p, re.IGNORECASE) for p in SELF_ID_ANYWHERE)
_TRAILING_RES = tuple(
    re.compile(r"(?:(?<=[.!?:)\]])|(?<=\n)|^)\s*" + p + r"\s*$", re.IGNORECASE) for p in TRAILING_SIGNATURES
)


def _strip_markdown(text: str) -> str:
    out: list[str] = []
    in_fence = False
    for line in text.split("\n"):
        if _FENCE_RE.match(line):
            in_fence = not in_fence
            continue  # drop the fence marker line, keep the code
        if in_fence:
            out.append(line)
            continue
        m = _HEADING_RE.match(line)
        if m:
            line = m.group(1) + m.group(2)
        elif _SETEXT_RE.match(line) and out and out[-1].strip():
            continue  # setext underline (=== / ---) under a heading line
        line = _BULLET_RE.sub(r"\1", line)
        line = _BOLD_RE.sub(r"\2", line)
        line = _ITALIC_STAR_RE.sub(r"\1", line)
        line = _ITALIC_UNDERSCORE_RE.sub(r"\1", line)
        out.append(line)
    return "\n".join(out)


def _strip_self_identification(text: str) -> str:
    changed = True
    guard = 0
    orig = text.strip()
    for rx in _ANYWHERE_RES:
        new = rx.sub("", text)
        if new.strip():
            text = new
    while changed and guard < 10:
        changed = False
        guard += 1
        for rx in _OPENING_RES:
            new = rx.sub("", text, count=1)
            if new != text and new.strip():
                text = new
                changed = True
        for rx in _TRAILING_RES:
            new = rx.sub("", text, count=1).rstrip()
            if new != text.rstrip() and new.strip():
                text = new
                changed = True
    text = text.strip()
    if text != orig and text[:1].islower() and orig[:1].isupper():
        text = text[0].upper() + text[1:]
    return text


def normalize_text(text: str, style: str = "none") -> str:
    """Annotator-facing version of a response.

    ``"none"`` returns ``text`` unchanged. ``"markdown"`` removes heading
    markers, bullet markers, bold/italic markers and code-fence lines (code
    inside fences is kept verbatim). ``"full"`` also removes the
    self-identifying openings in :data:`SELF_ID_OPENINGS` and the trailing
    signatures in :data:`TRAILING_SIGNATURES`. A normalization that would leave
    nothing keeps the previous stage's text. The input is never modified
    (strings are immutable; the caller's mappings are only read).
    """
    if style not in NORMALIZE_STYLES:
        raise UsageError(f"--normalize-style ({style!r}) must be one of {', '.join(NORMALIZE_STYLES)}")
    if style == "none":
        return text
    md = _strip_markdown(text)
    if not md.strip():
        md = text
    if style == "markdown":
        return md
    full = _strip_self_identification(md)
    return full if full.strip() else md


# ------------------------------------------------------------------ helpers
def _as_planned(entry: Any, index: int) -> PlannedComparison:
    if isinstance(entry, PlannedComparison):
        return entry
    if all(hasattr(entry, a) for a in ("prompt_id", "system_i", "system_j")):
        return PlannedComparison(str(entry.prompt_id), str(entry.system_i), str(entry.system_j),
                                 getattr(entry, "stratum", None))
    try:
        seq = tuple(entry)
    except TypeError:
        seq = ()
    if len(seq) in (3, 4):
        stratum = seq[3] if len(seq) == 4 else None
        return PlannedComparison(str(seq[0]), str(seq[1]), str(seq[2]),
                                 None if stratum is None else str(stratum))
    raise UsageError(f"planned comparison #{index + 1} ({entry!r}) must be (prompt_id, system_i, system_j, stratum)")


def _round_half_up(x: float) -> int:
    return int(math.floor(x + 0.5 + 1e-12))


class _Ids:
    """Opaque random ids, unique within the batch and against earlier ids."""

    def __init__(self, rng: np.random.Generator, used: Iterable[str]):
        self.rng = rng
        self.used = set(used)

    def new(self) -> str:
        while True:
            digits = self.rng.integers(0, len(ID_ALPHABET), size=ID_LENGTH)
            item_id = ID_PREFIX + "".join(ID_ALPHABET[d] for d in digits)
            if item_id not in self.used:
                self.used.add(item_id)
                return item_id


def _previous_ids(previous_items: Iterable[Any] | None) -> list[str]:
    out = []
    for p in previous_items or ():
        out.append(p if isinstance(p, str) else str(getattr(p, "item_id")))
    return out


def _check_options(attention, repeat, overlap, acceptability, annotators, max_words, truncate,
                   normalize_style) -> dict[str, float]:
    rates = {"attention": attention, "repeat": repeat, "overlap": overlap, "acceptability": acceptability}
    for name, value in rates.items():
        check_range(f"--{name}", float(value), 0.0, 1.0, low_open=False, high_open=True)
    total = sum(rates.values())
    if total >= 1.0:
        raise UsageError(
            "QC rates --attention + --repeat + --overlap + --acceptability "
            f"({total:g}) must sum to less than 1")
    if normalize_style not in NORMALIZE_STYLES:
        raise UsageError(f"--normalize-style ({normalize_style!r}) must be one of {', '.join(NORMALIZE_STYLES)}")
    if max_words is not None and (isinstance(max_words, bool) or int(max_words) != max_words or max_words < 1):
        raise UsageError(f"--max-words ({max_words}) must be a whole number >= 1")
    if truncate and max_words is None:
        raise UsageError("--truncate needs --max-words")
    if annotators is not None:
        if len(annotators) == 0:
            raise UsageError("--annotators must name at least one annotator")
        bad = [a for a in annotators if not isinstance(a, str) or not _ANNOTATOR_RE.match(a)]
        if bad:
            raise UsageError(f"--annotators: {bad[0]!r} is not a valid annotator name "
                             "(letters, digits, '_' and '-' only; it becomes part of a file name)")
        dup = sorted({a for a in annotators if list(annotators).count(a) > 1})
        if dup:
            raise UsageError(f"--annotators: {dup[0]!r} is listed twice")
    if overlap > 0 and (annotators is None or len(annotators) < 2):
        raise UsageError(f"--overlap ({overlap:g}) needs at least two annotators (--annotators)")
    return rates


def _balanced_orientations(pairs: list[tuple[str, str]], rng: np.random.Generator) -> list[bool]:
    """For each planned pair (i, j): True when i goes left. See module docstring."""
    by_pair: dict[tuple[str, str], list[int]] = defaultdict(list)
    for idx, (i, j) in enumerate(pairs):
        by_pair[tuple(sorted((i, j)))].append(idx)
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
    out = []
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
    plan = [_as_planned(p, k) for k, p in enumerate(planned)]
    if not plan:
        raise UsageError("the batch has no planned comparisons (batch size must be > 0)")
    ann = list(annotators) if annotators is not None else None
    ids = _Ids(rng, _previous_ids(previous_items))
    norm_cache: dict[tuple[str, str], str | None] = {}
    n_truncated = 0

    def shown(prompt_id: str, system: str) -> tuple[str | None, int]:
        """(annotator-facing text or None when missing, original word count)."""
        key = (prompt_id, system)
        if key not in norm_cache:
            raw = response_text.get(key)
            norm_cache[key] = None if raw is None else normalize_text(raw, normalize_style)
        text = norm_cache[key]
        return text, (count_words(text) if text is not None else 0)

    def fit(text: str) -> str:
        nonlocal n_truncated
        if max_words is not None and truncate and count_words(text) > max_words:
            n_truncated += 1
            return truncate_words(text, max_words)
        return text

    def too_long(words: int) -> bool:
        return max_words is not None and not truncate and words > max_words

    # ---- regular comparisons (skip what cannot be issued, never silently)
    skipped: list[Skipped] = []
    kept: list[tuple[PlannedComparison, str, str, str]] = []  # plan, prompt, text_i, text_j
    for p in plan:
        if p.system_i == p.system_j:
            raise DataError(f"planned comparison of {p.system_i!r} with itself on prompt {p.prompt_id!r}")
        ptext = prompt_text.get(p.prompt_id)
        if ptext is None:
            skipped.append(Skipped(p.prompt_id, p.system_i, p.system_j, p.stratum, "no prompt text"))
            continue
        ti, wi = shown(p.prompt_id, p.system_i)
        tj, wj = shown(p.prompt_id, p.system_j)
        missing = [s for s, t in ((p.system_i, ti), (p.system_j, tj)) if t is None]
        if missing:
            skipped.append(Skipped(p.prompt_id, p.system_i, p.system_j, p.stratum,
                                   "no response from " + " and ".join(repr(s) for s in missing)))
            continue
        long_ = [(s, w) for s, w in ((p.system_i, wi), (p.system_j, wj)) if too_long(w)]
        if long_:
            skipped.append(Skipped(p.prompt_id, p.system_i, p.system_j, p.stratum,
                                   "; ".join(f"response of {s!r} has {w} words > --max-words {max_words}"
                                             for s, w in long_)))
            continue
        kept.append((p, ptext, fit(ti), fit(tj)))
    if not kept:
        problems = [f"prompt {s.prompt_id!r} ({s.system_i} vs {s.system_j}): {s.reason}" for s in skipped]
        if all("--max-words" in s.reason for s in skipped):
            raise UsageError(f"--max-words ({max_words}) skips every planned comparison; "
                             "raise it or use --truncate", problems=problems)
        raise DataError("no planned comparison can be issued (missing prompts or responses)",
                        problems=problems)

    orient = _balanced_orientations([(p.system_i, p.system_j) for p, *_ in kept], rng)
    regular: list[Item] = []
    for (p, ptext, ti, tj), i_left in zip(kept, orient):
        ls, rs, lt, rt = (p.system_i, p.system_j, ti, tj) if i_left else (p.system_j, p.system_i, tj, ti)
        regular.append(Item(ids.new(), "regular", p.prompt_id, ptext, ls, rs, lt, rt, p.stratum))

    # ---- annotators for regular items: dealt round robin after a shuffle
    assign: dict[str, str | None] = {it.item_id: None for it in regular}
    load: dict[str, int] = {a: 0 for a in ann or ()}
    if ann:
        for slot, idx in enumerate(rng.permutation(len(regular))):
            a = ann[slot % len(ann)]
            assign[regular[int(idx)].item_id] = a
            load[a] += 1

    def with_annotator(it: Item, a: str | None) -> Item:
        from dataclasses import replace

        return replace(it, annotator=a)

    regular = [with_annotator(it, assign[it.item_id]) for it in regular]

    def swapped(it: Item, kind: str) -> Item:
        return Item(ids.new(), kind, it.prompt_id, it.prompt, it.right_system, it.left_system,
                    it.right_text or "", it.left_text, it.stratum, it.annotator, it.item_id)

    swaps = [swapped(it, "swap") for it in regular] if both_orders else []
    for it in swaps:
        if it.annotator is not None:
            load[it.annotator] += 1

    n_base = len(regular) + len(swaps)
    total_rate = sum(rates.values())
    target = {k: _round_half_up(r * n_base / (1.0 - total_rate)) for k, r in rates.items()}

    # ---- repeats: same annotator, positions swapped, later in the order
    if target["repeat"] > len(regular):
        raise UsageError(f"--repeat ({repeat:g}) asks for {target['repeat']} repeat items but the batch has "
                         f"only {len(regular)} regular items to repeat; lower the QC rates")
    repeats = [swapped(regular[int(k)], "repeat")
               for k in sorted(rng.choice(len(regular), size=target["repeat"], replace=False))]
    for it in repeats:
        if it.annotator is not None:
            load[it.annotator] += 1

    # ---- overlap copies: same positions, a different annotator
    overlaps: list[Item] = []
    if target["overlap"]:
        capacity = len(regular) * (len(ann) - 1)
        if target["overlap"] > capacity:
            raise UsageError(f"--overlap ({overlap:g}) asks for {target['overlap']} overlap copies but "
                             f"{len(regular)} regular items over {len(ann)} annotators allow at most {capacity}")
        holders: dict[str, set[str]] = {it.item_id: {it.annotator} for it in regular}
        order = [int(k) for k in rng.permutation(len(regular))]
        tie_rank = {a: int(r) for a, r in zip(ann, rng.permutation(len(ann)))}
        for c in range(target["overlap"]):
            src = regular[order[c % len(order)]]
            free = [a for a in ann if a not in holders[src.item_id]]
            dest = min(free, key=lambda a: (load[a], tie_rank[a]))
            holders[src.item_id].add(dest)
            load[dest] += 1
            overlaps.append(Item(ids.new(), "overlap", src.prompt_id, src.prompt, src.left_system,
                                 src.right_system, src.left_text, src.right_text, src.stratum, dest,
                                 src.item_id))

    def deal(count: int) -> list[str | None]:
        if not ann:
            return [None] * count
        start = int(rng.integers(0, len(ann)))
        return [ann[(start + c) % len(ann)] for c in range(count)]

    # ---- attention items: one side obviously broken, expected verdict recorded
    attention_items: list[Item] = []
    n_attention_fallback = 0
    if target["attention"]:
        pool = [fit(normalize_text(t, normalize_style)) for t in (attention_pool or ())]
        pool = [t for t in pool if t.strip() and not too_long(count_words(t))]
        if attention_pool is not None and not pool:
            raise UsageError("--attention-pool has no usable text (empty, or every text exceeds --max-words)")
        by_system: dict[str, list[str]] = defaultdict(list)
        for (pid, sysname) in response_text.keys():
            by_system[sysname].append(pid)
        sorted_lists: dict[str, list[str]] = {}

        class _SortedPrompts:  # prompts with a response from a system, sorted on first use
            def get(self, system: str, default=()):
                if system not in sorted_lists:
                    sorted_lists[system] = sorted(by_system.get(system, ()))
                return sorted_lists[system] or default

        systems_prompts = _SortedPrompts()
        stratum_of = {p.prompt_id: p.stratum for p, *_ in kept}
        k = target["attention"]
        broken_left = [bool(c % 2) for c in range(k)]
        if rng.integers(0, 2):
            broken_left = [not b for b in broken_left]
        broken_left = [broken_left[int(c)] for c in rng.permutation(k)]
        for c, who in zip(range(k), deal(k)):
            p, ptext, ti, tj = kept[int(rng.integers(0, len(kept)))]
            good_is_i = bool(rng.integers(0, 2))
            good_sys, bad_sys = (p.system_i, p.system_j) if good_is_i else (p.system_j, p.system_i)
            good_text = ti if good_is_i else tj
            bad_raw, _ = shown(p.prompt_id, bad_sys)
            bad_text = None
            source = None
            bad_key_sys: str | None = bad_sys
            if pool:
                bad_text, source = pool[int(rng.integers(0, len(pool)))], "pool"
            else:
                method = "truncated" if rng.integers(0, 2) else "off-topic"
                if method == "off-topic":
                    others = [q for q in systems_prompts.get(bad_sys, ()) if q != p.prompt_id]
                    other_strata = [q for q in others if q in stratum_of and stratum_of[q] != p.stratum]
                    for cands in (other_strata, others):
                        for k_ in rng.permutation(len(cands)):  # first usable one in a random order
                            text, words = shown(cands[int(k_)], bad_sys)
                            if text is not None and not too_long(words):
                                bad_text, source = fit(text), "off-topic"
                                break
                        if bad_text is not None:
                            break
                if bad_text is None and bad_raw is not None and count_words(bad_raw) >= ATTENTION_MIN_WORDS:
                    keep = int(rng.integers(ATTENTION_WORDS[0], ATTENTION_WORDS[1] + 1))
                    bad_text, source = truncate_words(bad_raw, keep, marker=False), "truncated"
                if bad_text is None:  # neither works: fall back to the other method's best effort
                    n_attention_fallback += 1
                    others = [q for q in systems_prompts.get(bad_sys, ()) if q != p.prompt_id]
                    if others:
                        q = others[int(rng.integers(0, len(others)))]
                        bad_text, source = truncate_words(shown(q, bad_sys)[0], ATTENTION_WORDS[1],
                                                          marker=False), "off-topic"
                    else:
                        bad_text, source = truncate_words(good_text, ATTENTION_WORDS[0], marker=False), "truncated"
            if broken_left[c]:
                ls, rs, lt, rt, expected = bad_key_sys, good_sys, bad_text, good_text, "right"
            else:
                ls, rs, lt, rt, expected = good_sys, bad_key_sys, good_text, bad_text, "left"
            attention_items.append(Item(ids.new(), "attention", p.prompt_id, ptext, ls, rs, lt, rt, p.stratum,
                                        who, None, expected, source))

    # ---- acceptability items: single responses across systems and strata
    accept_items: list[Item] = []
    shortfall = 0
    if target["acceptability"]:
        systems = sorted({s for p, *_ in kept for s in (p.system_i, p.system_j)})
        strata = sorted({p.stratum for p, *_ in kept}, key=lambda s: (s is None, s or ""))
        prompts_by_stratum: dict[Any, list[str]] = defaultdict(list)
        for p, *_ in kept:
            if p.prompt_id not in prompts_by_stratum[p.stratum]:
                prompts_by_stratum[p.stratum].append(p.prompt_id)
        sys_order = [systems[int(k)] for k in rng.permutation(len(systems))]
        str_order = [strata[int(k)] for k in rng.permutation(len(strata))]
        used: set[tuple[str, str]] = set()
        k = target["acceptability"]
        for c, who in zip(range(k), deal(k)):
            system = sys_order[c % len(sys_order)]
            stratum = str_order[(c + c // len(sys_order)) % len(str_order)]
            chosen = None
            for pool_ in (prompts_by_stratum[stratum], [q for s in strata for q in prompts_by_stratum[s]]):
                cands = [q for q in pool_ if (q, system) not in used]
                for k_ in rng.permutation(len(cands)):  # first usable prompt in a random order
                    q = cands[int(k_)]
                    text, words = shown(q, system)
                    if text is not None and not too_long(words):
                        chosen = q
                        break
                if chosen is not None:
                    break
            if chosen is None:
                shortfall += 1
                continue
            used.add((chosen, system))
            st = next(p.stratum for p, *_ in kept if p.prompt_id == chosen)
            accept_items.append(Item(ids.new(), "acceptability", chosen, prompt_text[chosen], system, None,
                                     fit(shown(chosen, system)[0]), None, st, who))

    # ---- order: per annotator, shuffled; repeats after their originals
    everything = regular + swaps + repeats + overlaps + attention_items + accept_items
    groups: dict[str | None, list[Item]] = {a: [] for a in (ann or [None])}
    for it in everything:
        groups[it.annotator].append(it)
    ordered: list[Item] = []
    for a, members in groups.items():
        seq = [members[int(k)] for k in rng.permutation(len(members))]
        pos = {it.item_id: n for n, it in enumerate(seq)}
        for n in range(len(seq)):
            it = seq[n]
            if it.kind == "repeat" and pos[it.link] > n:
                m = pos[it.link]
                seq[n], seq[m] = seq[m], seq[n]
                pos[seq[n].item_id], pos[seq[m].item_id] = n, m
        ordered.extend(seq)

    manifest = _manifest(ordered, skipped, rates, target, n_base, n_truncated, shortfall,
                         n_attention_fallback,
                         dict(attention=attention, repeat=repeat, overlap=overlap, both_orders=both_orders,
                              acceptability=acceptability, annotators=ann,
                              attention_pool=None if attention_pool is None else len(attention_pool),
                              max_words=max_words, truncate=truncate, normalize_style=normalize_style))
    return Batch(tuple(ordered), tuple(skipped), manifest)


def _manifest(items: list[Item], skipped: list[Skipped], rates: dict[str, float], target: dict[str, int],
              n_base: int, n_truncated: int, shortfall: int, n_attention_fallback: int,
              options: dict[str, Any]) -> dict[str, Any]:
    kinds = {k: 0 for k in KINDS}
    per_pair: dict[tuple[str, str], int] = defaultdict(int)
    per_stratum: dict[str, int] = defaultdict(int)
    per_annotator: dict[str, dict[str, int]] = {}
    left_count: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for it in items:
        kinds[it.kind] += 1
        if it.annotator is not None:
            per_annotator.setdefault(it.annotator, {k: 0 for k in KINDS})[it.kind] += 1
        if it.kind in ("regular", "swap"):
            a, b = sorted((it.left_system, it.right_system))
            per_pair[(a, b)] += 1
            per_stratum[str(it.stratum)] += 1
            left_count[it.left_system][0] += 1
            left_count[it.right_system][1] += 1
    systems = sorted({s for it in items for s in (it.left_system, it.right_system) if s})
    skipped_prompts = sorted({s.prompt_id for s in skipped})
    return {
        "n_items": len(items),
        "n_comparisons": kinds["regular"] + kinds["swap"],
        "kinds": kinds,
        "per_pair": [{"systems": [a, b], "n": n} for (a, b), n in sorted(per_pair.items())],
        "per_stratum": dict(sorted(per_stratum.items())),
        "per_annotator": per_annotator,
        "left_share": {s: (lc[0] / (lc[0] + lc[1]) if lc[0] + lc[1] else None)
                       for s, lc in sorted(left_count.items())},
        "qc": {k: {"rate": rates[k], "target": target[k], "n": kinds[k]} for k in QC_KINDS},
        "qc_rule": "k = round_half_up(rate * n_base / (1 - sum(rates))), n_base = regular + swap items",
        "n_base": n_base,
        "acceptability_shortfall": shortfall,
        "attention_fallbacks": n_attention_fallback,
        "length_ratio": _ratio_stats(items),
        "truncated_texts": n_truncated,
        "skipped": {"n": len(skipped), "prompts": skipped_prompts},
        "blinding_warnings": _name_mentions(items, systems),
        "options": options,
    }
