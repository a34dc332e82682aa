"""`planner run --annotators-via label-studio`: rounds pushed, waited for, pulled — against the in-memory
Label Studio stand-in of test_push_pull (the real server is exercised by test_connector_label_studio)."""

from __future__ import annotations

import json
from pathlib import Path

from test_push_pull import ALICE, BOB, FakeLS

from planner.services.batch_round import RunOptions
from planner.store.study import Study, init_study
from planner.workflows.run_humans import HumanOptions, run_humans_loop

SYSTEMS = ("alpha", "beta", "gamma", "delta")


def _study(tmp: Path) -> Path:
    prompts, responses = tmp / "prompts.jsonl", tmp / "responses.jsonl"
    prompts.write_text("".join(json.dumps({"id": f"p{i}", "text": f"Question {i}?"}) + "\n" for i in range(12)))
    responses.write_text("".join(json.dumps({"prompt": f"p{i}", "system": s, "text": f"Answer {s} {i}."}) + "\n"
                                 for i in range(12) for s in SYSTEMS))
    init_study(tmp / "study", prompts_file=prompts, responses_file=responses, seed=3)
    return tmp / "study"


def _annotators_at_work(study, ls: FakeLS, now: list):
    """A sleep() during which alice and bob annotate every open task: the alphabetically first system wins."""
    users = {"alice": ALICE, "bob": BOB}

    def sleep(s):
        now[0] += s
        with Study.open(study) as st:
            key = {it.item_id: it for it in st.items()}
        for tasks in ls.tasks_of.values():
            for t in tasks:
                if not t["annotations"]:
                    it = key[t["data"]["item_id"]]
                    verdict = "left" if min(it.left, it.right) == it.left else "right"
                    ls.annotate(it.item_id, verdict, users[it.annotator])
    return sleep


def test_two_rounds_with_humans_until_budget(tmp_path):
    study, ls, now = _study(tmp_path), FakeLS(), [0.0]
    run = RunOptions(budget=16, batch_size=8, until="budget")
    human = HumanOptions(annotators=("alice", "bob"), timeout=600, poll=30)
    events = []
    res = run_humans_loop(study, run, human, client=ls, sleep=_annotators_at_work(study, ls, now),
                          clock=lambda: now[0], progress=events.append)
    assert res.stopped == "budget" and len(res.rounds) == 2 and res.judgments_used == 16
    assert any(e["phase"] == "waiting" for e in events) and [e["round"] for e in events if e["phase"] == "round"] \
        == [1, 2]
    with Study.open(study) as st:
        key = {it.item_id: it for it in st.items()}
        stored = list(st.judgments())
    assert len(stored) == len(key) == 16  # every item judged once
    for j in stored:  # orientation against the key, identity mapped to the planned name
        it = key[j.item]
        assert (j.a if j.verdict == "A" else j.b) == min(it.left, it.right)
        assert j.annotator == it.annotator


def test_a_human_round_fits_the_model_once(tmp_path, monkeypatch):
    """The round's plan, its smaller retry (12 items, then 4 left) and the batch pushed share one fit; the
    closing top 3 is one more (measured: 6 fits before a round's plans shared one, 3 now)."""
    import planner.model

    fits = []
    real_fit = planner.model.fit
    monkeypatch.setattr(planner.model, "fit", lambda *a, **k: (fits.append(k.get("engine")), real_fit(*a, **k))[1])
    study, ls, now = _study(tmp_path), FakeLS(), [0.0]
    res = run_humans_loop(study, RunOptions(budget=16, batch_size=8, until="budget"),
                          HumanOptions(annotators=("alice", "bob"), timeout=600, poll=30), client=ls,
                          sleep=_annotators_at_work(study, ls, now), clock=lambda: now[0])
    assert [r.items for r in res.rounds] == [12, 4]
    assert len(fits) == len(res.rounds) + 1, fits


def test_a_round_not_finished_stops_and_the_rerun_continues(tmp_path):
    study, ls, now = _study(tmp_path), FakeLS(), [0.0]
    run = RunOptions(budget=8, batch_size=8, until="budget")
    human = HumanOptions(annotators=("alice", "bob"), timeout=60, poll=30)
    idle = run_humans_loop(study, run, human, client=ls, sleep=lambda s: now.__setitem__(0, now[0] + s),
                           clock=lambda: now[0])
    assert idle.stopped == "waiting" and "still waiting" in idle.notes[-1]
    done = run_humans_loop(study, run, human, client=ls, sleep=_annotators_at_work(study, ls, now),
                           clock=lambda: now[0])
    assert done.stopped == "budget" and done.rounds[0].resumed
    assert done.rounds[0].answered == idle.rounds[0].items  # the waiting round, finished on the rerun
    with Study.open(study) as st:
        assert len(list(st.judgments())) == len(st.items()) == done.judgments_used == 8
