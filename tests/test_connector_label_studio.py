"""``planner push`` / ``planner pull`` against a real Label Studio 1.23 server: the
whole annotator loop, end to end, on the server users run.

One module-scoped flow (the server start costs 26–190 s): a study, a batch
written with ``--format label-studio`` for annotators alice and bob (pairwise
and acceptability items), ``planner push --per-annotator-projects`` through the
CLI (twice: no duplicate tasks), annotations posted through the REST API as
alice and bob with their own Personal Access Tokens, ``pull``, more annotations
and an edit, ``pull`` again (refused), ``pull --accept-changes``, and
:func:`planner.services.labelstudio.wait_for_annotations` until the batch is complete.
Every posted verdict derives from the batch KEY (pairwise: the side showing the
alphabetically first system wins, every fifth item a tie; acceptability: pass),
so every stored judgment's orientation is checked against the key.

Needs ``PLANNER_LABEL_STUDIO`` (see ``tests/ls_server.py``); marked
``labelstudio`` and ``slow``.
"""

from __future__ import annotations

import json
import sqlite3
import time
from pathlib import Path

import pytest
from ls_server import ADMIN, ANNOTATORS
from test_label_studio_live import _config_info, _flip, _judgments, _orientation_errors, _result, _study_files
from typer.testing import CliRunner

from cli.main import app
from planner.connectors.label_studio import LabelStudioClient
from planner.errors import DataError
from planner.services.labelstudio import ARTIFACT, wait_for_annotations, waiting_items
from planner.store.study import DB_NAME, Study, init_study
from planner.workflows.next_batch import BatchSelection, Output, QualityControl, next_batch
from planner.workflows.push_pull import pull

pytestmark = [pytest.mark.labelstudio, pytest.mark.slow]

SYSTEMS = ("gpt-4", "bard", "vicuna-13b", "guanaco-65b")
PLAN = {"alice@example.com": "alice", "bob@example.com": "bob"}


def _cli(ls, *args, key=None):
    env = {"LABEL_STUDIO_URL": ls.url, "LABEL_STUDIO_API_KEY": key if key is not None else ls.users[ADMIN]["token"]}
    return CliRunner().invoke(app, [str(a) for a in args], env=env)


def _project_items(ls, pid: int) -> list[str]:
    got = ls.api("GET", f"/api/tasks/?project={pid}&page_size=1000")
    return sorted(t["data"]["item_id"] for t in (got["tasks"] if isinstance(got, dict) else got))


def _task_ids(ls, pids) -> dict[str, int]:
    out = {}
    for pid in pids:
        got = ls.api("GET", f"/api/tasks/?project={pid}&page_size=1000")
        out.update({t["data"]["item_id"]: t["id"] for t in (got["tasks"] if isinstance(got, dict) else got)})
    return out


class _Poster:
    """Posts annotations derived from the key; remembers ``ls:<task>:<annotation>`` -> (item, verdict, email)."""

    def __init__(self, ls, key, task_of, infos):
        self.ls, self.key, self.task_of, self.infos = ls, key, task_of, infos
        self.order = {item: i for i, item in enumerate(key)}
        self.expected: dict[str, tuple] = {}

    def verdict(self, item: str) -> str:
        k = self.key[item]
        if k.kind == "acceptability":
            return "pass"
        return "tie" if self.order[item] % 5 == 4 else ("left" if k.left < k.right else "right")

    def info(self, item):
        return self.infos["acceptability" if self.key[item].kind == "acceptability" else "pairwise"]

    def post(self, email: str, item: str, cancelled: bool = False) -> str:
        v = self.verdict(item)
        body = {"result": [] if cancelled else _result(self.info(item), v), "was_cancelled": cancelled,
                "lead_time": 4.0 + self.order[item]}
        ann = self.ls.api("POST", f"/api/tasks/{self.task_of[item]}/annotations/", body, user=email)["id"]
        jid = f"ls:{self.task_of[item]}:{ann}"
        if not cancelled:
            self.expected[jid] = (item, v, email)
        return jid

    def edit(self, jid: str) -> None:
        item, v, email = self.expected[jid]
        self.ls.api("PATCH", f"/api/annotations/{jid.rsplit(':', 1)[1]}/",
                    {"result": _result(self.info(item), _flip(v))}, user=email)
        self.expected[jid] = (item, _flip(v), email)


