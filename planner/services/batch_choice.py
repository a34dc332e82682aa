"""`next-batch`'s plan: which (prompt, system pair, stratum) comparisons the next batch holds.

Fit the model (or the style-controlled one) → which pairs may still take a
prompt (:mod:`planner.batch.pair_prompts`, array bookkeeping) → ``select_pairs`` →
stratum slots aimed at the population shares (:func:`planner.strata.stratum_weights`)
→ one prompt per pick (:func:`planner.workflows.allocate.choose_prompts`).
Every random choice comes from the caller's ``rng``, in a fixed order.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from planner.errors import DataError, UsageError


def target_shares(prompts, strata: Sequence[str]) -> dict[str, float]:
    """Population share of each stratum: the one rule, :func:`planner.strata.stratum_weights`."""
    from planner.strata import stratum_weights

    return stratum_weights(prompts, strata).weights


@dataclass(frozen=True)
class PlanFit:
    """The model fit a plan was made on, with what it depends on: the engine, the seed, style control
    and the judgments (systems, usable and invalid counts). A later plan of the same study state
    (``planner run``'s smaller retry, then the batch it issues) passes it back instead of fitting again;
    a plan whose inputs differ in any of these fits afresh. ``forecast`` is the saved forecast updated
    on the same judgments (None without one): it depends on the judgments alone, so a plan that reuses
    the fit reuses it too instead of fitting the study again to read ``resolved``."""

    fit: Any
    engine: str
    seed: int
    style_control: bool
    systems: tuple[str, ...]
    usable: int
    invalid: int
    forecast: Any = field(default=None, compare=False)

    @classmethod
    def of(cls, fit, selection, seed: int, forecast=None) -> PlanFit:
        return cls(fit, selection.engine, int(seed), bool(selection.style_control), tuple(fit.systems),
                   int(fit.n_usable), int(fit.n_invalid), forecast)

    def serves(self, judged, selection, seed: int) -> bool:
        return (self.engine, self.seed, self.style_control, self.systems, self.usable, self.invalid) == (
            selection.engine, int(seed), bool(selection.style_control), tuple(judged.systems),
            int(judged.usable.sum()), int(judged.invalid.sum()))


def _fit(judged_s, pending_s, study, selection, seed: int, notes: list[str], reuse: PlanFit | None = None):
    """``(judged, pending, fit)``: the counts pooled over strata, and the model's fit (``reuse``'s when
    it was made on the same inputs)."""
    from planner.model import fit as fit_model

    judged, pending = judged_s.pooled(), pending_s.pooled()
    if selection.style_control:   # the style-controlled strengths (planner.model.style_control)
        notes.append("style control: pairs chosen on the strengths controlled for length and markdown style")
    if reuse is not None and reuse.serves(judged, selection, seed):
        return judged, pending, reuse.fit
    if selection.style_control:
        from planner.model.style_control import controlled_fit
        from planner.services.style_data import read_style_inputs

        # model-based like the raw fit below: the selection accounts for clusters itself (_clusters)
        fit = controlled_fit(read_style_inputs(study), engine=selection.engine, seed=seed, cluster="none").fit
    else:
        fit = fit_model(judged, engine=selection.engine, seed=seed, progressbar=False)
    return judged, pending, fit


def _showable(study, max_words: int | None, notes: list[str]) -> list[tuple[str, str]]:
    """``(prompt, system)`` of the responses that may be shown (skip mode leaves out longer ones, noted)."""
    from planner.batch.textnorm import count_words

    if max_words is None:   # every response may be shown: the ids only, no texts
        return study.response_keys()
    shown: list[tuple[str, str]] = []
    too_long: dict[str, list[str]] = defaultdict(list)
    for r in study.responses():
        if count_words(r.text) > max_words:
            too_long[r.prompt].append(r.system)
            continue
        shown.append((r.prompt, r.system))
    if too_long:
        n = sum(len(v) for v in too_long.values())
        ids = sorted(too_long)
        notes.append(f"--max-words {max_words}: {n} response(s) longer than {max_words} words are not shown; "
                     f"other prompts were chosen instead. Prompts affected ({len(ids)}): "
                     + ", ".join(f"{p} ({', '.join(sorted(too_long[p]))})" for p in ids[:12])
                     + (" …" if len(ids) > 12 else "")
                     + ". This biases the sample against long answers; use --truncate to show them cut")
    return shown


def _pair_prompts(study, usage_codes, systems, reuse_prompts: bool, max_words: int | None, notes: list[str]):
    """The pairs' prompt bookkeeping, with the notes on reused and impossible pairs."""
    from planner.batch.pair_prompts import PairUsage, pair_prompts

    usage = PairUsage(systems, *usage_codes)   # the study's prompts: the only ones shown
    pp = pair_prompts(systems, _showable(study, max_words, notes), usage, reuse_prompts=reuse_prompts)
    reused = pp.n_reused()
    if reused:
        notes.append(f"{reused} system pair(s) have used every prompt and take one again (--reuse-prompts): "
                     "a fresh judgment of a comparison already judged")
    missing = [f"{a} vs {b}" for a, b in pp.missing()]
    if missing:
        notes.append(f"{len(missing)} system pair(s) have no prompt with responses from both systems and "
                     f"cannot be issued: {', '.join(missing[:5])}{' …' if len(missing) > 5 else ''}")
    if not np.any(pp.capacity > 0):
        raise DataError("no comparison can be issued: every system pair has used all prompts that have "
                        "responses from both systems (add prompts or responses, or allow `reuse_prompts`)",
                        parameters=('reuse_prompts',))
    return pp


