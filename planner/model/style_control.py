"""Style control on judgment data: the per-judgment design and the controlled fit (pure core).

:class:`StyleInputs` holds the usable pairwise judgments whose two response texts are known (read
from a study by :func:`planner.services.style_data.read_style_inputs`); :func:`design_from_inputs`
turns them into the :class:`planner.model.style.StyleDesign` (rows with the left response first when
known, the judgments' clusters); :func:`controlled_fit` fits it (cluster-robust covariance over
``cluster``: docs/methods.md, "Style control under clustering"); :func:`controlled_fit_by_stratum`
gives ``decide`` the same strengths in every stratum. Used by ``report --style-control``,
``decide --style-control`` and ``next-batch --style-control``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from planner.equality import array_eq
from planner.errors import DataError

__all__ = ["VERDICT_CODE", "StyleInputs", "controlled_fit", "controlled_fit_by_stratum", "design_from_inputs",
           "style_cluster_ids", "style_judgment_arrays"]

VERDICT_CODE = {"A": 0, "B": 1, "tie": 2}


@array_eq
@dataclass(frozen=True)
class StyleInputs:
    """Usable pairwise judgments with both response texts, in study order.

    ``a``/``b`` as stored; ``a_left`` 1 (a shown left), -1 (a shown right), 0 (unknown); ``annotators``
    the judgment's annotator (None when it names none).
    """

    systems: tuple[str, ...]
    prompts: tuple[str, ...]
    a: np.ndarray
    b: np.ndarray
    a_left: np.ndarray
    outcome: np.ndarray
    text_a: tuple[str, ...]
    text_b: tuple[str, ...]
    n_excluded: int
    difficulty: dict
    annotators: tuple = ()


def style_judgment_arrays(inp: StyleInputs):
    """The judgments of ``inp`` as :class:`planner.stats.clusters.JudgmentArrays` (``a``/``b`` as stored, one
    stratum), with prompt and annotator codes."""
    from planner.stats.clusters import JudgmentArrays

    def codes(values) -> np.ndarray:
        known = sorted({v for v in values if v is not None})
        index = {v: i for i, v in enumerate(known)}
        return np.array([index.get(v, -1) for v in values], dtype=np.int64).reshape(-1)

    return JudgmentArrays.build(inp.systems, inp.a, inp.b, inp.outcome, prompt=codes(inp.prompts),
                                annotator=codes(inp.annotators) if inp.annotators else None)


def style_cluster_ids(inp: StyleInputs, by: str) -> np.ndarray:
    """The cluster of each judgment of ``inp`` (:func:`planner.stats.clusters.cluster_ids`: ``item`` = same
    prompt and unordered pair, ``prompt``, ``annotator`` or ``none``)."""
    from planner.stats.clusters import cluster_ids

    return cluster_ids(style_judgment_arrays(inp), by)


def design_from_inputs(inp: StyleInputs, cluster: str = "none"):
    """The :class:`planner.model.style.StyleDesign`, rows oriented with the left response first when known;
    with its judgments' clusters (:func:`style_cluster_ids`) unless ``cluster`` is ``none``."""
    from planner.model.style import StyleDesign, style_features

    cache: dict[str, np.ndarray] = {}

    def feats(t: str) -> np.ndarray:
        if t not in cache:
            cache[t] = style_features(t)
        return cache[t]

    n = inp.a.size
    fa = np.array([feats(t) for t in inp.text_a]).reshape(n, -1)
    fb = np.array([feats(t) for t in inp.text_b]).reshape(n, -1)
    swap = inp.a_left == -1
    a = np.where(swap, inp.b, inp.a)
    b = np.where(swap, inp.a, inp.b)
    out = inp.outcome.copy()
    out[swap & (inp.outcome == 0)] = 1
    out[swap & (inp.outcome == 1)] = 0
    fa2 = np.where(swap[:, None], fb, fa)
    fb2 = np.where(swap[:, None], fa, fb)
    ids = None if cluster == "none" else style_cluster_ids(inp, cluster)
    return StyleDesign.build(inp.systems, a, b, (inp.a_left != 0).astype(float), out, fa2, fb2, cluster=ids,
                             cluster_by=cluster)


def controlled_fit(inp: StyleInputs, *, engine: str = "laplace", seed: int = 0, draws: int = 1000, tune: int = 1000,
                   chains: int = 2, progressbar: bool = False, cluster: str = "item"):
    """The :class:`planner.model.style.StyleFit` of the judgments ``inp``; a DataError when none can be
    controlled.

    ``cluster`` (:data:`planner.vocabulary.CLUSTER_BY`): the covariance is cluster-robust over those
    clusters (``fit.clustering`` says by how much it widened); ``none``: judgments independent.
    """
    from planner.model.style import fit_style
    from planner.stats.clusters import check_cluster_by

    check_cluster_by(cluster)
    if inp.a.size == 0:
        raise DataError(f"style control needs response texts: none of the {inp.n_excluded:,} usable judgments "
                        "has both responses stored in the study (responses are loaded by planner init `responses`)"
                        if inp.n_excluded else "style control needs usable judgments (A, B or tie); none yet",
                        parameters=('responses',))
    return fit_style(design_from_inputs(inp, cluster), engine=engine, seed=seed, draws=draws, tune=tune,
                     chains=chains, progressbar=progressbar)


def controlled_fit_by_stratum(inp: StyleInputs, strata, *, engine: str = "laplace", seed: int = 0,
                              cluster: str = "item"):
    """The controlled strengths as a by-stratum :class:`planner.model.Fit` for ``decide``.

    The style-controlled model pools strata, so every stratum gets the same
    draws (the win probability between responses of equal style); the
    per-stratum frequentist tests in ``decide`` still use the raw counts. ``cluster``: as in
    :func:`controlled_fit`.
    """
    from dataclasses import replace

    sf = controlled_fit(inp, engine=engine, seed=seed, cluster=cluster)
    k = len(strata)
    draws = np.repeat(sf.fit.beta_draws[:, None, :], k, axis=1)
    return replace(sf.fit, strata=tuple(strata), stratum_draws=draws,
                   stratum_mean=np.repeat(sf.fit.mean[None, :], k, axis=0),
                   stratum_sd=np.repeat(sf.fit.sd[None, :], k, axis=0))
