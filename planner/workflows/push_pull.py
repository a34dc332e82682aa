"""`planner push` / `planner pull`: open the study and push a batch to Label Studio, or pull and ingest
its annotations (:mod:`planner.services.labelstudio`, shared with ``run --annotators-via``)."""

from __future__ import annotations

from planner.services.labelstudio import PullResult, PushResult

__all__ = ["pull", "push"]


def push(study_path, *, batch: int | None = None, project_title: str | None = None,
         per_annotator: bool = False, client=None) -> PushResult:
    """Push a batch's tasks to Label Studio: :func:`planner.services.labelstudio.push_batch`; safe to repeat,
    one push at a time."""
    from planner.services.labelstudio import push_batch
    from planner.store.study import Study

    with Study.open(study_path) as study:
        return push_batch(study, batch=batch, project_title=project_title, per_annotator=per_annotator,
                          client=client)


def pull(study_path, *, batch: int | None = None, accept_changes: bool = False, client=None) -> PullResult:
    """Export the study's projects (or one batch's), keep the raw exports, ingest them incrementally:
    :func:`planner.services.labelstudio.pull_annotations`."""
    from planner.services.labelstudio import pull_annotations
    from planner.store.study import Study

    with Study.open(study_path) as study:
        return pull_annotations(study, batch=batch, accept_changes=accept_changes, client=client)
