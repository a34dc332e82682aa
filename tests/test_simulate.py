"""planner simulate: scenario generators, replay accounting, determinism, oracle vs random."""

from __future__ import annotations

import json

import numpy as np
import pytest
from scipy.stats import norm
from typer.testing import CliRunner

from cli.main import app
from planner.errors import DataError, UsageError
from planner.model import bt
from planner.simulation.judge import Judge
from planner.simulation.loop import run_one as _run_one
from planner.simulation.replay import replay_truth
from planner.simulation.spec import SimulationSpec, parse_strategies, parse_target
from planner.simulation.truth import make_truth
from planner.workflows.simulate import read_replay, simulate


def test_linear_truth_is_evenly_spread_over_the_elo_range():
    t = make_truth("linear", 16, np.random.default_rng(0), spread=400)
    elo = t.strengths * bt.ELO_SCALE
    # 16 systems evenly over 400 Elo: step 400/15 = 26.67 points, best first
    assert np.allclose(np.diff(elo), -400 / 15)
    assert np.ptp(elo) == pytest.approx(400)
    assert t.strengths.sum() == pytest.approx(0, abs=1e-12)


def test_arena_truth_has_beta_half_half_moments():
    # Beta(1/g, 1/g), g = 2 -> Beta(0.5, 0.5): variance ab/((a+b)^2 (a+b+1)) = 0.25/(1*2) = 0.125.
    # make_truth centres the draw, so compare the within-draw sample variance (ddof=1), whose
    # expectation is the population variance. 2,000 draws of 20: SE of the mean variance ~0.0006,
    # tolerance 0.005 (~8 SE) keeps the test stable while catching a wrong shape (Beta(1,1): 0.083).
    rng = np.random.default_rng(1)
    v = [np.var(make_truth("arena", 20, rng, arena_gamma=2.0).strengths, ddof=1) for _ in range(2000)]
    assert np.mean(v) == pytest.approx(0.125, abs=0.005)


def test_asap_observer_is_thurstone_with_sigma_1_4865():
    # ASAP observer: P(i beats j) = Phi((s_i - s_j) / 1.4865). Delta = 1 -> Phi(0.67273) = 0.74944.
    truth = make_truth("asap", 2, np.random.default_rng(2))
    assert truth.observer == "thurstone"
    assert np.all((truth.scores >= 0) & (truth.scores <= 5))
    from planner.simulation.truth import Truth

    t = Truth(("x", "y"), np.array([0.5, -0.5]), "thurstone", np.array([3.0, 2.0]))
    n = 200_000
    out = Judge().judge(t, np.zeros(n, dtype=int), np.ones(n, dtype=int), np.random.default_rng(3))
    expected = norm.cdf(1 / 1.4865)
    # binomial SE sqrt(.25/200000) = 0.001; tolerance 4 SE
    assert np.mean(out == 0) == pytest.approx(expected, abs=0.004)


def test_judge_tie_rate_and_flip():
    t = make_truth("linear", 2, np.random.default_rng(0), spread=1e-9)  # equal systems
    n = 100_000
    left, right = np.zeros(n, dtype=int), np.ones(n, dtype=int)
    out = Judge(tie_rate=0.2).judge(t, left, right, np.random.default_rng(4))
    # nu = 2t/(1-t) = 0.5 -> P(tie | equal) = nu / (2 + nu) = 0.2; SE 0.0013, tolerance ~4 SE
    assert np.mean(out == 2) == pytest.approx(0.2, abs=0.005)
    strong = make_truth("linear", 2, np.random.default_rng(0), spread=4000)  # P(left wins) ~ 1
    out = Judge(flip=0.1).judge(strong, left, right, np.random.default_rng(5))
    assert np.mean(out == 1) == pytest.approx(0.1, abs=0.005)


def _pool_file(tmp_path, per_pair=5):
    rows = []
    systems = ["a", "b", "c"]
    k = 0
    for i in range(3):
        for j in range(i + 1, 3):
            for r in range(per_pair):
                k += 1
                rows.append({"id": f"j{k}", "prompt": f"p{r}", "a": systems[i], "b": systems[j],
                             "verdict": ["A", "B", "tie", "invalid", "A"][r % 5]})
    p = tmp_path / "pool.jsonl"
    p.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return p