def _received_by_stratum(received) -> Counter:
    """``{stratum: usable + invalid judgments}`` over the cells of ``received`` (one ``bincount``;
    a stratum is a key when it has a cell, as the cell-by-cell sum had it)."""
    cell_stratum = np.asarray(received.stratum, dtype=np.int64)
    n = np.asarray(received.usable + received.invalid, dtype=np.int64)
    k = len(received.strata)
    present = np.bincount(cell_stratum, minlength=k) > 0
    totals = np.bincount(cell_stratum, weights=n, minlength=k) if n.size else np.zeros(k)
    return Counter({received.strata[s]: int(totals[s]) for s in np.flatnonzero(present).tolist()})


def _stratum_slots(prompts, received, k: int, n_allowed: int, rng: np.random.Generator,
                   notes: list[str]) -> tuple[list[str], list[str]]:
    """``(strata, slots)``: one stratum per pick, aimed at the population shares, in a random order."""
    from planner.allocation.maths import plan_strata

    strata = sorted({p.stratum or "all" for p in prompts})
    target = target_shares(prompts, strata)
    already = _received_by_stratum(received)
    n_prompts = Counter(p.stratum or "all" for p in prompts)
    available = {s: n_prompts[s] * n_allowed for s in strata}
    if k > sum(available.values()):   # more picks than stratum slots: issue what can be, say so
        notes.append(f"{k - sum(available.values())} pick(s) dropped: the strata hold only "
                     f"{sum(available.values())} unused comparison slot(s) for the pairs that can be issued")
        k = sum(available.values())
    plan = plan_strata(target, already, k, available)
    slots = [s for s in strata for _ in range(plan.get(s, 0))]
    return strata, [slots[int(i)] for i in rng.permutation(len(slots))]


def _by_label(candidates: list, label: dict[str, str]) -> dict[str, list]:
    """``candidates`` grouped by stratum label, each group in the input order."""
    out: dict[str, list] = defaultdict(list)
    for p in candidates:
        out[label[p.id]].append(p)
    return out


