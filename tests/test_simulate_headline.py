"""simulate headline: ratios to round-robin and to the best baseline with a bootstrap band."""

from __future__ import annotations

import numpy as np
import pytest

from planner.simulation.headline import add_ratios, is_baseline, ratio_band, verdict
from planner.simulation.loop import Trace
from planner.simulation.spec import METRICS, parse_strategies
from planner.simulation.summary import summarise as _summarise


def _result(name, taus):
    """A strategy summarised from hand-written tau curves (checkpoints 10, 20, 30, 40)."""
    traces = [Trace(name, rep, np.array([10, 20, 30, 40]), {k: np.asarray(t, dtype=float) for k in METRICS})
              for rep, t in enumerate(taus)]
    return _summarise(name, parse_strategies(name)[0], traces, "tau", 0.9, batch=10, budget=40)


def test_band_by_hand():
    # target tau 0.9.  A: rep 0 crosses at 20, rep 1 at 10.  B: rep 0 at 40, rep 1 at 30.
    a = _result("active", [[0.5, 0.95, 0.95, 0.95], [0.95, 0.95, 0.95, 0.95]])
    b = _result("round-robin", [[0.5, 0.5, 0.5, 0.95], [0.5, 0.5, 0.95, 0.95]])
    # headline: mean curves A [.725 .95 ...] -> 20, B [.5 .5 .725 .95] -> 40: ratio 0.5
    assert (a.needed_mean_curve, b.needed_mean_curve) == (20, 40)
    # paired resamples of two reps: (0,0) -> 20/40 = 0.5 (prob 1/4); (1,1) -> 10/30 = 1/3 (1/4);
    # mixed -> the headline's 20/40 = 0.5 (1/2). The 2.5% point is 1/3, the 97.5% point 0.5.
    lo, hi = ratio_band(a, b, "tau", 0.9, np.random.default_rng(0))
    assert lo == pytest.approx(1 / 3) and hi == pytest.approx(0.5)
    # seeded: the same band again
    assert ratio_band(a, b, "tau", 0.9, np.random.default_rng(0)) == (lo, hi)


def test_band_counts_a_resample_that_never_meets_the_target_as_infinite():
    b = _result("round-robin", [[0.5, 0.95, 0.95, 0.95], [0.5, 0.95, 0.95, 0.95]])  # both reps at 20
    # A: rep 0 never reaches 0.9, rep 1 at 10; the mean curve [.725 .725 .725 .75] never: no headline, no band
    a = _result("active", [[0.5, 0.5, 0.5, 0.5], [0.95, 0.95, 0.95, 1.0]])
    assert a.needed_mean_curve is None
    assert ratio_band(a, b, "tau", 0.9, np.random.default_rng(0)) is None
    # A: rep 0 tops at 0.85 (never), rep 1 at 10; mean curve ends at (0.85 + 0.95) / 2 = 0.9 -> headline 40.
    # Resamples: (0,0) never -> +inf; (1,1) -> 10/20 = 0.5; mixed -> 40/20 = 2. Band [0.5, inf].
    a = _result("active", [[0.5, 0.5, 0.5, 0.85], [0.95, 0.95, 0.95, 0.95]])
    assert a.needed_mean_curve == 40
    lo, hi = ratio_band(a, b, "tau", 0.9, np.random.default_rng(1))
    assert lo == pytest.approx(0.5) and hi == np.inf


