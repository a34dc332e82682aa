"""planner.stats.clusters against independent references.

* ICC(1): statsmodels' one-way ANOVA sums of squares (balanced groups) and a hand
  calculation for unequal groups (Donner's n0) — moved here with the maths from
  bench/diagnose_replays.py, which now calls the core;
* the design effect of a mean: statsmodels OLS with cluster-robust covariance
  (``cov_type="cluster"``, intercept only) over the plain OLS variance;
* clusters and tallies: hand cases, and the counts they must sum back to.
"""

from __future__ import annotations

import numpy as np
import pytest

from planner.errors import DataError, UsageError
from planner.stats import clusters as cl

REL = 1e-12   # the same sums in another order: agreement to rounding


def test_icc_balanced_matches_statsmodels_anova():
    import pandas as pd
    import statsmodels.api as sm
    from statsmodels.formula.api import ols

    g = np.random.default_rng(3)
    effects = g.normal(0, 0.6, 40)
    y = np.concatenate([effects[i] + g.normal(0, 1.0, 3) for i in range(40)])
    groups = np.repeat(np.arange(40), 3)
    df = pd.DataFrame({"y": y, "g": groups.astype(str)})
    table = sm.stats.anova_lm(ols("y ~ C(g)", data=df).fit())
    msb = table.loc["C(g)", "sum_sq"] / table.loc["C(g)", "df"]
    msw = table.loc["Residual", "sum_sq"] / table.loc["Residual", "df"]
    est = cl.icc_oneway(y, groups)
    assert est.icc == pytest.approx((msb - msw) / (msb + 2 * msw), rel=REL)
    assert (est.n_clusters, est.n_scores, est.mean_size, est.kish_size) == (40, 120, 3.0, 3.0)
    assert est.design_effect == pytest.approx(1 + 2 * est.icc, rel=REL)


def test_icc_unequal_groups_by_hand():
    # groups [1, 2], [3, 5, 7], [4]: N = 6, k = 3, grand mean 22/6
    # SSB = 2 (1.5 - 11/3)^2 + 3 (5 - 11/3)^2 + (4 - 11/3)^2 = 9.3889 + 5.3333 + 0.1111 = 14.8333
    # SSW = 0.5 + 8 + 0 = 8.5; MSB = 14.8333 / 2 = 7.41667; MSW = 8.5 / 3 = 2.83333
    # n0 = (6 - (4 + 9 + 1) / 6) / 2 = 1.83333; ICC = (7.41667 - 2.83333) / (7.41667 + 0.83333 * 2.83333)
    #    = 4.58333 / 9.77778 = 0.46875; Kish size = (4 + 9 + 1) / 6 = 2.3333
    est = cl.icc_oneway([1.0, 2.0, 3.0, 5.0, 7.0, 4.0], [10, 10, 4, 4, 4, -1])   # any integer labels
    msb, msw, n0 = 14.833333333333334 / 2, 8.5 / 3, (6 - 14 / 6) / 2
    assert est.icc == pytest.approx((msb - msw) / (msb + (n0 - 1) * msw), rel=REL)
    assert est.icc == pytest.approx(0.46875, abs=1e-5)
    assert est.kish_size == pytest.approx(14 / 6, rel=REL)
    assert est.design_effect == pytest.approx(1 + (14 / 6 - 1) * 0.46875, abs=1e-5)


def test_icc_undefined_cases():
    assert cl.icc_oneway([], []).icc is None
    assert cl.icc_oneway([1.0, 2.0], [0, 0]).icc is None            # one cluster
    assert cl.icc_oneway([1.0, 2.0, 3.0], [0, 1, 2]).icc is None     # no cluster with two scores
    assert cl.icc_oneway([1.0, 1.0, 1.0, 1.0], [0, 0, 1, 1]).icc is None   # no variation
    assert cl.icc_oneway([1.0, 2.0, 3.0], [0, 1, 2]).design_effect == 1.0


