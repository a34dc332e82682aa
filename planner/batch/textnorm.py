"""Annotator-facing response text: word counts, visible truncation, style normalization.

Pure functions, no I/O. :func:`normalize_text` (``"none"``, ``"markdown"``,
``"full"``) removes the style cues that let an annotator guess the system or
that bias length- and format-sensitive judges; :func:`truncate_words` cuts a
long response with a visible marker (:data:`TRUNCATION_MARKER`). Used by batch
assembly (:mod:`planner.batch`) and by the re-issue of recorded batches.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from planner.limits import check_choice

NORMALIZE_STYLES = ("none", "markdown", "full")
TRUNCATION_MARKER = "[… truncated by planner: {shown} of {total} words shown]"
_WORD_RE = re.compile(r"\S+")


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
    check_choice("normalize_style", style, NORMALIZE_STYLES)
    if style == "none":
        return text
    md = _strip_markdown(text)
    if not md.strip():
        md = text
    if style == "markdown":
        return md
    full = _strip_self_identification(md)
    return full if full.strip() else md


class ShownTexts:
    """The annotator-facing texts of one batch: normalized once per response, cut or refused by length.

    ``shown`` gives the normalized text (None when the study has no such
    response) and its word count; ``fit`` cuts a text longer than
    ``max_words`` when ``truncate`` is set (counting the cuts in
    ``n_truncated``); ``too_long`` says whether a word count is refused (skip
    mode: ``max_words`` without ``truncate``). The responses are only read.
    """

    def __init__(self, response_text: Mapping[tuple[str, str], str], *, max_words: int | None,
                 truncate: bool, style: str):
        self.response_text = response_text
        self.max_words = max_words
        self.truncate = truncate
        self.style = style
        self.n_truncated = 0
        self._cache: dict[tuple[str, str], str | None] = {}

    def shown(self, prompt_id: str, system: str) -> tuple[str | None, int]:
        """(annotator-facing text or None when missing, original word count)."""
        key = (prompt_id, system)
        if key not in self._cache:
            raw = self.response_text.get(key)
            self._cache[key] = None if raw is None else normalize_text(raw, self.style)
        text = self._cache[key]
        return text, (count_words(text) if text is not None else 0)

    def fit(self, text: str) -> str:
        if self.max_words is not None and self.truncate and count_words(text) > self.max_words:
            self.n_truncated += 1
            return truncate_words(text, self.max_words)
        return text

    def too_long(self, words: int) -> bool:
        return self.max_words is not None and not self.truncate and words > self.max_words
