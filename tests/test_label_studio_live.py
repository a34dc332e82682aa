"""The Label Studio round trip against a real Label Studio 1.23 server: the files
planner writes import, and the exports it reads back are what the server really sends.

planner writes a blinded batch (``format="label-studio"``, annotators alice
and bob); a real server gets a project with planner's labeling config, the
tasks, and annotations posted through the REST API by two users, in two
rounds (round 2 also edits a round-1 annotation); after each round the
project is exported as JSON, JSON_MIN and CSV and every export is ingested.
Each posted verdict is derived from the batch KEY (the side showing the
alphabetically first system wins; every fifth item is a tie), so every
stored judgment's orientation can be checked against the key.

A second project, pushed with ``planner push`` as one shared project (the
community edition: everyone sees every task), covers annotator identity: bob's
only round-1 annotation is on one of alice's tasks (never credited to alice,
from the UI's id-only exports or from ``pull``), and the UI's three export types
ingested after ``pull`` are the same judgments (all already stored).

Needs ``PLANNER_LABEL_STUDIO`` (see ``tests/ls_server.py``); marked
``labelstudio`` and ``slow`` (the server's first start takes minutes). CI runs
``python -m pytest -m labelstudio`` in ``.ci/run``. ``PLANNER_LS_KEEP_EXPORTS=DIR``
copies the exports there (how ``tests/data/label_studio/`` was made).
"""

from __future__ import annotations

import csv
import json
import os
import shutil
import sqlite3
import time
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from _example_data import vicuna_dir
from ls_server import ANNOTATORS

from planner.errors import DataError
from planner.store.study import DB_NAME, Study, ingest, init_study
from planner.workflows.next_batch import BatchSelection, Output, QualityControl, next_batch

pytestmark = [pytest.mark.labelstudio, pytest.mark.slow]

VICUNA = vicuna_dir() / "vicuna80"   # the package's copy, as `planner example vicuna80` writes it
SYSTEMS = ("gpt-4", "bard", "vicuna-13b", "guanaco-65b")
EXPORTS = ("JSON", "JSON_MIN", "CSV")
SUFFIX = {"JSON": ".json", "JSON_MIN": ".min.json", "CSV": ".csv"}
PLAN = {"alice@example.com": "alice", "bob@example.com": "bob"}  # LS user -> the --annotators name


# ------------------------------------------------------------------ study
def _study_files(d: Path):
    """16 real Vicuna-80 prompts x 4 systems (the package copy, `planner example vicuna80`), else small synthetic texts."""
    if (VICUNA / "prompts.jsonl").exists():
        prompts = [json.loads(x) for x in (VICUNA / "prompts.jsonl").read_text(encoding="utf-8").splitlines()]
        keep = {p["id"] for p in prompts if int(p["id"].rsplit("q", 1)[1]) % 10 in (1, 4)}
        rows = [json.loads(x) for x in (VICUNA / "responses.jsonl").read_text(encoding="utf-8").splitlines()]
        prompts = [p for p in prompts if p["id"] in keep]
        responses = [r for r in rows if r["prompt"] in keep and r["system"] in SYSTEMS]
    else:
        prompts = [{"id": f"p{i}", "text": f"Question {i}: how do I do task {i}?", "stratum": "s"} for i in range(16)]
        responses = [{"prompt": p["id"], "system": s, "text": f"Answer of {s} to {p['id']}, step by step."}
                     for p in prompts for s in SYSTEMS]
    for name, rows in (("prompts.jsonl", prompts), ("responses.jsonl", responses)):
        (d / name).write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return d / "prompts.jsonl", d / "responses.jsonl"


def _intended(key) -> str:
    """The position verdict an attentive annotator following the rule gives: the alphabetically first system."""
    return "left" if key.left < key.right else "right"


