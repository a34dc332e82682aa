"""`planner run --annotators-via label-studio`: the active loop with human annotators.

Each round: **resume** (a Label Studio batch of this study that still has
pending items is pushed again — pushing is idempotent — and waited for) →
**stop?** (interrupted, the judgment budget, or with ``until="settled"`` the
stopping advice of a dry-run plan) → **next-batch** (``format="label-studio"``,
written under ``STUDY/batches/``) → **push** → **wait** for the annotators
(:func:`planner.services.labelstudio.wait_for_annotations`: polls, then pulls and ingests
incrementally). A wait that times out stops the loop with the count of items
still waiting; rerunning the same command continues where it stopped.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from planner import limits
from planner.errors import DataError, UsageError, quote
from planner.workflows.run import RoundInfo, RunOptions, RunResult, final_top3

STOP_HUMANS = ("settled", "budget", "interrupted", "exhausted", "waiting")


@dataclass(frozen=True)
class HumanOptions:
    """Who annotates and how long to wait: ``annotators`` names (``--annotators``), one Label Studio
    project per annotator (``per_annotator``), ``timeout`` seconds per round's wait, ``poll`` seconds
    between polls, ``accept_changes`` for edited annotations."""

    annotators: tuple[str, ...] = ()
    per_annotator: bool = False
    timeout: float = 3600.0
    poll: float = 30.0
    accept_changes: bool = False

    def __post_init__(self):
        from planner.names import annotator_name_problem
        from planner.services.labelstudio import check_wait

        for a in self.annotators:   # before any path or project title is built from a name
            if annotator_name_problem(a):
                raise UsageError(f"`annotators`: {quote(a)} {annotator_name_problem(a)}", parameters=("annotators",))
        limits.check_flag("per_annotator", self.per_annotator)
        check_wait(self.poll, self.timeout)
        if self.poll > self.timeout:
            raise UsageError(f"`poll` ({quote(self.poll)}) must be at most `wait_timeout` ({quote(self.timeout)})",
                             parameters=("poll", "wait_timeout"))
        limits.check_flag("accept_changes", self.accept_changes)


def _ls_batches(study) -> list:
    return [b for b in study.batches() if not b.voided
            and (b.manifest.get("rendering") or {}).get("format") == "label-studio"]


def _state(study_path) -> tuple[int, list[int], int]:
    from planner.store.study import Study

    with Study.open(study_path) as study:
        mine = _ls_batches(study)
    return sum(b.issued for b in mine), [b.id for b in mine if b.pending > 0], len(mine)


def _plan(study_path, run: RunOptions, human: HumanOptions, size: int, remaining: int):
    """A dry-run plan whose items fit in ``remaining`` (shrinking ``size``); None if none fits. The round's
    model is fitted once: the smaller retries and the batch issued reuse the first plan's fit."""
    from planner.workflows.next_batch import BatchSelection, Output, QualityControl, next_batch

    reuse = None
    while True:
        plan = next_batch(study_path,
                          BatchSelection(size=size, strategy=run.strategy, objective=run.objective, engine=run.engine),
                          qc=QualityControl(annotators=list(human.annotators) or None, both_orders=run.both_orders),
                          output=Output(format="label-studio", dry_run=True), reuse=reuse)
        reuse = plan.plan_fit
        if len(plan.items) <= remaining or (plan.settled and run.until == "settled"):
            return plan, size
        if size == 1:
            return None, size
        size = max(1, size - max(1, len(plan.items) - remaining))


def _round(study_path, batch_id: int, human: HumanOptions, client, on_wait, sleep, clock, stop):
    from planner.services.labelstudio import push_batch, wait_for_annotations
    from planner.store.study import Study

    with Study.open(study_path) as study:
        push_batch(study, batch=batch_id, per_annotator=human.per_annotator, client=client)
        return wait_for_annotations(study, batch_id, timeout=human.timeout, poll=human.poll, on_wait=on_wait,
                                    accept_changes=human.accept_changes, client=client, sleep=sleep, clock=clock,
                                    stop=stop)


