"""LLM-judge round trip: request writer re-exports and the judge OUTPUT reader.

Requests are written by :func:`planner.formats.writers.judge_requests` (one
OpenAI-batch-style chat-completions request per item, ``custom_id`` = item id).
This module reads the answers back:

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
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any, Iterator

from planner.errors import DataError, UsageError
from planner.formats.writers import (  # noqa: F401  (re-exported for the judge round trip)
    DEFAULT_ACCEPTABILITY_TEMPLATE, DEFAULT_PAIRWISE_TEMPLATE, judge_requests)

VERDICTS = ("left", "right", "tie", "pass", "fail", "invalid")
_TOKEN = {"a": "left", "b": "right", "c": "tie", "left": "left", "right": "right", "tie": "tie",
          "pass": "pass", "fail": "fail", "invalid": "invalid"}
_BRACKET_RE = re.compile(r"\[\[\s*(a|b|c|left|right|tie|pass|fail)\s*\]\]", re.IGNORECASE)
_FINAL_RE = re.compile(
    r"^[\s*_#>`]*(?:final\s+)?verdict[\s*_`]*[:=][\s*_`\"']*(a|b|c|left|right|tie|pass|fail|invalid)"
    r"[\s*_`\"'.!]*$", re.IGNORECASE)
_BARE_RE = re.compile(r"^[\s*_`\"']*(a|b|c|left|right|tie|pass|fail|invalid)[\s*_`\"'.!]*$", re.IGNORECASE)
_REASON_RE = re.compile(r"^[\s*_#>`]*reason(?:\s+code)?[\s*_`]*[:=][\s*_`\"']*([A-Za-z][\w-]*)", re.IGNORECASE)


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
    if not isinstance(text, str) or not text.strip():
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


def _content(obj: dict[str, Any]) -> tuple[str | None, str]:
    """(message text or None, raw text kept for the record)."""
    if "response" in obj or "error" in obj:
        resp = obj.get("response")
        if not isinstance(resp, dict):
            return None, json.dumps(obj.get("error"), ensure_ascii=False)
        status = resp.get("status_code", 200)
        body = resp.get("body")
        if status != 200 or not isinstance(body, dict):
            return None, json.dumps(body if body is not None else obj.get("error"), ensure_ascii=False)
        try:
            content = body["choices"][0]["message"]["content"]
        except (KeyError, IndexError, TypeError):
            return None, json.dumps(body, ensure_ascii=False)
        return (content, content) if isinstance(content, str) else (None, json.dumps(content))
    for key in ("content", "output", "verdict"):
        if key in obj:
            value = obj[key]
            return (value, value) if isinstance(value, str) else (None, json.dumps(value, ensure_ascii=False))
    return None, ""


def _judge_lines(p: Path) -> Iterator[tuple[int, dict | None, str | None]]:
    """(line_no, object, problem) for each non-blank line; exactly one of object/problem is set."""
    try:
        fh = open(p, "rb")
    except FileNotFoundError:
        raise UsageError(f"{p} does not exist") from None
    with fh:
        for n, bline in enumerate(fh, start=1):
            try:
                line = bline.decode("utf-8")
            except UnicodeDecodeError as exc:
                yield n, None, f"{p}:{n}: not UTF-8 ({exc.reason} at byte {exc.start})"
                continue
            if n == 1:
                line = line.removeprefix("\ufeff")
            if not line.strip():
                continue
            try:
                obj = json.loads(line)
            except json.JSONDecodeError as exc:
                yield n, None, f"{p}:{n}: not valid JSON ({exc.msg} at column {exc.colno})"
                continue
            if not isinstance(obj, dict):
                yield n, None, f"{p}:{n}: expected a JSON object, got {type(obj).__name__}"
                continue
            item_id = obj.get("custom_id")
            if not isinstance(item_id, str) or not item_id:
                yield n, None, f"{p}:{n}: missing \"custom_id\" (the item id the request was sent with)"
                continue
            yield n, obj, None


def read_judge_outputs(path: str | os.PathLike) -> Iterator[tuple[int, str, str, str | None, str]]:
    """Read judge outputs keyed by ``custom_id``.

    Accepts OpenAI batch output lines (``{"custom_id", "response": {"status_code",
    "body": {"choices": [{"message": {"content"}}]}}, "error"}``) and plain
    lines ``{"custom_id", "content" | "output" | "verdict"}``. A failed request
    (``error``, non-200 status, no content) yields verdict ``invalid`` with the
    error as ``raw``.

    Yields
    ------
    (line_no, item_id, verdict, reason, raw)
        ``line_no`` is 1-based; ``raw`` the judge's text (or the error).

    Raises
    ------
    DataError
        ``file:line`` for a line that is not UTF-8, not JSON, not an object, or
        lacks a string ``custom_id`` (raised when the iteration reaches it).
    UsageError
        The file does not exist.
    """
    for n, obj, problem in _judge_lines(Path(path)):
        if problem:
            raise DataError(problem)
        text, raw = _content(obj)
        verdict, reason = parse_judge_verdict(text) if text is not None else ("invalid", None)
        yield n, obj["custom_id"], verdict, reason, raw


def read_judge_rows(path: str | os.PathLike, **_) -> Iterator[tuple[int, dict | None, str | None]]:
    """The same file in the reader-registry form of :mod:`planner.formats.readers`.

    Yields ``(line, record, problem)``; a record is a positional row
    ``{"item", "verdict", "reason", "id": "judge:<custom_id>", "annotator":
    <body.model or None>, "seconds": None, "confidence": None}``. Register with
    ``register(Reader("judge", read_judge_rows, lambda s: "custom_id" in s.keys,
    "LLM-judge outputs (OpenAI batch JSONL)"))``.
    """
    for n, obj, problem in _judge_lines(Path(path)):
        if problem:
            yield n, None, problem
            continue
        text, _raw = _content(obj)
        verdict, reason = parse_judge_verdict(text) if text is not None else ("invalid", None)
        body = (obj.get("response") or {}).get("body") if isinstance(obj.get("response"), dict) else None
        model = body.get("model") if isinstance(body, dict) and isinstance(body.get("model"), str) else None
        yield n, {"item": obj["custom_id"], "verdict": verdict, "reason": reason,
                  "id": f"judge:{obj['custom_id']}", "annotator": model, "seconds": None,
                  "confidence": None}, None
