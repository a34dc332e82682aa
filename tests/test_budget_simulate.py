"""planner.simulation.money: the money simulation agrees with the budgeting formula."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from _example_data import vicuna_dir
from typer.testing import CliRunner

from cli.main import app
from planner.errors import UsageError
from planner.hybrid import budget as hb
from planner.simulation import money as sh

DATA = vicuna_dir()   # the real Vicuna-80 files: the package's one copy, as `planner example vicuna80` writes it


@pytest.mark.parametrize("p,t,q,b", [(0.55, 0.0, 0.8, 0.5), (0.7, 0.3, 0.6, 1.5), (0.5, 0.1, 0.95, -1.0)])
def test_judge_rho_closed_form_vs_monte_carlo(p, t, q, b):
    """400,000 draws: the sample correlation's sd is about (1 − ρ²)/√m < 0.0016; tolerance 0.006."""
    y, yhat = sh.draw_items(400_000, p, t, q, b, np.random.default_rng(7))
    assert np.corrcoef(y, yhat)[0, 1] == pytest.approx(sh.judge_rho(p, t, q, b), abs=0.006)


def test_money_simulation_matches_the_plan():
    """400 reps at 300 money units, ρ = 0.88: the hybrid split is the plan_for_money split, its achieved
    half-width is within 2% of z·σ/√(effective n) (Monte Carlo SE of the mean width < 0.1%, the rest
    is the O(1/n) bias of the plug-in sd and of λ̂), coverage within 4 Monte Carlo SEs (~0.011 each)
    plus 0.01 for the lattice of a binomial of n ≈ 200 (its exact Wald coverage is 0.945, not 0.95),
    and the judge's split is ≥ 1.3× narrower than humans only for the same money, as planned."""
    rho, rows = sh.simulate_money([300], human_cost=1.0, judge_cost=0.05, win_rate=0.55, agreement=0.8,
                                  position=0.5, reps=400, rng=np.random.default_rng(0))
    human, hybrid = rows
    n_h, split = hb.plan_for_money(300, rho, 1.0, 0.05)
    assert (human.n, hybrid.n, hybrid.N) == (n_h, split.n, split.N) == (300, 211, 1569)
    assert hybrid.cost <= 300
    for r in rows:
        assert r.half_width == pytest.approx(r.predicted_half_width, rel=0.02)
        assert abs(r.coverage - 0.95) <= 4 * r.coverage_se + 0.01
        assert abs(r.power - r.predicted_power) <= 4 * math.sqrt(r.power * (1 - r.power) / r.reps) + 0.03
    assert human.half_width / hybrid.half_width > 1.3
    assert human.mean_lambda == 0 and 0.7 < hybrid.mean_lambda <= 1


def test_same_seed_same_rows_and_bad_inputs():
    kw = dict(human_cost=1.0, judge_cost=0.05, reps=5)
    a = sh.simulate_money([100], rng=np.random.default_rng(3), **kw)
    b = sh.simulate_money([100], rng=np.random.default_rng(3), **kw)
    assert a == b
    with pytest.raises(UsageError, match="`money`"):
        sh.simulate_money([0], rng=np.random.default_rng(0), **kw)
    with pytest.raises(UsageError, match="`agreement`"):
        sh.simulate_money([100], agreement=1.5, rng=np.random.default_rng(0), **kw)
    with pytest.raises(UsageError, match="need at least 2"):
        sh.simulate_money([1.5], rng=np.random.default_rng(0), **kw)


def test_cli_simulate_hybrid_json_and_errors():
    runner = CliRunner()
    args = ["simulate", "--hybrid", "--money", "150", "--human-cost", "1", "--judge-cost", "0.05", "--reps", "5",
            "--seed", "4"]
    r = runner.invoke(app, [*args, "--json"])
    assert r.exit_code == 0, r.stderr
    d = json.loads(r.stdout)
    assert [row["method"] for row in d["rows"]] == ["humans only", "humans + judge"]
    assert runner.invoke(app, [*args, "--json"]).stdout == r.stdout            # byte-identical per seed
    r = runner.invoke(app, args)
    assert r.exit_code == 0 and "Same money: with 150 the judge split gives intervals" in " ".join(r.stdout.split())
    for bad, msg in ((["simulate", "--money", "3"], "need --hybrid"),
                     (["simulate", "--hybrid", "--human-cost", "1", "--judge-cost", "1"], "needs --money"),
                     ([*args[:3], "1,x", *args[4:]], "must be numbers separated by commas"),
                     ([*args, "--surrogate", "gpt-4"], "--from-study and --surrogate go together")):
        r = runner.invoke(app, bad)
        assert r.exit_code == 2 and r.stderr.startswith("error: ") and msg in r.stderr, (bad, r.stderr)
        assert r.stderr.count("\n") == 1


def test_vicuna_replay_for_money():
    """Vicuna80 (GPT-4 both orders vs 3 MTurk votes per item): with a cheap judge (0.002 per item,
    human item 1) the planned split buys intervals narrower than humans only for the same money, by
    about the planned factor; both cover the full-human strengths at about the 90% level."""
    if not (DATA / "judgments").is_dir():
        pytest.skip(f"{DATA} absent")
    from planner.hybrid.items import items_from_verdicts

    rows = []
    for name in ("qlora_vicuna80_gpt4.jsonl", "qlora_vicuna80_human.jsonl"):
        rows += [json.loads(ln) for ln in (DATA / "judgments" / name).read_text(encoding="utf-8").splitlines()]
    names = ("gpt-4", "gpt-3.5-turbo", "bard", "vicuna-13b", "guanaco-7b", "guanaco-13b", "guanaco-33b",
             "guanaco-65b")
    items = items_from_verdicts(names, [(r["prompt"], r["a"], r["b"], r["verdict"], r["judge"]) for r in rows],
                                "gpt-4")
    rho, (human, hybrid) = sh.replay_money(items, [500], human_cost=1.0, judge_cost=0.002, reps=60,
                                           rng=np.random.default_rng(1))
    assert 0.3 < rho < 0.6
    assert hybrid.n + hybrid.N <= 2240 and hybrid.cost <= 500
    assert hybrid.half_width < human.half_width
    assert hybrid.half_width == pytest.approx(hybrid.predicted_half_width, rel=0.05)
    assert human.coverage > 0.85 and hybrid.coverage > 0.85