def _choose(prompts, pp, pairs, strata, slots, rng, frozen_first: bool, notes: list[str], scores=None,
            drawn: list | None = None) -> list:
    """One prompt per (pair, stratum slot): the slot's stratum first, then the others; notes on the rest.

    With ``scores`` (:class:`planner.prompt_choice.PromptScores`) the prompt within the stratum is drawn
    by :func:`planner.prompt_choice.choose_prompt` (discriminative prompts preferred), and ``drawn``
    receives ``[prompt, system, system, stratum, probability]`` for each planned comparison (the
    probability with which that prompt was drawn among the pair's candidates of its stratum).
    """
    from planner.allocation.maths import choose_prompts, stratum_label
    from planner.batch.items import PlannedComparison

    systems = pp.systems
    by_id = {p.id: p for p in prompts}
    label = {p.id: stratum_label(p, "stratum") for p in prompts}
    # per pair, its prompts not yet used (nor taken by this batch), by stratum, sorted by id
    left: dict[tuple[int, int], dict[str, list]] = {}
    planned = []
    fallbacks = 0
    dropped: Counter[tuple[str, str]] = Counter()
    for (i, j), stratum in zip(pairs, slots):
        key = (min(i, j), max(i, j))
        if key not in left:
            left[key] = _by_label([by_id[pid] for pid in sorted(pp.unused(*key)) if pid in by_id], label)
        candidates = left[key]
        pid = None
        for s in [stratum] + [x for x in strata if x != stratum]:
            # only the stratum's own candidates: choose_prompts keeps exactly these, in this order
            if scores is not None:
                got, pi = _choose_discriminative(candidates.get(s, []), s, scores, rng, frozen_first)
            else:
                got = choose_prompts(candidates.get(s, []), s, 1, used=frozenset(), rng=rng,
                                     frozen_first=frozen_first)
            if got:
                pid = got[0]
                fallbacks += s != stratum
                break
        if pid is None:
            dropped[(systems[key[0]], systems[key[1]])] += 1
            continue
        group = candidates[label[pid]]
        del group[next(t for t, p in enumerate(group) if p.id == pid)]   # taken: not again in this batch
        planned.append(PlannedComparison(pid, systems[key[0]], systems[key[1]], by_id[pid].stratum or "all"))
        if drawn is not None:
            drawn.append([pid, systems[key[0]], systems[key[1]], label[pid], pi])
    if fallbacks:
        notes.append(f"{fallbacks} comparison(s) took a prompt from another stratum: their planned stratum had "
                     "no unused prompt for the pair")
    if dropped:
        notes.append("no unused prompt was left for " + ", ".join(f"{a} vs {b} (x{n})" for (a, b), n in
                                                                   sorted(dropped.items()))
                     + "; those picks were dropped")
    if not planned:
        raise DataError("no comparison can be issued: the chosen pairs have no unused prompts left")
    return planned


def _choose_discriminative(candidates, stratum, scores, rng, frozen_first: bool) -> tuple[list[str], float | None]:
    """(the drawn prompt as a one-element list, or [], and its draw probability)."""
    from planner.prompt_choice import choose_prompt

    got = choose_prompt(candidates, stratum, scores, rng, frozen_first=frozen_first)
    return ([], None) if got is None else ([got[0]], got[1])


def _selection_options(sel):
    """The acquisition's tunables for ``sel``: the defaults, with ``tie_margin`` (Elo) in logits."""
    from planner.acquisition.options import SelectionOptions
    from planner.model.bt import ELO_SCALE

    margin = float(getattr(sel, "tie_margin", 0.0))
    return SelectionOptions(tie_margin=margin / ELO_SCALE) if margin else SelectionOptions()


def _prompt_scores(study, fit, prompts, prompts_by: str, notes: list[str]):
    """The shrunk per-prompt scores for ``prompts_by="discriminative"``, else None (uniform, today's choice)."""
    from planner.prompt_choice import check_mode, prompt_scores

    if check_mode(prompts_by) == "uniform":
        return None
    strengths = dict(zip(fit.posterior.systems, fit.posterior.mean))
    scores = prompt_scores(study.judgments(), strengths, {p.id: p.stratum or "all" for p in prompts})
    preferring = sorted(h for h, s in scores.strata.items() if s.tau2 > 0)
    notes.append("prompts by discriminativeness: the shrunk prompt scores differ within stratum(s) "
                 + (", ".join(preferring) if preferring else "none") + " (elsewhere prompts are drawn uniformly);"
                 " within-stratum results then describe the prompts as drawn, not the stratum's prompts uniformly")
    return scores