def _config_info(config: str) -> dict:
    """to_name of ``verdict`` and, for ``reason``, its to_name, the verdicts that show it and one code."""
    root = ET.fromstring(config)
    ch = {c.get("name"): c for c in root.iter("Choices")}
    info = {"verdict_to": ch["verdict"].get("toName"), "reason": None}
    if "reason" in ch:
        r = ch["reason"]
        info["reason"] = {"to": r.get("toName"), "when": set((r.get("whenChoiceValue") or "").split(",")),
                          "code": r.find("Choice").get("value")}
    return info


def _result(info: dict, verdict: str) -> list[dict]:
    """Result items shaped like the frontend's (the reason only when the config shows it)."""
    out = [{"from_name": "verdict", "to_name": info["verdict_to"], "type": "choices", "origin": "manual",
            "value": {"choices": [verdict]}}]
    r = info["reason"]
    if r and verdict in r["when"]:
        out.append({"from_name": "reason", "to_name": r["to"], "type": "choices", "origin": "manual",
                    "value": {"choices": [r["code"]]}})
    return out


# ---------------------------------------------------------- Label Studio
def _project(ls, config: str) -> int:
    pid = ls.api("POST", "/api/projects/", {"title": "planner round trip", "label_config": config})["id"]
    ls.api("POST", f"/api/projects/{pid}/validate/", {"label_config": config})
    return pid


def _tasks(ls, pid: int) -> dict[str, int]:
    got = ls.api("GET", f"/api/tasks/?project={pid}&page_size=1000")
    tasks = got["tasks"] if isinstance(got, dict) else got
    return {t["data"]["item_id"]: t["id"] for t in tasks}


def _annotate(ls, task: int, user: str, result: list, *, cancelled: bool = False, seconds: float = 7.5) -> int:
    body = {"result": [] if cancelled else result, "was_cancelled": cancelled, "lead_time": seconds}
    return ls.api("POST", f"/api/tasks/{task}/annotations/", body, user=user)["id"]


def _export(ls, pid: int, out: Path, stem: str, query: str = "") -> dict[str, Path]:
    """``GET /export?exportType=…`` (the export the UI downloads) in each type; ``query`` adds parameters."""
    paths = {}
    for kind in EXPORTS:
        p = out / f"{stem}{SUFFIX[kind]}"
        p.write_bytes(ls.api("GET", f"/api/projects/{pid}/export?exportType={kind}{query}", raw=True))
        paths[kind] = p
    return paths


def _snapshot_export(ls, pid: int, out: Path, stem: str) -> dict[str, Path]:
    """The export-snapshot API (``POST /exports/``, convert, download) with ``completed_by`` expanded.

    What the SDK's ``projects.exports.create`` does; with
    ``annotations__completed_by: {only_id: false}`` the JSON carries
    ``completed_by: {id, email, first_name, last_name}`` and the converted
    JSON_MIN/CSV carry the email in ``annotator``.
    """
    snap = ls.api("POST", f"/api/projects/{pid}/exports/",
                  {"title": stem, "serialization_options": {"annotations__completed_by": {"only_id": False}}})
    sid = snap["id"]
    paths = {}
    for kind in EXPORTS:
        if kind != "JSON":
            ls.api("POST", f"/api/projects/{pid}/exports/{sid}/convert", {"export_type": kind})
            deadline = time.monotonic() + 120
            while not any(c.get("export_type") == kind and c.get("status") == "completed"
                          for c in ls.api("GET", f"/api/projects/{pid}/exports/{sid}").get("converted_formats", ())):
                assert time.monotonic() < deadline, f"snapshot {sid}: {kind} not converted within 120 s"
                time.sleep(0.5)
        p = out / f"{stem}{SUFFIX[kind]}"
        p.write_bytes(ls.api("GET", f"/api/projects/{pid}/exports/{sid}/download?exportType={kind}", raw=True))
        paths[kind] = p
    return paths


