"""Clustered verdicts in the selection: a pick that repeats a (prompt, pair) is worth less.

References: Kish's design effect and the effective sample size c / (1 + (c - 1) rho) by hand;
selections on symmetric posteriors where the only difference between two pairs is the cluster
their next verdict would join.
"""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest

from planner import acquisition as acq
from planner.acquisition.clustering import Clustering, design_effect, from_pair_usage, marginal_share
from planner.errors import UsageError
from planner.model import bt


def test_marginal_share_and_design_effect_by_hand():
    rho = 0.4
    # Delta(c) = n_eff(c + 1) - n_eff(c), n_eff(c) = c / (1 + (c - 1) rho)
    assert marginal_share(0, rho) == pytest.approx(1.0)
    assert marginal_share(1, rho) == pytest.approx(2 / 1.4 - 1)                 # 0.428571...
    assert marginal_share(2, rho) == pytest.approx(3 / 1.8 - 2 / 1.4)
    # the shares telescope to n_eff
    for c in (1, 3, 7):
        assert marginal_share(np.arange(c), rho).sum() == pytest.approx(c / (1 + (c - 1) * rho), rel=1e-12)
    assert np.all(marginal_share(np.arange(5), 0.0) == 1.0)
    # Kish: sizes 2, 2, 1 -> sum c^2 / sum c = 9 / 5
    assert design_effect([2, 2, 1], rho) == pytest.approx(1 + 0.8 * rho)
    assert design_effect([], rho) == 1.0 and design_effect([1, 1, 1], rho) == 1.0


def _symmetric(m=4, sd=0.3):
    cov = (np.eye(m) - 1.0 / m) * sd ** 2
    mean = np.array([0.1, 0.0, -0.5, -1.0])[:m]
    return bt.GaussianPosterior(tuple("abcd"[:m]), mean - mean.mean(), cov)


def test_a_pick_that_repeats_a_cluster_is_worth_less():
    post = _symmetric()
    # (0, 1) is the near-tie everyone wants; its next verdicts would repeat prompts it already has
    plain = acq.select_pairs(post, 20, rng=np.random.default_rng(0))
    c = Clustering(icc=0.5, fresh={(0, 1): 0}, share={(0, 1): float(marginal_share(1, 0.5))})
    clustered = acq.select_pairs(post, 20, rng=np.random.default_rng(0), clusters=c)
    n_plain, n_cl = Counter(plain.pairs)[(0, 1)], Counter(clustered.pairs)[(0, 1)]
    assert n_cl < n_plain, (n_plain, n_cl)
    # its one-judgment gain is that of a verdict with a third of the information (share 1/3 at rho 0.5)
    one = acq.select_pairs(post, 1, rng=np.random.default_rng(0), allowed={(0, 1)}, clusters=c)
    assert one.gains[0] < acq.select_pairs(post, 1, rng=np.random.default_rng(0), allowed={(0, 1)}).gains[0]
    # fresh prompts first: with 3 unused prompts the first three picks are worth a full verdict
    c3 = Clustering(icc=0.5, fresh={(0, 1): 3}, share={(0, 1): 1 / 3})
    a = acq.select_pairs(post, 3, rng=np.random.default_rng(0), allowed={(0, 1)}, clusters=c3)
    b = acq.select_pairs(post, 3, rng=np.random.default_rng(0), allowed={(0, 1)})
    np.testing.assert_allclose(a.gains, b.gains, rtol=1e-12)


def test_stopping_advice_widens_by_the_design_effect():
    post = _symmetric(m=3, sd=0.04)     # gap 0.1 with difference sd 0.057: P(order) = Phi(1.77) = 0.96
    sel = acq.select_pairs(post, 1, rng=np.random.default_rng(0))
    assert sel.settled
    # the same posterior, but the close pair's verdicts come in clusters of 2 at rho 0.6: sd x sqrt(1.6)
    c = Clustering(icc=0.6, deff={(0, 1): design_effect([2] * 10, 0.6)})
    sel = acq.select_pairs(post, 1, rng=np.random.default_rng(0), clusters=c)
    assert not sel.settled and "P(a ahead of b) = 0.92" in sel.reason      # Phi(1.77 / sqrt(1.6))


def test_from_pair_usage_by_hand():
    c = from_pair_usage([0, 0, 1], [1, 2, 2], judgments=[6, 0, 9], clusters=[3, 0, 9], fresh=[2, 5, 0], icc=0.25)
    # pair (0, 1): 6 verdicts on 3 prompts -> clusters of 2: deff 1.25, a repeat joins a cluster of 2
    assert c.deff[(0, 1)] == pytest.approx(1.25)
    assert c.share[(0, 1)] == pytest.approx(float(marginal_share(2, 0.25)))
    assert (c.fresh[(0, 1)], c.fresh[(2, 0)], c.fresh[(1, 2)]) == (2.0, 5.0, 0.0)     # either order of a pair
    with pytest.raises(KeyError):
        c.fresh[(0, 3)]
    # no verdicts: nothing to widen, a repeat would be a second verdict on a prompt (size 1)
    assert c.deff[(0, 2)] == 1.0 and c.share[(0, 2)] == pytest.approx(float(marginal_share(1, 0.25)))
    assert c.deff[(1, 2)] == 1.0


@pytest.mark.parametrize("kw, what", [(dict(icc=1.0), "icc"), (dict(icc=-0.1), "icc"),
                                      (dict(share={(0, 1): 1.5}), "share"), (dict(deff={(0, 1): 0.5}), "deff"),
                                      (dict(fresh={(0, 1): -1}), "fresh")])
def test_bad_clustering_is_one_usage_error(kw, what):
    with pytest.raises(UsageError, match=what):
        Clustering(**kw)
