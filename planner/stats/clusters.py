"""Clustered verdicts: which judgments share a cluster, how far they agree beyond chance, what it costs.

Verdicts on the same prompt and system pair are correlated: a judge shown both
presentation orders, or several annotators on one item, see the same two
responses. Counting them as independent draws overstates the information in the
data. This module is the one home of

* :class:`JudgmentArrays`: the per-judgment integer arrays a study gives
  (``Study.judgment_arrays``: stratum, left, right, outcome, prompt and annotator
  codes), from which the counts (:meth:`JudgmentArrays.counts`) and every
  cluster id come, so both always describe the same judgments;
* :func:`cluster_ids`: the cluster of each judgment by ``item`` (prompt and
  unordered pair, the default), ``prompt``, ``annotator`` or ``none``;
* :func:`icc_oneway`: the one-way ANOVA intraclass correlation for clusters of
  unequal size (Donner 1986, with his ``n0`` in place of the cluster size);
* :func:`verdict_icc`: that ICC of the verdicts on the same (prompt, pair), the
  figure ``size --icc`` and the plan forecast take, with the Kish design effect;
* :func:`mean_design_effect`: the variance inflation of a mean score under
  clustering, from cluster sums (the cluster-robust variance of a mean, Liang &
  Zeger 1986, over the independent-judgment one);
* :func:`cluster_cells`: judgments tallied per (cluster, shown pair, stratum),
  what the model's cluster-robust (sandwich) covariance sums over.

The cost of clustering is never used to *narrow* an interval: a design effect
below 1 (verdicts on one prompt disagree more than chance) is reported but
applied as 1 (:data:`MIN_APPLIED_DESIGN_EFFECT`), so an interval is never
narrower than the one that treats the judgments as independent.

References: A. Donner (1986), "A review of inference procedures for the
intraclass correlation coefficient in the one-way random effects model",
*Int. Stat. Rev.* 54:67–82; L. Kish (1965), *Survey Sampling*, Wiley, §5.4;
K.-Y. Liang & S. L. Zeger (1986), "Longitudinal data analysis using generalized
linear models", *Biometrika* 73:13–22. Formulas: docs/methods.md, "Clustered
verdicts".
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from planner.counts import DEFAULT_STRATUM, Counts
from planner.equality import array_eq
from planner.errors import DataError, UsageError
from planner.limits import check_choice
from planner.vocabulary import CLUSTER_BY

#: a design effect is applied as at least this: clustering never narrows an interval
MIN_APPLIED_DESIGN_EFFECT = 1.0


@array_eq
@dataclass(frozen=True)
class JudgmentArrays:
    """Pairwise judgments one by one, as integer arrays of equal length.

    Attributes
    ----------
    systems, strata : tuple of str
        ``left``/``right`` index ``systems``; ``stratum`` indexes ``strata``.
    left, right : ndarray of int64
        The systems as shown: ``left`` first, ``right`` second.
    outcome : ndarray of int64
        0 left won, 1 right won, 2 tie, 3 invalid (:data:`planner.vocabulary.OUTCOMES` order).
    stratum : ndarray of int64
    prompt : ndarray of int64
        A code per distinct prompt (>= 0; equal codes, same prompt).
    annotator : ndarray of int64
        A code per distinct annotator, -1 when the judgment names none.
    """

    systems: tuple[str, ...]
    strata: tuple[str, ...]
    left: np.ndarray
    right: np.ndarray
    outcome: np.ndarray
    stratum: np.ndarray
    prompt: np.ndarray
    annotator: np.ndarray

    @classmethod
    def build(cls, systems, left, right, outcome, *, stratum=None, prompt=None, annotator=None,
              strata=(DEFAULT_STRATUM,)) -> JudgmentArrays:
        """Checked arrays (int64, one length); a missing ``stratum`` is 0, ``prompt`` 0, ``annotator`` -1."""
        return cls.build_with_counts(systems, left, right, outcome, stratum=stratum, prompt=prompt,
                                     annotator=annotator, strata=strata)[0]

    @classmethod
    def build_with_counts(cls, systems, left, right, outcome, *, stratum=None, prompt=None, annotator=None,
                          strata=(DEFAULT_STRATUM,)) -> tuple[JudgmentArrays, Counts]:
        """:meth:`build` and the result's :meth:`counts`, computed once: they are the build's range checks
        (system, outcome and stratum codes), and a caller that needs both need not aggregate twice."""
        cols = [np.asarray(x, dtype=np.int64).ravel() for x in (left, right, outcome)]
        n = cols[0].size
        for value, default in ((stratum, 0), (prompt, 0), (annotator, -1)):
            cols.append(np.full(n, default, dtype=np.int64) if value is None
                        else np.asarray(value, dtype=np.int64).ravel())
        if any(c.size != n for c in cols):
            raise DataError("judgment arrays differ in length: " + ", ".join(str(c.size) for c in cols))
        out = cls(tuple(systems), tuple(strata), *cols)
        return out, out.counts()

    @property
    def n(self) -> int:
        return int(self.left.size)

    def counts(self) -> Counts:
        """The :class:`Counts` of these judgments (cell ``a`` = shown left)."""
        return Counts.from_arrays(self.systems, self.left, self.right, self.outcome, self.stratum, self.strata)

    def usable(self) -> JudgmentArrays:
        """The judgments with a verdict (invalid ones out)."""
        keep = self.outcome < 3
        return JudgmentArrays(self.systems, self.strata, *(getattr(self, f)[keep] for f in _FIELDS))

    def pair_key(self) -> np.ndarray:
        """``min(left, right) * M + max(left, right)``: the unordered pair of each judgment."""
        m = len(self.systems)
        return np.minimum(self.left, self.right) * m + np.maximum(self.left, self.right)


_FIELDS = ("left", "right", "outcome", "stratum", "prompt", "annotator")


def check_cluster_by(by: str) -> str:
    """``by`` if it names a clustering (:data:`planner.vocabulary.CLUSTER_BY`), else a UsageError."""
    check_choice("cluster", by, CLUSTER_BY)
    return by


def dense_codes(*keys: np.ndarray) -> np.ndarray:
    """Dense ids 0..G-1 of the distinct rows of ``keys`` (G = number of distinct rows), in sorted key order."""
    if not keys or keys[0].size == 0:
        return np.zeros(0 if not keys else keys[0].size, dtype=np.int64)
    cols = [np.asarray(k, dtype=np.int64) for k in keys]
    # one int64 per row (mixed radix over each column's range) sorts ~30x faster than unique(axis=0)
    combined = np.zeros_like(cols[0])
    span = 1
    for c in cols:
        low = int(c.min())
        width = int(c.max()) - low + 1
        span *= width
        if span >= 1 << 62:
            _, inverse = np.unique(np.stack(cols, axis=1), axis=0, return_inverse=True)
            return inverse.ravel().astype(np.int64)
        combined = combined * width + (c - low)
    _, inverse = np.unique(combined, return_inverse=True)
    return inverse.ravel().astype(np.int64)


def cluster_ids(arrays: JudgmentArrays, by: str = "item") -> np.ndarray:
    """The cluster of every judgment: dense ids 0..G-1.

    ``item``: same prompt and unordered pair (both presentation orders, every
    annotator); ``prompt``: same prompt, any pair; ``annotator``: same annotator
    (a judgment that names none is its own cluster); ``none``: every judgment is
    its own cluster.
    """
    check_cluster_by(by)
    n = arrays.n
    if by == "none":
        return np.arange(n, dtype=np.int64)
    if by == "item":
        return dense_codes(arrays.prompt, arrays.pair_key())
    if by == "prompt":
        return dense_codes(arrays.prompt)
    own = np.where(arrays.annotator >= 0, -1, np.arange(n, dtype=np.int64))   # no annotator: a singleton
    return dense_codes(arrays.annotator, own)


# ------------------------------------------------------------------ ICC
@dataclass(frozen=True)
class IccEstimate:
    """The one-way ANOVA intraclass correlation of scores within clusters.

    Attributes
    ----------
    icc : float or None
        ``(MSB - MSW) / (MSB + (n0 - 1) MSW)``; may be negative; None when it is
        undefined (fewer than two clusters, no cluster with two scores, or no
        variation at all).
    n_clusters, n_scores : int
    mean_size : float
        ``N / G``, scores per cluster.
    kish_size : float
        ``sum n_c^2 / N``: the cluster size that enters Kish's design effect of a
        mean when the sizes differ (equals ``mean_size`` when they do not).
    design_effect : float
        Kish's ``1 + (kish_size - 1) * icc`` (1 when ``icc`` is None).
    """

    icc: float | None
    n_clusters: int
    n_scores: int
    mean_size: float
    kish_size: float
    design_effect: float


def icc_oneway(values, groups) -> IccEstimate:
    """ANOVA ICC(1) of ``values`` in clusters ``groups`` (any integer labels), for unequal cluster sizes.

    ``MSB = sum n_c (mean_c - mean)^2 / (G - 1)``, ``MSW = sum (y - mean_c)^2 / (N - G)``,
    ``n0 = (N - sum n_c^2 / N) / (G - 1)`` (Donner 1986). Vectorised: linear in N.
    """
    y = np.asarray(values, dtype=float).ravel()
    g = dense_codes(np.asarray(groups, dtype=np.int64).ravel())
    k = int(g.max()) + 1 if y.size else 0
    if k == 0:
        return IccEstimate(None, 0, 0, 0.0, 0.0, 1.0)
    sums = np.bincount(g, weights=y, minlength=k)
    means = sums / np.bincount(g, minlength=k)
    return _icc(np.bincount(g, minlength=k).astype(float), sums, float(((y - means[g]) ** 2).sum()))


def _icc(sizes: np.ndarray, sums: np.ndarray, within: float) -> IccEstimate:
    """Donner's ANOVA ICC from the clusters' sizes and sums and the within-cluster sum of squares."""
    k = sizes.size
    n_tot = float(sizes.sum())
    kish = float((sizes * sizes).sum() / n_tot)
    icc = None
    if k >= 2 and n_tot > k:
        grand = float(sums.sum()) / n_tot
        msb = float((sizes * (sums / sizes - grand) ** 2).sum()) / (k - 1)
        msw = within / (n_tot - k)
        n0 = (n_tot - (sizes * sizes).sum() / n_tot) / (k - 1)
        den = msb + (n0 - 1.0) * msw
        if den > 0:
            icc = (msb - msw) / den
    deff = 1.0 if icc is None else 1.0 + (kish - 1.0) * icc
    return IccEstimate(icc, k, int(n_tot), n_tot / k, kish, float(deff))


def verdict_icc(arrays: JudgmentArrays, cells: ClusterCells | None = None) -> IccEstimate:
    """The ICC of verdicts on the same (prompt, unordered pair): how far they agree beyond chance.

    Each usable verdict scores +1 / 0 / -1 for the pair's first system, centred
    within (pair, shown order) so that a pair's strength gap and the judge's
    position preference are not read as agreement; then :func:`icc_oneway` over
    the (prompt, pair) clusters. This is the ``rho`` of ``size --per-prompt K
    --icc rho`` (design effect ``1 + (K - 1) rho``). ``cells``: the same judgments'
    item tallies (:func:`cluster_cells` by ``item``) when at hand; the sums are then
    read from them (linear in the tallies, not the judgments).
    """
    if cells is None or cells.by != "item":
        cells = cluster_cells(arrays, "item")
    if cells.cluster.size == 0:
        return IccEstimate(None, 0, 0, 0.0, 0.0, 1.0)
    m = len(arrays.systems)
    first = cells.a < cells.b
    s_a = np.where(first, 1.0, -1.0)                      # the pair's first system's score when the left one wins
    n_a, n_b, n_t = (v.astype(float) for v in (cells.a_wins, cells.b_wins, cells.ties))
    n = n_a + n_b + n_t
    cell = (np.minimum(cells.a, cells.b) * m + np.maximum(cells.a, cells.b)) * 2 + first
    size = int(2 * m * m)
    mean = (np.bincount(cell, weights=(n_a - n_b) * s_a, minlength=size)
            / np.maximum(np.bincount(cell, weights=n, minlength=size), 1.0))[cell]
    row_sum = (n_a - n_b) * s_a - n * mean
    row_sq = n_a * (s_a - mean) ** 2 + n_b * (s_a + mean) ** 2 + n_t * mean ** 2
    k = cells.n_clusters
    sizes = np.bincount(cells.cluster, weights=n, minlength=k)
    sums = np.bincount(cells.cluster, weights=row_sum, minlength=k)
    within = float(row_sq.sum() - (sums * sums / sizes).sum())
    return _icc(sizes, sums, max(within, 0.0))


# -------------------------------------------------------- design effects
def mean_design_effect(scores, clusters) -> float | None:
    """Variance inflation of the mean of ``scores`` when ``clusters`` share information.

    The cluster-robust variance of a mean, ``G/(G-1) sum_c (sum_{j in c} e_j)^2 / N^2``
    with ``e = score - mean`` (Liang & Zeger 1986; the usual ``G/(G-1)`` small-sample
    factor), over the independent-judgment one, ``N/(N-1) sum_j e_j^2 / N^2``. Exactly 1
    when every cluster holds one score. None when either is undefined (fewer than two
    clusters or no variation). Not floored (see :func:`applied_design_effect`).
    """
    y = np.asarray(scores, dtype=float).ravel()
    g = dense_codes(np.asarray(clusters, dtype=np.int64).ravel())
    n_tot = y.size
    k = int(g.max()) + 1 if n_tot else 0
    if k < 2:
        return None
    e = y - y.mean()
    within = float((e * e).sum()) * n_tot / (n_tot - 1)
    if not within > 0:
        return None
    sums = np.bincount(g, weights=e, minlength=k)
    return float((sums * sums).sum()) * k / (k - 1) / within


def pair_scores(arrays: JudgmentArrays, i: int, j: int, ties: str = "half") -> tuple[np.ndarray, np.ndarray]:
    """``(score, index)``: system ``i``'s score against ``j`` in each of their judgments, either position.

    ``ties="half"``: 1 win, 1/2 tie, 0 loss over the usable judgments; ``"drop"``: 1 / 0 over the
    decisive ones. ``index`` are the judgments' places in ``arrays`` (for their clusters and strata).
    """
    if ties not in ("half", "drop"):
        raise UsageError(f"`ties` ({ties!r}) must be 'half' or 'drop'", parameters=("ties",))
    first = (arrays.left == i) & (arrays.right == j)
    second = (arrays.left == j) & (arrays.right == i)
    ok = arrays.outcome < (2 if ties == "drop" else 3)
    index = np.flatnonzero((first | second) & ok)
    won = np.where(first[index], arrays.outcome[index] == 0, arrays.outcome[index] == 1)
    return np.where(arrays.outcome[index] == 2, 0.5, won.astype(float)), index


def pair_design_effect(arrays: JudgmentArrays, ids: np.ndarray, i: int, j: int, ties: str = "half",
                       mask: np.ndarray | None = None) -> float | None:
    """:func:`mean_design_effect` of ``i``'s score against ``j`` (:func:`pair_scores`) with clusters ``ids``;
    ``mask`` (per judgment) keeps a subset, e.g. one stratum."""
    score, index = pair_scores(arrays, i, j, ties)
    if mask is not None:
        keep = mask[index]
        score, index = score[keep], index[keep]
    return mean_design_effect(score, ids[index])


def design_effects_against(arrays: JudgmentArrays, ids: np.ndarray, k: int,
                           ties: str = "half") -> dict[int, float | None]:
    """``{i: pair_design_effect(arrays, ids, i, k, ties)}`` for every system ``i != k`` (the judgments
    involving ``k`` selected once: linear in the judgments, not in systems x judgments)."""
    sel = np.flatnonzero((arrays.left == k) | (arrays.right == k))
    sub = JudgmentArrays(arrays.systems, arrays.strata, *(getattr(arrays, f)[sel] for f in _FIELDS))
    other = np.where(sub.left == k, sub.right, sub.left)
    order = np.argsort(other, kind="stable")
    bounds = np.searchsorted(other[order], np.arange(len(arrays.systems) + 1))
    out: dict[int, float | None] = {}
    for i in range(len(arrays.systems)):
        if i == k:
            continue
        rows = order[bounds[i]:bounds[i + 1]]
        part = JudgmentArrays(arrays.systems, arrays.strata, *(getattr(sub, f)[rows] for f in _FIELDS))
        out[i] = pair_design_effect(part, ids[sel][rows], i, k, ties)
    return out


def applied_design_effect(raw: float | None) -> float:
    """The design effect an interval uses: ``raw``, but never below 1 (nor when unknown)."""
    return MIN_APPLIED_DESIGN_EFFECT if raw is None or not raw > MIN_APPLIED_DESIGN_EFFECT else float(raw)


# ------------------------------------------------------ cells per cluster
@array_eq
@dataclass(frozen=True)
class ClusterCells:
    """Usable judgments tallied per (cluster, shown pair, stratum): what a sandwich covariance sums over.

    Attributes
    ----------
    by : str
        The clustering (:data:`planner.vocabulary.CLUSTER_BY`).
    n_clusters : int
        Clusters with at least one usable judgment.
    cluster, a, b, stratum : ndarray of int64
        One row per (cluster, a shown first, b, stratum) with a usable judgment.
    a_wins, b_wins, ties : ndarray of int64
    """

    by: str
    n_clusters: int
    cluster: np.ndarray
    a: np.ndarray
    b: np.ndarray
    stratum: np.ndarray
    a_wins: np.ndarray
    b_wins: np.ndarray
    ties: np.ndarray

    def pooled(self) -> ClusterCells:
        """The same tallies with every stratum merged into one (for a pooled fit): rows in (cluster, a, b) order.

        When no two rows share a (cluster, a, b) (a cluster lies in one stratum, as an item or a prompt
        does), merging is only that reordering, done by one sort of the rows' keys; otherwise the rows
        are tallied again (the same result either way: tests/test_clusters.py).
        """
        if self.a.size:
            span = int(max(self.a.max(), self.b.max())) + 1
            key = (self.cluster * span + self.a) * span + self.b
            order = np.argsort(key)     # distinct keys (checked below): any sort gives this order
            ordered, ids = key[order], self.cluster[order]
            # distinct rows, and cluster ids 0..G-1 each present (tallying again would renumber them)
            if (not np.any(ordered[1:] == ordered[:-1]) and ids[0] == 0 and ids[-1] == self.n_clusters - 1
                    and not np.any(np.diff(ids) > 1)):
                return ClusterCells(self.by, self.n_clusters, ids, self.a[order], self.b[order],
                                    np.zeros_like(self.stratum), self.a_wins[order], self.b_wins[order],
                                    self.ties[order])
        return self.tallied_pooled()

    def tallied_pooled(self) -> ClusterCells:
        """:meth:`pooled` by tallying the rows again (the general case)."""
        return _tally("pooled", (self.cluster,), self.a, self.b, np.zeros_like(self.stratum), None,
                      (self.a_wins, self.b_wins, self.ties)).relabelled(self.by)

    def relabelled(self, by: str) -> ClusterCells:
        return ClusterCells(by, self.n_clusters, self.cluster, self.a, self.b, self.stratum, self.a_wins,
                            self.b_wins, self.ties)

    def cell_totals(self, n_systems: int, n_strata: int) -> np.ndarray:
        """``(M*M*K, 3)`` A / B / tie totals indexed by ``(a*M + b)*K + stratum``: to check against counts."""
        key = (self.a * n_systems + self.b) * n_strata + self.stratum
        size = n_systems * n_systems * n_strata
        return np.stack([np.bincount(key, weights=w, minlength=size) for w in
                         (self.a_wins, self.b_wins, self.ties)], axis=1).astype(np.int64)


def _tally(by, group, a, b, stratum, outcome, tallies=None) -> ClusterCells:
    """Rows per distinct (``group``, a, b, stratum), with ``group`` the columns that fix a row's cluster
    (a tuple of arrays); ``outcome`` codes (0/1/2) or ready ``tallies`` per judgment. The cluster of each
    row is then read from its ``group`` values, on the (few) rows rather than the judgments."""
    if a.size == 0:
        z = np.zeros(0, dtype=np.int64)
        return ClusterCells(by, 0, z, z, z, z, z, z, z)
    rows = dense_codes(*group, a, b, stratum)
    r = int(rows.max()) + 1
    first = np.zeros(r, dtype=np.int64)
    first[rows[::-1]] = np.arange(rows.size - 1, -1, -1)      # a representative judgment of each row
    if tallies is None:     # one integer bincount over (row, outcome): the A / B / tie tallies of every row
        tab = np.bincount(rows * 3 + outcome, minlength=3 * r).astype(np.int64, copy=False).reshape(r, 3)
        counts = [np.ascontiguousarray(tab[:, o]) for o in range(3)]
    else:
        counts = [np.bincount(rows, weights=t, minlength=r).astype(np.int64) for t in tallies]
    if by == "item":
        a_f, b_f = a[first], b[first]
        cluster = dense_codes(group[0][first], np.minimum(a_f, b_f), np.maximum(a_f, b_f))
    else:
        cluster = dense_codes(*(g[first] for g in group))
    n_clusters = int(cluster.max()) + 1
    return ClusterCells(by, n_clusters, cluster, a[first], b[first], stratum[first], *counts)


def cluster_cells(arrays: JudgmentArrays, by: str = "item") -> ClusterCells:
    """The usable judgments of ``arrays`` tallied per (cluster by ``by``, left, right, stratum).

    Linear in the judgments up to one sort: 0.15 s for 1,000,000 judgments in 38,000 item clusters.
    """
    check_cluster_by(by)
    keep = arrays.outcome < 3
    every = bool(keep.all())        # no invalid judgment: the arrays as they are, not copies
    left, right, stratum, outcome = (getattr(arrays, f) if every else getattr(arrays, f)[keep]
                                     for f in ("left", "right", "stratum", "outcome"))
    group: tuple[np.ndarray, ...]
    if by in ("item", "prompt"):
        group = (arrays.prompt if every else arrays.prompt[keep],)
    elif by == "annotator":
        ann = arrays.annotator if every else arrays.annotator[keep]
        group = (ann, np.where(ann >= 0, -1, np.arange(ann.size, dtype=np.int64)))
    else:
        group = (np.arange(int(keep.sum()), dtype=np.int64),)
    return _tally(by, group, left, right, stratum, outcome)


__all__ = ["MIN_APPLIED_DESIGN_EFFECT", "ClusterCells", "IccEstimate", "JudgmentArrays", "applied_design_effect",
           "check_cluster_by", "cluster_cells", "cluster_ids", "dense_codes", "design_effects_against",
           "icc_oneway", "mean_design_effect", "pair_design_effect", "pair_scores", "verdict_icc"]