def _write_json(path: Path, obj) -> None:
    path.write_text(json.dumps(obj, indent=1, sort_keys=True) + "\n", encoding="utf-8")


def _flip(verdict: str) -> str:
    return {"left": "right", "right": "left"}.get(verdict, "left")


class _Annotator:
    """Posts annotations derived from the key and remembers what each one says."""

    def __init__(self, ls, info, key, task_of):
        self.ls, self.info, self.key, self.task_of = ls, info, key, task_of
        self.order = {item: i for i, item in enumerate(key)}
        self.expected: dict[str, tuple] = {}  # "ls:<task>:<annotation>" -> (item, position verdict, LS email)

    def verdict(self, item: str) -> str:
        return "tie" if self.order[item] % 5 == 4 else _intended(self.key[item])

    def post(self, email: str, item: str) -> str:
        v = self.verdict(item)
        task = self.task_of[item]
        ann = _annotate(self.ls, task, email, _result(self.info, v), seconds=5.0 + self.order[item])
        self.expected[f"ls:{task}:{ann}"] = (item, v, email)
        return f"ls:{task}:{ann}"

    def cancel(self, email: str, item: str) -> str:
        task = self.task_of[item]
        return f"ls:{task}:{_annotate(self.ls, task, email, [], cancelled=True)}"

    def edit(self, jid: str) -> None:
        """PATCH an annotation to the other side (the UI's "Update")."""
        item, v, email = self.expected[jid]
        ann = jid.rsplit(":", 1)[1]
        self.ls.api("PATCH", f"/api/annotations/{ann}/", {"result": _result(self.info, _flip(v))}, user=email)
        self.expected[jid] = (item, _flip(v), email)


def _batch(d: Path):
    prompts, responses = _study_files(d)
    study = d / "study"
    init_study(study, systems=SYSTEMS, prompts_file=prompts, responses_file=responses, seed=11)
    res = next_batch(study, BatchSelection(size=12, seed=5),
                     qc=QualityControl(annotators=list(PLAN.values()), attention=0.0, repeat=0.0, overlap=0.0,
                                       acceptability=0.0),
                     output=Output(format="label-studio", out=d / "batch-1.json"))
    with Study.open(study) as st:
        key = {it.item_id: it for it in st.items(res.batch_id)}
    config = next(Path(f) for f in res.files if f.endswith(".label-config.xml")).read_text(encoding="utf-8")
    tasks = {email: json.loads(Path(d / f"batch-1.{name}.json").read_text(encoding="utf-8"))
             for email, name in PLAN.items()}
    return study, key, config, tasks


