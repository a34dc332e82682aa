"""Judgment records as the diagnostics read them, and the small shared helpers.

A judgment record is any object with the attributes of :class:`JudgmentLike`
(duck typing); :class:`JudgmentRecord` is a small frozen dataclass for tests
and notebooks. Also here, shared by the diagnostics modules: reading an optional
attribute (:func:`value_of`), the verdict and position checks, the records that
rank systems, the exact two-sided binomial p-value against 0.5 and the
``confidence_level`` check.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, Protocol

from planner.errors import DataError, check_range
from planner.vocabulary import OUTCOMES

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
    b: str | None   # None: an acceptability verdict on ``a`` alone
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


def value_of(j: Any, name: str, default=None):
    """The optional attribute ``name`` of a judgment record, ``default`` when it is missing or None."""
    value = getattr(j, name, default)
    return default if value is None else value


def left_is_a(j: Any) -> bool | None:
    """Whether ``a`` was shown left; ``None`` when the position is unknown.

    A missing attribute means the documented default ``"left"``; an explicit
    ``None`` (the study's judgments from files without a presentation order)
    means unknown, never a guess.
    """
    pos = getattr(j, "a_position", "left")
    if pos is None:
        return None
    if pos not in ("left", "right"):
        raise DataError(f"judgment {value_of(j, 'id', '?')}: a_position ({pos!r}) must be 'left' or 'right'")
    return pos == "left"


def check_verdict(j: Any) -> str:
    """A pairwise record's verdict, or a :class:`DataError` naming the judgment when it is not A, B, tie or
    invalid."""
    v = j.verdict
    if v not in OUTCOMES:
        raise DataError(f"judgment {value_of(j, 'id', '?')}: verdict ({v!r}) must be one of A, B, tie, invalid")
    return v


def position_verdict(j: Any) -> str:
    """The verdict in position form: ``left | right | tie | invalid``, or
    ``unknown`` for a decisive verdict whose presentation order is unknown."""
    v = check_verdict(j)
    if v in ("tie", "invalid"):
        return v
    a_left = left_is_a(j)
    if a_left is None:
        return "unknown"
    return "left" if (v == "A") == a_left else "right"


def winner(j: Any) -> str | None:
    """The winning system's name, or ``None`` for tie / invalid."""
    v = check_verdict(j)
    return j.a if v == "A" else j.b if v == "B" else None


def ranking_judgments(judgments: Iterable[Any]) -> list:
    """The records that are evidence about which of two systems is better (not :data:`NON_RANKING_KINDS`)."""
    return [j for j in judgments if value_of(j, "kind", "regular") not in NON_RANKING_KINDS]


def binom_p(k: int, n: int) -> float | None:
    """Exact two-sided binomial p-value against 0.5 (= ``scipy.stats.binomtest(k, n).pvalue``).

    The null is symmetric, so the two-sided p-value is twice the smaller tail
    (1 at the centre). ``scipy.special.bdtr`` keeps ``scipy.stats`` (seconds of
    import) out of the report path.
    """
    from scipy.special import bdtr

    if n <= 0:
        return None
    k, n = int(k), int(n)
    m = min(k, n - k)
    if 2 * m == n:
        return 1.0
    return float(min(1.0, 2.0 * bdtr(m, n, 0.5)))


def check_level(confidence_level: float) -> None:
    """Refuse a ``confidence_level`` outside (0, 1) (a :class:`planner.errors.UsageError` naming it)."""
    check_range("confidence_level", confidence_level, 0.0, 1.0)
