"""simulate never throws work away: fallbacks, failed runs, results file, Ctrl-C, --resume."""

from __future__ import annotations

import json

import numpy as np
import pytest
from typer.testing import CliRunner

import planner.acquisition as acq
import planner.services.simulation_tasks as runs
from cli.main import app
from planner.errors import DataError, UsageError
from planner.simulation.loop import run_one as _run_one
from planner.simulation.replay import replay_truth
from planner.simulation.spec import SimulationSpec, parse_strategies
from planner.workflows.simulate import read_replay, simulate


def _spec(strategies="active,round-robin,swiss", reps=3, seed=11):
    return SimulationSpec("linear", parse_strategies(strategies), n_systems=5, budget=60, batch=20, reps=reps,
                          seed=seed)


def _doc(result):
    return json.dumps(result.to_dict(), default=str, sort_keys=True)


def _fail_swiss(monkeypatch):
    real = acq.select_pairs

    def select(*args, **kw):
        if kw.get("strategy") == "swiss":
            raise RuntimeError("forced failure")
        return real(*args, **kw)
    monkeypatch.setattr(acq, "select_pairs", select)


def test_a_failing_strategy_does_not_lose_the_others(monkeypatch, tmp_path):
    _fail_swiss(monkeypatch)
    out = tmp_path / "runs.jsonl"
    res = simulate(_spec(), workers=1, out=out)
    by = {s.name: s for s in res.strategies}
    assert by["swiss"].failed == 3 and by["swiss"].reached == 0 and by["swiss"].needed == ()
    assert by["active"].failed == 0 and len(by["active"].needed) == 3
    assert any("swiss: 3 run(s) failed" in n and "forced failure" in n for n in res.notes)
    # the six finished runs are saved, the failed ones are not (so --resume retries them)
    lines = [json.loads(x) for x in out.read_text().splitlines()]
    assert sorted((d["strategy"], d["rep"]) for d in lines) == sorted(
        (s, r) for s in ("active", "round-robin") for r in range(3))
    monkeypatch.undo()
    resumed = simulate(_spec(), workers=1, out=out, resume=True)
    assert _doc(resumed) == _doc(simulate(_spec(), workers=1))


def test_every_run_failing_is_an_error(monkeypatch):
    _fail_swiss(monkeypatch)
    with pytest.raises(DataError, match="swiss: RuntimeError: forced failure"):
        simulate(_spec("swiss", reps=1), workers=1)


def test_swiss_falls_back_when_the_pool_leaves_no_neighbour_pair(tmp_path):
    # 3 systems, 5 judgments a pair: swiss asks only for neighbours in the ranking; once both
    # neighbour pairs are used up only the outer pair is left, and round-robin fills the batch
    rows, k = [], 0
    for a, b in (("x", "y"), ("y", "z"), ("x", "z")):
        for r in range(5):
            k += 1
            rows.append({"id": f"j{k}", "prompt": "p", "a": a if r % 2 else b, "b": b if r % 2 else a,
                         "verdict": "A" if r % 3 else "B"})
    p = tmp_path / "pool.jsonl"
    p.write_text("".join(json.dumps(r) + "\n" for r in rows))
    pool = read_replay(p)
    spec = SimulationSpec("replay", parse_strategies("swiss"), budget=100, batch=2, reps=1,
                          truth=replay_truth(pool), replay=pool)
    trace = _run_one(spec, 0, 0)
    assert trace.fallbacks > 0 and trace.fallback_reason.startswith("swiss: ")
    assert "least-judged pairs that can still be issued" in trace.fallback_reason
    assert trace.spent[-1] == 15 and trace.exhausted  # the whole pool, then a clean stop
    res = simulate(spec, workers=1)
    assert any("swiss: in 1 run(s) the pool left it no pair" in n for n in res.notes)