@pytest.fixture(scope="module")
def round_trip(label_studio, tmp_path_factory):
    """Two annotation rounds in a real project; the exports of each round (see the module docstring)."""
    ls = label_studio
    d = tmp_path_factory.mktemp("ls-round-trip")
    study, key, config, tasks = _batch(d)
    pid = _project(ls, config)
    for email in PLAN:
        ls.api("POST", f"/api/projects/{pid}/import", tasks[email])
    task_of = _tasks(ls, pid)
    assert sorted(task_of) == sorted(key), "every batch item became exactly one task"
    ann = _Annotator(ls, _config_info(config), key, task_of)
    mine = {email: [t["data"]["item_id"] for t in tasks[email]] for email in PLAN}
    alice, bob = ANNOTATORS
    # Round 1: half of each annotator's items; bob skips (cancels) one; the rest untouched.
    for email in PLAN:
        for item in mine[email][:3]:
            ann.post(email, item)
    cancelled = ann.cancel(bob, mine[bob][3])
    round1 = dict(ann.expected)
    exports1 = _export(ls, pid, d, "round1")
    all_tasks1 = _export(ls, pid, d, "round1.all-tasks", "&download_all_tasks=true")
    # Round 2: alice annotates all but her last item (never annotated); bob the rest, the skipped one
    # too; alice edits her first round-1 annotation.
    for item in mine[alice][3:-1] + mine[bob][3:]:
        ann.post(alice if item in mine[alice] else bob, item)
    edited = next(j for j, (item, _, email) in round1.items() if email == alice)
    ann.edit(edited)
    exports2 = _export(ls, pid, d, "round2")
    snapshot2 = _snapshot_export(ls, pid, d, "round2.snapshot")
    keep = os.environ.get("PLANNER_LS_KEEP_EXPORTS")
    if keep:
        Path(keep).mkdir(parents=True, exist_ok=True)
        for p in [*exports1.values(), *all_tasks1.values(), *exports2.values(), *snapshot2.values(), Path(d / "batch-1.label-config.xml")]:
            shutil.copy(p, Path(keep) / p.name)
        _write_json(Path(keep) / "key.json", {i: {"prompt": k.prompt, "left": k.left, "right": k.right,
                                                  "annotator": k.annotator} for i, k in key.items()})
        _write_json(Path(keep) / "expected.json", {"edited": edited, "cancelled": cancelled,
                                                   "never_annotated_item": mine[alice][-1],
                                                   "users": {e: ls.users[e]["id"] for e in ls.users},
                                                   "round1": round1, "round2": ann.expected})
    return {"ls": ls, "study": study, "key": key, "round1": round1, "expected": ann.expected,
            "exports1": exports1, "all_tasks1": all_tasks1, "exports2": exports2, "snapshot2": snapshot2, "edited": edited, "cancelled": cancelled,
            "never": mine[alice][-1], "task_of": task_of}



# ------------------------------------------------------------- oracles
def _posted(path: Path, kind: str) -> dict[str, tuple]:
    """Independent read of one export: ``ls:<task>:<annotation>`` -> (item, verdict, raw annotator).

    Only non-cancelled annotations; the rows of tasks without an annotation are left out.
    """
    if kind == "JSON":
        out = {}
        for t in json.loads(path.read_text(encoding="utf-8")):
            for a in t["annotations"]:
                if not a["was_cancelled"]:
                    v = next(r["value"]["choices"][0] for r in a["result"] if r["from_name"] == "verdict")
                    who = a["completed_by"]
                    out[f"ls:{t['id']}:{a['id']}"] = (t["data"]["item_id"], v, who["email"] if isinstance(who, dict)
                                                       else who)
        return out
    if kind == "JSON_MIN":
        rows = json.loads(path.read_text(encoding="utf-8"))
    else:
        with open(path, newline="", encoding="utf-8") as fh:
            rows = list(csv.DictReader(fh))
    return {f"ls:{r['id']}:{r['annotation_id']}": (r["item_id"], r["verdict"], r["annotator"])
            for r in rows if r.get("annotation_id") not in (None, "")}


def _as_exported(expected: dict, ls, kind: str, emails: bool = False) -> dict:
    """What an export should say for ``expected``: the annotator as a user id (int; str in CSV) or the email."""
    def who(email):
        if emails:
            return email
        uid = ls.users[email]["id"]
        return str(uid) if kind == "CSV" else uid
    return {j: (item, v, who(email)) for j, (item, v, email) in expected.items()}


