"""What every connector does with what crosses the wire: redact keys, clean server JSON, bound each wait.

* :func:`redact` — **the one redaction rule**, applied to every message, failure
  row and output line a connector makes: every registered secret (API keys,
  Label Studio tokens and access tokens; :func:`register`) is replaced by
  ``***``, and so is any run of :data:`MIN_ECHO` or more characters copied from
  one (a server that echoes part of a key), every ``Bearer …``/``Token …``
  credential and every ``sk-…`` key, registered or not.
* :func:`clean` — a parsed JSON value from a server made safe to store: lone
  UTF-16 surrogates (``"\\ud800"``, which neither UTF-8 files nor SQLite can
  hold) become U+FFFD, and every string is redacted.
* :func:`within` — one call (an HTTP request with its whole body) bounded by a
  total deadline: a server that dribbles a body one byte at a time, or never
  finishes its headers, is cut off after ``seconds`` whatever the per-read
  timeouts say. The call runs in a daemon thread; past the deadline it is
  abandoned (its socket is closed when the server gives up or the process ends).
* :func:`origin` / :func:`check_url` — the ``scheme://host:port`` a connector may
  talk to; redirects to any other origin are refused by both connectors (the key,
  the prompts and the responses would go there).
"""

from __future__ import annotations

import re
import threading
import urllib.parse
from collections.abc import Callable
from typing import TypeVar

from planner.errors import UsageError, quote

T = TypeVar("T")

#: the shortest run of a secret's characters that counts as an echo of it: long enough that ordinary words
#: never match a random key, short enough to catch the 8-character prefixes servers echo ("sk-proj-")
MIN_ECHO = 8
_SECRETS: set[str] = set()
_LOCK = threading.Lock()
# credential-shaped values, registered or not: an Authorization value (20+ token characters after Bearer/Token)
# and an OpenAI-style key (sk- and 32+ characters; names planner prints are at most 100 characters of words)
_CREDENTIAL = re.compile(r"\b(Bearer|bearer|BEARER|Token|token)(\s+)[A-Za-z0-9._~+/=-]{20,}")
_SK_KEY = re.compile(r"\bsk-[A-Za-z0-9_-]{32,}")


def forget() -> None:
    """Forget every registered secret (a process that is done with its keys; tests)."""
    with _LOCK:
        _SECRETS.clear()


def register(secret: str | None) -> None:
    """Redact ``secret`` (and any echo of :data:`MIN_ECHO`+ of its characters) from now on, in this process."""
    if isinstance(secret, str) and len(secret.strip()) >= MIN_ECHO:
        with _LOCK:
            _SECRETS.add(secret.strip())


def _covered(text: str, secret: str, mask: bytearray) -> None:
    """Mark in ``mask`` every character of ``text`` inside a run of MIN_ECHO characters copied from ``secret``."""
    for w in {secret[i:i + MIN_ECHO] for i in range(len(secret) - MIN_ECHO + 1)}:
        i = text.find(w)
        while i >= 0:
            mask[i:i + MIN_ECHO] = b"\x01" * MIN_ECHO
            i = text.find(w, i + 1)


def redact(text: str, extra=()) -> str:
    """``text`` without any registered secret (or ``extra`` ones), echo of one, or credential; see the module."""
    if not isinstance(text, str) or not text:
        return text
    with _LOCK:
        secrets = sorted(_SECRETS | {s for s in extra if isinstance(s, str) and len(s) >= MIN_ECHO},
                         key=len, reverse=True)
    for s in secrets:
        text = text.replace(s, "***")
    if secrets and len(text) >= MIN_ECHO:
        mask = bytearray(len(text))
        for s in secrets:
            _covered(text, s, mask)
        if 1 in mask:
            out, i = [], 0
            while i < len(text):
                if mask[i]:
                    out.append("***")
                    while i < len(text) and mask[i]:
                        i += 1
                else:
                    out.append(text[i])
                    i += 1
            text = "".join(out)
    if any(w in text for w in ("earer", "EARER", "oken")):
        text = _CREDENTIAL.sub(lambda m: f"{m.group(1)}{m.group(2)}***", text)
    return _SK_KEY.sub("sk-***", text) if "sk-" in text else text


