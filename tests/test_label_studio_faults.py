"""`planner push`/`pull` against a hostile Label Studio on loopback (tests/fake_label_studio.py): the
server misbehaviours a real deployment shows, none of which may lose or duplicate work: two pushes at
once, kill -9 while a project is created, tasks deleted between pages, listings that never end, redirects
to another host, keys echoed back, a dribbled export, answers of the wrong type, waits that never end and
Ctrl-C."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import _cli_process as proc
import pytest
from _loopback import second_host
from _ls_fixture import ls_study
from fake_label_studio import LEGACY, PAT, USERS, FakeLabelStudio

from planner.connectors.label_studio import LabelStudioClient
from planner.errors import DataError
from planner.store.study import Study
from planner.workflows.push_pull import pull, push

SYSTEMS = ("alpha", "beta", "gamma", "delta")


@pytest.fixture
def ls():
    with FakeLabelStudio() as s:
        yield s


@pytest.fixture
def other_host():
    with second_host(FakeLabelStudio) as s:
        yield s


def make_study(tmp: Path, size: int = 8, acceptability: float = 0.0) -> Path:
    return ls_study(tmp, size=size, acceptability=acceptability, prompts=30)[0]


def _items(study) -> list[str]:
    with Study.open(study) as s:
        return [it.item_id for it in s.items()]


def _env(ls, key=PAT) -> dict:
    return {"LABEL_STUDIO_URL": ls.url, "LABEL_STUDIO_API_KEY": key}


def _client(ls, key=PAT, **kw) -> LabelStudioClient:
    return LabelStudioClient(ls.url, key, **kw)


def _all_items(ls) -> list[str]:
    return sorted(i for pid in ls.tasks for i in ls.items(pid))


# ------------------------------------------------------------------ 2. two pushes, kill -9
def test_two_pushes_at_once_create_one_set_of_projects(tmp_path, ls):
    """The first push waits on the server while it creates the project; a second push at that moment created
    another project (and imported every task into it) on main."""
    study = make_study(tmp_path)
    ls.faults[("POST", "/api/projects/")] = ["hang"]
    first = proc.start("push", str(study), **_env(ls))
    proc.wait_until(lambda: ls.hits.get(("POST", "/api/projects/")), what="the first create")
    second = proc.run("push", str(study), **_env(ls))
    ls.release.set()
    _out, err = first.communicate(timeout=60)
    assert first.returncode == 0, err
    assert second.returncode == 1 and "Traceback" not in second.stderr
    assert second.stderr.startswith("error: the study's Label Studio push is in use by planner process "
                                    f"{first.pid} ") and "since 20" in second.stderr
    assert len(ls.projects) == 1 and _all_items(ls) == sorted(_items(study))   # one project, each task once


def test_kill9_while_the_server_creates_a_project(tmp_path, ls):
    """The server creates the project and never answers; planner is SIGKILLed. The rerun finds the project by
    the intent token in its description and imports each task once."""
    study = make_study(tmp_path, acceptability=0.3)
    ls.faults[("POST", "/api/projects/")] = ["hang"]
    p = proc.start("push", str(study), **_env(ls))
    proc.wait_until(lambda: len(ls.projects) == 1, what="the first project to exist")
    time.sleep(0.2)
    proc.kill9(p)
    res = push(study, client=_client(ls))
    assert len(ls.projects) == 2 and {pp.key for pp in res.projects} == {"pairwise", "acceptability"}
    assert any("found by planner's intent record" in n for n in res.notes)
    assert any(f"took over the lock left by planner process {p.pid}" in n for n in res.notes)
    assert _all_items(ls) == sorted(_items(study))


def test_kill9_during_an_import_imports_each_task_once(tmp_path, ls):
    study = make_study(tmp_path)
    ls.faults[("POST", "/api/projects/{id}/import")] = ["hang"]
    p = proc.start("push", str(study), **_env(ls))
    proc.wait_until(lambda: ls.hits.get(("POST", "/api/projects/{id}/import")), what="the import")
    time.sleep(0.2)
    proc.kill9(p)
    res = push(study, client=_client(ls))
    assert res.imported == 0 and any("stopped while importing" in n for n in res.notes)
    assert _all_items(ls) == sorted(_items(study))


# ------------------------------------------------------------------ 5. paging
def test_tasks_deleted_between_pages_are_not_imported_twice(tmp_path, ls, monkeypatch):
    """Offset paging skipped the two tasks that slid onto an already-read page; the next push imported them again."""
    import planner.connectors.label_studio as lsc

    monkeypatch.setattr(lsc, "PAGE_SIZE", 4)
    study = make_study(tmp_path, size=12)
    push(study, client=_client(ls))
    (pid,) = ls.tasks
    n = len(ls.tasks[pid])
    ls.faults[("GET", "/api/tasks/")] = ["delete_between"]    # two tasks of page 1 go while planner reads
    res = push(study, client=_client(ls))
    items = ls.items(pid)
    assert res.imported == 0 and len(items) == len(set(items)) == n - 2


def _in_thread(fn, seconds: float):
    box = {}
    t = threading.Thread(target=lambda: box.update(r=_try(fn)), daemon=True)
    t.start()
    t.join(seconds)
    assert not t.is_alive(), f"still running after {seconds} s"
    return box["r"]


def _try(fn):
    try:
        return fn()
    except Exception as exc:
        return exc


@pytest.mark.parametrize("fault", ["always_full", "fabricate"])
def test_a_listing_that_never_ends_is_bounded(tmp_path, ls, monkeypatch, fault):
    import planner.connectors.label_studio as lsc

    monkeypatch.setattr(lsc, "MAX_TASKS", 5_000, raising=False)
    study = make_study(tmp_path)
    push(study, client=_client(ls))
    ls.faults[("GET", "/api/tasks/")] = [fault] * 10_000
    got = _in_thread(lambda: push(study, client=_client(ls)), 60)
    assert isinstance(got, DataError), got
    assert ("does not advance" if fault == "always_full" else "more than 5,000 tasks") in got.message


# ------------------------------------------------------------------ 7. redirects
@pytest.mark.parametrize("key", [PAT, LEGACY], ids=["personal-access-token", "legacy-token"])
def test_a_redirect_to_another_host_gets_no_credentials(tmp_path, ls, other_host, key):
    study = make_study(tmp_path)
    ls.redirect_to = other_host.url
    r = proc.run("push", str(study), **_env(ls, key))
    assert r.returncode == 1 and "Traceback" not in r.stderr, r.stderr
    assert f"the server redirected to http://127.0.0.2:{other_host.server.server_address[1]}, another host" \
        in r.stderr
    assert other_host.auth == []   # not one request reached it, so no key, no access token


# ------------------------------------------------------------------ 8. keys echoed back
def _leaks(text: str, secrets=(PAT, LEGACY), run: int = 8) -> list[str]:
    return [s[i:i + run] for s in secrets for i in range(len(s) - run + 1) if s[i:i + run] in text]


@pytest.mark.parametrize("fault", ["echo400", "echo401", "echo500"])
@pytest.mark.parametrize("key", [PAT, LEGACY], ids=["personal-access-token", "legacy-token"])
def test_a_key_echoed_in_an_error_is_not_printed(tmp_path, ls, fault, key):
    study = make_study(tmp_path)
    ls.faults[("POST", "/api/projects/validate/")] = [fault, fault]   # a PAT retries a 401 once
    r = proc.run("push", str(study), **_env(ls, key))
    assert r.returncode in (1, 2) and "Traceback" not in r.stderr and len(r.stderr.strip().splitlines()) == 1
    assert _leaks(r.stderr) == [] and "***" in r.stderr, r.stderr


def test_a_key_echoed_in_an_export_is_not_stored(tmp_path, ls):
    study = make_study(tmp_path)
    push(study, client=_client(ls))
    item = _items(study)[0]
    ls.annotate(item, "left", USERS[1])
    ls.faults[("GET", "/api/projects/{id}/exports/{id}/download")] = ["echo_export"]
    res = pull(study, client=_client(ls))
    assert res.new == 1
    for f in Path(study).rglob("*"):
        if f.is_file():
            assert _leaks(f.read_bytes().decode("utf-8", "replace")) == [], f


# ------------------------------------------------------------------ 13. bounded waits
def test_a_dribbled_export_is_cut_off(tmp_path, ls):
    study = make_study(tmp_path)
    push(study, client=_client(ls))
    ls.annotate(_items(study)[0], "left", USERS[1])
    ls.faults[("GET", "/api/projects/{id}/exports/{id}/download")] = ["dribble"]
    ls.dribble_s = 0.01   # ~3 kB at 100 bytes/s: half a minute
    t0 = time.monotonic()
    got = _in_thread(lambda: pull(study, client=_client(ls, timeout=1.0)), 60)
    assert isinstance(got, DataError) and "no complete answer within 1 s" in got.message, got
    assert time.monotonic() - t0 < 8


def test_inf_waits_are_usage_errors(tmp_path, ls):
    study = make_study(tmp_path)
    r = proc.run("run", str(study), "--annotators-via", "label-studio", "--annotators", "alice,bob", "--budget",
                 "8", "--wait-timeout", "inf", "--poll", "inf", **_env(ls))
    assert r.returncode == 2 and "Traceback" not in r.stderr, r.stderr
    assert r.stderr.startswith("error: --poll (inf) must be a number of seconds in (0, 86400]")
    assert ls.hits == {}


def test_ctrl_c_wakes_the_wait_for_annotators(tmp_path, ls):
    study = make_study(tmp_path)
    p = proc.start("run", str(study), "--annotators-via", "label-studio", "--annotators", "alice,bob", "--budget",
                   "40", "--wait-timeout", "3600", "--poll", "600", **_env(ls))
    proc.wait_until(lambda: ls.hits.get(("GET", "/api/tasks/"), 0) >= 1, what="the first poll")
    time.sleep(1.0)
    took, _, err = proc.interrupt(p)
    assert took < 15 and p.returncode == 130 and "Traceback" not in err, err


# ------------------------------------------------------------------ 14. answers of the wrong type
def test_a_project_id_that_is_not_a_number(tmp_path, ls):
    study = make_study(tmp_path)
    ls.faults[("POST", "/api/projects/")] = ["id_str"]
    r = proc.run("push", str(study), **_env(ls))
    assert r.returncode == 1 and "Traceback" not in r.stderr
    assert "POST /api/projects/: the answer's id is '12abc'; expected a whole number" in r.stderr


def test_a_task_list_of_numbers(tmp_path, ls):
    study = make_study(tmp_path)
    push(study, client=_client(ls))
    ls.faults[("GET", "/api/tasks/")] = ["ints"]
    r = proc.run("push", str(study), **_env(ls))
    assert r.returncode == 1 and "Traceback" not in r.stderr and "expected a list of task objects" in r.stderr


def test_users_as_strings_do_not_stop_a_pull(tmp_path, ls):
    study = make_study(tmp_path)
    push(study, client=_client(ls))
    ls.annotate(_items(study)[0], "left", USERS[1])
    ls.faults[("GET", "/api/users/")] = ["users_str"]
    r = proc.run("pull", str(study), **_env(ls))
    assert r.returncode == 0 and "Traceback" not in r.stderr and "1 new" in r.stderr, r.stderr
