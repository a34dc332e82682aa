"""Practical-equivalence margin (`tie_margin`): pairs settled as ties stop the advice and the spending."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.stats import norm
from test_acquisition import posterior_from_design, round_robin_counts
from typer.testing import CliRunner

import planner.acquisition as acq
from planner.acquisition.objectives import tie_probability
from planner.errors import UsageError
from planner.model.bt import ELO_SCALE


def rng(seed=0):
    return np.random.default_rng(seed)


def test_tie_probability_by_hand():
    # N(0, 0.05²) within ±0.1: Φ(2) − Φ(−2) = 0.954500
    assert tie_probability(0.0, 0.05, 0.1) == pytest.approx(0.9544997, abs=1e-7)
    # gap 0.05, sd 0.05: Φ(1) − Φ(−3) = 0.841345 − 0.001350 = 0.839995 (sign of the gap does not matter)
    assert tie_probability(-0.05, 0.05, 0.1) == pytest.approx(norm.cdf(1) - norm.cdf(-3), abs=1e-12)
    assert tie_probability(0.0, 0.05, 0.0) == 0.0                   # margin 0: off
    assert tie_probability(np.array([0.05, 0.2]), 0.0, 0.1).tolist() == [1.0, 0.0]   # sd 0: the gap decides


# three systems: s0 far ahead; s1 and s2 equal, 3,000 judgments a pair (sd of the s1-s2 gap ~0.045)
MEAN = np.array([1.5, 0.0, 0.0])


def _posterior(n=3000):
    return posterior_from_design(MEAN, np.full((3, 3), n))


def test_stopping_counts_a_practical_tie_as_decided():
    post = _posterior()
    judged = round_robin_counts(post.systems, 3000)
    sd = np.sqrt(post.cov[1, 1] + post.cov[2, 2] - 2 * post.cov[1, 2])
    margin = 20 / ELO_SCALE                                          # 20 Elo = 0.1151 logit
    assert 2 * norm.cdf(margin / sd) - 1 > 0.95                      # the design settles the tie within ±20 Elo
    plain = acq.select_pairs(post, 4, judged=judged, rng=rng())
    assert not plain.settled and "P(s1 ahead of s2) = 0.50" in plain.reason
    tied = acq.select_pairs(post, 4, judged=judged, rng=rng(), options=acq.SelectionOptions(tie_margin=margin))
    assert tied.settled
    assert "or tied within ±20 Elo with probability > 0.95" in tied.reason and "tied: s1 ~ s2" in tied.reason
    # a margin too small to be settled at this precision (1 Elo) leaves the advice as it was
    small = acq.select_pairs(post, 4, judged=judged, rng=rng(), options=acq.SelectionOptions(tie_margin=1 / ELO_SCALE))
    assert not small.settled and small.reason == plain.reason


def test_active_stops_spending_on_a_settled_tie():
    # s1 ~ s2 settled as a tie (3,000 judgments) but s0 vs s3 open (10 judgments, 0.3 logit apart)
    mean = np.array([0.3, 0.0, 0.0, 0.0])
    n = np.zeros((4, 4))
    n[1, 2] = n[2, 1] = 3000
    for a, b in ((0, 3), (1, 3), (0, 1)):
        n[a, b] = n[b, a] = 10
    post = posterior_from_design(mean, n)
    plain = acq.select_pairs(post, 10, rng=rng())
    opts = acq.SelectionOptions(tie_margin=20 / ELO_SCALE)
    tied = acq.select_pairs(post, 10, rng=rng(), options=opts)
    # the tied pair's own misorder no longer counts: the objective before the batch drops by its
    # risk (~0.5, the pair is a coin flip) and no pick goes to it
    assert plain.value_before - tied.value_before == pytest.approx(0.5, abs=0.02)
    assert (1, 2) not in tied.pairs and len(tied.pairs) == 10


def test_bad_margins_are_one_line_usage_errors():
    for bad in (-1.0, float("inf"), float("nan"), True):
        with pytest.raises(UsageError, match="`tie_margin`"):
            acq.SelectionOptions(tie_margin=bad)


def test_next_batch_takes_the_margin_in_elo_and_refuses_bad_ones(tmp_path):
    from test_next_batch import _ingest_synthetic, _write_study_files

    from cli.main import app
    from planner.store.study import init_study

    prompts, responses = _write_study_files(tmp_path)
    study = tmp_path / "study"
    init_study(study, prompts_file=prompts, responses_file=responses, seed=11)
    strengths = {s: 0.0 for s in ("alpha-model", "beta-model", "gamma-model", "delta-model", "epsilon-model",
                                  "zeta-model")}
    _ingest_synthetic(study, tmp_path, strengths, 300, seed=3)
    runner = CliRunner()
    before = (study / "study.sqlite").read_bytes()
    for bad in ("-5", "inf", "nan"):
        res = runner.invoke(app, ["next-batch", str(study), "--tie-margin", bad, "--dry-run"])
        assert res.exit_code == 2, res.output
        lines = [x for x in res.output.splitlines() if x.strip()]
        assert len(lines) == 1 and "--tie-margin" in lines[0] and "Elo points >= 0" in lines[0], res.output
    res = runner.invoke(app, ["next-batch", str(study), "--tie-margin", "20", "--for", "humans", "--surrogate", "x",
                              "--dry-run"])
    assert res.exit_code == 2 and "--tie-margin does not apply with --for humans" in res.output
    assert (study / "study.sqlite").read_bytes() == before             # refused: the study untouched
    # a margin no 300 judgments can settle leaves the batch as it was (same seed, same picks)
    plain = runner.invoke(app, ["next-batch", str(study), "--dry-run", "--json", "--size", "20", "--seed", "4"])
    wide = runner.invoke(app, ["next-batch", str(study), "--dry-run", "--json", "--size", "20", "--seed", "4",
                               "--tie-margin", "1"])
    assert plain.exit_code == wide.exit_code == 0
    assert plain.output == wide.output
