"""Annotator identity at ingest: who is credited with a judgment (planner.store.identity).

In community Label Studio and shared Argilla datasets everyone sees every
task, so "an identity judged only alice's items" is evidence, not proof. An
alias is learned only when it is unambiguous and no other identity already
holds the name; otherwise the raw identity is kept, with a note naming
``--annotator-map``. A Label Studio UI export (numeric user ids) ingested after
``pull`` (e-mails, with the ids beside them) is the same judgments.

The study: alice and bob each have three regular items and one attention item
(the expected verdict recorded in the batch manifest, as next-batch does), plus
two items planned for both of them in overlap (same comparison, one item each).
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from planner.diagnostics import annotator_qc
from planner.errors import DataError
from planner.store.study import DB_NAME, BatchItem, Study, ingest, init_study, status

SYSTEMS = ["s0", "s1", "s2"]
ALICE = ["a1", "a2", "a3", "a4"]          # a4 is alice's attention item
BOB = ["b1", "b2", "b3", "b4"]            # b4 is bob's attention item


def jl(path: Path, rows) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


@pytest.fixture
def st(tmp_path):
    prompts = jl(tmp_path / "p.jsonl", [{"id": f"p{k}", "text": f"t{k}"} for k in range(8)])
    init_study(tmp_path / "st", systems=SYSTEMS, prompts_file=prompts)
    study = tmp_path / "st"
    items = []
    for who, ids in (("alice", ALICE), ("bob", BOB)):
        for k, i in enumerate(ids):
            items.append(BatchItem(i, f"p{k + (4 if who == 'bob' else 0)}", SYSTEMS[k % 3], SYSTEMS[(k + 1) % 3],
                                   kind="attention" if k == 3 else "regular", annotator=who))
    items += [BatchItem("oa", "p7", "s0", "s2", kind="overlap", annotator="alice"),
              BatchItem("ob", "p7", "s2", "s0", kind="overlap", annotator="bob")]
    with Study.open(study) as s:
        s.record_batch({"seed": 0, "attention_expected": {"a4": "left", "b4": "left"}}, items)
    return study


def ls_row(task: int, item: str, who: str, verdict: str = "left") -> dict:
    return {"id": f"ls:{task}:{task}", "item": item, "verdict": verdict, "annotator": who}


def stored(study) -> dict[str, tuple[str, str]]:
    con = sqlite3.connect(str(Path(study) / DB_NAME))
    try:
        return {j: (a, s) for j, a, s in con.execute("SELECT id, annotator, source_annotator FROM judgments")}
    finally:
        con.close()


def aliases(study) -> dict[str, str]:
    return status(study).aliases


# ----------------------------------------------------------- item 10: two people, one name
def test_bob_only_on_alices_items_is_not_alice(st, tmp_path):
    """bob's only judgment in the file falls on alice's item: neither ls-user is mapped (both claim alice)."""
    rows = [ls_row(1, "a1", "ls-user:2"), ls_row(2, "a2", "ls-user:2"), ls_row(3, "a3", "ls-user:3")]
    f = ingest(st, [jl(tmp_path / "r1.jsonl", rows)]).files[0]
    assert f.aliases == ()
    assert any("ls-user:2, ls-user:3" in n and "--annotator-map" in n for n in f.notes), f.notes
    assert stored(st) == {"ls:1:1": ("ls-user:2", "ls-user:2"), "ls:2:2": ("ls-user:2", "ls-user:2"),
                          "ls:3:3": ("ls-user:3", "ls-user:3")}
    assert aliases(st) == {}
    # bob then judges his own items (a cumulative export): 9 of his later judgments are never alice's
    later = rows + [ls_row(10 + k, i, "ls-user:3") for k, i in enumerate(BOB[:3])] + [ls_row(20, "a3", "ls-user:2")]
    f2 = ingest(st, [jl(tmp_path / "r2.jsonl", later)]).files[0]
    assert f2.aliases == ("ls-user:2 -> alice",)       # now only ls-user:2 judged only alice's items
    assert any("ls-user:3 judged items planned for alice, bob" in n for n in f2.notes)
    got = stored(st)
    assert {j for j, (a, _) in got.items() if a == "alice"} == {"ls:1:1", "ls:2:2", "ls:20:20"}
    assert {j for j, (a, _) in got.items() if a == "ls-user:3"} == {"ls:3:3", "ls:10:10", "ls:11:11", "ls:12:12"}
    assert aliases(st) == {"ls-user:2": "alice"}


def test_a_name_already_held_is_not_given_to_another_identity(st, tmp_path):
    """ls-user:2 -> alice was learned; ls-user:3 whose only judgment is on alice's item stays ls-user:3,
    and every later judgment of ls-user:3 too (the alias is not remembered)."""
    f = ingest(st, [jl(tmp_path / "r1.jsonl", [ls_row(1, "a1", "ls-user:2"), ls_row(2, "a2", "ls-user:2")])])
    assert f.files[0].aliases == ("ls-user:2 -> alice",)
    f = ingest(st, [jl(tmp_path / "r2.jsonl", [ls_row(3, "a3", "ls-user:3")])]).files[0]
    assert f.aliases == () and any("ls-user:2 already holds that name" in n and "--annotator-map" in n
                                   for n in f.notes), f.notes
    later = [ls_row(10 + k, i, "ls-user:3") for k, i in enumerate(BOB[:3])]
    f = ingest(st, [jl(tmp_path / "r3.jsonl", later)]).files[0]
    assert f.aliases == ("ls-user:3 -> bob",)          # bob's own items: bob is held by nobody
    got = stored(st)
    assert got["ls:3:3"] == ("bob", "ls-user:3"), "the alias applies to what ls-user:3 judged before"
    assert [j for j, (a, _) in got.items() if a == "alice"] == ["ls:1:1", "ls:2:2"]


def test_unplanned_user_annotating_everything_is_nobody_planned(st, tmp_path):
    """mallory annotates every task of a shared project after alice and bob were mapped by name: never bob."""
    mine = [ls_row(1, "a1", "alice@lab.org"), ls_row(2, "b1", "bob@lab.org")]
    ingest(st, [jl(tmp_path / "r1.jsonl", mine)])
    everything = mine + [ls_row(100 + k, i, "mallory@lab.org", "right") for k, i in enumerate(ALICE + BOB)]
    f = ingest(st, [jl(tmp_path / "r2.jsonl", everything)]).files[0]
    assert f.aliases == ()
    assert any("mallory@lab.org judged items planned for alice, bob" in n for n in f.notes)
    assert {a for j, (a, _) in stored(st).items() if j.startswith("ls:1") and len(j) > 6} == {"mallory@lab.org"}


def test_unplanned_user_in_one_annotators_project_loses_to_the_name(st, tmp_path):
    """Per-annotator projects: bob's project holds only bob's items; bob and mallory both annotate it.
    bob's e-mail carries his name; mallory keeps her own identity."""
    rows = [ls_row(1, "b1", "bob@lab.org"), ls_row(2, "b2", "mallory@lab.org"), ls_row(3, "b3", "mallory@lab.org")]
    f = ingest(st, [jl(tmp_path / "bob-project.jsonl", rows)]).files[0]
    assert f.aliases == ("bob@lab.org -> bob",)
    assert any("mallory@lab.org judged only items planned for bob, but bob@lab.org carries that name" in n
               for n in f.notes), f.notes
    assert stored(st)["ls:2:2"] == ("mallory@lab.org", "mallory@lab.org")


