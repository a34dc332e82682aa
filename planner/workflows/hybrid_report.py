"""`report --target humans --surrogate JUDGE`: open a study and run the prediction-powered fit.

The workflow around :mod:`planner.hybrid.ppi`: judgments → items (prompt, unordered pair) → arrays.

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

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from planner.errors import DataError, UsageError
from planner.hybrid.items import HybridItems
from planner.hybrid.ppi import HybridComparison, compare_hybrid, human_only_bradley_terry, judge_only_bradley_terry
from planner.stats.blas import one_blas_thread
from planner.stats.clusters import check_cluster_by

__all__ = ["TARGETS", "TIES", "HybridReport", "hybrid_report", "recorded_design"]

TARGETS = ("humans",)


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
    ties: str = "half"
    design: str = "uniform"
    population: object = None          # BTInterval: population-weighted (stratum weights), or None
    strata: dict | None = None         # {"weights": {stratum: w}, "source": ..., "note": ...}


TIES = ("half", "davidson")




def _scores(items: HybridItems, davidson: bool) -> tuple[np.ndarray, np.ndarray]:
    """``(y, yhat)``: the items' target and judge scores, or with ``davidson`` their win/tie/loss shares."""
    if not davidson:
        return items.y, items.yhat
    if items.y3 is None or items.yhat3 is None:
        raise ValueError("a Davidson fit needs the items' three-way shares")
    return items.y3, items.yhat3


def _compare(names, items: HybridItems, lab, ties: str, confidence_level: float, pi=None,
             clusters=None) -> HybridComparison:
    """PPI (PPI++ for a uniform sample, IPW with ``pi`` or ``clusters``), target-only and judge-only fits.

    ``clusters`` (one id per item, its prompt): the IPW engine's cluster-robust covariance, with the
    labelled items a uniform sample (π = n/N) when no probabilities are recorded.
    """
    from planner.hybrid.ppi import ipw_bradley_terry, ppi_davidson

    dav = ties == "davidson"
    y, yh = _scores(items, dav)
    model = "davidson" if dav else "logistic"
    if clusters is not None and pi is None:
        pi = np.full(len(lab), lab.sum() / len(lab))
    if pi is not None:
        ppi = ipw_bradley_terry(names, items.pairs, y, yh, lab, pi, model=model, confidence_level=confidence_level,
                                clusters=clusters)
        human = ipw_bradley_terry(names, items.pairs, y, yh, lab, pi, model=model,
                                  confidence_level=confidence_level, lam=0.0, clusters=clusters)
    elif dav and (~lab).sum() >= 2:
        ppi = ppi_davidson(names, items.pairs[lab], y[lab], yh[lab], items.pairs[~lab], yh[~lab],
                           confidence_level=confidence_level)
        human = ppi_davidson(names, items.pairs[lab], y[lab], yh[lab], items.pairs[:0], yh[:0],
                             confidence_level=confidence_level, lam=0.0)
    elif (~lab).sum() >= 2:
        return compare_hybrid(names, items.pairs[lab], y[lab], yh[lab], items.pairs[~lab], yh[~lab],
                              confidence_level=confidence_level)
    else:
        human = (ppi_davidson(names, items.pairs, y, yh, items.pairs[:0], yh[:0],
                              confidence_level=confidence_level, lam=0.0)
                 if dav else human_only_bradley_terry(names, items.pairs, y, confidence_level=confidence_level))
        ppi = human
    judge = (ppi_davidson(names, items.pairs, yh, yh, items.pairs[:0], yh[:0],
                          confidence_level=confidence_level, lam=0.0)
             if dav else judge_only_bradley_terry(names, items.pairs, yh, confidence_level=confidence_level))
    if dav:
        from dataclasses import replace
        judge = replace(judge, method="judge only davidson")
    ratio = float(np.trace(human.cov) / np.trace(ppi.cov)) if np.trace(ppi.cov) > 0 else float("nan")
    n = int(lab.sum())
    return HybridComparison(ppi, human, judge, n * ratio, n * ratio - n)


