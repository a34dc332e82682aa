"""``fit()``: check the inputs, pool or weight the strata, and run the chosen engine.

The Laplace engine (:mod:`planner.model.laplace`) is imported with this module; the NUTS
engine (:mod:`planner.model.nuts`, pymc) only when ``engine="nuts"`` is asked for.
"""

from __future__ import annotations

import numpy as np

from planner.counts import Counts
from planner.errors import DataError, UsageError
from planner.limits import check_choice
from planner.model.laplace import fit_laplace
from planner.model.types import Fit, Prior
from planner.stats.clusters import ClusterCells
from planner.vocabulary import ENGINES


def _stratum_weights(counts: Counts, stratum_weights: dict | None) -> np.ndarray:
    """Normalised stratum weights; default: each stratum's share of usable judgments."""
    k = len(counts.strata)
    if stratum_weights is None:
        w = np.bincount(counts.stratum, weights=counts.usable, minlength=k).astype(float)
        if w.sum() <= 0:
            w = np.ones(k)
        return w / w.sum()
    unknown = sorted(set(stratum_weights) - set(counts.strata))
    if unknown:
        raise UsageError(f"stratum weights name unknown strata {unknown}; "
                         f"known strata are {list(counts.strata)}", parameters=('stratum_weights',))
    w = np.array([float(stratum_weights.get(s, 0.0)) for s in counts.strata])
    if np.any(~np.isfinite(w)) or np.any(w < 0) or w.sum() <= 0:
        raise UsageError(f"stratum weights ({stratum_weights!r}) must be finite, >= 0 "
                         "and not all zero", parameters=('stratum_weights',))
    return w / w.sum()


# -------------------------------------------------------------- entry
def fit(counts: Counts, *, engine: str = "laplace", by_stratum: bool = False,
        stratum_weights: dict | None = None, prior: Prior | None = None, seed: int = 0,
        draws: int = 1000, tune: int = 1000, chains: int = 2, cores: int | None = None,
        progressbar: bool = False, clusters: ClusterCells | None = None) -> Fit:
    """Fit the Bradley–Terry–Davidson model with a position effect.

    Parameters
    ----------
    counts : planner.counts.Counts
        Aggregated cells (``a`` shown first/left). Invalid judgments are
        excluded from the likelihood and reported in ``Fit.n_invalid``.
    engine : {"laplace", "nuts"}
        ``"laplace"``: Gaussian at the posterior mode (fast, deterministic);
        ``"nuts"``: pymc NUTS sampling.
    by_stratum : bool
        Partially pooled per-stratum strengths (``beta + tau * z[k]``); the
        reported ``posterior`` is then the population ranking
        ``sum_k w_k beta_stratum[k]``.
    stratum_weights : dict stratum -> weight, optional
        Population weights (``by_stratum`` only; normalised; strata left out
        get weight 0). Default: each stratum's share of usable judgments.
    prior : Prior, optional
    seed : int
        Seeds the NUTS sampler or the Laplace draws; same inputs and seed give
        identical results.
    draws, tune, chains, cores : int
        Posterior draws per chain (Laplace: total draws), tuning steps, chains
        and worker processes (NUTS only for the last three; ``cores`` defaults
        to ``min(chains, 2)``).
    progressbar : bool or callable
        NUTS progress: True for pymc's bar on stderr; a callable ``report(done, total)``
        called every 50 draws (all chains, tuning included) instead.
    clusters : planner.stats.clusters.ClusterCells, optional
        The same judgments tallied per cluster (:func:`planner.stats.clusters.cluster_cells`):
        the intervals are then cluster-robust (:mod:`planner.model.robust`) and
        :attr:`Fit.clustering` says by how much they widened. None: judgments independent.

    Returns
    -------
    Fit
    """
    check_choice("engine", engine, ENGINES)
    for name, v, low in (("draws", draws, 1), ("tune", tune, 0), ("chains", chains, 1)):
        if not isinstance(v, (int, np.integer)) or v < low:
            raise UsageError(f"`{name}` ({v!r}) must be an integer >= {low}", parameters=(name,))
    if cores is not None and (not isinstance(cores, (int, np.integer)) or cores < 1):
        raise UsageError(f"`cores` ({cores!r}) must be an integer >= 1", parameters=('cores',))
    if stratum_weights is not None and not by_stratum:
        raise UsageError("stratum weights need `by_stratum`", parameters=('by_stratum',))
    prior = prior or Prior()
    if len(counts.systems) < 1:
        raise UsageError("the model needs at least one system", parameters=('counts',))
    weights = None
    strata = tuple(counts.strata)
    if by_stratum:
        weights = _stratum_weights(counts, stratum_weights)
    else:
        counts = counts.pooled() if len(counts.strata) > 1 else counts
        if clusters is not None and clusters.stratum.any():
            clusters = clusters.pooled()
    if clusters is not None:
        _check_clusters(counts, clusters)
    if engine == "laplace":
        return fit_laplace(counts, strata, by_stratum, prior, weights, seed, draws, clusters)
    from planner.model.nuts import fit_nuts

    return fit_nuts(counts, strata, by_stratum=by_stratum, prior=prior, weights=weights, seed=seed,
                    draws=draws, tune=tune, chains=chains, cores=cores, progressbar=progressbar, clusters=clusters)


def _check_clusters(counts: Counts, clusters: ClusterCells) -> None:
    """DataError unless ``clusters`` tally exactly the usable judgments of ``counts``, cell by cell."""
    m, k = len(counts.systems), len(counts.strata)
    if clusters.n_clusters and (max(int(clusters.a.max()), int(clusters.b.max())) >= m
                                or int(clusters.stratum.max()) >= k):
        raise DataError("the clusters name systems or strata the counts do not have")
    table = clusters.cell_totals(m, k)
    key = (counts.a * m + counts.b) * k + counts.stratum
    want = np.zeros_like(table)
    want[key] = np.stack([counts.a_wins, counts.b_wins, counts.ties], axis=1)
    if not np.array_equal(table, want):
        raise DataError("the clusters do not tally the same judgments as the counts "
                        f"({int(table.sum())} vs {int(want.sum())} usable judgments)")


__all__ = ["fit"]