def plan_next_batch(study, selection, *, seed: int, rng: np.random.Generator, max_words: int | None = None,
                    reuse: PlanFit | None = None):
    """Choose ``selection.size`` (prompt, system pair, stratum) comparisons for the study.

    ``selection`` is a :class:`planner.workflows.next_batch.BatchSelection` (size,
    strategy, objective, top_k, engine, style_control, frozen_first,
    reuse_prompts, prompts_by); ``seed`` is the seed in force (the fit's), ``rng`` the
    batch's one generator.

    A pair takes prompts not yet judged or issued for it; with ``reuse_prompts``
    a pair that has used all of its prompts may take one again (a fresh
    judgment of the same comparison).

    With ``max_words`` (skip mode, no truncation) responses longer than that
    are not eligible, so pairs take other prompts and ``size`` is honoured as
    far as eligible prompts allow; one note names the prompts affected.

    ``reuse``: the :class:`PlanFit` of an earlier plan, used when it was made on the same inputs.

    Returns ``(planned, selection_result, fit, notes, prompt_choice)``; ``prompt_choice`` is None
    unless ``prompts_by`` is discriminative (then each planned prompt's draw probability); ``planned`` is a list of
    :class:`planner.batch.items.PlannedComparison`.
    """
    from planner.acquisition import select_pairs
    from planner.prompt_choice import check_mode
    from planner.stats.blas import blas_policy

    sel = selection
    check_mode(getattr(sel, "prompts_by", "uniform"))   # before the fit: a bad value costs nothing
    systems = tuple(study.systems)
    notes: list[str] = []
    # the Laplace fit's and the selection's dense algebra on one BLAS thread (planner.stats.blas_policy);
    # NUTS keeps BLAS's own threads (its sampler runs as before)
    # counts by stratum, pending and the pairs' used prompts: one scan of the judgments (Study.plan_counts)
    judged_s, pending_s, usage_codes = study.plan_counts()
    with blas_policy(sel.engine):
        judged, pending, fit = _fit(judged_s, pending_s, study, sel, seed, notes, reuse)
    prompts = list(study.prompts())
    pp = _pair_prompts(study, usage_codes, systems, sel.reuse_prompts, max_words, notes)
    allowed = pp.allowed()
    anchor = study.anchor
    if (sel.strategy == "anchor" or sel.objective == "anchor") and anchor is None:
        raise UsageError("`strategy`/`objective` anchor needs an anchor system; the study has none "
                         "(set one with planner init `anchor`)", parameters=('strategy', 'objective', 'anchor'))
    draws = fit.beta_draws if sel.engine == "nuts" else None
    with blas_policy(sel.engine):
        result = select_pairs(fit.posterior, sel.size, strategy=sel.strategy, objective=sel.objective,
                              top_k=sel.top_k, anchor=anchor, judged=judged, pending=pending, rng=rng,
                              draws=draws, allowed=allowed, capacity=pp.capacities(),
                              clusters=_clusters(pp, judged + pending), options=_selection_options(sel))
    notes.extend(result.notes)   # what the strategy could not do (short batch, swiss fallback)
    strata, slots = _stratum_slots(prompts, judged_s + pending_s, len(result.pairs), len(allowed), rng, notes)
    scores = _prompt_scores(study, fit, prompts, getattr(sel, "prompts_by", "uniform"), notes)
    drawn: list | None = [] if scores is not None else None
    planned = _choose(prompts, pp, result.pairs, strata, slots, rng, sel.frozen_first, notes, scores, drawn)
    return planned, result, fit, notes, _prompt_choice_record(drawn)


def _clusters(pp, counts):
    """What the selection knows of the (prompt, pair) clusters: each pair's verdicts over its used prompts,
    and the prompts it has not used (:func:`planner.acquisition.clustering.from_pair_usage`; ICC: the default)."""
    from planner.acquisition.clustering import from_pair_usage

    m = len(pp.systems)
    per = np.zeros((m, m))
    np.add.at(per, (counts.a, counts.b), counts.usable + counts.invalid)
    n = (per + per.T)[pp.pair_i, pp.pair_j]
    return from_pair_usage(pp.pair_i, pp.pair_j, n, pp.n_both - pp.n_fresh, pp.n_fresh)


def _prompt_choice_record(drawn) -> dict | None:
    """The manifest's ``prompt_choice`` (``--prompts-by discriminative``): how each prompt was drawn."""
    if drawn is None:
        return None
    from planner.prompt_choice import DEFAULT_FLOOR, DEFAULT_POWER

    return {"mode": "discriminative", "floor": DEFAULT_FLOOR, "power": DEFAULT_POWER,
            "columns": ["prompt", "system_a", "system_b", "stratum", "probability"], "draws": drawn}
