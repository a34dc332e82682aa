"""A study's judgments as prediction-powered items: (prompt, unordered pair) → the humans' score and the judge's.

Pure: verdict rows in, :class:`HybridItems` (arrays) out. The rules (also in the docstring of
:mod:`planner.workflows.hybrid_report`, which fits them):

* Human outcome of an item: the mean half-tie score (win 1, tie 1/2, loss 0) of the first system of
  the pair (study system order) over the item's target votes, ``invalid`` dropped.
* Judge prediction: the same mean over the surrogate's verdicts on the item, both presentation
  orders pooled; an item the judge never answered validly gets the uninformative prediction 1/2.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

import numpy as np

from planner.equality import array_eq

__all__ = ["HybridItems", "items_from_verdicts"]

_SCORE = {"A": 1.0, "B": 0.0, "tie": 0.5}


@array_eq
@dataclass(frozen=True)
class HybridItems:
    """Items as arrays: ``pairs`` (m, 2) system indices (first < second), ``y`` the target score
    (NaN where unlabelled), ``yhat`` the judge prediction, ``prompts`` the item prompts."""

    names: tuple[str, ...]
    pairs: np.ndarray
    prompts: tuple[str, ...]
    y: np.ndarray
    yhat: np.ndarray
    judge_missing: int
    y3: np.ndarray | None = None          # (m, 3) human win/tie/loss shares (NaN rows: unlabelled)
    yhat3: np.ndarray | None = None       # (m, 3) judge shares (1/2, 0, 1/2 where it has none)
    spread: np.ndarray | None = None      # (m,) max − min of the judge's scores on the item (order disagreement)

    @property
    def labelled(self) -> np.ndarray:
        return ~np.isnan(self.y)


def items_from_verdicts(names, rows, surrogate: str) -> HybridItems:
    """``rows``: iterable of (prompt, a, b, verdict, annotator) with ``a`` shown first.

    Rows by ``surrogate`` are judge verdicts; every other row (any annotator) is a target vote
    (the caller has already left out other ``planner judge`` models' verdicts:
    :func:`planner.services.study_pilot.hybrid_votes`).
    """
    index = {s: i for i, s in enumerate(names)}
    target: defaultdict[tuple, list[float]] = defaultdict(list)
    judge: defaultdict[tuple, list[float]] = defaultdict(list)
    for prompt, a, b, verdict, annotator in rows:
        if b is None or a not in index or b not in index:
            continue
        i, j = index[a], index[b]
        key = (prompt, min(i, j), max(i, j))
        sink = judge if annotator == surrogate else target
        if verdict in _SCORE:
            s = _SCORE[verdict]
            sink[key].append(s if i < j else 1.0 - s)
        else:
            sink.setdefault(key, [])                 # invalid: the item exists, no score
    keys = sorted(set(target) | set(judge))
    y = np.array([np.mean(target[k]) if target.get(k) else np.nan for k in keys])
    yhat = np.array([np.mean(judge[k]) if judge.get(k) else 0.5 for k in keys])
    missing = sum(1 for k in keys if not judge.get(k))
    pairs = np.array([[k[1], k[2]] for k in keys], dtype=np.int64).reshape(-1, 2)
    y3 = np.array([_shares(target.get(k)) for k in keys]).reshape(-1, 3)
    yhat3 = np.array([_shares(judge.get(k)) if judge.get(k) else (0.5, 0.0, 0.5) for k in keys]).reshape(-1, 3)
    spread = np.array([np.ptp(judge[k]) if judge.get(k) else 0.0 for k in keys])
    return HybridItems(tuple(names), pairs, tuple(k[0] for k in keys), y, yhat, missing, y3, yhat3, spread)


def _shares(scores) -> tuple[float, float, float]:
    """(win, tie, loss) shares of the first system from half-tie scores; NaN when there are none."""
    if not scores:
        return (np.nan, np.nan, np.nan)
    s = np.asarray(scores)
    return (float(np.mean(s == 1.0)), float(np.mean(s == 0.5)), float(np.mean(s == 0.0)))
