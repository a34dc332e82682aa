"""One round of an unattended loop on an open study: the batch planned to fit the budget left.

``planner run`` (the judge) and ``planner run --annotators-via label-studio`` (humans) share the
options, a round's record, the result, and the round's plan: :func:`plan_round` plans once
(:func:`planner.services.batch_plan.plan_batch`) and, while the plan's items overflow the budget
left, plans again smaller on the same fit (``reuse``), so a round fits the model once; the
plan is issued as it is (:func:`plan_and_issue`; :func:`planner.services.batch_issue.issue_batch`).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from planner import limits
from planner.errors import DataError
from planner.services.batch_issue import IssuedBatch, issue_batch
from planner.services.batch_options import BatchSelection, Output, QualityControl
from planner.services.batch_plan import BatchPlan, PlanOptions, plan_batch
from planner.vocabulary import ENGINES, OBJECTIVES, STUDY_STRATEGIES

UNTIL = ("settled", "budget")
STOP_REASONS = ("settled", "budget", "cost", "interrupted", "exhausted", "no-answers")


@dataclass(frozen=True)
class RunOptions:
    """``budget`` judgments (items the judge model answered, QC included; pending items are reserved, not
    counted as used); ``batch_size`` planned
    comparisons per round; ``until`` ``settled`` (stopping advice, budget or cost) or ``budget``."""

    budget: int
    batch_size: int = 20
    until: str = "settled"
    both_orders: bool = False
    strategy: str = "active"
    objective: str = "ranking"
    engine: str = "laplace"

    def __post_init__(self):
        limits.check_int("budget", self.budget, 1)   # judgments
        limits.check_int("batch_size", self.batch_size, 1, limits.MAX_BATCH_SIZE)
        limits.check_choice("until", self.until, UNTIL)
        limits.check_flag("both_orders", self.both_orders)
        limits.check_choice("strategy", self.strategy, STUDY_STRATEGIES)
        limits.check_choice("objective", self.objective, OBJECTIVES)
        limits.check_choice("engine", self.engine, ENGINES)

    def plan_options(self, size: int, fmt: str, annotators: tuple[str, ...] = ()) -> PlanOptions:
        """A round's :class:`PlanOptions`: ``size`` comparisons for ``fmt`` files (and ``annotators``)."""
        return PlanOptions(BatchSelection(size=size, strategy=self.strategy, objective=self.objective,
                                          engine=self.engine),
                           QualityControl(annotators=list(annotators) or None, both_orders=self.both_orders),
                           format=fmt)


@dataclass(frozen=True)
class RoundInfo:
    """One round: its batch, items, answers, spend after it, uncertainty left before it, top-3 before it."""

    round: int
    batch_id: int
    items: int
    answered: int
    failed: int
    spent_usd: float | None
    uncertainty: float | None
    top3: tuple[str, ...]
    resumed: bool = False

    @classmethod
    def of(cls, n_round: int, batch_id: int, plan: BatchPlan, items: int, answered: int, failed: int,
           spent_usd: float | None) -> RoundInfo:
        """A new round's record: the uncertainty and top 3 are the plan's (before the round's judgments)."""
        top3 = plan.fit.top3() if plan.fit is not None else ()
        return cls(n_round, batch_id, items, answered, failed, spent_usd, plan.selection.objective_before, top3)


@dataclass(frozen=True)
class RunResult:
    """Why the loop stopped (one of :data:`STOP_REASONS`), the rounds run now, totals and notes."""

    stopped: str
    advice: str
    rounds: tuple[RoundInfo, ...]
    judgments_used: int
    budget: int
    spent_usd: float | None
    top3: tuple[str, ...]
    notes: tuple[str, ...] = ()

    def to_dict(self) -> dict:
        from dataclasses import asdict

        return asdict(self)


def plan_round(study, run: RunOptions, options: PlanOptions, remaining: int, *,
               per_comparison: int = 1) -> BatchPlan | None:
    """The round's plan whose items fit in ``remaining`` (None if none fits), or a settled plan when the
    loop runs ``until`` settled. Each smaller plan reuses the first one's fit; ``per_comparison`` items
    a planned comparison takes when shrinking (2 for ``planner run`` with both orders)."""
    size = options.selection.size
    reuse = None
    while True:
        plan = plan_batch(study, options, reuse=reuse)
        reuse = plan.plan_fit
        n = len(plan.items)
        if n <= remaining or (plan.settled and run.until == "settled"):
            return plan
        if size == 1:
            return None
        size = max(1, size - max(1, (n - remaining) // per_comparison))
        options = replace(options, selection=replace(options.selection, size=size))


@dataclass(frozen=True)
class RoundStart:
    """A round's start: why the loop stops now (one of :data:`STOP_REASONS`, "" to go on), the advice,
    and the plan and batch issued (None when it stops)."""

    stopped: str
    advice: str
    plan: BatchPlan | None = None
    issued: IssuedBatch | None = None


def plan_and_issue(study, run: RunOptions, options: PlanOptions, remaining: int, output: Output, *,
                   advice: str = "", per_comparison: int = 1) -> RoundStart:
    """The round's plan (:func:`plan_round`) issued as ``output`` says, or why the loop stops: no
    comparison left (``exhausted``), none fits the budget, or the plan is settled (``until`` settled)."""
    try:
        plan = plan_round(study, run, options, remaining, per_comparison=per_comparison)
    except DataError as exc:  # every pair has used its prompts
        return RoundStart("exhausted", exc.lines()[0])
    if plan is None:
        return RoundStart("budget", advice)
    if plan.settled and run.until == "settled":
        return RoundStart("settled", plan.advice)
    return RoundStart("", plan.advice, plan, issue_batch(study, plan, output))


RUN_LOCK = "the study's `planner run` loop"


def hold_run(study_path):
    """The study's ``run`` lock: a second loop on the same study is refused (it would spend the same
    budget twice). Taken before the study is opened, so a refused loop never touches the study."""
    from planner.store.locks import hold

    return hold(study_path, "run", RUN_LOCK)


def with_lock_note(result: RunResult, held) -> RunResult:
    """``result`` with a first note when the run lock was taken over from a process that died holding it
    (a hard kill): the rerun says so, as ``planner judge`` and ``push`` do for their locks."""
    from planner.store.locks import holder_note

    note = holder_note(held, RUN_LOCK)
    return result if note is None else replace(result, notes=(note, *result.notes))


def final_top3(study) -> tuple[str, ...]:
    """The current top 3 by posterior mean strength (Laplace fit of every judgment so far)."""
    from planner import model
    from planner.stats.blas import one_blas_thread

    with one_blas_thread():
        f = model.fit(study.counts().pooled(), engine="laplace")
    order = sorted(range(len(f.systems)), key=lambda i: -float(f.mean[i]))
    return tuple(f.systems[i] for i in order[:3])