def test_mean_design_effect_matches_statsmodels_cluster_robust_ols():
    import statsmodels.api as sm

    g = np.random.default_rng(11)
    sizes = g.integers(1, 5, 60)
    groups = np.repeat(np.arange(60), sizes)
    y = g.choice([0.0, 0.5, 1.0], size=groups.size) + 0.4 * g.normal(size=60)[groups]
    x = np.ones((y.size, 1))
    robust = sm.OLS(y, x).fit(cov_type="cluster", cov_kwds={"groups": groups}).bse[0] ** 2
    plain = sm.OLS(y, x).fit().bse[0] ** 2
    assert cl.mean_design_effect(y, groups) == pytest.approx(robust / plain, rel=1e-10)
    assert cl.mean_design_effect(y, groups) > 1.2          # the shared cluster effect shows


def test_mean_design_effect_is_one_for_singletons_and_none_when_undefined():
    y = np.array([1.0, 0.0, 0.5, 1.0, 0.0])
    assert cl.mean_design_effect(y, np.arange(5)) == pytest.approx(1.0, rel=REL)
    assert cl.mean_design_effect(y, np.zeros(5)) is None                    # one cluster
    assert cl.mean_design_effect(np.ones(4), [0, 0, 1, 1]) is None          # no variation
    # two clusters whose members disagree exactly: cluster sums 0, raw effect 0, applied as 1
    assert cl.mean_design_effect([1.0, 0.0, 1.0, 0.0], [0, 0, 1, 1]) == 0.0
    assert cl.applied_design_effect(0.0) == 1.0 and cl.applied_design_effect(None) == 1.0
    assert cl.applied_design_effect(1.7) == 1.7


def _arrays():
    # systems x, y, z; prompts 0, 1; annotators 0, 1 and none (-1)
    #   j  left right outcome stratum prompt annotator
    rows = [(0, 1, 0, 0, 0, 0),    # x-y on p0, x left, x wins
            (1, 0, 1, 0, 0, 1),    # x-y on p0, y left, x wins (right won)
            (0, 1, 2, 0, 0, -1),   # x-y on p0, tie
            (0, 2, 0, 0, 0, 0),    # x-z on p0
            (2, 1, 3, 1, 1, 1),    # z-y on p1, invalid
            (1, 2, 0, 1, 1, -1)]   # y-z on p1, y wins
    c = np.array(rows).T
    return cl.JudgmentArrays.build(("x", "y", "z"), c[0], c[1], c[2], stratum=c[3], prompt=c[4], annotator=c[5],
                                   strata=("s0", "s1"))


def test_cluster_ids_by_each_rule():
    ja = _arrays()
    item = cl.cluster_ids(ja, "item")
    assert item[0] == item[1] == item[2] and len({item[0], item[3], item[4]}) == 3 and item[4] == item[5]
    prompt = cl.cluster_ids(ja, "prompt")
    assert prompt.tolist() == [0, 0, 0, 0, 1, 1]
    ann = cl.cluster_ids(ja, "annotator")
    assert ann[0] == ann[3] and ann[1] == ann[4] and len({ann[0], ann[1], ann[2], ann[5]}) == 4   # none: alone
    assert cl.cluster_ids(ja, "none").tolist() == list(range(6))
    with pytest.raises(UsageError, match="`cluster` \\('pair'\\) must be one of item, prompt, annotator, none"):
        cl.cluster_ids(ja, "pair")


def test_cluster_cells_sum_back_to_the_counts():
    ja = _arrays()
    counts = ja.counts()
    for by in ("item", "prompt", "annotator", "none"):
        cells = cl.cluster_cells(ja, by)
        table = cells.cell_totals(3, 2)
        key = (counts.a * 3 + counts.b) * 2 + counts.stratum
        np.testing.assert_array_equal(table[key], np.stack([counts.a_wins, counts.b_wins, counts.ties], 1))
        assert table.sum() == int(counts.usable.sum()) == 5
    item = cl.cluster_cells(ja, "item")
    assert item.n_clusters == 3          # the invalid z-y judgment is in the y-z cluster of p1
    # (x, y) shown x-left on p0: one A and one tie; (y, x): one B
    row = [(int(a), int(b), int(w), int(lo), int(t)) for a, b, w, lo, t in
           zip(item.a, item.b, item.a_wins, item.b_wins, item.ties)]
    assert (0, 1, 1, 0, 1) in row and (1, 0, 0, 1, 0) in row
    pooled = item.pooled()
    assert (pooled.stratum == 0).all() and pooled.cell_totals(3, 1).sum() == 5



