"""`status`: the store's account of a study, with the saved forecast updated to the data now.

The counts, batches and annotators come from :func:`planner.store.study.status`;
when ``planner plan`` saved a forecast in the study, the remaining forecast
(:func:`planner.services.forecast_saved.remaining`: the saved repetitions
reweighted by the judgments since, no simulation) is added as ``forecast``.
"""

from __future__ import annotations

from dataclasses import replace

__all__ = ["status"]


def status(path):
    """:func:`planner.store.study.status` with ``forecast`` filled (see the module docstring)."""
    from planner.services.forecast_saved import remaining
    from planner.store.study import Study
    from planner.store.study import status as store_status

    result = store_status(path)
    with Study.open(path) as study:
        rem = remaining(study)
    return result if rem is None else replace(result, forecast=rem)