def recorded_design(study, items: HybridItems):
    """Inclusion probabilities from ``next-batch --for humans`` rounds recorded in the study.

    Returns ``(pi, notes)``; ``pi`` None when no round is recorded (then the labelled items are
    taken as a uniform sample). See :func:`planner.hybrid.select.combined_probability`.
    """
    from planner.hybrid.select import combined_probability

    index = {s: i for i, s in enumerate(items.names)}
    pos = {(p, int(a), int(b)): k for k, (p, (a, b)) in enumerate(zip(items.prompts, items.pairs))}
    rounds, chosen = [], np.zeros(len(items.y), dtype=bool)
    for b in study.batches():
        design = b.manifest.get("for_humans") if not b.voided else None
        if not design:
            continue
        pr = np.zeros(len(items.y))
        for prompt, a, c, p in design["probabilities"]:
            k = pos.get((prompt, index.get(a, -1), index.get(c, -1)))
            if k is not None:
                pr[k] = p
        for prompt, a, c in design["chosen"]:
            k = pos.get((prompt, index.get(a, -1), index.get(c, -1)))
            if k is not None:
                chosen[k] = True
        rounds.append(pr)
    if not rounds:
        return None, []
    lab = items.labelled
    pi, unrecorded = combined_probability(len(items.y), rounds, lab, chosen)
    notes = [f"labelled items weighted by 1/π from {len(rounds)} recorded next-batch --for humans round(s) (IPW-PPI)"]
    if unrecorded:
        notes.append(f"{unrecorded} labelled item(s) were not chosen by a recorded round: treated as a uniform "
                     f"pilot at rate {unrecorded / len(items.y):.3f}")
    waiting = int((chosen & ~lab).sum())
    if waiting:
        notes.append(f"{waiting} chosen item(s) have no {'human'} vote yet: the estimate assumes the missing "
                     "ones are missing at random")
    return pi, notes


def _population(study, names, items: HybridItems, lab, ties: str, confidence_level: float, pi, pooled,
                clusters=None):
    """Population-weighted strengths: items weighted by stratum weight ÷ stratum share of the items.

    Stratum weights by the one rule (:func:`planner.strata.stratum_weights`). Without recorded
    probabilities the labels are taken as uniform within each stratum (π_i = n_h / N_h). When the
    weights equal the strata's shares of the items (c ≡ 1) the population target is the pooled one:
    the pooled fit ``pooled`` is returned as it, and ``same_as_pooled`` is true.
    """
    from planner.hybrid.ppi import ipw_bradley_terry
    from planner.strata import stratum_of, stratum_weights

    prompts = list(study.prompts())
    of = {p.id: stratum_of(p) for p in prompts}
    st = np.array([of.get(p, "all") for p in items.prompts])
    strata = tuple(dict.fromkeys(of.values()))
    if len(set(st)) < 2:
        return None, None
    sw = stratum_weights(prompts, strata)
    c, pi_h = np.zeros(len(st)), np.zeros(len(st))
    for h in set(st):
        here = st == h
        c[here] = sw.weights.get(h, 0.0) * len(st) / here.sum()
        pi_h[here] = max(lab[here].sum(), 1) / here.sum()
    empty = sorted(h for h in set(st) if sw.weights.get(h, 0.0) > 0 and not lab[st == h].any())
    if empty:
        raise DataError(f"population estimate: stratum {empty[0][:40]!r} has population weight but no "
                        "human-labelled item; label some of its items")
    same = bool(np.allclose(c, 1.0, rtol=0.0, atol=1e-12))
    dav = ties == "davidson"
    y, yh = _scores(items, dav)
    pop = pooled if same else ipw_bradley_terry(
        names, items.pairs, y, yh, lab, pi_h if pi is None else pi, weights=c,
        model="davidson" if dav else "logistic", confidence_level=confidence_level, clusters=clusters)
    return pop, {"weights": {h: round(sw.weights[h], 6) for h in strata}, "source": sw.source, "note": sw.note,
                 "same_as_pooled": same}


