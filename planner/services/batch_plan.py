"""The next batch planned on an open study: :func:`plan_batch` → :class:`BatchPlan` (frozen, typed).

The data flow (each step owned by its module)::

    study (counts, pending)  ──► model.fit (Laplace or NUTS; or the style-controlled fit)
                             ──► acquisition.select_pairs  (which system pairs; greedy,
                                                            pending items fantasized)
                             ──► allocation.plan_strata / choose_prompts
                                                           (which stratum and prompt per pair)
                             ──► batch.assemble_batch      (positions, QC items, opaque ids)

(:mod:`planner.services.batch_choice` owns the fit and the choice; ``--for humans`` draws by the
surrogate judge's residual error instead.) Nothing is written: :func:`planner.services.batch_issue.issue_batch`
renders, stages and records a plan. The manifest the study stores is :meth:`BatchPlan.to_manifest`,
built once from the typed plan at the store boundary.

Same study state + same options + same seed → the same plan (every random choice through one
generator seeded by the seed in force: the given one, else the study's seed plus the batches issued).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from planner.errors import DataError, UsageError, quote
from planner.services.batch_choice import PlanFit, plan_next_batch
from planner.services.batch_options import BatchSelection, HumansDesign, QualityControl, TextOptions

#: ``planner init`` stored ``max_words: 400`` in every study config whether asked or not; that silent
#: default dropped 22 of 640 Vicuna80 answers (12 of them gpt-4's, under a judge whose longer answer
#: wins 73%). In those configs (``planner_study`` 1) it is treated as "no limit"; any other stored
#: value was chosen and is honoured. ``planner_study`` 2 configs store only what was asked for (null: no limit).
LEGACY_DEFAULT_MAX_WORDS = 400


def word_limit(max_words: int | None, config: dict) -> int | None:
    """The word limit in force: ``--max-words`` if given, else the study's unless it is the old silent default."""
    if max_words is not None:
        return int(max_words)
    stored = config.get("max_words")
    legacy = config.get("planner_study", 1) == 1 and int(stored or 0) == LEGACY_DEFAULT_MAX_WORDS
    if stored is None or legacy:
        return None
    return int(stored)


def annotator_names(annotators) -> tuple[str, ...] | None:
    """``annotators`` (a count, ``"N"``, names or ``"x,y"``) as names, checked before any path is built."""
    if annotators is None:
        return None
    if isinstance(annotators, int) or (isinstance(annotators, str) and annotators.strip().isdigit()):
        n = int(annotators)
        if n < 1:
            raise UsageError(f"`annotators` ({n}) must be >= 1 or a comma-separated list of names",
                             parameters=('annotators',))
        return tuple(f"a{i + 1}" for i in range(n))
    from planner.names import annotator_name_problem

    names = [a.strip() if isinstance(a, str) else a
             for a in (annotators.split(",") if isinstance(annotators, str) else annotators)]
    names = [a for a in names if a]
    if not names:
        raise UsageError("`annotators` must be a number or a comma-separated list of names",
                         parameters=('annotators',))
    for a in names:   # before any path is built from a name ('../../evil' would leave the output folder)
        if annotator_name_problem(a):
            raise UsageError(f"`annotators`: {quote(a)} {annotator_name_problem(a)}", parameters=('annotators',))
    return tuple(names)