def test_exports_hold_what_was_posted(round_trip):
    """Every export type of both rounds holds exactly the posted (and edited) verdicts, by annotation id."""
    rt, ls = round_trip, round_trip["ls"]
    for kind in EXPORTS:
        assert _posted(rt["exports1"][kind], kind) == _as_exported(rt["round1"], ls, kind), kind
        assert _posted(rt["all_tasks1"][kind], kind) == _as_exported(rt["round1"], ls, kind), kind
        assert _posted(rt["exports2"][kind], kind) == _as_exported(rt["expected"], ls, kind), kind
        assert _posted(rt["snapshot2"][kind], kind) == _as_exported(rt["expected"], ls, kind, emails=True), kind
    edited = rt["edited"]
    assert rt["round1"][edited][1] != rt["expected"][edited][1], "the PATCH changed the verdict, same id"
    # The skipped annotation is in the JSON export only, marked cancelled with an empty result.
    task, ann = (int(x) for x in rt["cancelled"].split(":")[1:])
    tasks1 = {t["id"]: t for t in json.loads(rt["exports1"]["JSON"].read_text(encoding="utf-8"))}
    assert [(a["id"], a["was_cancelled"], a["result"]) for a in tasks1[task]["annotations"]] == [(ann, True, [])]
    # The never-annotated task: absent by default, present without annotations with download_all_tasks.
    never = rt["never"]
    assert never not in {t["data"]["item_id"] for t in tasks1.values()}
    all1 = json.loads(rt["all_tasks1"]["JSON"].read_text(encoding="utf-8"))
    assert [t["annotations"] for t in all1 if t["data"]["item_id"] == never] == [[]]
    assert len(all1) == len(rt["key"])


# ---------------------------------------------------------------- ingest
def _judgments(study) -> dict:
    with Study.open(study) as st:
        return {j.id: j for j in st.judgments()}


def _orientation_errors(judgments: dict, key: dict, expected: dict) -> list[str]:
    """Stored judgments whose winner, item or positions disagree with the key and the posted verdict."""
    errors = []
    for jid, j in judgments.items():
        item, v, _ = expected[jid]
        k = key[item]
        if k.kind == "acceptability":
            if (j.a, j.b, j.verdict, j.item) != (k.left, None, v, item):
                errors.append(f"{jid}: stored {j.a} {j.verdict}; key {k.left} {v}")
            continue
        want = "tie" if v == "tie" else (k.left if v == "left" else k.right)
        got = {"A": j.a, "B": j.b}.get(j.verdict, j.verdict)
        shown = (k.left, k.right) if j.a_position == "left" else (k.right, k.left)
        if got != want or j.item != item or (j.a, j.b) != shown:
            errors.append(f"{jid}: stored {j.a} vs {j.b} {j.verdict} ({j.a_position}); key {k.left}|{k.right} {v}")
    return errors


def _audit_rows(study) -> int:
    """Rows of the store's audit table of replaced judgments (``judgment_edits``)."""
    con = sqlite3.connect(str(Path(study) / DB_NAME))
    try:
        return con.execute("SELECT COUNT(*) FROM judgment_edits").fetchone()[0]
    finally:
        con.close()


def _sources(study) -> dict:
    """judgment id -> the tool's own annotator identity kept beside the mapped name."""
    con = sqlite3.connect(str(Path(study) / DB_NAME))
    try:
        return dict(con.execute("SELECT id, source_annotator FROM judgments"))
    finally:
        con.close()


