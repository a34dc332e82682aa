"""``planner decide``: the release gate on a study (the maths: :mod:`planner.gate`).

Opens the study, reads its by-stratum counts, stratum weights (the one rule,
:func:`planner.strata.stratum_weights`) and acceptability verdicts, optionally
fits the style-controlled model, and calls :func:`planner.gate.decide_counts`.
"""

from __future__ import annotations

from planner.gate import Decision, check_systems, decide_counts
from planner.stats.clusters import check_cluster_by


def decide(path, candidate: str, baseline: str, *, margin: float = 0.05, mode: str = "non-inferiority",
           confidence_level: float = 0.95, min_pass_rate: float | None = None, engine: str = "laplace",
           look: int | None = None, looks: int = 1, boundary: str = "obrien-fleming",
           seed: int | None = None, style_control: bool = False, cluster: str = "item") -> Decision:
    """Release gate of ``candidate`` against ``baseline`` on a study; see :func:`decide_counts`.

    ``style_control``: the posterior columns come from the style-controlled
    model (:func:`planner.model.style_control.controlled_fit_by_stratum`).
    ``cluster``: which judgments share a cluster (:func:`planner.stats.clusters.cluster_ids`);
    each stratum's tests and interval use the design effect of the pair's verdicts there, the
    posterior is cluster-robust; ``"none"``: judgments independent.

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
    from planner.store.study import Study
    from planner.strata import stratum_weights

    check_seed("seed", seed)
    check_cluster_by(cluster)
    with blas_policy(engine), Study.open(path) as study:
        check_systems(study.systems, candidate, baseline)
        judged = study.judgment_arrays(by_stratum=True, annotators=cluster == "annotator")
        counts = judged.counts()
        sw = stratum_weights(study.prompts(), counts.strata)
        weights, how = sw.weights, sw.note
        acc = study.acceptability_counts(by_stratum=False)
        if seed is None:
            seed = int(study.config.get("seed", 0))
        fit = None
        if style_control:
            from planner.model.style_control import controlled_fit_by_stratum
            from planner.services.style_data import read_style_inputs

            fit = controlled_fit_by_stratum(read_style_inputs(study), counts.strata, engine=engine, seed=seed,
                                            cluster=cluster)
    deffs, cells = _clustering(judged, cluster, candidate, baseline)
    with blas_policy(engine):
        res = decide_counts(counts, candidate, baseline, stratum_weights=weights, acceptability=acc,
                            margin=margin, mode=mode, confidence_level=confidence_level,
                            min_pass_rate=min_pass_rate, engine=engine, look=look, looks=looks, boundary=boundary,
                            seed=seed, fit=fit, design_effects=deffs, clusters=cells)
    from dataclasses import replace

    from planner.gate.text import clustering_note

    notes = tuple(n for n in res.notes if not n.startswith("strata weighted equally")) + (
        f"stratum weights: {how}", clustering_note(cluster, res.strata))
    if style_control:
        from planner.sentences import STYLE_DECIDE_NOTE

        notes += (STYLE_DECIDE_NOTE,)
    return replace(res, notes=notes)


def _clustering(judged, cluster: str, candidate: str, baseline: str):
    """``(design effects per stratum, cluster tallies)`` of the study's judgments; ``(None, None)`` for none."""
    from planner.stats.clusters import cluster_cells, cluster_ids, pair_design_effect

    if cluster == "none":
        return None, None
    ids = cluster_ids(judged, cluster)
    ci, bi = judged.systems.index(candidate), judged.systems.index(baseline)
    deffs = {s: pair_design_effect(judged, ids, ci, bi, "half", mask=judged.stratum == k)
             for k, s in enumerate(judged.strata)}
    return deffs, cluster_cells(judged, cluster)
