"""`planner run --annotators-via label-studio`: the active loop with human annotators.

Each round: **resume** (a Label Studio batch of this study that still has
pending items is pushed again — pushing is idempotent — and waited for) →
**stop?** (interrupted, the judgment budget, or with ``until="settled"`` the
stopping advice of the round's plan) → **plan + issue** on one open study
(:func:`planner.services.batch_round.plan_round`: one fit a round; ``format="label-studio"``,
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
from planner.errors import UsageError, quote
from planner.services.batch_round import RoundInfo, RunOptions, RunResult, final_top3

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


def _state(study) -> tuple[int, list[int], int]:
    mine = _ls_batches(study)
    return sum(b.issued for b in mine), [b.id for b in mine if b.pending > 0], len(mine)


def _start_round(study, run: RunOptions, human: HumanOptions, stop, advice: str) -> tuple:
    """``(used, n_round, start)``: the stop checks, the round's plan (one fit; smaller retries reuse it
    while its items overflow the budget left) and that plan issued as a Label Studio file under
    ``STUDY/batches/`` (:func:`planner.services.batch_round.plan_and_issue`)."""
    from planner.services.batch_options import Output
    from planner.services.batch_round import RoundStart, plan_and_issue

    used, _, n_round = _state(study)
    remaining = run.budget - used
    if stop.is_set():
        return used, n_round, RoundStart("interrupted", advice)
    if remaining <= 0:
        return used, n_round, RoundStart("budget", advice)
    options = run.plan_options(min(run.batch_size, remaining), "label-studio", human.annotators)
    out = Path(study.path) / "batches" / f"round-{n_round + 1}.json"
    out.parent.mkdir(exist_ok=True)
    return used, n_round, plan_and_issue(study, run, options, remaining, Output(format="label-studio", out=out),
                                         advice=advice)


def _round(study, batch_id: int, human: HumanOptions, client, on_wait, sleep, clock, stop):
    from planner.services.labelstudio import push_batch, wait_for_annotations

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
    from planner.services.batch_round import hold_run, with_lock_note
    from planner.store.study import Study

    stop = stop if stop is not None else threading.Event()
    with hold_run(study_path) as held, Study.open(study_path) as study:
        return with_lock_note(_humans_loop(study, run, human, progress, stop, client, sleep, clock), held)


def _humans_loop(study, run: RunOptions, human: HumanOptions, progress, stop, client, sleep, clock):
    """The rounds on the open ``study`` (push and the wait read it too; their locks and ingest go by its path)."""
    import time

    from planner.services.batch_files import recover_interrupted

    sleep, clock = sleep or stop.wait, clock or time.monotonic

    def on_wait(batch_id):
        def show(waiting: int, seconds: float) -> None:
            if progress is not None:
                progress({"phase": "waiting", "batch": batch_id, "waiting": waiting, "seconds": seconds})
        return show

    rounds: list[RoundInfo] = []
    # as for the judge's loop: the resumed batch may be one a hard kill left staged, and no later issue may come
    notes: list[str] = list(recover_interrupted(study))
    stopped, advice = "", ""
    used, unfinished, n_round = _state(study)
    for bid in unfinished:  # an earlier run left this batch with annotators
        if stop.is_set():
            break
        w = _round(study, bid, human, client, on_wait(bid), sleep, clock, stop)
        rounds.append(RoundInfo(n_round, bid, 0, w.pull.new, 0, None, None, (), True))
        if not w.done and stop.is_set():
            stopped = "interrupted"
        elif not w.done:
            stopped = "waiting"
            notes.append(f"batch {bid}: {w.waiting} item(s) still waiting for annotators after "
                         f"{human.timeout:g} s; rerun the same command to keep waiting")
    while not stopped:
        used, n_round, r = _start_round(study, run, human, stop, advice)
        stopped, advice = r.stopped, r.advice
        plan, issued = r.plan, r.issued
        if stopped or plan is None or issued is None:
            break
        notes.extend(issued.notes)
        w = _round(study, issued.batch_id, human, client, on_wait(issued.batch_id), sleep, clock, stop)
        info = RoundInfo.of(n_round + 1, issued.batch_id, plan, len(plan.items), w.pull.new, 0, None)
        rounds.append(info)
        if progress is not None:
            progress({"phase": "round", "round": info.round, "batch": issued.batch_id,
                      "used": used + len(plan.items), "budget": run.budget, "spent": None,
                      "uncertainty": info.uncertainty, "top3": list(info.top3), "answered": info.answered,
                      "failed": 0})
        if not w.done and stop.is_set():
            stopped = "interrupted"
        elif not w.done:
            stopped = "waiting"
            notes.append(f"batch {issued.batch_id}: {w.waiting} item(s) still waiting for annotators after "
                         f"{human.timeout:g} s; rerun the same command to keep waiting")
    used, _, _ = _state(study)
    return RunResult(stopped, advice, tuple(rounds), used, run.budget, None, final_top3(study),
                     tuple(dict.fromkeys(notes)))