def hybrid_report(study_path, surrogate: str, target: str = "humans", confidence_level: float = 0.9,
                  ties: str = "half", cluster: str = "item") -> HybridReport:
    """PPI++ Bradley–Terry for the target (humans) with ``surrogate``'s verdicts as predictions.

    ``ties``: ``"half"`` (a tie is half a win, logistic) or ``"davidson"`` (win/tie/loss likelihood).
    ``cluster``: ``"item"`` (the default) and ``"none"`` — the unit is the item (prompt, pair) already,
    its votes averaged into one outcome; ``"prompt"``: items on one prompt are correlated, the
    covariance is cluster-robust over prompts (through the IPW engine, π = n/N when none is recorded).
    When ``next-batch --for humans`` rounds are recorded, the labelled items are weighted by their
    inclusion probabilities (IPW-PPI); when the prompts fall in several strata, a population
    estimate with the stratum weights is added (``population``).
    """
    from planner.services.study_pilot import hybrid_votes
    from planner.store.study import Study

    if target not in TARGETS:
        raise UsageError(f"`target`: {str(target)[:80]!r} is not supported; allowed: {', '.join(TARGETS)}",
                         parameters=('target',))
    if ties not in TIES:
        raise UsageError(f"`ties`: {str(ties)[:80]!r} is not supported; allowed: {', '.join(TIES)}",
                         parameters=('ties',))
    check_cluster_by(cluster)
    if cluster == "annotator":
        raise UsageError("`cluster` annotator does not apply to the hybrid (surrogate) report: its unit is the item "
                         "(prompt and pair), whose votes are averaged; use item or prompt", parameters=("cluster",))
    study = Study.open(study_path)
    names = tuple(study.systems)
    votes = hybrid_votes(study, surrogate)
    items, annotators, other_judges = votes.items, votes.annotators, votes.other_judges
    lab = items.labelled
    if lab.sum() < len(names):
        raise DataError(f"{study_path}: {int(lab.sum())} items carry target (non-{surrogate[:40]}) votes; "
                        f"need at least {len(names)} for {len(names)} systems")
    notes = [f"{v:,} verdicts of judge {str(a)[:40]} left out of the target" for a, v in other_judges.items()]
    if items.judge_missing:
        notes.append(f"{items.judge_missing} items have no valid {surrogate} verdict: prediction 1/2 there")
    pi, design_notes = recorded_design(study, items)
    notes.extend(design_notes)
    if (~lab).sum() < 2:
        notes.append(f"every item has target votes, so {surrogate} adds nothing: the PPI fit is the human-only fit")
    clusters = np.unique(np.array(items.prompts), return_inverse=True)[1].ravel() if cluster == "prompt" else None
    with one_blas_thread():   # the one BLAS policy (planner.stats.blas)
        comp = _compare(names, items, lab, ties, confidence_level, pi, clusters)
        population, strata = _population(study, names, items, lab, ties, confidence_level, pi, comp.ppi, clusters)
    notes.append("clustered by prompt: the covariance sums each prompt's item gradients (cluster-robust)"
                 if clusters is not None else
                 "the unit is the item (prompt and pair): its votes are averaged into one outcome, so verdicts on "
                 "the same prompt and pair count once")
    if strata and strata["same_as_pooled"]:
        notes.append("the stratum weights equal the strata's shares of the items: the population estimate is the "
                     "pooled one (give prompts weights to change that)")
    if pi is None:
        notes.append("validity assumes the human-labelled items are a uniform random sample of the items"
                     + (" (within each stratum)" if population is not None else ""))
    return HybridReport(str(Path(study_path)), surrogate, target, comp, int(lab.sum()), int((~lab).sum()),
                        sum(v for a, v in annotators.items() if a != surrogate), annotators[surrogate],
                        tuple(notes), ties, "recorded probabilities (IPW)" if pi is not None else "uniform",
                        population, strata)
