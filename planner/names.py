"""What a name, an id, an identity or a text read from the user may be: the rules and their checks.

Each ``*_problem`` function returns why a value cannot be used (one phrase that
follows the quoted value in a message, e.g. ``"contains ' '"``), or ``None``
when it can. They are pure and shared by every layer that reads such a value:
``planner init`` (system names, reason codes, prompt ids, texts), the prompt
readers, ingest (annotator identities) and next-batch (annotator names).
"""

from __future__ import annotations

import re

# ------------------------------------------------------------------ names given at init
NAME_MAX = 100
NAME_PUNCTUATION = "._-+:@"
NAME_RULE = (f"letters, digits and {' '.join(NAME_PUNCTUATION)} (starting with a letter or digit, "
             f"at most {NAME_MAX} characters; no spaces, quotes, slashes or control characters)")


def name_problem(value) -> str | None:
    """Why ``value`` cannot be a system name or reason code (None when it can).

    Names end up in file names, CSV headers, judge prompts, command lines
    (``--candidate``) and Label Studio choices, so they are restricted to
    :data:`NAME_RULE`.
    """
    if not isinstance(value, str) or not value:
        return "is empty"
    if len(value) > NAME_MAX:
        return f"is {len(value)} characters long"
    if not value[0].isalnum():
        return "must start with a letter or digit"
    for ch in value:
        if not (ch.isalnum() or ch in NAME_PUNCTUATION) or not ch.isprintable():
            return f"contains {ch!r}"
    return None


#: what an annotator identity read from a file may be (an e-mail, ``ls-user:2``, a judge model, a person's name)
IDENTITY_RULE = "one printable line of at most 1,000 characters (no control characters)"


def identity_problem(value) -> str | None:
    """Why ``value`` cannot be an annotator identity read from a file (None when it can).

    Identities reach the terminal, Markdown reports and ``--surrogate`` lookups;
    control characters (terminal escapes), line breaks and lone surrogates are refused, and
    what is allowed is escaped on output.
    """
    if not isinstance(value, str):
        return f"is a {type(value).__name__}"
    return id_problem(value)


def text_problem(value) -> str | None:
    """Why a text field (prompt, response) cannot be stored: lone UTF-16 surrogates."""
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError as exc:
            return f"contains a lone surrogate {value[exc.start]!r} at character {exc.start}"
    return None


def id_problem(value) -> str | None:
    """Why ``value`` cannot be a prompt id (ids are text or integers, not empty, one printable line)."""
    if value is None:
        return "is missing"
    if isinstance(value, bool) or not isinstance(value, (str, int)):
        return f"is a {type(value).__name__}; expected text or an integer"
    s = str(value).strip() if isinstance(value, str) else str(value)
    if not s:
        return "is empty"
    if len(s) > 1000:
        return f"is {len(s)} characters long (at most 1000)"
    surrogate = text_problem(s)
    if surrogate:
        return surrogate
    if not s.isprintable():
        bad = next(ch for ch in s if not ch.isprintable())
        return f"contains the control character {bad!r}"
    return None


# ------------------------------------------------------------------ annotator names (file names)
_ANNOTATOR_RE = re.compile(r"^[A-Za-z0-9_-]+$")
ANNOTATOR_NAME_MAX = 64


def annotator_name_problem(name) -> str | None:
    """Why ``name`` cannot be an annotator name of a study (``annotators``, ``annotator_map``); None when it can.

    Names become part of file names (``batch-1.alice.jsonl``), Label Studio
    project titles and report rows: letters, digits, ``_`` and ``-`` only.
    """
    if not isinstance(name, str) or not name:
        return "is empty"
    if len(name) > ANNOTATOR_NAME_MAX:
        return f"is {len(name)} characters long (at most {ANNOTATOR_NAME_MAX})"
    if not _ANNOTATOR_RE.match(name):
        return ("is not a valid annotator name (letters, digits, '_' and '-' only; it becomes part of a "
                "file name)")
    return None
