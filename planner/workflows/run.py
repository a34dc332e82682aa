"""`planner run`: the active loop unattended — plan → issue → judge → ingest → refit, round after round.

The study is opened once for the whole run; :func:`planner.services.judge_loop.run_rounds` runs the
rounds on it (resume what an earlier run left, the stop checks — budget, cost cap, or the round's
plan settled — one plan a round fitted once and issued as judge requests, then judge and ingest).

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

from planner.services.batch_round import RunOptions, RunResult
from planner.services.judging import JudgeOptions

__all__ = ["run_loop"]


def run_loop(study_path, judge: JudgeOptions, run: RunOptions, *,
             progress: Callable[[dict], None] | None = None, stop: threading.Event | None = None,
             on_answer: Callable[[dict], None] | None = None) -> RunResult:
    """Run rounds until settled (``until="settled"``), the budget or the cost cap, on the study at
    ``study_path`` opened once (:func:`planner.services.judge_loop.run_rounds`; see the module docstring).

    ``progress(event)`` gets ``{"phase": "round", ...}`` after each round and the
    judge's own events (``phase`` ``direct``/``batch``) while a round runs. The
    study's ``run`` lock is held throughout: a second loop on the same study is
    refused (it would spend the same budget twice).
    """
    from planner.services.batch_round import hold_run, with_lock_note
    from planner.services.judge_loop import run_rounds
    from planner.store.study import Study

    with hold_run(study_path) as held, Study.open(study_path) as study:
        return with_lock_note(run_rounds(study, judge, run, progress=progress, stop=stop, on_answer=on_answer),
                              held)
