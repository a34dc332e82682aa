"""planner.workflows.push_pull without a server: an in-memory stand-in for the Label Studio client.

``FakeLS`` implements the client methods push/pull/wait call and produces
exports shaped like Label Studio 1.23.2's full JSON export (the shape of
``tests/data/label_studio/round1.json``, with ``completed_by`` expanded as the
snapshot export gives it). The real server is exercised by
``tests/test_connector_label_studio.py``.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from _ls_fixture import ls_study
from typer.testing import CliRunner

from cli.main import app
from planner.errors import DataError, UsageError
from planner.services.labelstudio import ARTIFACT, wait_for_annotations, waiting_items
from planner.store.study import Study
from planner.workflows.push_pull import pull, push


class FakeLS:
    url = "http://ls.test:8080"

    def __init__(self, users=()):
        self.projects: dict[int, dict] = {}
        self.tasks_of: dict[int, list[dict]] = {}
        self.next_id = 1
        self.user_list = list(users)
        self.validated = 0

    def _id(self) -> int:
        self.next_id += 1
        return self.next_id

    def project(self, pid):
        return self.projects.get(pid)

    def validate_config(self, config):
        assert config.startswith("<View>")
        self.validated += 1

    def create_project(self, title, config, description=""):
        pid = self._id()
        self.projects[pid] = {"id": pid, "title": title, "label_config": config}
        self.tasks_of[pid] = []
        return pid

    def tasks(self, pid):
        return [{"id": t["id"], "data": t["data"], "total_annotations": sum(not a["was_cancelled"] for a in t["annotations"]),
                 "cancelled_annotations": sum(a["was_cancelled"] for a in t["annotations"])} for t in self.tasks_of[pid]]

    def import_tasks(self, pid, tasks):
        for t in tasks:
            self.tasks_of[pid].append({"id": self._id(), "data": t["data"], "annotations": []})
        return len(tasks)

    def users(self):
        return self.user_list

    def snapshot_export(self, pid, title=""):
        return json.dumps([{"id": t["id"], "data": t["data"], "annotations": t["annotations"], "drafts": [],
                            "predictions": [], "project": pid} for t in self.tasks_of[pid]]).encode()

    # --- what an annotator does in the UI
    def annotate(self, item, verdict, user, *, cancelled=False):
        for tasks in self.tasks_of.values():
            for t in tasks:
                if t["data"]["item_id"] == item:
                    to = "response" if "response" in t["data"] else "prompt"
                    result = [] if cancelled else [{"from_name": "verdict", "to_name": to, "type": "choices",
                                                    "value": {"choices": [verdict]}}]
                    if verdict in ("left", "right", "fail") and not cancelled:
                        result.append({"from_name": "reason", "to_name": to, "type": "choices",
                                       "value": {"choices": ["accuracy"]}})
                    t["annotations"].append({"id": self._id(), "completed_by": user, "result": result,
                                             "was_cancelled": cancelled, "lead_time": 3.0})
                    return
        raise AssertionError(f"no task for {item}")


def _study(tmp: Path, fmt="label-studio", annotators=("alice", "bob"), acceptability=0.2) -> tuple[Path, dict]:
    study, res = ls_study(tmp, fmt=fmt, annotators=annotators, acceptability=acceptability)
    with Study.open(study) as st:
        return study, {it.item_id: it for it in st.items(res.batch_id)}


def _state(study):
    with Study.open(study) as st:
        return json.loads(st.load_artifact(ARTIFACT))


ALICE = {"id": 2, "email": "alice@example.com", "first_name": "", "last_name": ""}
BOB = {"id": 3, "email": "bob@example.com", "first_name": "", "last_name": ""}


def test_push_shared_projects_twice_imports_once(tmp_path):
    study, key = _study(tmp_path)
    ls = FakeLS()
    r1 = push(study, client=ls, project_title="Round")
    assert {p.key for p in r1.projects} == {"pairwise", "acceptability"}
    assert r1.imported == len(key) and all(p.created for p in r1.projects)
    assert sorted(p["title"] for p in ls.projects.values()) == ["Round — acceptability", "Round — pairwise"]
    acc = {i for i, k in key.items() if k.kind == "acceptability"}
    for p in r1.projects:
        items = {t["data"]["item_id"] for t in ls.tasks_of[p.id]}
        assert items == (acc if p.key == "acceptability" else set(key) - acc)
    r2 = push(study, client=ls)
    assert (r2.imported, r2.already) == (0, len(key)) and not any(p.created for p in r2.projects)
    assert sum(len(t) for t in ls.tasks_of.values()) == len(key)
    state = _state(study)
    assert set(state["servers"]) == {ls.url}
    assert state["servers"][ls.url]["batches"] == {"1": {p.key: p.id for p in r1.projects}}


def test_push_recreates_a_deleted_project(tmp_path):
    study, key = _study(tmp_path, acceptability=0.0)
    ls = FakeLS()
    first = push(study, client=ls).projects[0]
    del ls.projects[first.id]
    again = push(study, client=ls)
    assert again.projects[0].id != first.id and again.projects[0].imported == len(key)
    assert "no longer exists" in again.notes[0]


def test_per_annotator_projects(tmp_path):
    study, key = _study(tmp_path, acceptability=0.0)
    ls = FakeLS()
    res = push(study, client=ls, per_annotator=True)
    assert {p.key for p in res.projects} == {"pairwise@alice", "pairwise@bob"}
    for p in res.projects:
        who = p.key.split("@")[1]
        assert {t["data"]["item_id"] for t in ls.tasks_of[p.id]} == {i for i, k in key.items() if k.annotator == who}


def test_push_refusals(tmp_path):
    (tmp_path / "a").mkdir()
    study, _ = _study(tmp_path / "a", annotators=(), acceptability=0.0)
    with pytest.raises(UsageError, match="names no annotators"):
        push(study, client=FakeLS(), per_annotator=True)
    with pytest.raises(UsageError, match="no such batch"):
        push(study, client=FakeLS(), batch=7)
    with pytest.raises(UsageError, match="nothing was pushed"):
        pull(study, client=FakeLS())
    (tmp_path / "b").mkdir()
    csv_study, _ = _study(tmp_path / "b", fmt="csv", acceptability=0.0)
    with pytest.raises(UsageError, match="`format` label-studio"):
        push(csv_study, client=FakeLS())


def test_pull_incremental_edit_and_identity(tmp_path):
    study, key = _study(tmp_path, acceptability=0.0)
    # alice's e-mail does not name her; her username does (found through GET /api/users/).
    smith = {"id": 4, "email": "a.smith@corp.example", "first_name": "", "last_name": ""}
    ls = FakeLS(users=[{"id": 4, "email": smith["email"], "username": "alice"}, {"id": 3, **BOB, "username": "bob"}])
    push(study, client=ls)
    items = list(key)
    ls.annotate(items[0], "left", smith)
    ls.annotate(items[1], "tie", BOB)
    ls.annotate(items[2], "", BOB, cancelled=True)
    r1 = pull(study, client=ls)
    assert (r1.new, r1.already, r1.unannotated) == (2, 0, len(key) - 2)
    assert r1.skipped == 1  # the cancelled annotation; tasks without one are "unannotated", not skipped
    assert Path(r1.files[0]).parent.name == "label-studio" and Path(r1.files[0]).is_file()
    with Study.open(study) as st:
        got = {j.item: j for j in st.judgments()}
    assert got[items[0]].annotator == "alice" and got[items[1]].annotator == "bob"
    assert (pull(study, client=ls).new, pull(study, client=ls).already) == (0, 2)
    ann = ls.tasks_of[next(iter(ls.tasks_of))][0]["annotations"][0]
    ann["result"][0]["value"]["choices"] = ["right"]  # an edit in Label Studio: same id, another verdict
    with pytest.raises(DataError, match="`accept_changes`"):
        pull(study, client=ls)
    assert pull(study, client=ls, accept_changes=True).replaced == 1


def test_wait_for_annotations_polls_then_pulls(tmp_path):
    study, key = _study(tmp_path, acceptability=0.0)
    ls = FakeLS()
    push(study, client=ls)
    items = list(key)
    now, calls = [0.0], []

    def sleep(s):  # annotators work while planner sleeps: two items per poll
        now[0] += s
        for item in items[:2]:
            ls.annotate(item, "tie", ALICE)
        del items[:2]

    with Study.open(study) as st:
        res = wait_for_annotations(st, 1, timeout=600, poll=30, client=ls, sleep=sleep, clock=lambda: now[0],
                                   on_wait=lambda n, s: calls.append((n, s)))
        assert res.polls == len(calls) + 1 and waiting_items(st, 1, client=ls) == 0
    assert res.done and res.waiting == 0 and res.pull.new == len(key)
    assert [n for n, _ in calls] == list(range(len(key), 0, -2)) and calls[1][1] == 30.0


def test_wait_times_out_and_keeps_what_was_done(tmp_path):
    study, key = _study(tmp_path, acceptability=0.0)
    ls = FakeLS()
    push(study, client=ls)
    ls.annotate(next(iter(key)), "tie", ALICE)
    now = [0.0]
    with Study.open(study) as st:
        res = wait_for_annotations(st, 1, timeout=90, poll=30, client=ls,
                                   sleep=lambda s: now.__setitem__(0, now[0] + s), clock=lambda: now[0])
        assert not res.done and res.waiting == len(key) - 1 and res.pull.new == 1 and res.polls == 4
        with pytest.raises(UsageError, match="poll"):
            wait_for_annotations(st, 1, poll=0, client=ls)


def test_cli_without_connection_settings(tmp_path, monkeypatch):
    study, _ = _study(tmp_path, acceptability=0.0)
    monkeypatch.delenv("LABEL_STUDIO_URL", raising=False)
    monkeypatch.delenv("LABEL_STUDIO_API_KEY", raising=False)
    r = CliRunner().invoke(app, ["push", str(study)])
    assert r.exit_code == 2 and r.stderr.strip() == ("error: LABEL_STUDIO_URL is missing; set it to the server's "
                                                     "address, e.g. http://localhost:8080")
    r = CliRunner().invoke(app, ["pull", str(study), "--from", "argilla"])
    assert r.exit_code == 2 and "--from ('argilla'): expected one of label-studio" in r.stderr
    r = CliRunner().invoke(app, ["pull", str(study)], env={"LABEL_STUDIO_URL": "http://localhost:1"})
    assert r.exit_code == 2 and "LABEL_STUDIO_API_KEY is missing" in r.stderr


def test_a_task_planner_did_not_push_is_skipped_with_a_note(tmp_path):
    """Someone imports tasks by hand into planner's project (no data.item_id, or another study's item) and
    annotates them: the pull still stores the study's annotations, and says what it skipped."""
    study, key = _study(tmp_path, acceptability=0.0)
    ls = FakeLS()
    push(study, client=ls)
    pid = next(iter(ls.tasks_of))
    ls.tasks_of[pid] += [{"id": 900, "data": {"prompt": "a task made in the UI"}, "annotations": []},
                         {"id": 901, "data": {"item_id": "it-of-another-study"}, "annotations": []}]
    for t in ls.tasks_of[pid][-2:]:
        t["annotations"].append({"id": ls._id(), "completed_by": ALICE, "was_cancelled": False, "lead_time": 1.0,
                                 "result": [{"from_name": "verdict", "to_name": "prompt", "type": "choices",
                                             "value": {"choices": ["left"]}}]})
    ls.annotate(next(iter(key)), "left", ALICE)
    r = pull(study, client=ls)
    assert (r.new, r.skipped) == (1, 2)
    assert any("2 task(s)" in n and "skipped" in n for n in r.notes), r.notes
    assert (pull(study, client=ls).new, pull(study, client=ls).already) == (0, 1)
    # an export ingested by hand (not through pull) still refuses a foreign task: ingest knows no push
    export = tmp_path / "by-hand.json"
    export.write_text(json.dumps(json.loads(ls.snapshot_export(pid)), indent=1))   # not byte-identical to a pull
    from planner.store.study import ingest
    with pytest.raises(DataError, match="refused") as e:
        ingest(study, [export])
    assert any("expected tasks written by planner" in q for q in e.value.problems)
    assert any("unknown item 'it-of-another-study'" in q for q in e.value.problems)
