"""The simulator's ``prompts`` scenario and the ``+prompts`` strategy modifier."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from planner.errors import UsageError
from planner.model import bt
from planner.simulation.judge import Judge
from planner.simulation.loop import _PromptLog, run_one
from planner.simulation.spec import SimulationSpec, parse_strategies
from planner.simulation.truth import N_PROMPTS, PROMPT_D, make_truth
from planner.workflows.simulate import simulate


def test_prompts_truth_is_linear_with_half_the_prompts_weak():
    t = make_truth("prompts", 16, np.random.default_rng(0), spread=400)
    lin = make_truth("linear", 16, np.random.default_rng(0), spread=400)
    assert np.array_equal(t.strengths, lin.strengths) and lin.discrimination is None
    assert t.discrimination.tolist() == [PROMPT_D[0]] * (N_PROMPTS // 2) + [PROMPT_D[1]] * (N_PROMPTS // 2)


def _davidson(gap: float, tie: float) -> tuple[float, float, float]:
    """P(left), P(right), P(tie) by hand: nu = 2t/(1-t); weights e^{g/2}, e^{-g/2}, nu."""
    nu = 2 * tie / (1 - tie)
    w = (math.exp(gap / 2), math.exp(-gap / 2), nu)
    return tuple(x / sum(w) for x in w)


@pytest.mark.parametrize("d_index", [0, N_PROMPTS - 1])
def test_the_judge_has_the_stated_per_prompt_probabilities(d_index):
    truth = make_truth("prompts", 2, np.random.default_rng(0), spread=400)   # gap 400 Elo = 2.303 logits
    d = truth.discrimination[d_index]
    gap = d * (truth.strengths[0] - truth.strengths[1])
    assert gap == pytest.approx(d * 400 / bt.ELO_SCALE, rel=1e-12)
    n, t = 50_000, 0.1
    left, right = np.zeros(n, dtype=int), np.ones(n, dtype=int)
    out = Judge(tie_rate=t).judge_prompts(truth, left, right, np.full(n, d_index), np.random.default_rng(3))
    tie = 1 - (1 - t) * (1 + d) / 2        # d = 1: 0.1; d = 0.2: 0.46
    pl, _pr, pt = _davidson(gap, tie)
    # binomial SE <= sqrt(.25 / 50000) = .0022; 4.5 SE = .01 keeps a false failure below 1e-5 per check
    assert np.mean(out == 0) == pytest.approx(pl, abs=0.01)
    assert np.mean(out == 2) == pytest.approx(pt, abs=0.01)
    # among decisive verdicts P(left beats right | p) = sigma(d_p (beta_l - beta_r)), as the scenario states;
    # SE <= sqrt(.25 / (50000 * .5)) = .0032, 4 SE
    decisive = out < 2
    assert np.mean(out[decisive] == 0) == pytest.approx(1 / (1 + math.exp(-gap)), abs=0.013)


def test_plus_prompts_is_parsed_and_needs_the_scenario():
    s = parse_strategies("active,active+prompts,active+thompson+prompts,round-robin")
    assert [x.prefers_prompts for x in s] == [False, True, True, False]
    assert s[2].thompson and s[1].strategy == "active"
    with pytest.raises(UsageError):
        parse_strategies("round-robin+prompts")
    spec = SimulationSpec("linear", parse_strategies("active+prompts"), n_systems=4, budget=20, batch=10, reps=1)
    with pytest.raises(UsageError, match=r"\+prompts needs the prompts scenario") as e:
        run_one(spec, 0, 0)
    assert e.value.parameters == ("strategies", "scenario")


def test_the_prompt_draw_prefers_prompts_that_agree_with_the_order():
    log = _PromptLog(4, prefer=True)
    mean = np.array([1.0, 0.0])
    # prompts 0, 1: the stronger system (0) always wins; prompts 2, 3: one win each way
    log.record(np.array([0, 0, 1, 1, 2, 2, 3, 3]), np.zeros(8, int), np.ones(8, int),
               np.array([0, 0, 0, 0, 0, 1, 0, 1]))
    # z: p0 p1 [1, 1], p2 p3 [1, -1]; within variance 0 for p0 p1 and 2 for p2 p3: sigma_w^2 = 4/4 = 1;
    # means 1, 1, 0, 0 -> var 1/3; tau^2 = 1/3 - 1/2 < 0 -> 0: two judgments per prompt are not evidence
    rng = np.random.default_rng(0)
    assert set(np.bincount(log.draw(np.zeros(4000), mean, rng), minlength=4) > 800) == {True}
    # ten more judgments per prompt of the same pattern: now tau^2 > 0 and prompts 0, 1 are preferred
    for _ in range(10):
        log.record(np.array([0, 0, 1, 1, 2, 2, 3, 3]), np.zeros(8, int), np.ones(8, int),
                   np.array([0, 0, 0, 0, 0, 1, 0, 1]))
    share = np.mean(log.draw(np.zeros(20000), mean, rng) < 2)
    # z sums: p0, p1 22/22 -> 1; p2, p3 0/22 -> 0; sigma_w^2 = 44/84, var(means) = 1/3, tau^2 = 1/3 - (44/84)/22
    # B = tau^2 / (tau^2 + (44/84)/22) = 13/14; scores m + B (zbar - m), m = 1/2: 27/28 and 1/28
    # pi(p0 or p1) = .8 * (54/28) / 2 + .2 / 2 = .8 * 27/28 + .1; binomial SE .003, 4 SE
    assert share == pytest.approx(0.8 * 27 / 28 + 0.1, abs=0.012)
    assert not _PromptLog(4, prefer=False).rows


def test_a_prompts_run_is_reproducible():
    spec = SimulationSpec("prompts", parse_strategies("active+prompts"), n_systems=5, budget=80, batch=20, reps=1,
                          seed=7, judge=Judge(tie_rate=0.1))
    a, b = run_one(spec, 0, 0), run_one(spec, 0, 0)
    assert a == b and a.spent.tolist() == [20, 40, 60, 80]


@pytest.mark.slow
def test_prompts_simulation_is_deterministic_and_worker_independent():
    spec = SimulationSpec("prompts", parse_strategies("active+prompts,round-robin"), n_systems=5,
                          budget=80, batch=20, reps=2, seed=7, judge=Judge(tie_rate=0.1))
    a = json.dumps(simulate(spec, workers=1).to_dict(), default=str)
    b = json.dumps(simulate(spec, workers=2).to_dict(), default=str)
    assert a == b