def test_add_ratios_best_baseline_and_verdict():
    fast = [[0.95] * 4, [0.95] * 4]
    res = [_result("active", fast),
           _result("round-robin", [[0.5, 0.5, 0.5, 0.95], [0.5, 0.5, 0.95, 0.95]]),
           _result("swiss", [[0.5, 0.95, 0.95, 0.95], [0.5, 0.95, 0.95, 0.95]]),
           _result("oracle", fast)]
    assert [is_baseline(s) for s in res] == [False, True, True, False]
    out, notes = add_ratios(res, "tau", 0.9, seed=0)
    by = {s.name: s for s in out}
    assert by["active"].ratio_to_round_robin == pytest.approx(10 / 40)
    # the best baseline for active is swiss (20), not the oracle (10); for swiss it is round-robin
    assert by["active"].best_baseline == "swiss" and by["active"].ratio_to_best == pytest.approx(0.5)
    assert by["swiss"].best_baseline == "round-robin"
    # every resample of active vs swiss gives 10/20: the band is [0.5, 0.5], a real saving
    assert by["active"].best_band == (pytest.approx(0.5), pytest.approx(0.5))
    assert "0.50× the best baseline (swiss) [95% 0.50–0.50: a real saving]" in verdict(by["active"])
    assert notes == []


def test_cli_prints_the_band_and_json_carries_it():
    import json

    from typer.testing import CliRunner

    from cli.main import app

    args = ["simulate", "--systems", "5", "--budget", "100", "--batch", "20", "--reps", "3", "--seed", "2",
            "--strategies", "active,round-robin,swiss", "--workers", "1", "--target", "tau=0.6"]
    r = CliRunner().invoke(app, args + ["--json"])
    assert r.exit_code == 0, r.stderr
    doc = {s["name"]: s for s in json.loads(r.stdout)["strategies"]}
    assert doc["active"]["best_baseline"] in ("round-robin", "swiss")
    band = doc["active"]["ratio_to_round_robin_band"]
    assert band is None or band["low"] <= doc["active"]["ratio_to_round_robin"]
    r = CliRunner().invoke(app, args, env={"COLUMNS": "200"})
    assert r.exit_code == 0, r.stderr
    assert "×RR [95%]" in r.stdout and "active: " in r.stdout and "round-robin" in r.stdout


def test_budget_mean_and_its_paired_difference_by_hand():
    from planner.simulation.headline import budget_mean, mean_difference

    # A: rep 0 mean (0.5 + 0.95 * 3) / 4 = 0.8375, rep 1 0.95; B: rep 0 (0.5 * 3 + 0.95) / 4 = 0.6125,
    # rep 1 (0.5 * 2 + 0.95 * 2) / 4 = 0.725. Differences 0.225 and 0.225: mean 0.225, every resample 0.225.
    a = _result("active", [[0.5, 0.95, 0.95, 0.95], [0.95, 0.95, 0.95, 0.95]])
    b = _result("round-robin", [[0.5, 0.5, 0.5, 0.95], [0.5, 0.5, 0.95, 0.95]])
    assert budget_mean(a.curves) == pytest.approx([0.8375, 0.95])
    assert budget_mean(b.curves) == pytest.approx([0.6125, 0.725])
    d, lo, hi = mean_difference(a, b, np.random.default_rng(0))
    assert (d, lo, hi) == pytest.approx((0.225, 0.225, 0.225))
    # unequal differences 0.2 and -0.1: resamples of two reps give 0.2, 0.05 or -0.1; band [-0.1, 0.2]
    c = _result("random", [[0.5, 0.5, 0.5, 0.95], [0.5, 0.5, 0.95, 0.95]])
    e = _result("swiss", [[0.5 + 0.2, 0.5 + 0.2, 0.5 + 0.2, 0.95 + 0.2], [0.4, 0.4, 0.85, 0.85]])
    d, lo, hi = mean_difference(e, c, np.random.default_rng(3))
    assert d == pytest.approx(0.05) and lo == pytest.approx(-0.1) and hi == pytest.approx(0.2)
    out, _ = add_ratios([a, b], "tau", 0.9, seed=0)
    act = out[0]
    assert act.budget_mean == pytest.approx((0.8375 + 0.95) / 2) and act.vs_round_robin[0] == pytest.approx(0.225)
    assert out[1].vs_round_robin is None            # round-robin against itself: nothing
    assert "mean tau over the budget 0.894, +0.225 against round-robin [95% +0.225 to +0.225: better]" in verdict(act)
