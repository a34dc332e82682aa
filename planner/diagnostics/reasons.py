"""Reason codes: the share of each system's wins and losses by reason."""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from planner.diagnostics.records import check_verdict, ranking_judgments, value_of


# ------------------------------------------------------------- reason shares
@dataclass(frozen=True)
class ReasonShare:
    reason: str | None      # None = no reason given
    count: int
    share: float


@dataclass(frozen=True)
class SystemReasons:
    """One system's decisive judgments by reason code (``None`` = no reason)."""

    system: str
    wins: int
    losses: int
    win_reasons: tuple[ReasonShare, ...]
    loss_reasons: tuple[ReasonShare, ...]


@dataclass(frozen=True)
class ReasonShares:
    """Reason codes on decisive (A/B) ranking judgments.

    ``share_without_reason`` = decisive judgments without a reason /
    ``n_decisive`` (``None`` when there is none). Ties and invalid judgments
    are not asked for a reason and are not counted.
    """

    rows: tuple[SystemReasons, ...]
    n_decisive: int
    n_without_reason: int
    share_without_reason: float | None


def _shares(counter: Counter, total: int) -> tuple[ReasonShare, ...]:
    items = sorted(counter.items(), key=lambda kv: (-kv[1], kv[0] is None, kv[0] or ""))
    return tuple(ReasonShare(r, c, c / total) for r, c in items)


def reason_shares(judgments: Iterable[Any], systems: Sequence[str] | None = None) -> ReasonShares:
    """Share of each system's wins and of its losses by reason code.

    Empty or blank reasons count as "no reason". Systems are listed in
    ``systems`` order if given, else in order of first appearance.
    """
    rows = ((j.a, j.b, check_verdict(j), value_of(j, "reason"), 1) for j in ranking_judgments(judgments))
    return reason_shares_counts(rows, systems)


def reason_shares_counts(rows: Iterable[tuple[str, str, str, Any, int]],
                         systems: Sequence[str] | None = None,
                         no_reason: tuple[Sequence[int], Sequence[int]] | None = None) -> ReasonShares:
    """Reason shares from tallied rows ``(a, b, verdict, reason, n)`` — the one definition.

    The caller leaves out non-ranking kinds; only ``A``/``B`` verdicts count;
    a blank reason is no reason. Systems in ``systems`` order, then any other
    in order of first appearance. ``no_reason`` (with ``systems``): per system,
    decisive judgments without a reason won and lost, tallied by the caller
    (the same as rows ``(winner, loser, "A", None, n)``, without a row per pair).
    """
    wins: dict[str, Counter] = defaultdict(Counter)
    losses: dict[str, Counter] = defaultdict(Counter)
    seen: list[str] = list(systems) if systems is not None else []
    known = set(seen)
    n = without = 0
    if no_reason is not None:
        for s, w, lo in zip(seen, *no_reason):
            if w:
                wins[s][None] += int(w)
            if lo:
                losses[s][None] += int(lo)
            n += int(w)            # each decisive judgment is one system's win
            without += int(w)
    for a, b, v, reason, c in rows:
        for s in (a, b):
            if s not in known:
                known.add(s)
                seen.append(s)
        if v not in ("A", "B"):
            continue
        reason = (reason.strip() if isinstance(reason, str) else reason) or None
        n += c
        without += c if reason is None else 0
        win, lose = (a, b) if v == "A" else (b, a)
        wins[win][reason] += c
        losses[lose][reason] += c
    out = []
    for s in seen:
        nw, nl = sum(wins[s].values()), sum(losses[s].values())
        out.append(SystemReasons(s, nw, nl, _shares(wins[s], nw), _shares(losses[s], nl)))
    return ReasonShares(tuple(out), n, without, without / n if n else None)
