"""The option objects of :func:`planner.workflows.next_batch.next_batch` (re-exported there);
`run`, `demo` and `run_humans` build their batches with them too.

Five frozen groups instead of thirty keyword parameters: :class:`BatchSelection`
(which comparisons), :class:`QualityControl` (QC items and annotators),
:class:`Output` (files), :class:`TextOptions` (what the annotator sees),
:class:`HumansDesign` (``--for humans``). Each group checks its own values when
it is built (``__post_init__``, through :mod:`planner.limits`: a one-line
:class:`~planner.errors.UsageError` naming the parameter); ``next_batch`` checks
what needs two groups or the study (``for`` humans with ``style_control``, a
word limit with ``truncate``, the study's QC rates).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import TYPE_CHECKING

from planner import limits
from planner.errors import UsageError
from planner.vocabulary import ENGINES, OBJECTIVES, QC_KINDS, STUDY_STRATEGIES

if TYPE_CHECKING:
    from planner.services.batch_choice import PlanFit

DEFAULT_SIZE = 50
#: who a batch is for: the ranked selection, or human labels where the surrogate judge is least reliable
FOR = ("ranking", "humans")


@dataclass(frozen=True)
class BatchSelection:
    """Which comparisons: how many, chosen how, on which posterior.

    ``size`` planned comparisons (regular items, 1..:data:`MAX_SIZE`);
    ``strategy``/``objective``/``top_k`` as :func:`planner.acquisition.select_pairs`;
    ``engine`` ``"laplace"`` or ``"nuts"``; ``seed`` >= 0 (default: the study's
    seed + the batches already issued); ``style_control``: select on the
    style-controlled strengths (``report --style-control``); ``frozen_first``:
    frozen prompts first; ``reuse_prompts``: let a pair that has used every
    prompt take one again; ``prompts_by``: ``"uniform"`` (default) or
    ``"discriminative"`` (prefer prompts that separate systems within a
    stratum, :mod:`planner.prompt_choice`); ``tie_margin``: practical-equivalence
    margin in Elo (0: off): a pair within ``± tie_margin`` with probability above
    the settling threshold is settled as tied (stopping advice, and the
    ranking/top-k objectives stop spending on it).
    """

    size: int = DEFAULT_SIZE
    strategy: str = "active"
    objective: str = "ranking"
    top_k: int | None = None
    engine: str = "laplace"
    seed: int | None = None
    style_control: bool = False
    frozen_first: bool = True
    reuse_prompts: bool = False
    prompts_by: str = "uniform"
    tie_margin: float = 0.0

    def __post_init__(self):
        from planner.prompt_choice import check_mode

        limits.check_int("size", self.size, 1, limits.MAX_BATCH_SIZE)
        limits.check_choice("strategy", self.strategy, STUDY_STRATEGIES)
        limits.check_choice("objective", self.objective, OBJECTIVES)
        if self.objective == "top-k" and self.top_k is None:
            raise UsageError("`objective` top-k needs `top_k` K with K >= 1", parameters=("objective", "top_k"))
        limits.check_optional_int("top_k", self.top_k, 1)
        limits.check_choice("engine", self.engine, ENGINES)
        limits.check_seed("seed", self.seed)
        for name in ("style_control", "frozen_first", "reuse_prompts"):
            limits.check_flag(name, getattr(self, name))
        check_mode(self.prompts_by)
        limits.check_float("tie_margin", self.tie_margin, 0.0, math.inf, unit="Elo points")


@dataclass(frozen=True)
class QualityControl:
    """QC items and who gets the batch.

    ``attention``/``repeat``/``overlap``/``acceptability``: fractions of the
    final batch in [0, 1) (sum < 1; default: the study's ``qc`` settings; the
    study's overlap rate does not apply to a single annotator);
    ``both_orders``: also issue every comparison in swapped order;
    ``annotators``: int N (names ``a1..aN``), names, or ``"N"``/``"x,y"``: one
    file per annotator; ``attention_pool``: file of texts for the broken side
    of attention items.
    """

    attention: float | None = None
    repeat: float | None = None
    overlap: float | None = None
    acceptability: float | None = None
    both_orders: bool = False
    annotators: Sequence[str] | int | str | None = None
    attention_pool: str | Path | None = None

    def __post_init__(self):
        from planner.batch.assemble import check_qc_rate

        for name in QC_KINDS:
            if getattr(self, name) is not None:
                check_qc_rate(name, getattr(self, name))
        limits.check_flag("both_orders", self.both_orders)


@dataclass(frozen=True)
class Output:
    """Where and how the batch is written.

    ``out``: output file (extension optional; default
    ``<study>/batches/batch-<n>``); ``format``: one of
    :data:`planner.formats.writers.FORMATS`; ``force``: overwrite;
    ``dry_run``: plan and report, write nothing; ``template``: judge prompt
    template file; ``judge_model``: ``body.model`` of judge requests;
    ``temperature``: explicit judge temperature (see
    :func:`planner.formats.writers.judge_temperature`); ``redact_names``:
    replace system-name mentions in response texts by ``[a model]``.
    """

    out: str | Path | None = None
    format: str = "jsonl"
    force: bool = False
    dry_run: bool = False
    template: str | Path | None = None
    judge_model: str | None = None
    temperature: float | None = None
    redact_names: bool = False

    def __post_init__(self):
        from planner.formats.writers import FORMATS, check_temperature

        limits.check_choice("format", self.format, FORMATS)
        for name in ("force", "dry_run", "redact_names"):
            limits.check_flag(name, getattr(self, name))
        check_temperature(self.temperature)


@dataclass(frozen=True)
class TextOptions:
    """One-screen, style-blind items (:mod:`planner.batch`).

    ``max_words`` defaults to no limit (a study's stored ``max_words`` other
    than the old silent default 400 is honoured); in skip mode (no
    ``truncate``) long responses are excluded before the prompts are chosen,
    so ``size`` is honoured with other prompts. ``normalize_style``:
    ``"none"``, ``"markdown"`` or ``"full"``.
    """

    max_words: int | None = None
    truncate: bool = False
    normalize_style: str = "none"

    def __post_init__(self):
        from planner.batch.textnorm import NORMALIZE_STYLES

        limits.check_optional_int("max_words", self.max_words, 1)
        limits.check_flag("truncate", self.truncate)
        limits.check_choice("normalize_style", self.normalize_style, NORMALIZE_STYLES)


@dataclass(frozen=True)
class HumansDesign:
    """``for_="humans"``: items for human labels where the ``surrogate`` judge is least reliable.

    Drawn with known probabilities (``size`` = expected labels, ``floor`` the
    uniform share); see :func:`planner.hybrid.draw.draw_for_humans`.
    The design is recorded in the manifest (``for_humans``) for ``report --surrogate``.
    """

    for_: str = "ranking"
    surrogate: str | None = None
    floor: float = 0.2

    def __post_init__(self):
        limits.check_choice("for", self.for_, FOR)
        if self.for_ != "humans" and self.surrogate is not None:
            raise UsageError("`surrogate` is used only with `for` humans", parameters=("surrogate", "for"))
        limits.check_float("floor", self.floor, 0.0, 1.0, low_open=True)   # the uniform share


_OPTION_TYPES = {"selection": BatchSelection, "qc": QualityControl, "output": Output, "text": TextOptions,
                 "humans": HumansDesign}


def options_from(**flat) -> dict:
    """The option objects of :func:`next_batch` from flat field names (for callers that hold them flat).

    ``next_batch(study, **options_from(size=12, format="csv", annotators=2))``
    is ``next_batch(study, BatchSelection(size=12), qc=QualityControl(annotators=2),
    output=Output(format="csv"))``. An unknown name is a usage error.
    """
    grouped: dict[str, dict] = {}
    owner = {f.name: arg for arg, cls in _OPTION_TYPES.items() for f in fields(cls)}
    for name, value in flat.items():
        if name not in owner:
            raise UsageError(f"next_batch option {name!r} is not one of {', '.join(sorted(owner))}", parameters=())
        grouped.setdefault(owner[name], {})[name] = value
    return {arg: _OPTION_TYPES[arg](**kw) for arg, kw in grouped.items()}


def option_objects(**given) -> tuple:
    """The five option objects (defaults for the ones not given); a wrong type is a usage error."""
    out = []
    for name, cls in _OPTION_TYPES.items():
        value = given[name]
        if value is None:
            value = cls()
        elif not isinstance(value, cls):
            raise UsageError(f"next_batch's {name} ({type(value).__name__}) must be a {cls.__name__}",
                             parameters=(name,))
        out.append(value)
    return tuple(out)


@dataclass(frozen=True)
class HumansDraw:
    """A batch drawn for human labels: ``chosen`` items, ``expected_labels``, the ``surrogate`` judge."""

    chosen: int
    expected_labels: float
    surrogate: str


@dataclass(frozen=True)
class BatchSummary:
    """What ``next-batch`` shows of its batch, typed (read from the manifest the study stores):
    items and comparisons, the plan's strategy/objective/seed, comparisons per pair (``(systems, n)``),
    items per kind, comparisons per stratum, the objective before and after, the model's warnings, the
    draw for humans (None for a ranked batch), the saved forecast's sentence ("" when none) and the top 3
    systems by the fit's posterior mean strength (none without a fit)."""

    n_items: int
    n_comparisons: int
    strategy: str
    objective: str
    seed: int
    per_pair: tuple[tuple[tuple[str, ...], int], ...]
    kinds: tuple[tuple[str, int], ...]
    per_stratum: tuple[tuple[str, int], ...]
    objective_before: float
    objective_after: float
    model_warnings: tuple[str, ...]
    for_humans: HumansDraw | None
    forecast: str
    top3: tuple[str, ...] = ()

    @classmethod
    def of(cls, manifest: dict) -> BatchSummary:
        bm = manifest["batch_manifest"]
        fh = manifest.get("for_humans")
        humans = None if not fh else HumansDraw(len(fh["chosen"]), float(fh["expected_labels"]), fh["surrogate"])
        return cls(int(bm["n_items"]), int(bm["n_comparisons"]), manifest["strategy"], manifest["objective"],
                   int(manifest["seed"]), tuple((tuple(r["systems"]), int(r["n"])) for r in bm.get("per_pair") or ()),
                   tuple((k, int(v)) for k, v in (bm.get("kinds") or {}).items()),
                   tuple((k, int(v)) for k, v in (bm.get("per_stratum") or {}).items()),
                   float(manifest["objective_before"]), float(manifest["objective_after"]),
                   tuple((manifest.get("model") or {}).get("warnings") or ()), humans,
                   (manifest.get("forecast") or {}).get("sentence") or "", _top3(manifest))


def _top3(manifest: dict) -> tuple[str, ...]:
    """The top 3 systems by posterior mean strength in the manifest's model summary."""
    s = (manifest.get("model") or {}).get("strengths") or {}
    return tuple(sorted(s, key=lambda k: -s[k]["mean"])[:3])


@dataclass(frozen=True)
class NextBatchResult:
    """What ``next-batch`` did (or, with ``dry_run``, would do).

    Attributes
    ----------
    batch_id : int or None
        Study batch id (None for a dry run).
    files : tuple of str
        Files written (empty for a dry run).
    manifest : dict
        Seed, strategy, objective, engine, model summary, counts per
        pair/stratum/kind, expected uncertainty reduction, stopping advice.
    settled : bool
        Whether the objective's decision is already settled (stopping advice).
    advice : str
        One sentence of stopping advice.
    notes : tuple of str
        Everything skipped or changed on the way (never silent).
    plan_fit : PlanFit or None
        The model fit the plan was made on (None for ``for`` humans), for a later plan of the same
        study state to reuse (``next_batch(..., reuse=)``).
    """

    batch_id: int | None
    files: tuple[str, ...]
    manifest: dict
    settled: bool
    advice: str
    notes: tuple[str, ...] = ()
    dry_run: bool = False
    items: tuple = field(default=(), repr=False)
    plan_fit: PlanFit | None = field(default=None, repr=False, compare=False)

    @property
    def issued(self) -> int:
        """The id of the batch written (a dry run wrote none: ValueError)."""
        if self.batch_id is None:
            raise ValueError("a dry run issues no batch")
        return self.batch_id

    @property
    def summary(self) -> BatchSummary:
        """The batch as the CLI shows it (typed; the manifest stays the stored and ``--json`` form)."""
        return BatchSummary.of(self.manifest)

    def to_dict(self) -> dict:
        return {"batch_id": self.batch_id, "files": list(self.files), "dry_run": self.dry_run,
                "settled": self.settled, "advice": self.advice, "notes": list(self.notes),
                "manifest": self.manifest}