@dataclass(frozen=True)
class PlanOptions:
    """What a plan depends on besides the study: the option groups of ``next-batch`` that shape the
    batch (:class:`BatchSelection`, :class:`QualityControl`, :class:`TextOptions`, :class:`HumansDesign`),
    the output ``format`` (recorded in the manifest) and ``redact_names`` (the name-mention note).

    Each group checked itself when built; here the checks that need two groups (``for`` humans with a
    ranked selection's options), and the derived ``annotators`` (names) and ``attention_pool`` (texts),
    read before any study is opened.
    """

    selection: BatchSelection = field(default_factory=BatchSelection)
    qc: QualityControl = field(default_factory=QualityControl)
    text: TextOptions = field(default_factory=TextOptions)
    humans: HumansDesign = field(default_factory=HumansDesign)
    format: str = "jsonl"
    redact_names: bool = False
    annotators: tuple[str, ...] | None = field(init=False, default=None)
    attention_pool: tuple[str, ...] | None = field(init=False, default=None, repr=False)

    def __post_init__(self):
        from planner import limits
        from planner.formats.writers import FORMATS, read_attention_pool

        for name, cls in (("selection", BatchSelection), ("qc", QualityControl), ("text", TextOptions),
                          ("humans", HumansDesign)):
            if not isinstance(getattr(self, name), cls):
                raise UsageError(f"next_batch's {name} ({type(getattr(self, name)).__name__}) must be a "
                                 f"{cls.__name__}", parameters=(name,))
        limits.check_choice("format", self.format, FORMATS)
        limits.check_flag("redact_names", self.redact_names)
        if self.humans.for_ == "humans":   # the ranked selection's options were silently ignored: no strengths
            for name in ("style_control", "tie_margin"):
                if getattr(self.selection, name):
                    raise UsageError(f"`{name}` does not apply with `for` humans: that design draws items by the "
                                     "judge's residual error, not by the strengths; drop one of the two",
                                     parameters=(name, "for"))
        object.__setattr__(self, "annotators", annotator_names(self.qc.annotators))
        if self.qc.attention_pool is not None:
            object.__setattr__(self, "attention_pool", tuple(read_attention_pool(self.qc.attention_pool)))


@dataclass(frozen=True)
class FitSummary:
    """The model fit a plan was made on: engine, usable and invalid judgments, each system's posterior
    strength (mean, sd, interval; rounded to 6 places as stored), γ and ν, and the fit's warnings."""

    engine: str
    usable: int
    invalid: int
    strengths: tuple[tuple[str, float, float, float, float], ...]
    gamma: float
    nu: float
    warnings: tuple[str, ...]

    @classmethod
    def of(cls, fit) -> FitSummary:
        lo, hi = fit.interval()
        return cls(fit.engine, fit.n_usable, fit.n_invalid,
                   tuple((s, round(float(m), 6), round(float(sd), 6), round(float(a), 6), round(float(b), 6))
                         for s, m, sd, a, b in zip(fit.systems, fit.mean, fit.sd, lo, hi)),
                   round(float(fit.gamma.mean), 6), round(float(fit.nu.mean), 6), tuple(fit.diagnostics.warnings))

    def top3(self) -> tuple[str, ...]:
        """The top 3 systems by posterior mean strength (ties: the study's order)."""
        return tuple(s for s, *_ in sorted(self.strengths, key=lambda r: -r[1])[:3])

    def to_dict(self) -> dict:
        return {"engine": self.engine, "usable_judgments": self.usable, "invalid_judgments": self.invalid,
                "strengths": {s: {"mean": m, "sd": sd, "lo": lo, "hi": hi} for s, m, sd, lo, hi in self.strengths},
                "gamma": self.gamma, "nu": self.nu, "warnings": list(self.warnings)}


@dataclass(frozen=True)
class SelectionSummary:
    """What the selection expects of the batch: the objective before and after it, the expected
    reduction, whether the objective's decision is settled, and the one-sentence advice."""

    expected_reduction: float
    objective_before: float
    objective_after: float
    settled: bool
    advice: str

    @classmethod
    def of(cls, selection) -> SelectionSummary:
        return cls(float(selection.expected_reduction), float(selection.value_before), float(selection.value_after),
                   bool(selection.settled), selection.reason)


@dataclass(frozen=True)
class NameMentions:
    """System names in the batch's response texts: items and mentions counted, the first 10 items,
    and whether they were redacted."""

    items: int
    mentions: int
    first_items: tuple[str, ...]
    redacted: bool

    def to_dict(self) -> dict:
        return {"items": self.items, "mentions": self.mentions, "first_items": list(self.first_items),
                "redacted": self.redacted}