def test_ctrl_c_keeps_finished_runs_and_resume_gives_the_uninterrupted_result(monkeypatch, tmp_path):
    out = tmp_path / "runs.jsonl"
    real, calls = runs.safe_run, []

    def interrupted(args):
        calls.append(args[1:])
        if len(calls) == 4:
            raise KeyboardInterrupt
        return real(args)
    monkeypatch.setattr(runs, "safe_run", interrupted)
    with pytest.raises(KeyboardInterrupt):
        simulate(_spec(), workers=1, out=out)
    # runs go repetition by repetition: what was kept is repetition 0 of every strategy
    kept = [json.loads(x) for x in out.read_text().splitlines()]
    assert [(d["strategy"], d["rep"]) for d in kept] == [("active", 0), ("round-robin", 0), ("swiss", 0)]
    monkeypatch.undo()
    resumed = simulate(_spec(), workers=1, out=out, resume=True)
    fresh = simulate(_spec(), workers=2)
    assert _doc(resumed) == _doc(fresh)
    assert len(out.read_text().splitlines()) == 9
    # a finished file resumes with nothing to run, and more reps only run the new ones
    again = simulate(_spec(), workers=1, out=out, resume=True)
    assert _doc(again) == _doc(fresh)
    more = simulate(_spec(reps=4), workers=1, out=out, resume=True)
    assert _doc(more) == _doc(simulate(_spec(reps=4), workers=1))


def test_resume_refuses_another_simulation_and_out_refuses_to_overwrite(tmp_path):
    out = tmp_path / "runs.jsonl"
    simulate(_spec(reps=1), workers=1, out=out)
    with pytest.raises(UsageError, match="different simulation"):
        simulate(_spec(reps=1, seed=12), workers=1, out=out, resume=True)
    with pytest.raises(UsageError, match="already holds results"):
        simulate(_spec(reps=1), workers=1, out=out)
    with pytest.raises(UsageError, match="needs `out`"):
        simulate(_spec(reps=1), workers=1, resume=True)
    # a torn last line (killed mid-write) is run again, not an error
    out.write_text(out.read_text() + '{"format": "planner-simu')
    assert _doc(simulate(_spec(reps=1), workers=1, out=out, resume=True)) == _doc(simulate(_spec(reps=1), workers=1))


def test_cli_ctrl_c_says_where_the_runs_are(monkeypatch, tmp_path):
    out = tmp_path / "runs.jsonl"
    real, calls = runs.safe_run, []

    def interrupted(args):
        calls.append(1)
        if len(calls) == 2:
            raise KeyboardInterrupt
        return real(args)
    monkeypatch.setattr(runs, "safe_run", interrupted)
    args = ["simulate", "--systems", "5", "--budget", "40", "--batch", "20", "--reps", "2", "--seed", "3",
            "--strategies", "active,round-robin", "--workers", "1", "--out", str(out)]
    r = CliRunner().invoke(app, args)
    assert r.exit_code == 130 and "--resume" in r.stderr and "Traceback" not in r.stderr
    monkeypatch.undo()
    r = CliRunner().invoke(app, args + ["--resume", "--json"])
    assert r.exit_code == 0, r.stderr
    assert np.isfinite(json.loads(r.stdout)["strategies"][0]["mean"]["tau"][-1])
    r = CliRunner().invoke(app, args)
    assert r.exit_code == 2 and "already holds results" in r.stderr


def test_cli_out_and_resume_errors_are_one_line(tmp_path):
    base = ["simulate", "--systems", "4", "--budget", "20", "--batch", "10", "--reps", "1", "--strategies", "random",
            "--workers", "1"]
    runner = CliRunner()
    r = runner.invoke(app, base + ["--out", str(tmp_path)])
    assert r.exit_code == 2 and "--out" in r.stderr and "directory" in r.stderr
    r = runner.invoke(app, base + ["--resume"])
    assert r.exit_code == 2 and "--resume needs --out" in r.stderr
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"format": "planner-simulate-run/1", "rep": 0}\n{}\n')
    r = runner.invoke(app, base + ["--out", str(bad), "--resume"])
    assert r.exit_code == 1 and "bad.jsonl:1: not a planner simulate results line" in r.stderr
    assert bad.read_text().endswith("\n{}\n") and "Traceback" not in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1
