"""``planner decide``: the release gate on a study (the maths: :mod:`planner.gate`).

Opens the study, reads its by-stratum counts, stratum weights (the one rule,
:func:`planner.strata.stratum_weights`) and acceptability verdicts, optionally
fits the style-controlled model, and calls :func:`planner.gate.decide_counts`.
"""

from __future__ import annotations

from planner.gate import Decision, check_systems, decide_counts


def decide(path, candidate: str, baseline: str, *, margin: float = 0.05, mode: str = "non-inferiority",
           confidence_level: float = 0.95, min_pass_rate: float | None = None, engine: str = "laplace",
           look: int | None = None, looks: int = 1, boundary: str = "obrien-fleming",
           seed: int | None = None, style_control: bool = False) -> Decision:
    """Release gate of ``candidate`` against ``baseline`` on a study; see :func:`decide_counts`.

    ``style_control``: the posterior columns come from the style-controlled
    model (:func:`planner.workflows.style_report.controlled_fit_by_stratum`).

    Reads the study's by-stratum counts (QC kinds excluded), its stratum
    weights (:func:`planner.strata.stratum_weights`, the one rule) and its
    acceptability verdicts.
    ``seed`` defaults to the study's seed.

    Raises
    ------
    DataError
        ``path`` is not a study.
    UsageError
        Unknown or identical systems, or an option out of range (named with
        the allowed values).
    """
    from planner.limits import check_seed
    from planner.stats.blas import blas_policy
    from planner.strata import stratum_weights
    from planner.store.study import Study

    check_seed("seed", seed)
    with blas_policy(engine), Study.open(path) as study:
        check_systems(study.systems, candidate, baseline)
        counts = study.counts(by_stratum=True)
        sw = stratum_weights(study.prompts(), counts.strata)
        weights, how = sw.weights, sw.note
        acc = study.acceptability_counts(by_stratum=False)
        if seed is None:
            seed = int(study.config.get("seed", 0))
        fit = None
        if style_control:
            from planner.workflows.style_report import controlled_fit_by_stratum

            fit = controlled_fit_by_stratum(study, counts.strata, engine=engine, seed=seed)
    with blas_policy(engine):
        res = decide_counts(counts, candidate, baseline, stratum_weights=weights, acceptability=acc,
                            margin=margin, mode=mode, confidence_level=confidence_level,
                            min_pass_rate=min_pass_rate, engine=engine, look=look, looks=looks, boundary=boundary,
                            seed=seed, fit=fit)
    from dataclasses import replace

    notes = tuple(n for n in res.notes if not n.startswith("strata weighted equally")) + (
        f"stratum weights: {how}",)
    if style_control:
        from planner.text import STYLE_DECIDE_NOTE

        notes += (STYLE_DECIDE_NOTE,)
    return replace(res, notes=notes)