def _sql(study, q):
    con = sqlite3.connect(str(Path(study) / DB_NAME))
    try:
        return con.execute(q).fetchall()
    finally:
        con.close()


@pytest.fixture(scope="module")
def flow(label_studio, tmp_path_factory, request):
    ls, d = label_studio, tmp_path_factory.mktemp("ls-push")
    clock = {}
    t0 = time.monotonic()
    prompts, responses = _study_files(d)
    study = d / "study"
    init_study(study, systems=SYSTEMS, prompts_file=prompts, responses_file=responses, seed=11)
    res = next_batch(study, BatchSelection(size=12, seed=5),
                     qc=QualityControl(annotators=list(PLAN.values()), attention=0.0, repeat=0.0, overlap=0.0,
                                       acceptability=0.25),
                     output=Output(format="label-studio", out=d / "batch-1.json"))
    with Study.open(study) as st:
        key = {it.item_id: it for it in st.items(res.batch_id)}
    out = {"ls": ls, "study": study, "key": key, "batch": res.batch_id, "steps": {}}
    t = time.monotonic()
    out["push1"] = _cli(ls, "push", study, "--to", "label-studio", "--per-annotator-projects", "--json")
    clock["push"] = time.monotonic() - t
    out["push2"] = _cli(ls, "push", study, "--to", "label-studio", "--per-annotator-projects", "--json")
    with Study.open(study) as st:
        state = json.loads(st.load_artifact(ARTIFACT))
    out["state"] = state
    projects = state["servers"][ls.url]["projects"]
    out["project_items"] = {k: _project_items(ls, p["id"]) for k, p in projects.items()}
    configs = {k.split("@")[0]: ls.api("GET", f"/api/projects/{p['id']}/")["label_config"] for k, p in projects.items()}
    infos = {k: _config_info(c) for k, c in configs.items()}
    poster = _Poster(ls, key, _task_ids(ls, [p["id"] for p in projects.values()]), infos)
    mine = {e: [i for i, k in key.items() if k.annotator == n] for e, n in PLAN.items()}
    alice, bob = ANNOTATORS
    client = LabelStudioClient(ls.url, ls.users[ADMIN]["token"])
    # Round 1: three items each; bob skips one.
    for email in PLAN:
        for item in mine[email][:3]:
            poster.post(email, item)
    poster.post(bob, mine[bob][3], cancelled=True)
    out["round1"] = dict(poster.expected)
    t = time.monotonic()
    out["pull1"] = _cli(ls, "pull", study, "--from", "label-studio", "--json")
    clock["pull"] = time.monotonic() - t
    out["pull1_again"] = pull(study, client=client)
    calls = []
    with Study.open(study) as st:
        out["waiting1"] = waiting_items(st, res.batch_id, client=client)
        # the timeout must outlast one poll's round trip, or a slow server (a loaded CI machine: 1.9 s) ends
        # the wait after the first poll without an on_wait call; nothing is annotated meanwhile, so it still
        # times out
        out["wait_timeout"] = wait_for_annotations(st, res.batch_id, timeout=5.0, poll=0.4, client=client,
                                                   on_wait=lambda n, s: calls.append((n, s)))
    out["wait_calls"] = calls
    # Round 2: all but alice's last item (bob re-does the skipped one); alice edits her first annotation.
    for email in PLAN:
        for item in mine[email][3:] if email == bob else mine[email][3:-1]:
            poster.post(email, item)
    edited = next(j for j, (_, _, e) in out["round1"].items() if e == alice)
    poster.edit(edited)
    with pytest.raises(DataError) as refused:
        pull(study, client=client)
    out["refused"] = refused.value.render(True)   # as the command line prints it
    out["round2"] = dict(poster.expected)
    out["after_refused"] = _judgments(study)
    out["pull2"] = _cli(ls, "pull", study, "--from", "label-studio", "--accept-changes", "--json")
    out["after_pull2"] = set(_judgments(study))
    # Round 3: the last item; wait_for_annotations sees the batch complete and pulls.
    poster.post(alice, mine[alice][-1])
    t = time.monotonic()
    with Study.open(study) as st:
        out["wait_done"] = wait_for_annotations(st, res.batch_id, timeout=120.0, poll=1.0, client=client)
    out["wait_seconds"] = time.monotonic() - t
    out.update(expected=poster.expected, edited=edited, mine=mine, flow_seconds=time.monotonic() - t0)
    reporter = request.config.pluginmanager.get_plugin("terminalreporter")
    capman = request.config.pluginmanager.getplugin("capturemanager")
    if reporter is not None and capman is not None:
        with capman.global_and_fixture_disabled():
            reporter.write_line(f"push/pull flow: {len(key)} items, {len(out['project_items'])} projects, first push "
                                f"{clock['push']:.1f} s, first pull {clock['pull']:.1f} s, final wait "
                                f"{out['wait_seconds']:.1f} s, whole flow {out['flow_seconds']:.0f} s")
    bad = ls.users[ADMIN]["token"]
    out["bad_keys"] = {"jwt": bad[:-6] + ("AAAAAA" if not bad.endswith("AAAAAA") else "BBBBBB"),
                       "legacy": "0123456789abcdef0123456789abcdef01234567"}
    out["bad"] = {k: _cli(ls, "pull", study, key=v) for k, v in out["bad_keys"].items()}
    return out


