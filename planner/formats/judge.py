"""LLM-judge round trip: the judge OUTPUT reader.

Requests are written by :func:`planner.formats.writers.judge_requests` (one
OpenAI-batch-style chat-completions request per item, ``custom_id`` = item id)
from the templates in :mod:`planner.formats.templates`, which this reader shares
(it never imports the writers). This module reads the answers back:

* :func:`parse_judge_verdict` turns a judge's text into a **position verdict**
  (``left``/``right``/``tie``, or ``pass``/``fail`` for acceptability items,
  else ``invalid``) and an optional reason code;
* :func:`read_judge_outputs` reads an output file line by line (a generator of
  ``(line_no, item_id, verdict, reason, raw)``).

Verdict rules (never guessed; anything else is ``invalid`` and counted):

1. Bracketed tokens anywhere in the text: ``[[A]]`` = left, ``[[B]]`` = right,
   ``[[C]]`` = tie (MT-bench style, Zheng et al. 2023), also ``[[left]]``,
   ``[[right]]``, ``[[tie]]``, ``[[PASS]]``, ``[[FAIL]]`` (any case, inner
   spaces allowed). Two different tokens → invalid.
2. A final (last non-empty) line ``verdict: left|right|tie|pass|fail|invalid``
   (also ``A``/``B``/``C``; ``Final verdict:`` and markdown bold allowed).
3. The whole text is a single verdict word (``left``, ``B``, ``tie`` …).

When a bracket token and a final ``verdict:`` line both exist and disagree, the
verdict is invalid. The reason is the code on a ``Reason: <code>`` line
(lower-cased); two different codes → no reason.

Reasoning models (DeepSeek-R1, QwQ, Qwen3 …) think before they answer, and the
thinking often weighs both verdict tokens. The rules above read only the text
**after the last closing reasoning tag** (``</think>``, also ``</thinking>`` and
``</reasoning>``, any case): a server without a reasoning parser returns
``<think>…</think>answer`` in ``content`` (or ``…</think>answer`` when the chat
template opened the tag). A reasoning block opened and never closed (the answer
was cut off while thinking) has no verdict → invalid. A server with a reasoning
parser (vLLM ``--reasoning-parser``, DeepSeek's API) puts the thinking in
``message.reasoning_content`` (newer vLLM: ``message.reasoning``) and the answer
in ``content``: only ``content`` is read, never the reasoning fields.

The model a verdict is filed under is the one asked for: planner's own output
lines (``planner judge``) carry ``judge_model``; the model the server says
answered (``body.model``, e.g. a dated snapshot) is kept as the judgment's source
identity. Lines without ``judge_model`` (a provider's batch output) are filed
under ``body.model``.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from pathlib import Path

from planner.errors import DataError, UsageError, parameters_of, quote, shown
from planner.formats import jsonsafe
from planner.formats.templates import (  # noqa: F401  (re-exported for the judge round trip)
    DEFAULT_ACCEPTABILITY_TEMPLATE,
    DEFAULT_PAIRWISE_TEMPLATE,
    VERDICT_TOKENS,
)
from planner.vocabulary import POSITION_VERDICTS

# the templates' bracket tokens (a, b, c, pass, fail) and the verdict words themselves, lower case
_TOKEN = {**{t.lower(): v for t, v in VERDICT_TOKENS.items()}, **{v: v for v in POSITION_VERDICTS}}
_BRACKET_RE = re.compile(r"\[\[\s*(a|b|c|left|right|tie|pass|fail)\s*\]\]", re.IGNORECASE)
_FINAL_RE = re.compile(
    r"^[\s*_#>`]*(?:final\s+)?verdict[\s*_`]*[:=][\s*_`\"']*(a|b|c|left|right|tie|pass|fail|invalid)"
    r"[\s*_`\"'.!]*$", re.IGNORECASE)
_BARE_RE = re.compile(r"^[\s*_`\"']*(a|b|c|left|right|tie|pass|fail|invalid)[\s*_`\"'.!]*$", re.IGNORECASE)
_THINK_CLOSE = re.compile(r"</\s*(?:think|thinking|reasoning)\s*>", re.IGNORECASE)
_THINK_OPEN = re.compile(r"^\s*<\s*(?:think|thinking|reasoning)\s*>", re.IGNORECASE)
_REASON_RE = re.compile(r"^[\s*_#>`]*reason(?:\s+code)?[\s*_`]*[:=][\s*_`\"']*([A-Za-z][\w-]*)", re.IGNORECASE)


def answer_part(text: str) -> str:
    """The part of a judge's text the verdict is read from: after the last closing reasoning tag
    (``</think>``…); empty when a reasoning block is opened and never closed."""
    closes = list(_THINK_CLOSE.finditer(text))
    if closes:
        return text[closes[-1].end():]
    return "" if _THINK_OPEN.match(text) else text


def parse_judge_verdict(text: str | None) -> tuple[str, str | None]:
    """Position verdict and reason code from a judge's answer.

    Parameters
    ----------
    text : str or None
        The judge's message content.

    Returns
    -------
    (verdict, reason)
        ``verdict`` in ``left, right, tie, pass, fail, invalid`` (see the module
        docstring for the rules); ``reason`` the lower-cased code of a
        ``Reason: <code>`` line, or ``None``.
    """
    if not isinstance(text, str):
        return "invalid", None
    text = answer_part(text)
    if not text.strip():
        return "invalid", None
    lines = [ln for ln in text.splitlines() if ln.strip()]
    reasons = {m.group(1).lower() for ln in lines for m in [_REASON_RE.match(ln)] if m}
    reason = reasons.pop() if len(reasons) == 1 else None

    bracket = {_TOKEN[m.group(1).lower()] for m in _BRACKET_RE.finditer(text)}
    final = None
    m = _FINAL_RE.match(lines[-1])
    if m:
        final = _TOKEN[m.group(1).lower()]
    elif len(lines) == 1:
        m = _BARE_RE.match(lines[0])
        if m:
            final = _TOKEN[m.group(1).lower()]
    if len(bracket) > 1:
        return "invalid", reason
    if bracket:
        (b,) = bracket
        if final is not None and final != b:
            return "invalid", reason
        return b, reason
    if final is not None:
        return final, reason
    return "invalid", reason


# ------------------------------------------------------------------ output lines
_UNANSWERED_LIMIT = 80


def _one_line(text: str, limit: int = _UNANSWERED_LIMIT) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _error_text(err) -> str:
    """``code: message`` of an OpenAI error object (``openai.types.BatchError`` or an API error body)."""
    if isinstance(err, dict):
        code, msg = err.get("code"), err.get("message")
        code = code if isinstance(code, str) and code.strip() else err.get("type")
        parts = [x for x in (code, msg) if isinstance(x, str) and x.strip()]
        return ": ".join(parts) if parts else "error"
    return str(err)


def classify(obj: dict) -> tuple[str, str | None, str | None]:
    """What one output line is: ``(kind, text, model)``.

    ``kind`` is ``"answer"`` (``text`` = the judge's content, or None when it
    gave none or refused), ``"unanswered"`` (``text`` = the transport error,
    one line, at most 80 characters) or ``"problem"`` (``text`` = what is wrong
    with the line's shape). Transport failures: a non-null ``error`` (batch
    error-file lines: ``batch_expired``, ``rate_limit_exceeded`` …) or
    ``response.status_code`` other than 200 (429, 5xx, 400
    ``context_length_exceeded`` …). A 200 response whose ``message.refusal``
    is set is an answer without a verdict (→ invalid).
    """
    if "response" not in obj and "error" not in obj:
        for key in ("content", "output", "verdict"):
            if key in obj:
                value = obj[key]
                if value is not None and not isinstance(value, str):
                    return "problem", f"{key} {quote(value)}; expected the judge's text", None
                return "answer", value, None
        return "answer", None, None
    err, resp = obj.get("error"), obj.get("response")
    body = resp.get("body") if isinstance(resp, dict) else None
    model = body.get("model") if isinstance(body, dict) and isinstance(body.get("model"), str) else None
    if err is not None:
        if not isinstance(err, (dict, str)):
            return "problem", f"error {quote(err)}; expected an error object", None
        return "unanswered", _one_line(_error_text(err)), model
    if not isinstance(resp, dict):
        return "problem", f"response {quote(resp)}; expected a response object (or an error)", None
    status = resp.get("status_code", 200)
    if isinstance(status, bool) or not isinstance(status, int):
        return "problem", f"response.status_code {quote(status)}; expected an HTTP status number", None
    if status != 200:
        detail = body.get("error") if isinstance(body, dict) and body.get("error") is not None else body
        text = f"HTTP {status}" + (f": {_error_text(detail)}" if detail is not None else "")
        return "unanswered", _one_line(text), model
    if not isinstance(body, dict):
        return "problem", f"response.body {quote(body)}; expected a chat completion object", None
    choices = body.get("choices")
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
        return "problem", f"response.body.choices {quote(choices)}; expected a list of choice objects", None
    message = choices[0].get("message")
    if not isinstance(message, dict):
        return "problem", f"choices[0].message {quote(message)}; expected a message object", None
    content, refusal = message.get("content"), message.get("refusal")
    if content is not None and not isinstance(content, str):
        return "problem", f"message.content {quote(content)}; expected text or null", None
    if refusal is not None and not isinstance(refusal, str):
        return "problem", f"message.refusal {quote(refusal)}; expected text or null", None
    if refusal:
        return "answer", None, model  # the judge refused: answered, no verdict → invalid
    return "answer", content, model


def _judge_lines(p: Path) -> Iterator[tuple[int, dict | None, str | None]]:
    """(line_no, object, problem) for each non-blank line; exactly one of object/problem is set."""
    name = p.name
    try:
        fh = jsonsafe._OPEN(p, "rb")
    except FileNotFoundError:
        raise UsageError(f"{quote(str(p))} does not exist", parameters=('path',)) from None
    except OSError as exc:
        raise DataError(f"{shown(name)}: cannot read the file ({exc.strerror or exc.__class__.__name__})",
                        parameters=parameters_of(name)) from None
    n = 0
    try:
        with fh:
            for n, bline in enumerate(fh, start=1):
                try:
                    line = bline.decode("utf-8")
                except UnicodeDecodeError as exc:
                    yield n, None, f"{name}:{n}: not UTF-8 ({exc.reason} at byte {exc.start}); expected UTF-8 text"
                    continue
                if n == 1:
                    line = line.removeprefix("\ufeff")
                if not line.strip():
                    continue
                try:
                    obj = jsonsafe.loads(line)
                except jsonsafe.JSONProblem as exc:
                    msg = str(exc).replace("malformed JSON", "not valid JSON", 1)
                    yield n, None, f"{name}:{n}: {msg}; expected one JSON object per line"
                    continue
                if not isinstance(obj, dict):
                    yield n, None, f"{name}:{n}: expected a JSON object, got {type(obj).__name__}"
                    continue
                item_id = obj.get("custom_id")
                if not isinstance(item_id, str) or not item_id.strip():
                    yield n, None, (f"{name}:{n}: custom_id {quote(item_id)}; expected the item id the request "
                                    "was sent with")
                    continue
                yield n, obj, None
    except OSError as exc:
        yield n + 1, None, f"{name}: cannot read the file ({exc.strerror or exc.__class__.__name__})"


def read_judge_outputs(path: str | os.PathLike) -> Iterator[tuple[int, str, str, str | None, str]]:
    """Read judge outputs keyed by ``custom_id`` (the older tuple interface).

    Accepts OpenAI batch output lines (``{"custom_id", "response": {"status_code",
    "body": {"choices": [{"message": {"content"}}]}}, "error"}``) and plain
    lines ``{"custom_id", "content" | "output" | "verdict"}``. A failed request
    (``error``, non-200 status) yields verdict ``invalid`` here with the error as
    ``raw``; the registry reader :func:`read_judge_rows` tells those apart as
    *unanswered* records.

    Yields
    ------
    (line_no, item_id, verdict, reason, raw)
        ``line_no`` is 1-based; ``raw`` the judge's text (or the error).

    Raises
    ------
    DataError
        ``file:line`` for a line that is not UTF-8, not JSON, not an object,
        lacks a string ``custom_id`` or has a malformed shape (raised when the
        iteration reaches it).
    UsageError
        The file does not exist.
    """
    for n, obj, problem in _judge_lines(Path(path)):
        if obj is None:   # the iterator's problem (exactly one of the two is set)
            raise DataError(str(problem))
        kind, text, _model = classify(obj)
        if kind == "problem":
            raise DataError(f"{Path(path).name}:{n}: {text}")
        if kind == "unanswered":
            # classify always gives an unanswered line its error text (never None)
            yield n, obj["custom_id"].strip(), "invalid", None, text or ""
            continue
        verdict, reason = parse_judge_verdict(text) if text is not None else ("invalid", None)
        yield n, obj["custom_id"].strip(), verdict, reason, text if text is not None else ""


def read_judge_rows(path: str | os.PathLike, **_) -> Iterator[tuple[int, dict | None, str | None]]:
    """The same file in the reader-registry form of :mod:`planner.formats.readers`.

    Yields ``(line, record, problem)``. An answered line is a positional record
    ``{"item", "verdict", "reason", "id": "judge:<custom_id>", "annotator":
    <body.model or None>, "seconds": None, "confidence": None}`` (a refusal,
    unparseable text or a length cut-off without a verdict → ``invalid``);
    ``annotator`` is the line's ``judge_model`` when planner wrote it (the model
    asked for), with ``source_annotator`` = ``body.model`` when the server
    answered under another name. A
    transport failure (error-file line, HTTP status other than 200) is an
    *unanswered* record ``{"item", "unanswered": <error, <= 80 chars>, "id",
    "annotator"}``: the item stays pending for a retry, and a later output
    for the same ``custom_id`` lands normally.
    """
    p = Path(path)
    for n, obj, problem in _judge_lines(p):
        if obj is None:   # the iterator's problem (exactly one of the two is set)
            yield n, None, problem
            continue
        cid = obj["custom_id"].strip()
        kind, text, served = classify(obj)
        if kind == "problem":
            yield n, None, f"{p.name}:{n}: {text}"
            continue
        asked = obj.get("judge_model")
        if asked is not None and (not isinstance(asked, str) or not asked.strip()):
            yield n, None, f"{p.name}:{n}: judge_model {quote(asked)}; expected the model name asked for"
            continue
        model = asked.strip() if asked is not None else served
        source = {"source_annotator": served} if asked is not None and served and served != model else {}
        if kind == "unanswered":
            yield n, {"item": cid, "unanswered": text, "id": f"judge:{cid}", "annotator": model}, None
            continue
        verdict, reason = parse_judge_verdict(text) if text is not None else ("invalid", None)
        yield n, {"item": cid, "verdict": verdict, "reason": reason, "id": f"judge:{cid}", "annotator": model,
                  "seconds": None, "confidence": None, **source}, None