_LONE = re.compile(r"[\ud800-\udfff]")


def clean_text(text: str) -> str:
    """A string from a server, redacted, with lone surrogates replaced by U+FFFD."""
    if _LONE.search(text):
        text = text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
        text = _LONE.sub("\ufffd", text)
    return redact(text)


def clean(obj):
    """A parsed JSON value made safe to store and print: :func:`clean_text` on every string (keys too).

    Iterative, so a deeply nested value cannot exhaust the stack; returns a copy.
    """
    if isinstance(obj, str):
        return clean_text(obj)
    if not isinstance(obj, (dict, list)):
        return obj
    fix = clean_text
    root = [obj]
    stack = [(root, 0)]
    while stack:
        parent, key = stack.pop()
        value = parent[key]
        if isinstance(value, dict):
            new = {(fix(k) if isinstance(k, str) else k): v for k, v in value.items()}
            parent[key] = new
            stack.extend((new, k) for k in new)
        elif isinstance(value, list):
            new = list(value)
            parent[key] = new
            stack.extend((new, i) for i in range(len(new)))
        elif isinstance(value, str):
            parent[key] = fix(value)
    return root[0]


# ------------------------------------------------------------------ deadlines
class Deadline(TimeoutError):
    """A call did not finish within its total deadline."""


def within(seconds: float, fn: Callable[..., T], *args, abort: threading.Event | None = None, **kwargs) -> T:
    """``fn(*args, **kwargs)`` finished within ``seconds``; raises :class:`Deadline` otherwise.

    The call's own exception is re-raised. ``abort`` set (a second Ctrl-C, a
    crash elsewhere) stops waiting at once, raising :class:`Deadline` too.
    """
    box: dict = {}
    done = threading.Event()

    def run() -> None:
        try:
            box["value"] = fn(*args, **kwargs)
        except BaseException as exc:
            box["error"] = exc
        finally:
            done.set()

    threading.Thread(target=run, daemon=True, name="planner-call").start()
    import time

    end = time.monotonic() + seconds
    while not done.is_set():
        left = end - time.monotonic()
        if left <= 0 or (abort is not None and abort.is_set()):
            raise Deadline(f"no complete answer within {seconds:g} s")
        done.wait(min(left, 0.1) if abort is not None else left)
    if "error" in box:
        raise box["error"]
    return box["value"]


# ------------------------------------------------------------------ origins
def origin(url: str) -> tuple[str, str, int | None]:
    """``(scheme, host, port)`` of a URL, the port made explicit (80/443 for http/https)."""
    parts = urllib.parse.urlsplit(url)
    port = parts.port or {"http": 80, "https": 443}.get(parts.scheme)
    return parts.scheme.lower(), (parts.hostname or "").lower(), port


def check_url(url, name: str) -> str:
    """An ``http(s)://host[:port][/path]`` URL with a host, no credentials, no fragment; else a UsageError."""
    shown = url if "@" not in str(url) else "(not shown: it holds credentials)"
    what = f"`{name}` ({quote(shown)})"
    if not isinstance(url, str) or not url.strip():
        raise UsageError(f"`{name}` is empty; expected http(s)://host[:port][/path]", parameters=(name,))
    try:
        parts = urllib.parse.urlsplit(url.strip())
        parts.port  # noqa: B018  (raises on a bad port)
    except ValueError as exc:
        raise UsageError(f"{what} is not a URL ({exc}); expected http(s)://host[:port][/path]",
                         parameters=(name,)) from None
    if parts.scheme not in ("http", "https"):
        raise UsageError(f"{what} must start with http:// or https://", parameters=(name,))
    if not parts.hostname:
        raise UsageError(f"{what} has no host; expected http(s)://host[:port][/path]", parameters=(name,))
    if parts.username is not None or parts.password is not None:
        raise UsageError(f"{what} must not carry credentials (user:password@); the key goes in the environment",
                         parameters=(name,))
    if parts.fragment:
        raise UsageError(f"{what} must not have a #fragment", parameters=(name,))
    return url.strip()