@dataclass(frozen=True)
class BatchPlan:
    """The next batch, planned and assembled, nothing written.

    ``number`` is the batch's number in the study (batches so far + 1); ``seed`` the seed in force;
    ``fit`` the fit summary (None for ``for`` humans) and ``plan_fit`` the fit itself for a later plan of
    the same study state to reuse; ``selection`` what the selection expects; ``planned`` the
    comparisons; ``batch`` the assembled :class:`planner.batch.assemble.Batch` (items, QC, ids);
    ``rates`` the QC rates in force; ``max_words`` the word limit in force; ``mentions`` the name
    mentions; ``prompt_choice`` the prompt draws' record (``prompts_by`` discriminative), ``for_humans``
    the design drawn for human labels, ``forecast`` the saved forecast updated (each None when absent).
    """

    options: PlanOptions
    number: int
    seed: int
    fit: FitSummary | None
    selection: SelectionSummary
    planned: tuple
    batch: Any = field(repr=False)
    rates: tuple[tuple[str, float], ...]
    max_words: int | None
    notes: tuple[str, ...]
    mentions: NameMentions
    prompt_choice: dict | None = field(default=None, repr=False)
    for_humans: dict | None = field(default=None, repr=False)
    forecast: Any = None
    plan_fit: PlanFit | None = field(default=None, repr=False, compare=False)

    @property
    def items(self) -> tuple:
        return tuple(self.batch.items)

    @property
    def settled(self) -> bool:
        return self.selection.settled

    @property
    def advice(self) -> str:
        return self.selection.advice

    def to_manifest(self) -> dict:
        """The manifest the study stores (before the files and rendering), key order as recorded."""
        sel, opt = self.options.selection, self.options
        humans = self.for_humans is not None
        m = {
            "batch": self.number,
            "seed": int(self.seed),
            "strategy": "for humans" if humans else sel.strategy,
            "objective": "hybrid (IPW-PPI)" if humans else (
                sel.objective if sel.objective != "top-k" else f"top-k={sel.top_k}"),
            "engine": sel.engine,
            "size": int(sel.size),
            "format": opt.format,
            "expected_reduction": self.selection.expected_reduction,
            "objective_before": self.selection.objective_before,
            "objective_after": self.selection.objective_after,
            "settled": self.selection.settled,
            "advice": self.selection.advice,
            "model": self.fit.to_dict() if self.fit is not None else {"engine": "none (--for humans)",
                                                                      "warnings": []},
            "batch_manifest": self.batch.manifest.to_json(),
            "attention_expected": {it.item_id: it.expected for it in self.batch.items if it.kind == "attention"},
            "notes": list(self.notes),
            "name_mentions": self.mentions.to_dict(),
        }
        if humans:
            m["for_humans"] = self.for_humans
        if self.prompt_choice is not None:
            m["prompt_choice"] = self.prompt_choice
        if self.forecast is not None:
            m["forecast"] = self.forecast.to_dict()
        return m


def qc_rates(config: dict, names, qc: QualityControl) -> dict[str, float]:
    """The QC rates in force: the options', else the study's ``qc`` settings."""
    stored = dict(config.get("qc", {}))
    rates = {k: (v if v is not None else float(stored.get(k, 0.0)))
             for k, v in (("attention", qc.attention), ("repeat", qc.repeat), ("overlap", qc.overlap),
                          ("acceptability", qc.acceptability))}
    if (names is None or len(names) < 2) and rates["overlap"] > 0 and qc.overlap is None:
        # the study's default overlap rate does not apply to a single annotator: silently 0 (a note on
        # every single-annotator batch was noise); an explicit --overlap is refused in batch.py
        rates["overlap"] = 0.0
    return rates