def test_every_export_ingests_once_with_orientation_checked(round_trip, tmp_path):
    """Round 1: each export type ingests the round-1 judgments once; round 2 adds exactly the new ones,
    the edit is refused by default and applied with ``accept_changes``; orientation errors = 0."""
    rt, ls = round_trip, round_trip["ls"]
    study, key = rt["study"], rt["key"]
    snap_study = tmp_path / "snapshot-study"
    shutil.copytree(study, snap_study)  # a second study, fed only the email-carrying snapshot exports
    for kind in EXPORTS:  # the 1st export stores round 1; the 2nd and 3rd are "already stored"
        ingest(study, [rt["exports1"][kind]])
        assert set(_judgments(study)) == set(rt["round1"]), kind
    with pytest.raises(DataError, match=r"(?i)chang"):  # the edited annotation, refused by default
        ingest(study, [rt["exports2"]["JSON"]])
    assert set(_judgments(study)) == set(rt["round1"]), "a refused file stores nothing (all-or-nothing per file)"
    ingest(study, [rt["exports2"]["JSON"]], accept_changes=True)
    for kind in ("JSON_MIN", "CSV"):
        ingest(study, [rt["exports2"][kind]])
    got = _judgments(study)
    assert set(got) == set(rt["expected"]) and len(got) == len(rt["round1"]) + 5
    assert _audit_rows(study) == 1
    assert _orientation_errors(got, key, rt["expected"]) == []
    # GET exports carry only the numeric user id -> "ls-user:<id>" (CONTRACT.md); each LS user judged only
    # items the plan gave one --annotators name, so the store maps the identity to that name and keeps it.
    src = _sources(study)
    assert all(src[i] == f"ls-user:{ls.users[rt['expected'][i][2]]['id']}" for i in got)
    assert all(key[j.item].annotator == PLAN[rt["expected"][i][2]] == j.annotator for i, j in got.items())
    for kind in EXPORTS:  # snapshot exports: completed_by expanded -> the email
        ingest(snap_study, [rt["snapshot2"][kind]])
    snap = _judgments(snap_study)
    assert set(snap) == set(rt["expected"])
    assert _orientation_errors(snap, key, rt["expected"]) == []
    # snapshot exports name the e-mail; its local part is the planned name
    src = _sources(snap_study)
    assert all(src[i] == rt["expected"][i][2] and j.annotator == PLAN[rt["expected"][i][2]]
               for i, j in snap.items())


# ------------------------------------------------- identity: cross-annotation, UI export after pull
def _ui_exports(ls, pid: int, out: Path, stem: str) -> dict[str, Path]:
    """The three exports the UI downloads (users by numeric id only)."""
    return _export(ls, pid, out, stem)


@pytest.fixture(scope="module")
def shared_project(label_studio, tmp_path_factory):
    """One shared project (community edition: everyone sees every task), pushed with ``planner push``.

    Round 1: alice annotates three of her items; bob's only annotation is on one of alice's items (the
    cross-annotation case). Round 2: bob annotates three of his own. After each round the UI's three export
    types are kept; ``pull`` (the snapshot export: e-mails with the ids beside them) runs in the flows below.
    """
    from ls_server import ADMIN
    from typer.testing import CliRunner

    from cli.main import app
    from planner.connectors.label_studio import LabelStudioClient

    ls = label_studio
    d = tmp_path_factory.mktemp("ls-identity")
    study, key, config, _ = _batch(d)
    env = {"LABEL_STUDIO_URL": ls.url, "LABEL_STUDIO_API_KEY": ls.users[ADMIN]["token"]}
    pushed = CliRunner().invoke(app, ["push", str(study), "--to", "label-studio", "--project-title",
                                      "planner identity", "--json"], env=env)
    assert pushed.exit_code == 0, pushed.output
    pid = json.loads(pushed.stdout)["projects"][0]["id"]
    ann = _Annotator(ls, _config_info(config), key, _tasks(ls, pid))
    alice, bob = ANNOTATORS
    mine = {email: [i for i, k in key.items() if k.annotator == name] for email, name in PLAN.items()}
    for item in mine[alice][:3]:
        ann.post(alice, item)
    crossed = mine[alice][3]
    cross_jid = ann.post(bob, crossed)               # bob's only annotation: on alice's item
    round1 = dict(ann.expected)
    ui1 = _ui_exports(ls, pid, d, "ui-round1")
    for item in mine[bob][:3]:
        ann.post(bob, item)
    ui2 = _ui_exports(ls, pid, d, "ui-round2")
    return {"ls": ls, "study": study, "key": key, "pid": pid, "round1": round1, "expected": dict(ann.expected),
            "cross": cross_jid, "crossed_item": crossed, "ui1": ui1, "ui2": ui2, "d": d,
            "client": LabelStudioClient(ls.url, ls.users[ADMIN]["token"])}


def _copy_study(sp, name: str) -> Path:
    dst = sp["d"] / name
    shutil.copytree(sp["study"], dst)
    return dst


