"""The exact one-dimensional preposterior misorder of a pair, pinned to scipy quadrature."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.integrate import quad
from scipy.stats import norm

from planner.acquisition.exact import exact_gain, exact_misorder, gaussian_gain
from planner.errors import UsageError
from planner.model import bt

GRID_TOL = 1e-6     # midpoint rule on 4,000 cells over ±10 sd: error ~1e-7 here


def _quad_risk_one(m, v, gamma, nu):
    """R_1 by quad: outcome o at position s (±gamma, 1/2 each); mass of each side of 0."""
    s = np.sqrt(v)
    total = 0.0
    for sign in (1.0, -1.0):
        for o in range(3 if nu > 0 else 2):
            def f(d, o=o, sign=sign):
                return norm.pdf(d, m, s) * bt.outcome_probs(d + sign * gamma, nu)[o]
            neg = quad(f, m - 12 * s, min(0.0, m + 12 * s), epsabs=1e-13)[0] if m - 12 * s < 0 else 0.0
            pos = quad(f, max(0.0, m - 12 * s), m + 12 * s, epsabs=1e-13)[0] if m + 12 * s > 0 else 0.0
            total += 0.5 * min(neg, pos)
    return total


@pytest.mark.parametrize("m,v,gamma,nu", [(0.2, 0.25, 0.0, 0.0), (0.05, 0.04, 0.0, 0.0),
                                          (-0.1, 0.5, 0.3, 0.0), (0.0, 0.1, 0.2, 0.4)])
def test_one_judgment_matches_quadrature(m, v, gamma, nu):
    assert exact_misorder(m, v, 1, gamma, nu) == pytest.approx(_quad_risk_one(m, v, gamma, nu), abs=GRID_TOL)


def test_no_outcome_can_flip_the_side_means_gain_exactly_zero():
    # prior N(0.5, 0.2^2): even 16 straight losses leave the posterior favouring delta > 0, so
    # P(side) is a martingale that never changes which side is favoured: the expected minimum
    # equals today's. At m = 0.3, 16 straight losses just tip it: a tiny positive gain.
    for n in (1, 4, 16):
        assert exact_gain(0.5, 0.04, n) == pytest.approx(0.0, abs=1e-12)
    assert exact_gain(0.3, 0.04, 12) == pytest.approx(0.0, abs=1e-12)
    assert exact_gain(0.3, 0.04, 16) > 1e-8
    # ... while the Gaussian preposterior (the mean moves as N(m, tau^2)) gives a positive gain
    assert gaussian_gain(0.05, 0.04, 1) > 0 and exact_gain(0.05, 0.04, 1) == pytest.approx(0.0, abs=1e-9)


def test_two_judgments_by_hand():
    # gamma = nu = 0, n = 2 (one per position): outcomes AA, AB, BA, BB with likelihoods
    # s^2, s(1-s) twice, (1-s)^2, s = sigma(delta); each side's mass by quadrature
    m, v = 0.1, 0.3
    sd = np.sqrt(v)
    sig = bt.outcome_probs
    liks = [lambda d: sig(d)[0] ** 2, lambda d: sig(d)[0] * sig(d)[1], lambda d: sig(d)[1] * sig(d)[0],
            lambda d: sig(d)[1] ** 2]
    ref = 0.0
    for lik in liks:
        neg = quad(lambda d, lik=lik: norm.pdf(d, m, sd) * lik(d), m - 12 * sd, 0.0, epsabs=1e-13)[0]
        pos = quad(lambda d, lik=lik: norm.pdf(d, m, sd) * lik(d), 0.0, m + 12 * sd, epsabs=1e-13)[0]
        ref += min(neg, pos)
    assert exact_misorder(m, v, 2) == pytest.approx(ref, abs=GRID_TOL)


def test_large_n_agrees_with_the_gaussian_preposterior_roughly():
    # many judgments: the posterior is near Gaussian; the two gains agree within 15 %
    for m, v in [(0.1, 0.2), (0.0, 0.1)]:
        assert exact_gain(m, v, 16) == pytest.approx(gaussian_gain(m, v, 16), rel=0.15)


def test_bad_input():
    with pytest.raises(UsageError, match=r"n .* whole number"):
        exact_misorder(0.1, 0.1, -1)
    with pytest.raises(UsageError, match="vdiff"):
        exact_misorder(0.1, 0.0, 1)
