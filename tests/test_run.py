"""`planner run` against the local OpenAI-compatible server: to settlement, to the budget, under a cost cap,
interrupted and resumed (nothing paid twice), and the CLI with its progress lines."""

from __future__ import annotations

import json
import threading

import pytest

pytest.importorskip("openai")

from _judge_fixture import QUALITY, make_study

from planner.errors import UsageError
from planner.services.batch_round import RunOptions
from planner.services.judging import JudgeOptions
from planner.store.study import Study, status
from planner.workflows.run import run_loop

TRUE_ORDER = tuple(sorted(QUALITY, key=lambda s: -QUALITY[s]))


def _judge(srv, **kw) -> JudgeOptions:
    return JudgeOptions(**{"model": "judge-x", "base_url": srv.base_url, "sleep": lambda s: None,
                           "concurrency": 8, **kw})


def _issued(study) -> int:
    with Study.open(study) as s:
        return sum(b.issued for b in s.batches() if not b.voided)


def test_run_until_settled(tmp_path, srv):
    study = make_study(tmp_path)
    events = []
    res = run_loop(study, _judge(srv), RunOptions(budget=400, batch_size=20), progress=events.append)
    assert res.stopped == "settled" and "stop" in res.advice
    assert res.top3 == TRUE_ORDER[:3]                        # the fake judge's strengths, recovered
    assert res.judgments_used == _issued(study) == status(study).judgments < 400
    assert srv.chat_calls == res.judgments_used              # every judgment paid exactly once
    rounds = [e for e in events if e["phase"] == "round"]
    assert [r["round"] for r in rounds] == list(range(1, len(rounds) + 1)) and len(rounds) == len(res.rounds)
    assert rounds[-1]["used"] == res.judgments_used
    assert rounds[0]["uncertainty"] > rounds[-1]["uncertainty"]   # expected uncertainty left goes down
    again = run_loop(study, _judge(srv), RunOptions(budget=400, batch_size=20))
    assert again.stopped == "settled" and again.rounds == () and srv.chat_calls == res.judgments_used


def test_run_until_budget_never_exceeds_it(tmp_path, srv):
    study = make_study(tmp_path)
    res = run_loop(study, _judge(srv), RunOptions(budget=37, batch_size=10, until="budget"))
    assert res.stopped == "budget" and res.judgments_used <= 37
    assert res.judgments_used >= 37 - 3          # the last round is sized to the budget left (QC may round)
    assert srv.chat_calls == res.judgments_used == status(study).judgments


def test_run_fits_the_model_once_per_round(tmp_path, srv, monkeypatch):
    """A round's dry runs (the first, then smaller ones while its items overflow the budget left) and the
    batch it issues share one fit; the run's closing top 3 is one more fit of every judgment."""
    import planner.model

    fits = []
    real_fit = planner.model.fit

    def counted(*args, **kwargs):
        fits.append(kwargs.get("engine"))
        return real_fit(*args, **kwargs)

    monkeypatch.setattr(planner.model, "fit", counted)
    study = make_study(tmp_path)
    # both orders: 22 items, then 8 left: a plan of 8 comparisons (16+ items) overflows and is planned
    # again smaller (6 items), then 2 (measured: 9 fits before a round's plans shared one, 4 now)
    res = run_loop(study, _judge(srv), RunOptions(budget=30, batch_size=10, until="budget", both_orders=True))
    assert res.stopped == "budget" and [r.items for r in res.rounds] == [22, 6, 2]
    assert len(fits) == len(res.rounds) + 1, fits     # one per round, and final_top3's


def test_run_plans_each_batch_once(tmp_path, srv, monkeypatch):
    """The batch a round issues is the plan it made, not planned again: a round plans once, plus once
    per smaller retry while its items overflow the budget left (measured: 8 plans for these 3 rounds when
    a round planned a dry run and then the batch again, 5 now: 1, then 2, then 2)."""
    from planner.batch import assemble

    plans = []
    real = assemble.assemble_batch
    monkeypatch.setattr(assemble, "assemble_batch", lambda *a, **k: (plans.append(1), real(*a, **k))[1])
    study = make_study(tmp_path)
    res = run_loop(study, _judge(srv), RunOptions(budget=30, batch_size=10, until="budget", both_orders=True))
    assert [r.items for r in res.rounds] == [22, 6, 2]
    assert len(plans) == 5, plans


def test_run_cost_cap(tmp_path, srv):
    study = make_study(tmp_path)
    # $1000 per 1M tokens: ~$0.27 a judgment at the fake's usage; a $3 cap buys roughly ten
    res = run_loop(study, _judge(srv, price_in=1000.0, price_out=1000.0, max_cost=3.0),
                   RunOptions(budget=200, batch_size=8, until="budget"))
    assert res.stopped == "cost" and res.spent_usd <= 3.0 and 5 <= srv.chat_calls <= 12


def test_run_interrupted_then_resumed_pays_nothing_twice(tmp_path, srv):
    study = make_study(tmp_path)
    stop = threading.Event()
    n = [0]

    def ctrl_c_in_round_2(line):
        n[0] += 1
        if n[0] == 15:
            stop.set()

    res = run_loop(study, _judge(srv, concurrency=2), RunOptions(budget=60, batch_size=10, until="budget"),
                   stop=stop, on_answer=ctrl_c_in_round_2)
    assert res.stopped == "interrupted" and len(res.rounds) == 2
    with Study.open(study) as s:
        pending = sum(b.pending for b in s.batches())
    assert pending > 0 and status(study).judgments == srv.chat_calls       # in flight: kept
    res2 = run_loop(study, _judge(srv), RunOptions(budget=60, batch_size=10, until="budget"))
    assert res2.rounds[0].resumed and res2.stopped == "budget"
    assert srv.chat_calls == res2.judgments_used == status(study).judgments <= 60