def test_push_creates_per_annotator_projects_and_is_idempotent(flow):
    ls, key = flow["ls"], flow["key"]
    assert flow["push1"].exit_code == 0, flow["push1"].output
    assert flow["push2"].exit_code == 0, flow["push2"].output
    p1, p2 = json.loads(flow["push1"].stdout), json.loads(flow["push2"].stdout)
    n_acc = sum(k.kind == "acceptability" for k in key.values())
    assert 0 < n_acc < len(key)
    assert sum(p["imported"] for p in p1["projects"]) == len(key) and all(p["created"] for p in p1["projects"])
    assert sum(p["imported"] for p in p2["projects"]) == 0, "pushing twice imports nothing"
    assert sum(p["already"] for p in p2["projects"]) == len(key) and not any(p["created"] for p in p2["projects"])
    assert [p["id"] for p in p1["projects"]] == [p["id"] for p in p2["projects"]]
    want = {}
    for item, k in key.items():
        want.setdefault(("acceptability" if k.kind == "acceptability" else "pairwise") + "@" + k.annotator, []).append(item)
    assert flow["project_items"] == {k: sorted(v) for k, v in want.items()}, "one task per item, in its annotator's project"
    srv = flow["state"]["servers"][ls.url]
    assert set(srv["batches"][str(flow["batch"])]) == set(want)
    assert ADMIN not in json.dumps(flow["state"]) and ls.users[ADMIN]["token"] not in json.dumps(flow["state"])


def test_pull_is_incremental_and_refuses_edits(flow):
    r1 = flow["pull1"]
    assert r1.exit_code == 0, r1.output
    got = json.loads(r1.stdout)
    assert got["new"] == len(flow["round1"]) == 6
    assert got["unannotated"] == len(flow["key"]) - 6
    assert got["skipped"] == 1, "bob's cancelled annotation; unannotated tasks are not skips"
    assert Path(got["files"][0]).parent == Path(flow["study"]) / "label-studio"
    again = flow["pull1_again"]
    assert (again.new, again.already) == (0, 6)
    assert flow["waiting1"] == len(flow["key"]) - 7, "the skipped task counts as handled"
    w = flow["wait_timeout"]
    assert not w.done and w.waiting == len(flow["key"]) - 6 and flow["wait_calls"]
    assert all(n == len(flow["key"]) - 7 for n, _ in flow["wait_calls"])
    assert "chang" in flow["refused"].lower() and "--accept-changes" in flow["refused"]
    # All-or-nothing per export file: the project holding the edit (alice's pairwise) is refused whole;
    # the other projects' exports are stored.
    alice = ANNOTATORS[0]
    key, after = flow["key"], flow["after_refused"]
    refused_file = {j for j, (item, _, e) in flow["round2"].items()
                    if e == alice and key[item].kind != "acceptability" and j not in flow["round1"]}
    others = {j for j in flow["round2"] if j not in flow["round1"]} - refused_file
    assert refused_file and others
    assert set(after) == set(flow["round1"]) | others
    edited = flow["edited"]
    assert _orientation_errors({edited: after[edited]}, key, flow["round1"]) == [], "the edit is not applied"
    r2 = flow["pull2"]
    assert r2.exit_code == 0, r2.output
    got2 = json.loads(r2.stdout)
    assert got2["replaced"] == 1 and got2["new"] == len(flow["after_pull2"]) - len(after) == len(refused_file)
    assert _sql(flow["study"], "SELECT COUNT(*) FROM judgment_edits") == [(1,)]