def test_per_annotator_qc_and_attention_never_merge_two_people(st, tmp_path):
    """The cross-annotation case through annotator QC (the report's ``annotator_qc`` on the store's records):
    bob (ls-user:3) judges only alice's items, among them her attention item, on the wrong side; alice
    (ls-user:2) judges the rest. Merged into "alice", alice would fail attention and carry bob's judgments."""
    rows = [ls_row(1, "a1", "ls-user:2"), ls_row(2, "a2", "ls-user:2"), ls_row(5, "oa", "ls-user:2"),
            ls_row(3, "a3", "ls-user:3"), ls_row(6, "a4", "ls-user:3", "right")]
    ingest(st, [jl(tmp_path / "r.jsonl", rows)])
    with Study.open(st) as s:
        annotated, _ = s.annotated_judgments(1000)
    rep = annotator_qc(annotated, attention_expected={"a4": "left", "b4": "left"})
    by = {r.annotator: r for r in rep.annotators}
    assert set(by) == {"ls-user:2", "ls-user:3"}       # two people, two rows: nobody is "alice" by guess
    assert (by["ls-user:2"].n_judgments, by["ls-user:2"].attention_n) == (3, 0)
    assert (by["ls-user:3"].attention_passed, by["ls-user:3"].attention_n) == (0, 1)
    assert {a.annotator: a.judgments for a in status(st).annotators} == {"ls-user:2": 3, "ls-user:3": 2}


