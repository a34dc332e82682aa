"""`planner run`: the active loop unattended — next-batch → judge → ingest → refit, round after round.

Each round (one function each, reading top to bottom):

1. **resume** — batches this judge model was sent earlier that still have
   pending items (an interrupted run, transport failures) are judged first;
   the response cache makes what was already answered free;
2. **stop?** — the judgment budget (items this judge model answered in the
   study, QC items included; pending items hold their share back, but an item
   that failed in transport is not counted as used), the cost cap (the
   ledger's spend for the model),
   or with ``until="settled"`` the stopping advice of a dry-run plan;
3. **next-batch** — :func:`planner.workflows.next_batch.next_batch` with ``format="judge"``
   (the same seed as the dry run, so the same plan), sized so the round's
   items fit in the budget left; the round's model is fitted once, by the
   first dry run, and its fit serves the smaller retries and the batch issued
   (``reuse``: a fit is reused only on the same judgments, engine and seed);
4. **judge + ingest** — :func:`planner.services.judging.judge_recorded_batch`; the next
   round's fit sees the new judgments.

``stop`` (Ctrl-C) lets the current step finish: requests in flight are
answered, cached and stored; no new round starts. A fatal endpoint error
(connection refused, credentials refused, a redirect to another host) stops the
loop at once with that error, after storing what arrived. Rerunning the same command
continues where it stopped: budget and spend are read from the study, and a
batch already sent is not paid again (the cache).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, replace

from planner import limits
from planner.errors import DataError
from planner.services.judging import JudgeOptions, JudgeResult, judge_recorded_batch
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


# a round of at least this many requests with none answered stops the run at once (smaller: two in a row)
MIN_DRY_ROUND = 5


def _judge_batches(study, model: str) -> list:
    """Live batches written for ``model`` as judge requests."""
    return [b for b in study.batches() if not b.voided
            and (b.manifest.get("rendering") or {}).get("format") == "judge"
            and (b.manifest.get("rendering") or {}).get("judge_model") == model]


@dataclass(frozen=True)
class LoopState:
    """What the study says about this judge's loop: ``answered`` items (the judgments the budget counts),
    ``pending`` items still expected (issued, not answered: resumed first, so they hold budget back),
    the ``unfinished`` batches, ``rounds`` so far and the ledger's ``spent`` USD."""

    answered: int
    pending: int
    unfinished: tuple[int, ...]
    rounds: int
    spent: float


def _state(study_path, model: str) -> LoopState:
    from planner.store.ledger import Ledger
    from planner.store.study import Study

    with Study.open(study_path) as study:
        mine = _judge_batches(study, model)
    with Ledger(study_path) as ledger:
        spent = ledger.spent(model)
    return LoopState(sum(b.returned for b in mine), sum(b.pending for b in mine),
                     tuple(b.id for b in mine if b.pending > 0), len(mine), spent)