def test_every_judgment_once_oriented_and_mapped(flow):
    study, key, exp = flow["study"], flow["key"], flow["expected"]
    w = flow["wait_done"]
    assert w.done and w.waiting == 0 and w.pull.new == 1
    got = _judgments(study)
    assert set(got) == set(exp) and len(got) == len(key) == len(exp), "every item judged once, stored once"
    assert _orientation_errors(got, key, exp) == []
    assert got[flow["edited"]].verdict != "tie"
    src = dict(_sql(study, "SELECT id, source_annotator FROM judgments"))
    assert all(src[j] == exp[j][2] for j in got), "the raw LS identity (e-mail) is kept"
    assert all(j.annotator == PLAN[exp[i][2]] == key[j.item].annotator for i, j in got.items())
    kept = sorted((Path(study) / "label-studio").glob("pull-*-project-*.json"))
    pulls = 6  # pull1, pull1_again, the refused pull, pull2, and one at the end of each wait
    assert len(kept) == pulls * len(flow["project_items"]) and not list((Path(study) / "label-studio").glob("*.part"))


def test_bad_key_is_one_line_without_the_key(flow):
    for kind, res in flow["bad"].items():
        assert res.exit_code == 2, (kind, res.output)
        lines = [x for x in res.stderr.splitlines() if x.strip()]
        assert len(lines) == 1 and lines[0].startswith("error: "), (kind, res.stderr)
        assert "LABEL_STUDIO_API_KEY" in lines[0]
        assert flow["bad_keys"][kind] not in res.output and flow["bad_keys"][kind][:20] not in res.output
        assert "Traceback" not in res.output


def test_tasks_are_listed_by_id_on_the_real_server(label_studio, monkeypatch):
    """The data manager's id filter on the real 1.23 server: pages of 3 by increasing id, and tasks deleted
    while the listing runs shift nothing out of it (offset paging skipped the tasks that slid back a page).
    The project is found again by the intent token in its description, as a push stopped mid-create needs."""
    import planner.connectors.label_studio as lsc

    ls = label_studio
    client = LabelStudioClient(ls.url, ls.users[ADMIN]["token"])
    config = ('<View><Text name="prompt" value="$prompt"/><Choices name="verdict" toName="prompt">'
              '<Choice value="left"/></Choices></View>')
    pid = client.create_project("planner paging probe", config, "probe (planner push 5e1f0c0ffee)")
    client.import_tasks(pid, [{"data": {"prompt": f"q{i}", "item_id": f"it-{i}"}} for i in range(10)])
    ids = sorted(t["id"] for t in client.tasks(pid))
    assert len(ids) == 10
    monkeypatch.setattr(lsc, "PAGE_SIZE", 3)
    calls = []
    real = client.request

    def request(method, path, body=None, **kw):
        got = real(method, path, body, **kw)
        if path.startswith("/api/tasks/"):
            calls.append(path)
            if len(calls) == 1:   # an annotator deletes two tasks of the first page while planner reads on
                for tid in ids[:2]:
                    ls.api("DELETE", f"/api/tasks/{tid}/")
        return got

    monkeypatch.setattr(client, "request", request)
    seen = [t["id"] for t in client.tasks(pid)]
    assert seen == ids and len(calls) == 4   # 3 + 3 + 3 + 1: nothing skipped, nothing twice
    assert sorted(t["id"] for t in real("GET", f"/api/tasks/?project={pid}&page_size=100")["tasks"]) == ids[2:]
    from planner.services.labelstudio import project_by_token

    assert project_by_token(client, "5e1f0c0ffee") == pid