def plan_batch(study, options: PlanOptions, *, reuse: PlanFit | None = None) -> BatchPlan:
    """Plan the study's next batch: fit (or ``reuse``'s fit when made on the same inputs), choose the
    comparisons, assemble the blinded items. Writes nothing; see the module docstring."""
    if not isinstance(options, PlanOptions):
        raise UsageError(f"plan_batch's options ({type(options).__name__}) must be PlanOptions",
                         parameters=("options",))
    config = study.config
    sel, text = options.selection, options.text
    notes: list[str] = []
    rates = qc_rates(config, options.annotators, options.qc)
    number = len(study.batches()) + 1
    seed = sel.seed if sel.seed is not None else int(config.get("seed", 0)) + number - 1
    rng = np.random.default_rng(seed)
    words = word_limit(text.max_words, config)
    design = prompt_choice = fit = None
    if options.humans.for_ == "humans":
        drawn = _draw_for_humans(study, options.humans, sel.size, rng)
        planned, selection, design, plan_notes = drawn.planned, drawn.selection, drawn.design, drawn.notes
    else:
        planned, selection, fit, plan_notes, prompt_choice = plan_next_batch(
            study, sel, seed=seed, rng=rng, max_words=None if text.truncate else words, reuse=reuse)
    notes.extend(plan_notes)
    batch = _assemble(study, planned, rates, options, words, rng)
    if batch.skipped:
        reasons = Counter(s.reason for s in batch.skipped)
        notes.append("skipped " + "; ".join(f"{n} × {r}" for r, n in reasons.most_common()))
    mentions = _name_mentions(batch, study.systems, options.redact_names, notes)
    # a reused fit was made on these judgments: so was its forecast (no second fit to read ``resolved``)
    forecast = reuse.forecast if reuse is not None and fit is not None and fit is reuse.fit else _forecast(study)
    return BatchPlan(options, number, seed, None if fit is None else FitSummary.of(fit), SelectionSummary.of(selection),
                     tuple(planned), batch, tuple(rates.items()), words, tuple(notes), mentions, prompt_choice,
                     design, forecast, None if fit is None else PlanFit.of(fit, sel, seed, forecast))


def _draw_for_humans(study, humans: HumansDesign, size: int, rng):
    """``--for humans``: the surrogate's items, those an earlier live round chose that still wait for
    votes, the prompts' strata, read from the study; the draw itself is
    :func:`planner.hybrid.draw.draw_for_humans`."""
    from planner.hybrid.draw import draw_for_humans, waiting_mask
    from planner.services.study_pilot import items_from_study
    from planner.strata import stratum_of

    if not humans.surrogate:
        raise UsageError("`for` humans needs `surrogate` JUDGE (the annotator whose verdicts predict the humans)",
                         parameters=('for', 'surrogate'))
    items = items_from_study(study, humans.surrogate)
    chosen = [c for b in study.batches() if not b.voided and b.manifest.get("for_humans") and b.pending
              for c in b.manifest["for_humans"]["chosen"]]
    return draw_for_humans(items, surrogate=humans.surrogate, size=size, rng=rng,
                           stratum_of={p.id: stratum_of(p) for p in study.prompts()},
                           waiting=waiting_mask(items, chosen), floor=humans.floor)


def _forecast(study):
    """The forecast saved by ``planner plan``, updated with the judgments now (None when none is saved);
    ``resolved`` is read on the plain Laplace fit, as the forecast's loop reads it."""
    from planner.services.forecast_saved import remaining

    return remaining(study)


def _assemble(study, planned, rates: dict[str, float], options: PlanOptions, words, rng):
    """The blinded batch of the planned comparisons (QC items, positions, ids)."""
    from planner.batch.assemble import assemble_batch

    text = options.text
    names = list(options.annotators) if options.annotators is not None else None
    pool = list(options.attention_pool) if options.attention_pool is not None else None
    batch = assemble_batch(planned, prompt_text={p.id: p.text for p in study.prompts()},
                           response_text=study.response_texts(), rng=rng,   # read on demand
                           attention=rates["attention"], repeat=rates["repeat"], overlap=rates["overlap"],
                           both_orders=options.qc.both_orders, acceptability=rates["acceptability"],
                           annotators=names, attention_pool=pool, max_words=words, truncate=text.truncate,
                           normalize_style=text.normalize_style,
                           previous_items=[it.item_id for it in study.items()])
    if not batch.items:
        raise DataError("no item could be issued: every planned comparison was skipped "
                        f"({len(batch.skipped)} skipped; see `max_words`/`truncate`)",
                        parameters=('max_words', 'truncate'))
    return batch


def _name_mentions(batch, systems, redact: bool, notes: list[str]) -> NameMentions:
    """Count system names in response texts; a note for stderr."""
    from planner.blinding import mentions_note, name_mentions

    mentions = name_mentions(batch.items, systems)
    note = mentions_note(mentions, redacted=redact)
    if note:
        notes.append(note)
    return NameMentions(len(mentions), sum(sum(v.values()) for v in mentions.values()), tuple(list(mentions)[:10]),
                        bool(redact and mentions))