def test_replay_never_reuses_a_judgment_and_stops_when_exhausted(tmp_path):
    pool = read_replay(_pool_file(tmp_path))
    assert pool.size == 15
    spec = SimulationSpec("replay", parse_strategies("round-robin"), budget=1000, batch=4, reps=1,
                          truth=replay_truth(pool), replay=pool)
    trace = _run_one(spec, 0, 0)
    assert trace.exhausted
    # every one of the 15 judgments drawn exactly once: the run's totals are the pool's totals
    assert trace.spent[-1] == 15
    assert trace.totals == pool.counts().totals()


def test_reps_are_averaged_on_common_checkpoints():
    # a replay batch can come back short (a pair ran dry), so a run's checkpoints drift off
    # the multiples of the batch: run A spent 4, 7, 11; run B 4, 8, 12 (batch 4, budget 12).
    # On the grid 4, 8, 12 run A counts its value after the last refit with <= c spent:
    # 0.1, 0.2 (at 7), 0.3 (at 11); mean with B's 0.5, 0.6, 0.7 -> 0.3, 0.4, 0.5 (hand calculation)
    from planner.simulation.loop import Trace
    from planner.simulation.spec import METRICS
    from planner.simulation.summary import summarise as _summarise

    def trace(spent, tau):
        vals = {k: np.asarray(tau, dtype=float) for k in METRICS}
        return Trace("random", 0, np.asarray(spent), vals)
    res = _summarise("random", parse_strategies("random")[0],
                     [trace([4, 7, 11], [0.1, 0.2, 0.3]), trace([4, 8, 12], [0.5, 0.6, 0.7])],
                     "tau", 0.45, batch=4, budget=12)
    assert res.checkpoints.tolist() == [4, 8, 12]
    assert np.allclose(res.mean["tau"], [0.3, 0.4, 0.5])
    assert res.needed_mean_curve == 12 and res.needed == (None, 4)


def test_replay_rejects_bad_lines(tmp_path):
    p = tmp_path / "bad.jsonl"
    p.write_text('{"id": "1", "a": "x", "b": "y", "verdict": "A"}\n{"id": "2", "a": "x", "b": "y", "verdict": "win"}\n')
    with pytest.raises(DataError) as e:
        read_replay(p)
    assert any("bad.jsonl:2" in q for q in e.value.problems)


def test_small_simulation_is_deterministic_and_worker_independent():
    spec = SimulationSpec("linear", parse_strategies("active,random"), n_systems=6, budget=120, batch=20,
                          reps=2, seed=7, judge=Judge(tie_rate=0.1, position=0.3))
    a = json.dumps(simulate(spec, workers=1).to_dict(), default=str)
    b = json.dumps(simulate(spec, workers=2).to_dict(), default=str)
    assert a == b


def test_oracle_is_not_worse_than_random_on_average():
    # 8 systems over 400 Elo, 6 reps: average Kendall tau over the run (area under the curve).
    spec = SimulationSpec("linear", parse_strategies("oracle,random"), n_systems=8, budget=400, batch=40,
                          reps=6, seed=3)
    res = simulate(spec, workers=2)
    by = {s.name: s for s in res.strategies}
    # tolerance 0.02: mean tau over 60 (rep, checkpoint) values; oracle should win by more in expectation
    assert by["oracle"].mean["tau"].mean() >= by["random"].mean["tau"].mean() - 0.02


def test_parsers():
    s = parse_strategies("active,entropy,active:top-k=3,round-robin")
    assert [(x.strategy, x.objective, x.top_k) for x in s] == [
        ("active", "ranking", None), ("active", "entropy", None), ("active", "top-k", 3),
        ("round-robin", "ranking", None)]
    assert parse_target("rmse=0.3") == ("rmse", 0.3)
    with pytest.raises(UsageError):
        parse_target("kappa=0.5")
    with pytest.raises(UsageError):
        parse_strategies("nope")


def test_cli_json_and_errors():
    runner = CliRunner()
    r = runner.invoke(app, ["simulate", "--systems", "5", "--budget", "60", "--batch", "20", "--reps", "2",
                            "--strategies", "active,round-robin", "--workers", "1", "--json"])
    assert r.exit_code == 0, r.stderr
    doc = json.loads(r.stdout)
    assert [s["name"] for s in doc["strategies"]] == ["active", "round-robin"]
    assert doc["target_metric"] == "tau"
    r = runner.invoke(app, ["simulate", "--target", "tau", "--reps", "1"])
    assert r.exit_code == 2 and "--target" in r.stderr
    r = runner.invoke(app, ["simulate", "--flip", "0.7", "--reps", "1"])
    assert r.exit_code == 2 and "--flip" in r.stderr
