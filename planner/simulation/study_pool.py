"""The rest of a study as a forecast simulates it: every verdict the study could still collect, drawn once.

A study's pool is finite: a pair can be shown on the prompts that have both
systems' responses, in the presentation orders the design issues, to as many
annotators as the design asks (``votes``), and again only when prompts may be
reused. :class:`PoolDesign` states that; :class:`PilotVerdicts` holds what the
pilot already used (each verdict fills one slot of its (prompt, pair, order)).

One repetition of a forecast draws the whole remaining pool at once
(:func:`draw_pool`) from that repetition's parameters — the truth drawn from
the pilot's posterior — with the clustered judge of
:mod:`planner.simulation.cluster` (a cluster is one (prompt, pair); a cluster
the pilot has a verdict in is drawn given that verdict) and invalid verdicts at
the repetition's rate. The continuation then draws from that pool without
replacement, as a replay does from a real file
(:mod:`planner.simulation.loop`), and the end of the study — the data the
credible pairs are read from — is the pilot plus the pool (or, when the
forecast is capped below the pool, the pilot plus the cap spread evenly over the
pairs).

Orders (``orders``): ``one`` — one presentation order per (prompt, pair), at
random (what ``next-batch`` issues: left and right balanced within a pair);
``both`` — both orders of every (prompt, pair) (``--both-orders``); ``fixed`` —
every prompt of a pair in one order (a judge run in one order, a public file
that shows each pair one way): the pilot's order of that pair, or a random one.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from planner.counts import Counts
from planner.equality import array_eq
from planner.errors import UsageError
from planner.simulation.cluster import canonical_probs, conditional_latent, outcomes
from planner.simulation.replay import ReplayPool

__all__ = ["ORDERS", "DrawnPool", "Layout", "PilotVerdicts", "PoolDesign", "draw_pool", "layout", "open_slots",
           "pair_index"]

ORDERS = ("one", "both", "fixed")
#: the most verdicts one repetition may draw (a larger pool needs a `max_comparisons` cap)
MAX_POOL = 5_000_000


def pair_index(m: int) -> tuple[np.ndarray, np.ndarray]:
    """The unordered pairs ``(i, j)``, ``i < j``, in row-major order: the pair index of this module."""
    i, j = np.triu_indices(m, 1)
    return i.astype(np.int64), j.astype(np.int64)


@array_eq
@dataclass(frozen=True)
class PoolDesign:
    """What the study can still collect.

    ``prompts`` (pairs,): the prompts each pair can be shown on in all (the pilot's included), in the
    order of :func:`pair_index`; ``orders`` one of :data:`ORDERS`; ``votes`` verdicts per (prompt, pair,
    order); ``reuse`` passes through the prompts (1: each prompt once per pair and order; more when
    prompts may be reused).
    """

    prompts: np.ndarray
    orders: str = "one"
    votes: int = 1
    reuse: int = 1

    def __post_init__(self):
        if self.orders not in ORDERS:
            raise UsageError(f"`orders` ({self.orders!r}) must be one of {', '.join(ORDERS)}",
                             parameters=("orders",))
        for name in ("votes", "reuse"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 1:
                raise UsageError(f"`{name}` ({v!r}) must be a whole number >= 1", parameters=(name,))

    @property
    def per_cluster(self) -> int:
        """Slots per (prompt, pair, order)."""
        return int(self.votes * self.reuse)


@array_eq
@dataclass(frozen=True)
class PilotVerdicts:
    """The pilot's verdicts as the pool needs them, one entry per verdict.

    ``pair`` index (:func:`pair_index`); ``prompt`` a code per distinct prompt (−1: a prompt outside the
    study's pool, which fills no slot); ``i_left`` whether the pair's first system was shown left;
    ``code`` 0 the first system lost, 1 tie, 2 it won, −1 invalid.
    """

    pair: np.ndarray
    prompt: np.ndarray
    i_left: np.ndarray
    code: np.ndarray

    @classmethod
    def empty(cls) -> PilotVerdicts:
        z = np.zeros(0, dtype=np.int64)
        return cls(z, z, z.astype(bool), z)


@array_eq
@dataclass(frozen=True)
class Layout:
    """The clusters of a study: one per (pair, prompt), the pilot's first; what the pilot filled.

    ``pair`` (C,) each cluster's pair; ``first_code``/``first_left`` the cluster's first pilot verdict
    (code −2: none); ``filled`` (C, 2) pilot verdicts in the order first-system-left / right.
    """

    pair: np.ndarray
    first_code: np.ndarray
    first_left: np.ndarray
    filled: np.ndarray
    design: PoolDesign


def layout(design: PoolDesign, pilot: PilotVerdicts) -> Layout:
    """The study's clusters: each pair's pilot prompts first, then its unused prompts."""
    n_pairs = design.prompts.size
    keep = pilot.prompt >= 0
    key = pilot.pair[keep] * (int(pilot.prompt.max(initial=-1)) + 1) + pilot.prompt[keep]
    uniq, first, inv = np.unique(key, return_index=True, return_inverse=True)
    idx = np.flatnonzero(keep)
    used_pair = pilot.pair[idx[first]]
    used = np.bincount(used_pair, minlength=n_pairs)
    fresh = np.maximum(np.asarray(design.prompts, dtype=np.int64) - used, 0)
    pair = np.concatenate([used_pair, np.repeat(np.arange(n_pairs), fresh)])
    n_used = uniq.size
    first_code = np.concatenate([pilot.code[idx[first]], np.full(pair.size - n_used, -2)])
    first_left = np.concatenate([pilot.i_left[idx[first]], np.zeros(pair.size - n_used, dtype=bool)])
    filled = np.zeros((pair.size, 2), dtype=np.int64)
    np.add.at(filled, (inv.ravel(), np.where(pilot.i_left[keep], 0, 1)), 1)
    return Layout(pair, first_code, first_left.astype(bool), filled, design)


def _available(lay: Layout, pilot: PilotVerdicts, rng: np.random.Generator) -> np.ndarray:
    """(C, 2): the orders each cluster is shown in (first system left, right), per :data:`ORDERS`."""
    c = lay.pair.size
    if lay.design.orders == "both":
        return np.ones((c, 2), dtype=bool)
    if lay.design.orders == "one":
        left = np.where(lay.first_code > -2, lay.first_left, rng.random(c) < 0.5)
    else:   # fixed: the pilot's majority order of the pair, else a coin
        n_pairs = lay.design.prompts.size
        n_left = np.bincount(pilot.pair, weights=pilot.i_left.astype(float), minlength=n_pairs)
        n_all = np.bincount(pilot.pair, minlength=n_pairs)
        coin = rng.random(n_pairs) < 0.5
        pair_left = np.where(2 * n_left > n_all, True, np.where(2 * n_left < n_all, False, coin))
        left = pair_left[lay.pair]
    return np.stack([left, ~left], axis=1)


def open_slots(lay: Layout, pilot: PilotVerdicts) -> int:
    """Verdicts the study can still collect (orders left to chance drawn with a fixed seed: the count
    does not depend on them but for pairs the pilot shows equally often in both orders)."""
    avail = _available(lay, pilot, np.random.default_rng(0))
    return int(np.where(avail, np.maximum(lay.design.per_cluster - lay.filled, 0), 0).sum())


@dataclass(frozen=True)
class DrawnPool:
    """One repetition's rest of the study: the pool the continuation draws from and the end-of-study data."""

    pool: ReplayPool
    end: Counts         # pilot + the pool (or the cap spread evenly): what the credible pairs are read from


def _slots(lay: Layout, pilot: PilotVerdicts, budget: int, rng: np.random.Generator):
    """(cluster, first-system-left, keep-for-the-end) of every slot still open, each pair's in random
    order and capped at ``budget`` (no pair can take more); the end keeps the budget spread evenly."""
    from planner.allocation.apportion import apportion

    avail = _available(lay, pilot, rng)
    open_ = np.where(avail, np.maximum(lay.design.per_cluster - lay.filled, 0), 0)
    cells = np.flatnonzero(open_.ravel())
    reps = open_.ravel()[cells]
    if reps.sum() > MAX_POOL:
        raise UsageError(f"the study can still collect {int(reps.sum()):,} verdicts; a forecast draws at most "
                         f"{MAX_POOL:,}: cap it with `max_comparisons`", parameters=("max_comparisons",))
    cell = np.repeat(cells, reps)
    cluster, left = cell // 2, cell % 2 == 0
    pair = lay.pair[cluster]
    order = np.lexsort((rng.random(cell.size), pair))
    cluster, left, pair = cluster[order], left[order], pair[order]
    n_pairs = lay.design.prompts.size
    count = np.bincount(pair, minlength=n_pairs)
    rank = np.arange(pair.size) - np.repeat(np.cumsum(count) - count, count)
    total = int(count.sum())
    if budget >= total:
        share = count
    else:
        shares = apportion({str(k): 1.0 for k in range(n_pairs)}, budget,
                           upper={str(k): int(count[k]) for k in range(n_pairs)})
        share = np.array([shares[str(k)] for k in range(n_pairs)])
    keep = rank < np.minimum(count, budget)[pair]
    return cluster[keep], left[keep], (rank < share[pair])[keep]


def draw_pool(lay: Layout, pilot: PilotVerdicts, start: Counts, strengths: np.ndarray, gamma: float, nu: float,
              rho: float, invalid: float, budget: int, rng: np.random.Generator) -> DrawnPool:
    """The rest of the study under one repetition's parameters (see the module docstring).

    ``strengths`` (M,) logits, ``gamma`` the left-position shift, ``nu`` Davidson's tie parameter, ``rho``
    the copula correlation, ``invalid`` the share of invalid verdicts, ``budget`` the most comparisons
    the continuation may draw; ``start`` the pilot's counts (the end-of-study data begins with them).
    """
    i_idx, j_idx = pair_index(strengths.size)
    cluster, left, end = _slots(lay, pilot, budget, rng)
    k = lay.pair
    p_lose_c, p_tie_c = canonical_probs(strengths[i_idx[k]], strengths[j_idx[k]], lay.first_left, gamma, nu)
    w = rng.standard_normal(k.size)
    seen = lay.first_code > -2
    if rho > 0 and seen.any():
        code = np.where(lay.first_code[seen] >= 0, lay.first_code[seen], -1)
        w[seen] = conditional_latent(code, p_lose_c[seen], p_tie_c[seen], rho, rng)
    pair = k[cluster]
    bi, bj = strengths[i_idx[pair]], strengths[j_idx[pair]]
    p_lose, p_tie = canonical_probs(bi, bj, left, gamma, nu)
    z = np.sqrt(rho) * w[cluster] + np.sqrt(1.0 - rho) * rng.standard_normal(cluster.size)
    out = outcomes(z, p_lose, p_tie, left)
    out = np.where(rng.random(out.size) < invalid, 3, out)
    lsys = np.where(left, i_idx[pair], j_idx[pair])
    rsys = np.where(left, j_idx[pair], i_idx[pair])
    by_pair = {}
    bounds = np.searchsorted(pair, np.arange(lay.design.prompts.size + 1))
    for p in np.flatnonzero(np.diff(bounds)).tolist():
        by_pair[(int(i_idx[p]), int(j_idx[p]))] = np.arange(bounds[p], bounds[p + 1])
    # each verdict's prompt within its pair (the clusters the selection sees, as a replay's prompts)
    c = lay.pair.size
    by = np.lexsort((np.arange(c), lay.pair))
    within = np.empty(c, dtype=np.int64)
    within[by] = np.arange(c) - np.searchsorted(lay.pair[by], lay.pair[by])
    pool = ReplayPool(start.systems, lsys, rsys, out, by_pair, "forecast", prompt=within[cluster])
    end_counts = start + Counts.from_arrays(start.systems, lsys[end], rsys[end], out[end])
    return DrawnPool(pool, end_counts)