def test_explicit_map_relabels_what_is_stored_and_refuses_a_clash(st, tmp_path):
    """The note's advice works: --annotator-map on the already-ingested file maps the stored judgments."""
    rows = [ls_row(1, "a1", "ls-user:2"), ls_row(3, "a1", "ls-user:3")]   # both judged a1: two claim alice
    p = jl(tmp_path / "r.jsonl", rows)
    ingest(st, [p])
    f = ingest(st, [p], annotator_map={"ls-user:2": "alice"}).files[0]
    assert (f.rows, f.already) == (0, 2)
    assert stored(st) == {"ls:1:1": ("alice", "ls-user:2"), "ls:3:3": ("ls-user:3", "ls-user:3")}
    before = stored(st)
    with pytest.raises(DataError, match="already judged some of the items"):
        ingest(st, [p], annotator_map={"ls-user:3": "alice"})   # alice would hold two judgments of a1
    assert stored(st) == before and aliases(st) == {"ls-user:2": "alice"}


# ------------------------------------------------------ item 11: the UI export after a pull
LS_DATA = Path(__file__).resolve().parent / "data" / "label_studio"   # real Label Studio 1.23.2 exports


def _ls_study(tmp_path: Path) -> Path:
    """The study the committed exports were made for (key.json: item -> prompt, sides, planned annotator)."""
    key = json.loads((LS_DATA / "key.json").read_text(encoding="utf-8"))
    systems = sorted({k[s] for k in key.values() for s in ("left", "right")})
    ids = sorted({k["prompt"] for k in key.values()})
    prompts = jl(tmp_path / "prompts.jsonl", [{"id": p, "text": p} for p in ids])
    init_study(tmp_path / "ls", systems=systems, prompts_file=prompts)
    with Study.open(tmp_path / "ls") as s:
        s.record_batch({}, [BatchItem(i, k["prompt"], k["left"], k["right"], annotator=k["annotator"])
                            for i, k in sorted(key.items())])
    return tmp_path / "ls"


@pytest.mark.parametrize("ui", ["round2.json", "round2.min.json", "round2.csv"])
def test_ui_export_after_pull_is_the_same_judgments(tmp_path, ui):
    """``pull`` keeps the snapshot export (completed_by expanded: e-mail and id); the UI's export of the same
    project names users by id only. Ingested after the pull, every row is already stored, under the same
    annotator, whichever of the three export types."""
    study = _ls_study(tmp_path)
    pulled = ingest(study, [LS_DATA / "round2.snapshot.json"]).files[0]
    assert pulled.rows == 11
    assert set(pulled.aliases) == {"alice@example.com -> alice", "bob@example.com -> bob",
                                   "ls-user:2 -> alice", "ls-user:3 -> bob"}
    before = stored(study)
    again = ingest(study, [LS_DATA / ui]).files[0]
    assert (again.rows, again.already, again.changed) == (0, 11, 0)
    assert stored(study) == before
    assert {a for a, _ in before.values()} == {"alice", "bob"}


