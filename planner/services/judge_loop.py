"""``planner run``'s rounds on one open study: resume → stop? → plan + issue → judge + ingest, round after round.

Each round (one function each, reading top to bottom):

1. **resume** — a batch issue a hard kill interrupted is completed (recorded: its
   files put in place) or rolled back (not recorded); then batches this judge model
   was sent earlier that still have pending items (an interrupted run, transport
   failures) are judged first; the response cache makes what was already answered free;
2. **stop?** — the judgment budget (items this judge model answered in the
   study, QC items included; pending items hold their share back, but an item
   that failed in transport is not counted as used), the cost cap (the
   ledger's spend for the model), or with ``until="settled"`` the stopping
   advice of the round's plan;
3. **plan + issue** — :func:`planner.services.batch_round.plan_and_issue` plans the round's batch
   (``format="judge"``) sized so its items fit in the budget left: the model is fitted once, and
   smaller plans reuse that fit; the plan is issued as it is, not planned again;
4. **judge + ingest** — :func:`planner.services.judging.judge_recorded_batch` on the same open
   study; the next round's fit sees the new judgments (the study's connection reads what ingest
   committed through its own).

``stop`` lets the current step finish: requests in flight are answered, cached and stored; no new
round starts. A fatal endpoint error stops the loop at once with that error, after storing what
arrived. Used by ``planner run`` (:mod:`planner.workflows.run`) and the live-judge demo.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, replace

from planner.services.batch_files import recover_interrupted
from planner.services.batch_options import Output
from planner.services.batch_round import RoundInfo, RoundStart, RunOptions, RunResult, final_top3, plan_and_issue
from planner.services.judging import JudgeOptions, JudgeResult, judge_recorded_batch

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


def _state(study, model: str) -> LoopState:
    from planner.store.ledger import Ledger

    mine = _judge_batches(study, model)
    with Ledger(study.path) as ledger:
        spent = ledger.spent(model)
    return LoopState(sum(b.returned for b in mine), sum(b.pending for b in mine),
                     tuple(b.id for b in mine if b.pending > 0), len(mine), spent)


def _start_round(study, judge: JudgeOptions, run: RunOptions, stop, advice: str) -> tuple[LoopState, RoundStart]:
    """``(state, start)``: the loop's state, then the stop checks, the round's plan (one fit; smaller
    retries reuse it while its items overflow the budget left) and that plan issued as judge requests
    (:func:`planner.services.batch_round.plan_and_issue`)."""
    state = _state(study, judge.model)
    remaining = run.budget - state.answered - state.pending
    if stop.is_set():
        return state, RoundStart("interrupted", advice)
    if remaining <= 0:
        return state, RoundStart("budget", advice)
    if judge.max_cost is not None and state.spent >= judge.max_cost - 1e-12:
        return state, RoundStart("cost", advice)
    options = run.plan_options(min(run.batch_size, remaining), "judge")
    return state, plan_and_issue(study, run, options, remaining, Output(format="judge", judge_model=judge.model),
                                 advice=advice, per_comparison=2 if run.both_orders else 1)


def _judge(study, judge, batch_id, progress, stop, on_answer) -> JudgeResult:
    ev = (lambda e: progress({**e, "batch": batch_id})) if progress is not None else None
    return judge_recorded_batch(study, judge, batch=batch_id, progress=ev, stop=stop, on_answer=on_answer)


def _resume(study, judge: JudgeOptions, state: LoopState, progress, stop, on_answer, rounds, notes) -> None:
    for bid in state.unfinished:  # what an earlier run left
        if stop.is_set():
            break
        jr = _judge(study, judge, bid, progress, stop, on_answer)
        notes.extend(jr.notes)
        rounds.append(RoundInfo(state.rounds, bid, jr.requests, jr.answered + jr.cached, jr.failed, jr.spent_usd,
                                None, (), True))


def run_rounds(study, judge: JudgeOptions, run: RunOptions, *, progress: Callable[[dict], None] | None = None,
               stop: threading.Event | None = None, on_answer: Callable[[dict], None] | None = None) -> RunResult:
    """Run rounds on the open ``study`` until settled (``until="settled"``), the budget or the cost cap.

    ``progress(event)`` gets ``{"phase": "round", ...}`` after each round and the judge's own events
    (``phase`` ``direct``/``batch``) while a round runs. The caller holds the study's ``run`` lock
    (:func:`planner.services.batch_round.hold_run`) from before it opens the study until the rounds end.
    """
    judge = replace(judge, model=judge.model.strip(), dry_run=False)
    stop = stop if stop is not None else threading.Event()
    return _rounds(study, judge, run, progress, stop, on_answer)


def _rounds(study, judge: JudgeOptions, run: RunOptions, progress, stop, on_answer) -> RunResult:
    prices = judge.prices
    rounds: list[RoundInfo] = []
    # a batch a hard kill left recorded with its files staged is judged by the resume below, and a budget it
    # uses up issues no round whose issue would complete it: complete (or roll back) its files first
    notes: list[str] = list(recover_interrupted(study))
    _resume(study, judge, _state(study, judge.model), progress, stop, on_answer, rounds, notes)
    stopped, advice = "", ""
    dry_rounds = 0
    while not stopped:
        state, r = _start_round(study, judge, run, stop, advice)
        stopped, advice = r.stopped, r.advice
        plan, issued = r.plan, r.issued
        if stopped or plan is None or issued is None:
            break
        notes.extend(issued.notes)
        jr = _judge(study, judge, issued.batch_id, progress, stop, on_answer)
        notes.extend(jr.notes)
        info = RoundInfo.of(state.rounds + 1, issued.batch_id, plan, jr.requests, jr.answered + jr.cached,
                            jr.failed, jr.spent_usd)
        rounds.append(info)
        if progress is not None:
            progress({"phase": "round", "round": info.round, "batch": issued.batch_id,
                      "used": state.answered + jr.answered, "budget": run.budget, "spent": jr.spent_usd,
                      "uncertainty": info.uncertainty, "top3": list(info.top3), "answered": info.answered,
                      "failed": info.failed})
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
    state = _state(study, judge.model)
    top3 = final_top3(study)
    if state.pending:
        notes.append(f"{state.pending} item(s) of this judge's batches are unanswered (not counted as used); "
                     "rerun the same command to ask again")
    return RunResult(stopped, advice, tuple(rounds), state.answered, run.budget,
                     state.spent if prices.known else None, top3, tuple(dict.fromkeys(notes)))