def test_run_options_are_checked(tmp_path, srv):
    study = make_study(tmp_path)
    with pytest.raises(UsageError, match=r"^`budget` \(0\) must be"):
        run_loop(study, _judge(srv), RunOptions(budget=0))
    with pytest.raises(UsageError, match=r"^`until` \('always'\) must be one of settled, budget"):
        run_loop(study, _judge(srv), RunOptions(budget=5, until="always"))
    with pytest.raises(UsageError, match="`model` is required"):   # the command line names it --judge-model
        run_loop(study, JudgeOptions(model=" "), RunOptions(budget=5))


def test_cli_run_refuses_options_as_it_builds_them(tmp_path):
    """The option objects check themselves; the command line prints its own flags, exit 2, nothing written."""
    from typer.testing import CliRunner

    from cli.main import app

    study = make_study(tmp_path)
    for args, line in ((["--budget", "5"], "error: --judge-model is required"),
                       (["--judge-model", "j", "--budget", "0"], "error: --budget (0) must be an integer >= 1"),
                       (["--judge-model", "j", "--budget", "5", "--until", "ever"],
                        "error: --until ('ever') must be one of settled, budget"),
                       (["--judge-model", "j", "--budget", "5", "--timeout", "0"],
                        "error: --timeout (0.0) must be a finite number of seconds > 0")):
        r = CliRunner().invoke(app, ["run", str(study), *args])
        assert r.exit_code == 2 and r.stderr.startswith(line), (args, r.stderr)
        assert "Traceback" not in r.output
    assert status(study).batches == ()


def test_cli_run_json_and_progress(tmp_path, srv):
    from typer.testing import CliRunner

    from cli.main import app

    study = make_study(tmp_path)
    r = CliRunner().invoke(app, ["run", str(study), "--judge-model", "judge-x", "--base-url", srv.base_url,
                                 "--budget", "20", "--batch-size", "10", "--until", "budget", "--json"])
    assert r.exit_code == 0, r.output
    doc = json.loads(r.stdout)
    assert doc["stopped"] == "budget" and doc["judgments_used"] <= 20
    r = CliRunner().invoke(app, ["run", str(study), "--judge-model", "judge-x", "--base-url", srv.base_url,
                                 "--budget", "30", "--batch-size", "10", "--until", "budget"])
    assert r.exit_code == 0, r.output
    assert "round 3 (batch 3) · judgments" in r.stderr and "top-3:" in r.stderr
    assert "Stopped: the judgment budget is reached." in r.stdout


def test_demo_loop_through_a_local_judge_server(tmp_path):
    from planner.workflows.judge_demo import run_demo_live

    res = run_demo_live(tmp_path / "demo", n_systems=4, n_prompts=16, budget=40, batch_size=20, seed=3)
    assert res.run.stopped in ("budget", "settled") and res.run.judgments_used <= 40
    assert res.http_calls == res.run.judgments_used == status(res.path).judgments   # one HTTP call per judgment
    assert set(res.run.top3) <= set(res.systems)
    with pytest.raises(UsageError, match="already exists"):
        run_demo_live(tmp_path / "demo", n_systems=4)


def test_demo_live_judge_through_the_cli(tmp_path):
    pytest.importorskip("openai")
    from typer.testing import CliRunner

    from cli.main import app

    runner = CliRunner()
    r = runner.invoke(app, ["demo", str(tmp_path / "d"), "--live-judge", "--rounds", "2", "--size", "10", "--json"])
    assert r.exit_code == 0, r.stderr
    doc = json.loads(r.stdout)
    assert doc["run"]["stopped"] == "budget" and doc["run"]["judgments_used"] <= 20 and doc["http_calls"] > 0
    r = runner.invoke(app, ["demo", str(tmp_path / "d" / "study"), "--live-judge", "--force"])
    assert r.exit_code == 2 and "holds a study" in r.stderr  # the demo never replaces a study


def test_a_dead_endpoint_stops_the_run_after_one_round(tmp_path, srv):
    study = make_study(tmp_path)
    srv.rule = lambda text: "context"        # every request refused (400 context_length_exceeded, not retried)
    res = run_loop(study, _judge(srv), RunOptions(budget=100, batch_size=20, until="budget"))
    assert res.stopped == "no-answers" and len(res.rounds) == 1 and res.judgments_used == 0
    assert any("none of" in n and "was answered; stopping" in n for n in res.notes)


def test_a_small_round_that_fails_whole_by_chance_does_not_stop_the_run(tmp_path, srv):
    study = make_study(tmp_path)
    srv.script = ["context"] * 3             # the first round's three requests fail, later ones are answered
    res = run_loop(study, _judge(srv), RunOptions(budget=9, batch_size=3, until="budget"))
    # the three failed items stay pending (held against the budget, asked again by the next run): 6 answered
    assert res.stopped == "budget" and len(res.rounds) == 3 and res.judgments_used == 6 == status(study).judgments
    assert not any("was answered; stopping" in n for n in res.notes)
    assert "3 item(s) of this judge's batches are unanswered" in " ".join(res.notes)


def test_two_small_rounds_with_nothing_answered_stop_the_run(tmp_path, srv):
    study = make_study(tmp_path)
    srv.rule = lambda text: "context"
    res = run_loop(study, _judge(srv), RunOptions(budget=9, batch_size=3, until="budget"))
    assert res.stopped == "no-answers" and len(res.rounds) == 2 and res.judgments_used == 0
    assert any("(nor in the round before); stopping" in n for n in res.notes)