def _annotators(study) -> dict[str, tuple]:
    con = sqlite3.connect(str(Path(study) / DB_NAME))
    try:
        return {j: (a, s) for j, a, s in con.execute("SELECT id, annotator, source_annotator FROM judgments")}
    finally:
        con.close()


def test_ui_export_after_pull_is_the_same_judgments(shared_project):
    """``pull`` first (e-mails: alice, bob by name; bob's judgment on alice's item stays bob's); then the UI's
    JSON, JSON_MIN and CSV exports of the same project: every row already stored, nothing refused or moved."""
    from planner.workflows.push_pull import pull

    sp = shared_project
    study = _copy_study(sp, "after-pull")
    ls = sp["ls"]
    got = pull(study, client=sp["client"])
    assert (got.new, got.already) == (len(sp["expected"]), 0)
    stored = _annotators(study)
    assert stored[sp["cross"]] == ("bob", "bob@example.com"), "bob's judgment on alice's item is bob's"
    assert all(stored[j][0] == PLAN[e] for j, (_, _, e) in sp["expected"].items())
    before = dict(stored)
    for kind in EXPORTS:
        f = ingest(study, [sp["ui2"][kind]]).files[0]
        assert (f.rows, f.already, f.changed) == (0, len(sp["expected"]), 0), kind
    assert _annotators(study) == before
    assert _orientation_errors(_judgments(study), sp["key"], sp["expected"]) == []
    uid = {e: ls.users[e]["id"] for e in PLAN}   # the pull's export named each user's id beside the e-mail
    assert set(got.aliases) == {"alice@example.com -> alice", "bob@example.com -> bob",
                                f"ls-user:{uid['alice@example.com']} -> alice", f"ls-user:{uid['bob@example.com']} -> bob"}


def test_cross_annotation_in_ui_exports_never_merges_two_people(shared_project):
    """UI exports only (numeric ids). Round 1: both users' judgments fall on alice's items only, so neither id
    is mapped (both kept, a note names --annotator-map); bob's is never alice's. Round 2: alice's id is the only
    one on alice's items alone and is mapped; bob's spans both people's items and stays as it is. The pull then
    names both users (e-mail with id): bob's id maps to bob and his stored judgments follow; nothing is new."""
    from planner.workflows.push_pull import pull

    sp = shared_project
    ls = sp["ls"]
    a_id, b_id = (f"ls-user:{ls.users[e]['id']}" for e in ANNOTATORS)
    study = _copy_study(sp, "ui-only")
    f1 = ingest(study, [sp["ui1"]["JSON"]]).files[0]
    assert f1.rows == len(sp["round1"]) and f1.aliases == ()
    assert any(a_id in n and b_id in n and "--annotator-map" in n for n in f1.notes), f1.notes
    s1 = _annotators(study)
    assert s1[sp["cross"]] == (b_id, b_id) and "alice" not in {a for a, _ in s1.values()}
    f2 = ingest(study, [sp["ui2"]["CSV"]]).files[0]
    assert (f2.rows, f2.already) == (len(sp["expected"]) - len(sp["round1"]), len(sp["round1"]))
    assert f2.aliases == (f"{a_id} -> alice",)
    assert any(f"{b_id} judged items planned for alice, bob" in n for n in f2.notes), f2.notes
    s2 = _annotators(study)
    assert {j for j, (a, _) in s2.items() if a == "alice"} == {
        j for j, (_, _, e) in sp["expected"].items() if e == "alice@example.com"}
    got = pull(study, client=sp["client"])
    assert (got.new, got.already) == (0, len(sp["expected"]))
    assert f"{b_id} -> bob" in got.aliases
    s3 = _annotators(study)
    assert all(s3[j][0] == PLAN[e] for j, (_, _, e) in sp["expected"].items())
    assert s3[sp["cross"]] == ("bob", b_id)
    assert _orientation_errors(_judgments(study), sp["key"], sp["expected"]) == []