def run_humans_loop(study_path, run: RunOptions, human: HumanOptions, *,
                    progress: Callable[[dict], None] | None = None, stop: threading.Event | None = None,
                    client=None, sleep=None, clock=None) -> RunResult:
    """Run rounds with Label Studio annotators until settled, the budget, or a wait that times out.

    ``progress(event)`` gets ``{"phase": "waiting", "batch", "waiting", "seconds"}`` while
    a round waits and ``{"phase": "round", ...}`` after it. ``client``, ``sleep`` and
    ``clock`` are for tests (default: the connection from the environment, real time;
    the pauses wake when ``stop`` is set). The study's ``run`` lock is held throughout.
    """
    from planner.store.locks import hold

    stop = stop if stop is not None else threading.Event()
    with hold(study_path, "run", "the study's `planner run` loop"):
        return _humans_loop(study_path, run, human, progress, stop, client, sleep, clock)


def _humans_loop(study_path, run: RunOptions, human: HumanOptions, progress, stop, client, sleep, clock):
    import time

    from planner.workflows.next_batch import BatchSelection, Output, QualityControl, next_batch

    sleep, clock = sleep or stop.wait, clock or time.monotonic

    def on_wait(batch_id):
        def show(waiting: int, seconds: float) -> None:
            if progress is not None:
                progress({"phase": "waiting", "batch": batch_id, "waiting": waiting, "seconds": seconds})
        return show

    rounds: list[RoundInfo] = []
    notes: list[str] = []
    stopped, advice = "", ""
    used, unfinished, n_round = _state(study_path)
    for bid in unfinished:  # an earlier run left this batch with annotators
        if stop.is_set():
            break
        w = _round(study_path, bid, human, client, on_wait(bid), sleep, clock, stop)
        rounds.append(RoundInfo(n_round, bid, 0, w.pull.new, 0, None, None, (), True))
        if not w.done and stop.is_set():
            stopped = "interrupted"
        elif not w.done:
            stopped = "waiting"
            notes.append(f"batch {bid}: {w.waiting} item(s) still waiting for annotators after "
                         f"{human.timeout:g} s; rerun the same command to keep waiting")
    while not stopped:
        used, _, n_round = _state(study_path)
        remaining = run.budget - used
        if stop.is_set():
            stopped = "interrupted"
            break
        if remaining <= 0:
            stopped = "budget"
            break
        try:
            plan, size = _plan(study_path, run, human, min(run.batch_size, remaining), remaining)
        except DataError as exc:
            stopped, advice = "exhausted", exc.lines()[0]
            break
        if plan is None:
            stopped = "budget"
            break
        advice = plan.advice
        if plan.settled and run.until == "settled":
            stopped = "settled"
            break
        out = Path(study_path) / "batches" / f"round-{n_round + 1}.json"
        out.parent.mkdir(exist_ok=True)
        nb = next_batch(study_path,
                        BatchSelection(size=size, strategy=run.strategy, objective=run.objective, engine=run.engine),
                        qc=QualityControl(annotators=list(human.annotators) or None, both_orders=run.both_orders),
                        output=Output(format="label-studio", out=out), reuse=plan.plan_fit)
        notes.extend(nb.notes)
        w = _round(study_path, nb.issued, human, client, on_wait(nb.issued), sleep, clock, stop)
        info = RoundInfo(n_round + 1, nb.issued, len(nb.items), w.pull.new, 0, None,
                         plan.summary.objective_before, plan.summary.top3)
        rounds.append(info)
        if progress is not None:
            progress({"phase": "round", "round": info.round, "batch": nb.batch_id, "used": used + len(nb.items),
                      "budget": run.budget, "spent": None, "uncertainty": info.uncertainty,
                      "top3": list(info.top3), "answered": info.answered, "failed": 0})
        if not w.done and stop.is_set():
            stopped = "interrupted"
        elif not w.done:
            stopped = "waiting"
            notes.append(f"batch {nb.batch_id}: {w.waiting} item(s) still waiting for annotators after "
                         f"{human.timeout:g} s; rerun the same command to keep waiting")
    used, _, _ = _state(study_path)
    return RunResult(stopped, advice, tuple(rounds), used, run.budget, None, final_top3(study_path),
                     tuple(dict.fromkeys(notes)))