def _plan(study_path, judge: JudgeOptions, run: RunOptions, size: int, remaining: int):
    """A dry-run plan whose items fit in ``remaining`` (shrinking ``size``); None if none fits. The
    round's model is fitted once: each smaller retry reuses the first plan's fit."""
    from planner.workflows.next_batch import BatchSelection, Output, QualityControl, next_batch

    reuse = None
    while True:
        plan = next_batch(study_path,
                          BatchSelection(size=size, strategy=run.strategy, objective=run.objective, engine=run.engine),
                          qc=QualityControl(both_orders=run.both_orders),
                          output=Output(format="judge", judge_model=judge.model, dry_run=True), reuse=reuse)
        reuse = plan.plan_fit
        n = len(plan.items)
        if n <= remaining or (plan.settled and run.until == "settled"):
            return plan, size
        if size == 1:
            return None, size
        size = max(1, size - max(1, (n - remaining) // (2 if run.both_orders else 1)))


def _judge(study_path, judge, batch_id, progress, stop, on_answer) -> JudgeResult:
    ev = (lambda e: progress({**e, "batch": batch_id})) if progress is not None else None
    from planner.store.study import Study

    with Study.open(study_path) as study:
        return judge_recorded_batch(study, judge, batch=batch_id, progress=ev, stop=stop, on_answer=on_answer)


def run_loop(study_path, judge: JudgeOptions, run: RunOptions, *,
             progress: Callable[[dict], None] | None = None, stop: threading.Event | None = None,
             on_answer: Callable[[dict], None] | None = None) -> RunResult:
    """Run rounds until settled (``until="settled"``), the budget or the cost cap; see the module docstring.

    ``progress(event)`` gets ``{"phase": "round", ...}`` after each round and the
    judge's own events (``phase`` ``direct``/``batch``) while a round runs. The
    study's ``run`` lock is held throughout: a second loop on the same study is
    refused (it would spend the same budget twice).
    """
    from planner.store.locks import hold

    judge = replace(judge, model=judge.model.strip(), dry_run=False)
    stop = stop if stop is not None else threading.Event()
    with hold(study_path, "run", "the study's `planner run` loop"):
        return _loop(study_path, judge, run, progress, stop, on_answer)


def _resume(study_path, judge: JudgeOptions, state: LoopState, progress, stop, on_answer, rounds, notes) -> None:
    for bid in state.unfinished:  # what an earlier run left
        if stop.is_set():
            break
        jr = _judge(study_path, judge, bid, progress, stop, on_answer)
        notes.extend(jr.notes)
        rounds.append(RoundInfo(state.rounds, bid, jr.requests, jr.answered + jr.cached, jr.failed, jr.spent_usd,
                                None, (), True))


def _loop(study_path, judge: JudgeOptions, run: RunOptions, progress, stop, on_answer) -> RunResult:
    from planner.workflows.next_batch import BatchSelection, Output, QualityControl, next_batch

    prices = judge.prices
    rounds: list[RoundInfo] = []
    notes: list[str] = []
    _resume(study_path, judge, _state(study_path, judge.model), progress, stop, on_answer, rounds, notes)
    stopped, advice = "", ""
    dry_rounds = 0
    while not stopped:
        state = _state(study_path, judge.model)
        used, n_round = state.answered, state.rounds
        remaining = run.budget - state.answered - state.pending
        if stop.is_set():
            stopped = "interrupted"
        elif remaining <= 0:
            stopped = "budget"
        elif judge.max_cost is not None and state.spent >= judge.max_cost - 1e-12:
            stopped = "cost"
        if stopped:
            break
        try:
            plan, size = _plan(study_path, judge, run, min(run.batch_size, remaining), remaining)
        except DataError as exc:  # every pair has used its prompts
            stopped, advice = "exhausted", exc.lines()[0]
            break
        if plan is None:
            stopped = "budget"
            break
        advice = plan.advice
        if plan.settled and run.until == "settled":
            stopped = "settled"
            break
        nb = next_batch(study_path,
                        BatchSelection(size=size, strategy=run.strategy, objective=run.objective, engine=run.engine),
                        qc=QualityControl(both_orders=run.both_orders),
                        output=Output(format="judge", judge_model=judge.model), reuse=plan.plan_fit)
        notes.extend(nb.notes)
        jr = _judge(study_path, judge, nb.issued, progress, stop, on_answer)
        notes.extend(jr.notes)
        info = RoundInfo(n_round + 1, nb.issued, jr.requests, jr.answered + jr.cached, jr.failed, jr.spent_usd,
                         plan.summary.objective_before, plan.summary.top3)
        rounds.append(info)
        if progress is not None:
            progress({"phase": "round", "round": info.round, "batch": nb.batch_id, "used": used + jr.answered,
                      "budget": run.budget, "spent": jr.spent_usd, "uncertainty": info.uncertainty,
                      "top3": list(info.top3), "answered": info.answered, "failed": info.failed})
        if jr.stopped_by_cost:
            stopped = "cost"
        elif jr.interrupted:
            stopped = "interrupted"
        elif jr.sent and not jr.answered:
            # a dead endpoint shows as a round in which nothing is answered; a round of a few requests
            # can fail whole by chance (2 of a 10% failure rate: 1 in 100), so it takes a second one
            dry_rounds += 1
            if jr.sent >= MIN_DRY_ROUND or dry_rounds >= 2:
                stopped = "no-answers"
                notes.append(f"round {info.round}: none of {jr.sent} request(s) was answered"
                             + (" (nor in the round before)" if jr.sent < MIN_DRY_ROUND else "")
                             + "; stopping (check the endpoint; rerun to retry the failed items)")
        else:
            dry_rounds = 0
    state = _state(study_path, judge.model)
    if state.pending:
        notes.append(f"{state.pending} item(s) of this judge's batches are unanswered (not counted as used); "
                     "rerun the same command to ask again")
    return RunResult(stopped, advice, tuple(rounds), state.answered, run.budget,
                     state.spent if prices.known else None, final_top3(study_path), tuple(dict.fromkeys(notes)))


def final_top3(study_path) -> tuple[str, ...]:
    """The current top 3 by posterior mean strength (Laplace fit of every judgment so far)."""
    from planner.model import fit
    from planner.stats.blas import one_blas_thread
    from planner.store.study import Study

    with Study.open(study_path) as study, one_blas_thread():
        f = fit(study.counts().pooled(), engine="laplace")
    order = sorted(range(len(f.systems)), key=lambda i: -float(f.mean[i]))
    return tuple(f.systems[i] for i in order[:3])
