"""`simulate --anchor NAME`: the anchor strategies' reference system, by name, never by position.

The option used to take a 0-based index into a system list the user never saw
spelled out; it now takes a name from that list (synthetic scenarios: sys01,
sys02, ...; a replay or a study: its own names). No test or doc used an index,
so an index is refused like any unknown name.
"""

from __future__ import annotations

import json

from typer.testing import CliRunner

from cli.main import app

runner = CliRunner()
SMALL = ("--reps", "1", "--budget", "40", "--batch", "10", "--strategies", "anchor", "--json")


def run(*args):
    return runner.invoke(app, list(args))


def _needed_curve(r) -> list:
    assert r.exit_code == 0, r.stderr
    doc = json.loads(r.stdout)
    return doc["strategies"][0]


def test_anchor_by_name_is_the_index_of_that_name():
    from planner.simulation.spec import SimulationSpec, parse_strategies
    from planner.workflows import simulate as sim

    by_name = _needed_curve(run("simulate", "--systems", "5", "--anchor", "sys04", *SMALL))
    spec = SimulationSpec("linear", parse_strategies("anchor"), n_systems=5, budget=40, batch=10, reps=1,
                          seed=0, anchor=3)
    from planner.jsonable import jsonable

    direct = json.loads(json.dumps(jsonable(sim.simulate(spec))))["strategies"][0]
    assert by_name == direct


def test_anchor_changes_the_run_and_default_is_the_first_system():
    first = _needed_curve(run("simulate", "--systems", "5", *SMALL))
    named_first = _needed_curve(run("simulate", "--systems", "5", "--anchor", "sys01", *SMALL))
    other = _needed_curve(run("simulate", "--systems", "5", "--anchor", "sys05", *SMALL))
    assert first == named_first
    assert first != other   # the option reaches the strategy


def test_unknown_anchor_lists_the_allowed_names():
    for bad in ("zz", "3", "sys6"):
        r = run("simulate", "--systems", "5", "--anchor", bad, *SMALL)
        assert r.exit_code == 2
        assert r.stderr.strip() == (f"error: --anchor ('{bad}') must be one of the systems: "
                                    "sys01, sys02, sys03, sys04, sys05")


def test_replay_anchor_takes_the_replay_names(tmp_path):
    rows = []
    for i, (a, b, v) in enumerate([("alpha", "beta", "A"), ("beta", "gamma", "A"), ("alpha", "gamma", "A")] * 30):
        rows.append(json.dumps({"id": f"j{i}", "prompt": f"p{i % 10}", "a": a, "b": b, "verdict": v}))
    f = tmp_path / "replay.jsonl"
    f.write_text("\n".join(rows) + "\n")
    ok = run("simulate", "--replay", str(f), "--anchor", "gamma", *SMALL)
    assert ok.exit_code == 0, ok.stderr
    bad = run("simulate", "--replay", str(f), "--anchor", "sys01", *SMALL)
    assert bad.exit_code == 2
    assert bad.stderr.strip() == "error: --anchor ('sys01') must be one of the systems: alpha, beta, gamma"


def test_long_system_lists_are_cut():
    r = run("simulate", "--systems", "30", "--anchor", "nope", *SMALL)
    assert r.exit_code == 2
    line = r.stderr.strip()
    assert line.endswith("sys19, sys20, … (30 systems)") and "\n" not in line
