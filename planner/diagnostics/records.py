"""Judgment records as the diagnostics read them, and the small shared helpers.

A judgment record is any object with the attributes of :class:`JudgmentLike`
(duck typing); :class:`JudgmentRecord` is a small frozen dataclass for tests
and notebooks. Also here: the exact two-sided binomial p-value against 0.5 and
the ``confidence_level`` check every diagnostic uses.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterable, Protocol

from planner.errors import DataError, check_range

# Kinds whose judgments are quality-control or absolute items, not evidence
# about which of two systems is better; reason shares and length bias skip them.
NON_RANKING_KINDS = frozenset({"attention", "acceptability"})


# --------------------------------------------------------------------- records
class JudgmentLike(Protocol):
    """What the diagnostics read from one judgment (duck typing).

    Required: ``a``, ``b`` (system names), ``verdict`` (``"A" | "B" | "tie" |
    "invalid"``; for ``kind == "acceptability"``: ``"pass" | "fail" |
    "invalid"``). Optional (read with ``getattr``, default in brackets):
    ``id``, ``item``, ``prompt``, ``stratum`` [None], ``a_position``
    [``"left"``], ``kind`` [``"regular"``], ``annotator``, ``reason``,
    ``seconds``, ``confidence``, ``batch`` [None].
    """

    a: str
    b: str
    verdict: str


@dataclass(frozen=True)
class JudgmentRecord:
    """A minimal concrete judgment (the fields of the study's ``Judgment``)."""

    a: str
    b: str
    verdict: str
    id: str | None = None
    item: str | None = None
    prompt: str | None = None
    stratum: str | None = None
    a_position: str = "left"
    kind: str = "regular"
    annotator: str | None = None
    reason: str | None = None
    seconds: float | None = None
    confidence: float | None = None
    batch: str | None = None


def _get(j: Any, name: str, default=None):
    value = getattr(j, name, default)
    return default if value is None else value


def _left_is_a(j: Any) -> bool | None:
    """Whether ``a`` was shown left; ``None`` when the position is unknown.

    A missing attribute means the documented default ``"left"``; an explicit
    ``None`` (the study's judgments from files without a presentation order)
    means unknown, never a guess.
    """
    pos = getattr(j, "a_position", "left")
    if pos is None:
        return None
    if pos not in ("left", "right"):
        raise DataError(f"judgment {_get(j, 'id', '?')}: a_position ({pos!r}) must be 'left' or 'right'")
    return pos == "left"


def _check_verdict(j: Any) -> str:
    v = j.verdict
    if v not in ("A", "B", "tie", "invalid"):
        raise DataError(f"judgment {_get(j, 'id', '?')}: verdict ({v!r}) must be one of A, B, tie, invalid")
    return v


def position_verdict(j: Any) -> str:
    """The verdict in position form: ``left | right | tie | invalid``, or
    ``unknown`` for a decisive verdict whose presentation order is unknown."""
    v = _check_verdict(j)
    if v in ("tie", "invalid"):
        return v
    left_is_a = _left_is_a(j)
    if left_is_a is None:
        return "unknown"
    return "left" if (v == "A") == left_is_a else "right"


def winner(j: Any) -> str | None:
    """The winning system's name, or ``None`` for tie / invalid."""
    v = _check_verdict(j)
    return j.a if v == "A" else j.b if v == "B" else None


def _ranking(judgments: Iterable[Any]) -> list:
    return [j for j in judgments if _get(j, "kind", "regular") not in NON_RANKING_KINDS]


def _binom_p(k: int, n: int) -> float | None:
    """Exact two-sided binomial p-value against 0.5 (= ``scipy.stats.binomtest(k, n).pvalue``).

    The null is symmetric, so the two-sided p-value is twice the smaller tail
    (1 at the centre). ``scipy.special.bdtr`` keeps ``scipy.stats`` (seconds of
    import) out of the report path (issue 13).
    """
    from scipy.special import bdtr

    if n <= 0:
        return None
    k, n = int(k), int(n)
    m = min(k, n - k)
    if 2 * m == n:
        return 1.0
    return float(min(1.0, 2.0 * bdtr(m, n, 0.5)))


def _check_level(confidence_level: float) -> None:
    check_range("confidence_level", confidence_level, 0.0, 1.0)
