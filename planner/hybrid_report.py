"""`report --target humans --surrogate JUDGE`: open a study and run the prediction-powered fit.

The workflow around :mod:`planner.hybrid`: judgments → items (prompt, unordered pair) → arrays.

* Human outcome of an item: the mean half-tie score (win 1, tie 1/2, loss 0) of the first system of
  the pair (study system order) over the item's target votes, ``invalid`` dropped.
* Judge prediction: the same mean over the surrogate's verdicts on the item, *both presentation
  orders pooled*: when the judge saw each order once, its first-position bias cancels in the
  prediction. (PPI stays valid for any fixed prediction — bias only costs width — so an item the
  judge never answered validly gets the uninformative prediction 1/2, counted in the notes.)
* Labelled items: those with at least one valid target vote; unlabelled: the other items the judge
  answered. The guarantee needs the labelled items to be a uniform random sample of all items.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from planner.errors import DataError, UsageError
from planner.hybrid import HybridComparison, compare_hybrid, human_only_bradley_terry, judge_only_bradley_terry

__all__ = ["HybridItems", "HybridReport", "items_from_verdicts", "hybrid_report", "TARGETS"]

TARGETS = ("humans",)
_SCORE = {"A": 1.0, "B": 0.0, "tie": 0.5}


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

    @property
    def labelled(self) -> np.ndarray:
        return ~np.isnan(self.y)


@dataclass(frozen=True)
class HybridReport:
    study: str
    surrogate: str
    target: str
    comparison: HybridComparison
    n_labelled: int
    n_unlabelled: int
    target_votes: int
    surrogate_verdicts: int
    notes: tuple[str, ...]


def items_from_verdicts(names, rows, surrogate: str) -> HybridItems:
    """``rows``: iterable of (prompt, a, b, verdict, annotator) with ``a`` shown first.

    Rows by ``surrogate`` are judge verdicts; every other row (any annotator) is a target vote
    (:func:`hybrid_report` has already left out other ``planner judge`` models' verdicts).
    """
    index = {s: i for i, s in enumerate(names)}
    target, judge = defaultdict(list), defaultdict(list)
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
    return HybridItems(tuple(names), pairs, tuple(k[0] for k in keys), y, yhat, missing)


def hybrid_report(study_path, surrogate: str, target: str = "humans",
                  confidence_level: float = 0.9) -> HybridReport:
    """PPI++ Bradley–Terry for the target (humans) with ``surrogate``'s verdicts as predictions."""
    from planner.study import Study

    if target not in TARGETS:
        raise UsageError(f"--target: {str(target)[:80]!r} is not supported; allowed: {', '.join(TARGETS)}")
    study = Study.open(study_path)
    rows, annotators, other_judges = [], defaultdict(int), defaultdict(int)
    for j in study.judgments():
        if j.kind == "acceptability":
            continue
        if j.annotator != surrogate and j.id.startswith("judge:"):      # another `planner judge` model
            other_judges[j.annotator] += 1
            continue
        annotators[j.annotator] += 1
        rows.append((j.prompt, j.a, j.b, j.verdict, j.annotator))
    names = tuple(study.systems)
    if surrogate not in annotators:
        known = ", ".join(sorted(a for a in annotators if a)) or "none"
        raise DataError(f"--surrogate: no judgments by {surrogate[:80]!r} in {study_path}; annotators: {known[:200]}")
    items = items_from_verdicts(names, rows, surrogate)
    lab = items.labelled
    if lab.sum() < len(names):
        raise DataError(f"{study_path}: {int(lab.sum())} items carry target (non-{surrogate[:40]}) votes; "
                        f"need at least {len(names)} for {len(names)} systems")
    notes = [f"{v:,} verdicts of judge {str(a)[:40]} left out of the target" for a, v in other_judges.items()]
    if items.judge_missing:
        notes.append(f"{items.judge_missing} items have no valid {surrogate} verdict: prediction 1/2 there")
    if (~lab).sum() < 2:
        notes.append(f"every item has target votes, so {surrogate} adds nothing: the PPI fit is the human-only fit")
        human = human_only_bradley_terry(names, items.pairs, items.y, confidence_level=confidence_level)
        judge = judge_only_bradley_terry(names, items.pairs, items.yhat, confidence_level=confidence_level)
        comp = HybridComparison(human, human, judge, float(lab.sum()), 0.0)
    else:
        comp = compare_hybrid(names, items.pairs[lab], items.y[lab], items.yhat[lab], items.pairs[~lab],
                              items.yhat[~lab], confidence_level=confidence_level)
    notes.append("validity assumes the human-labelled items are a uniform random sample of the items")
    return HybridReport(str(Path(study_path)), surrogate, target, comp, int(lab.sum()), int((~lab).sum()),
                        sum(v for a, v in annotators.items() if a != surrogate), annotators[surrogate],
                        tuple(notes))
