"""The forecast kept in a study: written by ``plan``, read and updated by ``status`` and ``next-batch``.

``plan`` stores its first target's forecast as the study artifact
``forecast.json`` (format ``planner-forecast/1``): the options that made it,
its sentence, and the repetitions as particles — each repetition's parameters
and the comparisons it needed — with the pooled counts it started from. Every
later ``status`` and ``next-batch`` updates it with the judgments since
(:func:`planner.simulation.remaining.update`: importance weights, nothing
simulated again, milliseconds), so the line they print follows every round;
``planner plan`` runs the forecast afresh.
"""

from __future__ import annotations

import json
import math
from dataclasses import asdict, replace

import numpy as np

from planner.simulation.remaining import Remaining, SavedForecast, cell_table, update

__all__ = ["ARTIFACT", "FORMAT", "artifact", "load", "remaining"]

ARTIFACT = "forecast.json"
FORMAT = "planner-forecast/1"


def artifact(options, prices, result, saved: SavedForecast) -> bytes:
    """The artifact's bytes: options, prices, the sentence, the first target's summary and the particles."""
    from planner.store.db import now

    first = result.to_dict()["targets"][0]
    first.pop("per_rep", None)
    doc = {"format": FORMAT, "saved": now(), "pilot_judgments": result.pilot_judgments,
           "options": {**asdict(options), "targets": list(options.targets), "batches": list(options.batches)},
           "prices": asdict(prices), "sentence": result.sentence(), "forecast": first,
           "particles": {"metric": saved.metric, "value": saved.value, "text": saved.text, "level": saved.level,
                         "batch": saved.batch, "budget": saved.budget, "temper": saved.temper,
                         "table": saved.table.tolist(), "theta": saved.theta.tolist(),
                         "needed": [None if math.isinf(x) else float(x) for x in saved.needed]}}
    return json.dumps(doc, sort_keys=True).encode("utf-8")


def load(study) -> tuple[dict, SavedForecast] | None:
    """The study's saved forecast (document, particles), or None when there is none or it is unreadable."""
    raw = study.load_artifact(ARTIFACT)
    if raw is None:
        return None
    try:
        doc = json.loads(raw.decode("utf-8"))
        if doc.get("format") != FORMAT:
            return None
        p = doc["particles"]
        saved = SavedForecast(str(p["metric"]), float(p["value"]), str(p["text"]), float(p["level"]),
                              int(p["batch"]), int(p["budget"]), np.asarray(p["table"], dtype=np.int64),
                              np.asarray(p["theta"], dtype=float),
                              np.array([math.inf if x is None else float(x) for x in p["needed"]]),
                              float(p["temper"]))
    except (ValueError, KeyError, TypeError, UnicodeDecodeError):
        return None
    return doc, saved


def remaining(study, posterior=None) -> Remaining | None:
    """The saved forecast updated with the study's judgments now; None without a saved forecast.

    ``posterior``: the live fit's Gaussian posterior when the caller has one (next-batch); else the
    study's counts are fitted here when the target (``resolved``) is measurable on the live study.
    """
    got = load(study)
    if got is None:
        return None
    doc, saved = got
    counts = study.counts(by_stratum=False)
    if cell_table(counts).shape != saved.table.shape:
        return update(saved, counts)
    if saved.metric != "resolved":
        return update(saved, counts)
    from planner.model.bt import ELO_SCALE
    from planner.simulation.metrics import resolved_pairs

    if posterior is None:
        from planner.model import fit

        posterior = fit(counts, draws=1).posterior
    done = int(resolved_pairs(posterior.mean, posterior.cov, float(doc["options"]["margin"]) / ELO_SCALE).sum())
    pairs = len(counts.systems) * (len(counts.systems) - 1) // 2
    result = update(saved, counts, met_now=done == pairs)
    return replace(result, progress=f"{done} of {pairs} pairs resolved now")
