"""`planner judge`: open the study and judge one recorded batch (:mod:`planner.services.judging`).

The sending, caching, cost cap and ingest are the judging service's, shared with ``planner run``;
this command opens the study, names the batch and returns the service's
:class:`planner.services.judging.JudgeResult` for the CLI to render.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

from planner.services.judging import JudgeOptions, JudgeResult

__all__ = ["judge_batch"]


def judge_batch(study_path, options: JudgeOptions, *, batch: int | None = None,
                progress: Callable[[dict], None] | None = None, stop: threading.Event | None = None,
                on_answer: Callable[[dict], None] | None = None) -> JudgeResult:
    """Judge one recorded batch of the study at ``study_path`` (default: the newest live one) and ingest
    the answers: :func:`planner.services.judging.judge_recorded_batch` on the opened study (which applies
    any pending migration before the judge ledger opens)."""
    from planner.services.judging import judge_recorded_batch
    from planner.store.study import Study

    with Study.open(study_path) as study:
        return judge_recorded_batch(study, options, batch=batch, progress=progress, stop=stop,
                                    on_answer=on_answer)
