"""`planner run`: the active loop unattended — next-batch → judge → ingest → refit, round after round.

The study is opened once for the whole run (:func:`planner.services.judge_loop.run_rounds` holds
the rounds). Each round:

1. **resume** — batches this judge model was sent earlier that still have
   pending items (an interrupted run, transport failures) are judged first;
   the response cache makes what was already answered free;
2. **stop?** — the judgment budget (items this judge model answered in the
   study, QC items included; pending items hold their share back, but an item
   that failed in transport is not counted as used), the cost cap (the
   ledger's spend for the model),
   or with ``until="settled"`` the stopping advice of the round's plan;
3. **plan + issue** — :func:`planner.services.batch_round.plan_round`
   plans the round's batch (:func:`planner.services.batch_plan.plan_batch`, ``format="judge"``)
   sized so its items fit in the budget left: the model is fitted once, and
   smaller plans reuse that fit; the plan is issued as it is
   (:func:`planner.services.batch_issue.issue_batch`), not planned again;
4. **judge + ingest** — :func:`planner.workflows.judge_run.judge_batch`; the next
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

from planner.services.batch_round import STOP_REASONS, UNTIL, RoundInfo, RunOptions, RunResult, final_top3
from planner.workflows.judge_run import JudgeOptions

__all__ = ["STOP_REASONS", "UNTIL", "RoundInfo", "RunOptions", "RunResult", "final_top3", "run_loop"]


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
    from planner.services.judge_loop import run_rounds
    from planner.store.study import Study

    with Study.open(study_path) as study:
        return run_rounds(study, judge, run, progress=progress, stop=stop, on_answer=on_answer)