def test_pooled_cells_reorder_or_tally_alike():
    """ClusterCells.pooled: item and prompt clusters lie in one stratum, so pooling only reorders the rows (one
    sort); annotator clusters span strata and are tallied again. Either way the result equals the tallying path,
    row for row and in the same order (the sandwich sums over the rows in that order)."""
    rng = np.random.default_rng(29)
    n, m = 4000, 7
    left = rng.integers(0, m, n)
    right = (left + rng.integers(1, m, n)) % m
    prompt = rng.integers(0, 40, n)
    ja = cl.JudgmentArrays.build(tuple("abcdefg"), left, right, rng.integers(0, 4, n), stratum=prompt % 3,
                                 prompt=prompt, annotator=rng.integers(-1, 5, n), strata=("s0", "s1", "s2"))
    for by in ("item", "prompt", "annotator", "none"):
        cells = cl.cluster_cells(ja, by)
        assert cells.stratum.any()
        assert cells.pooled() == cells.tallied_pooled(), by
    merged = cl.cluster_cells(ja, "annotator")
    assert merged.pooled().a.size < merged.a.size          # rows of one annotator in several strata merged
    # cluster ids with a gap: tallied (and renumbered) alike
    gap = cl.ClusterCells("item", 3, np.array([0, 2]), np.array([0, 1]), np.array([1, 0]), np.array([1, 0]),
                          np.array([1, 0]), np.array([0, 1]), np.array([0, 0]))
    assert gap.pooled() == gap.tallied_pooled() and gap.pooled().n_clusters == 2


def test_verdict_icc_by_hand():
    # one pair (x, y), both orders on each of 4 prompts; x shown left scores +1 (x wins) or -1
    # oriented +1 for x: prompt 0: +1, +1; prompt 1: -1, -1; prompt 2: +1, -1; prompt 3: +1, +1 (position-balanced)
    left = [0, 1] * 4
    right = [1, 0] * 4
    # outcome codes relative to the shown order: x wins when x is left -> 0, when x is right -> 1
    x_wins = [True, True, False, False, True, False, True, True]
    outcome = [0 if (w == (lf == 0)) else 1 for w, lf in zip(x_wins, left)]
    ja = cl.JudgmentArrays.build(("x", "y"), left, right, outcome, prompt=[0, 0, 1, 1, 2, 2, 3, 3])
    scores = np.array([1, 1, -1, -1, 1, -1, 1, 1], dtype=float)
    # centring within (pair, shown order): x-left verdicts (even j) mean 0.5, x-right (odd j) mean 0
    centred = scores - np.where(np.arange(8) % 2 == 0, 0.5, 0.0)
    want = cl.icc_oneway(centred, [0, 0, 1, 1, 2, 2, 3, 3])
    got = cl.verdict_icc(ja)
    assert got.icc == pytest.approx(want.icc, rel=REL) and got.n_clusters == 4 and got.n_scores == 8
    assert got.icc > 0.2


def test_build_checks_lengths_and_codes():
    with pytest.raises(DataError, match="differ in length"):
        cl.JudgmentArrays.build(("x", "y"), [0], [1], [0, 1])
    with pytest.raises(DataError, match="outcome codes"):
        cl.JudgmentArrays.build(("x", "y"), [0], [1], [7])


def test_design_effects_against_one_system_equal_the_pairwise_ones():
    g = np.random.default_rng(2)
    n = 3000
    left = g.integers(0, 4, n)
    right = (left + g.integers(1, 4, n)) % 4
    ja = cl.JudgmentArrays.build(("w", "x", "y", "z"), left, right, g.integers(0, 4, n), prompt=g.integers(0, 50, n))
    ids = cl.cluster_ids(ja, "item")
    got = cl.design_effects_against(ja, ids, 2, "half")
    assert sorted(got) == [0, 1, 3]
    for i, v in got.items():
        assert v == pytest.approx(cl.pair_design_effect(ja, ids, i, 2, "half"), rel=REL)
    # by hand for one pair: scores of x against y, clusters by (prompt, pair)
    score, index = cl.pair_scores(ja, 1, 2, "drop")
    assert set(np.unique(score)) <= {0.0, 1.0} and (ja.outcome[index] < 2).all()
    assert cl.design_effects_against(ja, ids, 2, "drop")[1] == pytest.approx(
        cl.mean_design_effect(score, ids[index]), rel=REL)
