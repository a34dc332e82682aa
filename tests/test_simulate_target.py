"""simulate targets: tolerance on the target test, full-pool P(order) per pair, credible-tau."""

from __future__ import annotations

import json

import numpy as np
import pytest
from scipy.stats import norm
from typer.testing import CliRunner

from cli.main import app
from planner.simulation.loop import Trace
from planner.simulation.metrics import credible_scores, meets, metrics, pair_order_probs
from planner.simulation.spec import METRICS, parse_strategies, parse_target
from planner.simulation.summary import _needed
from planner.simulation.summary import summarise as _summarise
from planner.simulation.truth import Truth

FIVE_TRUE = np.array([2.0, 1.0, 0.0, -1.0, -2.0])
FIVE_ONE_SWAP = np.array([2.0, 1.0, -1.0, 0.0, -2.0])  # systems 3 and 4 swapped: 1 of 10 pairs wrong


def test_five_systems_one_discordant_pair_meets_tau_0_8():
    # Kendall tau = (9 - 1) / 10 = 0.8, which scipy computes as 0.7999999999999999;
    # a bare ">=" would make --target tau=0.8 mean "every pair right".
    row = metrics(FIVE_ONE_SWAP, np.full(5, 0.1), FIVE_TRUE)
    assert row["tau"] < 0.8 and row["tau"] == pytest.approx(0.8, abs=1e-12)
    assert bool(meets("tau", row["tau"], 0.8))
    trace = Trace("active", 0, np.array([10, 20]), {k: np.array([0.6, row[k]]) for k in METRICS})
    assert _needed(trace, "tau", 0.8) == 20
    # the mean-curve headline uses the same test
    res = _summarise("active", parse_strategies("active")[0], [trace], "tau", 0.8, batch=10, budget=20)
    assert res.needed_mean_curve == 20 and res.needed == (20,)


def test_tolerance_does_not_accept_a_real_shortfall():
    assert not meets("tau", 0.7999, 0.8)
    assert bool(meets("rmse", 0.3 + 1e-12, 0.3)) and not meets("rmse", 0.3001, 0.3)


def test_credible_scores_by_hand():
    # credible pairs: (0,1), (2,3), (0,4); the swap of 2 and 3 is discordant -> (2 - 1) / 3
    cred = np.zeros((5, 5), dtype=bool)
    cred[0, 1] = cred[2, 3] = cred[0, 4] = True
    tau, all_right = credible_scores(FIVE_ONE_SWAP, FIVE_TRUE, cred)
    assert tau == pytest.approx(1 / 3) and all_right == 0.0
    cred[2, 3] = False  # the misordered pair is not credible: every credible pair right
    assert credible_scores(FIVE_ONE_SWAP, FIVE_TRUE, cred) == (1.0, 1.0)
    assert all(np.isnan(credible_scores(FIVE_ONE_SWAP, FIVE_TRUE, np.zeros((5, 5), bool))))


def test_pair_order_probs_by_hand():
    # P(i > j) = Phi((m_i - m_j) / sqrt(v_i + v_j - 2 c_ij)); (0.3 - 0) / sqrt(0.04 + 0.05 - 2*0.01)
    mean = np.array([0.3, 0.0, -0.3])
    cov = np.array([[0.04, 0.01, 0.0], [0.01, 0.05, 0.0], [0.0, 0.0, 0.09]])
    p = pair_order_probs(mean, cov)
    assert p[0, 1] == pytest.approx(norm.cdf(0.3 / np.sqrt(0.07)))
    assert p[1, 0] == pytest.approx(1 - p[0, 1])
    assert p[0, 2] == pytest.approx(norm.cdf(0.6 / np.sqrt(0.13)))
    t = Truth(("a", "b", "c"), mean, pair_prob=p)
    # P(0>1) = Phi(1.134) = 0.872 (not credible), P(0>2) = Phi(1.664) = 0.952, P(1>2) = Phi(0.3/sqrt(.14)) = 0.789
    assert t.credible().tolist() == [[False, False, True], [False, False, False], [False, False, False]]


def test_parse_credible_targets():
    assert parse_target("credible-tau=0.9") == ("credible_tau", 0.9)
    assert parse_target("credible-all") == ("credible_all", 1.0)
    assert parse_target("credible-all=1") == ("credible_all", 1.0)


def _pool(tmp_path):
    # a beats b 40-0 and b beats c 40-0 (credible); c vs d 11-9 (not credible); each pair shown
    # both ways round in turn, so the position effect is not confounded with the systems
    rows, k = [], 0
    for a, b, wins, losses in (("a", "b", 40, 0), ("b", "c", 40, 0), ("c", "d", 11, 9), ("a", "c", 20, 0)):
        for v in ["A"] * wins + ["B"] * losses:
            k += 1
            if k % 2:
                rows.append({"id": f"j{k}", "prompt": f"p{k % 7}", "a": a, "b": b, "verdict": v})
            else:
                rows.append({"id": f"j{k}", "prompt": f"p{k % 7}", "a": b, "b": a, "verdict": "B" if v == "A" else "A"})
    p = tmp_path / "pool.jsonl"
    p.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return p


def test_cli_replay_reports_pairs_and_credible_tau(tmp_path):
    r = CliRunner().invoke(app, ["simulate", "--replay", str(_pool(tmp_path)), "--budget", "60", "--batch", "20",
                                 "--reps", "2", "--strategies", "round-robin,random", "--workers", "1",
                                 "--target", "credible-tau=0.9", "--json"])
    assert r.exit_code == 0, r.stderr
    doc = json.loads(r.stdout)
    assert doc["target_metric"] == "credible_tau"
    pairs = {(p["a"], p["b"]): p for p in doc["pairs"]}
    assert len(pairs) == 6
    assert pairs[("c", "d")]["credible"] is False and 0.5 < pairs[("c", "d")]["p_order"] < 0.95
    assert pairs[("a", "b")]["credible"] is True and pairs[("a", "b")]["p_order"] > 0.95
    assert "credible_tau" in doc["strategies"][0]["mean"]
    r = CliRunner().invoke(app, ["simulate", "--replay", str(_pool(tmp_path)), "--budget", "60", "--batch", "20",
                                 "--reps", "1", "--strategies", "round-robin", "--workers", "1",
                                 "--target", "credible-all"])
    assert r.exit_code == 0, r.stderr
    assert "P(order)" in r.stdout