def test_ui_export_before_pull_then_pull(tmp_path):
    """The other order: the UI export first (ids, learned from the plan), then the pull (e-mails): one set."""
    study = _ls_study(tmp_path)
    first = ingest(study, [LS_DATA / "round2.json"]).files[0]
    assert set(first.aliases) == {"ls-user:2 -> alice", "ls-user:3 -> bob"} and first.rows == 11
    pulled = ingest(study, [LS_DATA / "round2.snapshot.json"]).files[0]
    assert (pulled.rows, pulled.already) == (0, 11)
    assert {a for a, _ in stored(study).values()} == {"alice", "bob"}


# ------------------------------------------------ one user, several identities, then an explicit map
def _ls_export(path: Path, annotations) -> Path:
    """A Label Studio full JSON export: ``annotations`` = [(task id, item, completed_by, verdict)]."""
    tasks = {}
    for tid, item, who, verdict in annotations:
        t = tasks.setdefault(tid, {"id": tid, "data": {"item_id": item}, "annotations": []})
        t["annotations"].append({"id": 1000 + tid, "completed_by": who, "was_cancelled": False, "lead_time": 2.0,
                                 "result": [{"from_name": "verdict", "to_name": "prompt", "type": "choices",
                                             "value": {"choices": [verdict]}}]})
    path.write_text(json.dumps(list(tasks.values())), encoding="utf-8")
    return path


def test_an_unplanned_users_identities_stay_together_and_map_together(st, tmp_path):
    """mallory (pull: e-mail and id) is nobody planned: kept as her e-mail, her id linked to it, so the UI's
    id-only export is already stored under the same name; --annotator-map on the e-mail then moves every
    judgment of hers, through either identity, to the name given."""
    mallory = {"id": 5, "email": "mallory@lab.org", "first_name": "", "last_name": ""}
    pulled = ingest(st, [_ls_export(tmp_path / "pull.json", [(1, "a1", mallory, "left"),
                                                             (2, "b1", mallory, "right")])]).files[0]
    assert pulled.aliases == () and any("mallory@lab.org judged items planned for alice, bob" in n
                                        for n in pulled.notes)
    ui = ingest(st, [_ls_export(tmp_path / "ui.json", [(1, "a1", 5, "left"), (2, "b1", 5, "right"),
                                                       (3, "a2", 5, "tie")])]).files[0]
    assert (ui.rows, ui.already) == (1, 2)
    got = stored(st)
    assert {a for a, _ in got.values()} == {"mallory@lab.org"} and got["ls:3:1003"] == ("mallory@lab.org", "ls-user:5")
    ingest(st, [tmp_path / "ui.json"], annotator_map={"mallory@lab.org": "carol"})
    assert {a for a, _ in stored(st).values()} == {"carol"}
    assert aliases(st) == {"mallory@lab.org": "carol", "ls-user:5": "carol"}


def test_shared_argilla_dataset_cross_annotation(st, tmp_path):
    """A shared Argilla dataset (every user sees every record), written with the real SDK's ``to_json``:
    user 2's only response is on one of alice's records, so neither user id becomes alice."""
    import uuid

    rg = pytest.importorskip("argilla")
    from argilla.records._io import JsonIO

    u1, u2 = (uuid.UUID(int=k) for k in (1, 2))
    fields = {"prompt": "p", "left": "l", "right": "r"}
    recs = [rg.Record(id=item, fields=fields, metadata={"item_id": item},
                      responses=[rg.Response(question_name="verdict", value="left", user_id=who, status="submitted")])
            for item, who in (("a1", u1), ("a2", u1), ("a3", u2))]
    f = ingest(st, [JsonIO.to_json(recs, tmp_path / "records.json")]).files[0]
    assert (f.format, f.rows, f.aliases) == ("argilla", 3, ())
    assert any(f"argilla-user:{u1}, argilla-user:{u2}" in n and "--annotator-map" in n for n in f.notes), f.notes
    assert {a for a, _ in stored(st).values()} == {f"argilla-user:{u1}", f"argilla-user:{u2}"}
