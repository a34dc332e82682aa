"""Label Studio readers: full JSON, JSON_MIN and CSV exports give the same judgments with the same ids."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from planner.formats.label_studio import ls_annotator
from planner.formats.readers import READERS, detect_format

CONV = Path(__file__).parent / "data" / "label_studio" / "readers" / "converter"
REAL = Path(__file__).parent / "data" / "label_studio" / "readers" / "real"


def read(path, fmt=None):
    fmt = fmt or detect_format(path).name
    return fmt, list(READERS[fmt].read(Path(path)))


def judgments(out):
    return [r for _, r, p in out if r is not None and "verdict" in r]


def test_three_export_types_detected_and_agree():
    formats = {}
    got = {}
    for name in ("export.json", "export_min.json", "export.csv"):
        fmt, out = read(CONV / name)
        formats[name] = fmt
        assert [p for _, _, p in out if p] == []
        got[name] = out
    assert formats == {"export.json": "label-studio", "export_min.json": "label-studio-min",
                       "export.csv": "label-studio-csv"}
    keyed = {name: {(r["id"], r["item"], r["verdict"], r["annotator"], r["reason"], r["seconds"])
                    for r in judgments(out)} for name, out in got.items()}
    assert keyed["export.json"] == {("ls:17:5", "it-aaaa", "left", "ls-user:1", "accuracy", 12.5),
                                    ("ls:18:7", "it-bbbb", "tie", "ls-user:1", None, 4.0)}
    assert keyed["export_min.json"] == keyed["export.json"] == keyed["export.csv"]


def test_skip_records_and_labels():
    _, out = read(CONV / "export.json")
    skips = [r for _, r, _ in out if "skip" in r]
    assert skips == [{"skip": "cancelled annotation", "item": "it-aaaa", "where": "export.json:task 17"},
                     {"skip": "task without annotations", "item": "it-cccc", "where": "export.json:task 19"}]
    _, out = read(CONV / "export_min.json")
    assert [r for _, r, _ in out if "skip" in r] == [
        {"skip": "task without annotations", "item": "it-cccc", "where": "export_min.json:task 19"}]
    _, out = read(CONV / "export.csv")
    # the third data row (its prompt cell spans two lines) is row 3, not line 4
    assert [r for _, r, _ in out if "skip" in r] == [
        {"skip": "task without annotations", "item": "it-cccc", "where": "export.csv:row 3"}]
    assert [r["where"] for r in judgments(out)] == ["export.csv:row 1", "export.csv:row 2"]


def test_annotator_identity():
    assert ls_annotator(3) == "ls-user:3"
    assert ls_annotator("3") == "ls-user:3"
    assert ls_annotator(3.0) == "ls-user:3"
    assert ls_annotator({"id": 3, "email": "ann@lab.org", "first_name": "", "last_name": ""}) == "ann@lab.org"
    assert ls_annotator({"id": 3, "email": "", "username": "ann"}) == "ann"
    assert ls_annotator({"id": 3}) == "ls-user:3"
    assert ls_annotator("ann@lab.org") == "ann@lab.org"
    assert ls_annotator(None) is None and ls_annotator(True) is None and ls_annotator([1]) is None


def _one_line_export(tmp_path, tasks, name="export.json"):
    f = tmp_path / name
    f.write_text(json.dumps(tasks), encoding="utf-8")  # LS writes its export on one line
    return f


def _task(tid=17, aid=5, verdict="left", **ann):
    a = {"id": aid, "completed_by": 1, "lead_time": 2.0,
         "result": [{"from_name": "verdict", "to_name": "prompt", "type": "choices",
                     "value": {"choices": [verdict]}}]}
    a.update(ann)
    return {"id": tid, "data": {"item_id": "it-a"}, "annotations": [a]}


def test_one_line_export_problems_cite_task_ids(tmp_path):
    f = _one_line_export(tmp_path, [_task(), _task(18, 6, verdict="maybe")])
    _, out = read(f)
    assert [p for _, _, p in out if p] == [
        "export.json:task 18: annotation 6: verdict 'maybe'; expected one of left, right, tie, invalid, pass, fail"]


@pytest.mark.parametrize("change, expected", [
    ({"result": 5}, "export.json:task 17: annotation 5: result 5; expected a list of results"),
    ({"result": [{"from_name": "verdict", "value": {"choices": "left"}}]},
     "export.json:task 17: annotation 5: verdict value {'choices': 'left'}; expected {\"choices\": [...]}"),
    ({"completed_by": [1]}, "export.json:task 17: annotation 5: completed_by [1]; expected a user id or user object"),
    ({"lead_time": 10 ** 300}, "export.json:element 1: an integer of 301 digits; expected at most 40"),
    ({"lead_time": 1e309}, "export.json:task 17: annotation 5: lead_time inf; expected a finite number >= 0"),
    ({"lead_time": -1}, "export.json:task 17: annotation 5: lead_time -1; expected a finite number >= 0"),
    ({"was_cancelled": "yes"}, "export.json:task 17: annotation 5: was_cancelled 'yes'; expected true or false"),
    ({"id": " "}, "export.json:task 17: annotation ' ': missing or blank id; expected the annotation id"),
])
def test_wrong_types_in_annotations(tmp_path, change, expected):
    _, out = read(_one_line_export(tmp_path, [_task(**change)]))
    assert [p for _, _, p in out if p] == [expected]


def test_task_level_problems(tmp_path):
    tasks = [{"id": 1, "data": {"item_id": "  "}, "annotations": []},
             {"id": 2, "data": {"item_id": "it-b"}, "annotations": {"x": 1}},
             {"data": {"item_id": "it-c"}, "annotations": []}]
    _, out = read(_one_line_export(tmp_path, tasks), "label-studio")
    assert [p for _, _, p in out if p] == [
        "export.json:task 1: data.item_id '  '; expected tasks written by planner (data.item_id)",
        "export.json:task 2: annotations {'x': 1}; expected a list",
        "export.json:element 3: task id missing; expected a Label Studio task id"]


def test_min_and_csv_problems(tmp_path):
    f = tmp_path / "m.json"
    f.write_text(json.dumps([{"id": 4, "item_id": "it-a", "annotation_id": 9, "annotator": 1,
                              "verdict": {"choices": ["left", "right"]}, "lead_time": 1}]), encoding="utf-8")
    _, out = read(f)
    assert out[0][2] == "m.json:task 4: annotation 9: verdict ['left', 'right']; expected one choice"
    c = tmp_path / "e.csv"
    c.write_text('"annotation_id","annotator","id","item_id","lead_time","verdict"\n'
                 '3,"1",7,"it-a",1.5,"left"\n'
                 '4,"1",8,"it-b","soon","left"\n'
                 '5,"1",9,"it-c",2,""\n', encoding="utf-8")
    _, out = read(c)
    assert out[0][1]["id"] == "ls:7:3"
    assert out[1][2] == "e.csv:row 2: annotation 4: lead_time 'soon' is not a number; expected a finite number >= 0"
    assert out[2][1] == {"skip": "annotation without a verdict", "item": "it-c", "where": "e.csv:row 3"}


def test_truncated_export_is_refused(tmp_path):
    text = json.dumps([_task(), _task(18, 6), _task(19, 7)])
    for cut in (len(text) - 1, text.index("}, {") + 3, text.index("}, {") + 1, len(text) // 2):
        f = tmp_path / "export.json"
        f.write_text(text[:cut], encoding="utf-8")
        _, out = read(f, "label-studio")
        problems = [p for _, _, p in out if p]
        assert len(problems) == 1, (cut, problems)
        assert "truncated" in problems[0] or "expected ']'" in problems[0]


REAL_FILES = {"round1.json": ("round1", "label-studio"), "round1.min.json": ("round1", "label-studio-min"),
              "round1.csv": ("round1", "label-studio-csv"), "round2.json": ("round2", "label-studio"),
              "round2.snapshot.json": ("round2", "label-studio"),
              "round2.snapshot.min.json": ("round2", "label-studio-min"),
              "round2.snapshot.csv": ("round2", "label-studio-csv")}
LS_USERS = {"ls-user:2": "alice@example.com", "ls-user:3": "bob@example.com"}


@pytest.mark.parametrize("name", list(REAL_FILES))
def test_real_server_exports(name):
    """Exports of one project from a real Label Studio 1.23.2 server (data/label_studio/readers/real/README.md):
    every annotation is read with its id, item, position verdict and user, in every export type."""
    expected = json.loads((REAL / "expected.json").read_text(encoding="utf-8"))
    key = json.loads((REAL / "key.json").read_text(encoding="utf-8"))
    rnd, fmt = REAL_FILES[name]
    got_fmt, out = read(REAL / name)
    assert got_fmt == fmt
    assert [p for _, _, p in out if p] == []
    recs = judgments(out)
    assert {r["id"]: [r["item"], r["verdict"]] for r in recs} == {k: v[:2] for k, v in expected[rnd].items()}
    for r in recs:
        assert r["item"] in key
        # default exports give the numeric user id, snapshot exports with only_id=false the e-mail
        assert LS_USERS.get(r["annotator"], r["annotator"]) == expected[rnd][r["id"]][2]
        assert r["where"].startswith(f"{name}:")
    skips = [r for _, r, _ in out if "skip" in r]
    if fmt == "label-studio":  # the cancelled annotation is in the full JSON only (the converter drops it)
        assert [(s["skip"], s["where"]) for s in skips if s["skip"] == "cancelled annotation"] == [
            ("cancelled annotation", f"{name}:task 22")]
        assert expected["cancelled"] == "ls:22:19" and expected["cancelled"] not in {r["id"] for r in recs}
    if "snapshot" in name:  # all tasks: the never-annotated item is a skip
        assert {s["item"] for s in skips if s["skip"] == "task without annotations"} == {
            expected["never_annotated_item"]}
    if rnd == "round2":
        assert {r["id"]: r["verdict"] for r in recs}[expected["edited"]] == "right"  # the edit, same id


def test_detection_when_the_first_task_is_longer_than_the_head(tmp_path):
    """JSON_MIN puts the task texts before annotation_id: a 200 kB response must not hide the format."""
    rows = json.loads((CONV / "export_min.json").read_text(encoding="utf-8"))
    rows[0]["left"] = "x" * 200_000
    f = tmp_path / "big.json"
    f.write_text(json.dumps(rows), encoding="utf-8")
    assert detect_format(f).name == "label-studio-min"


def test_real_exports_round_trip_through_the_store(tmp_path):
    """Real LS exports through ``ingest``: round 1 in all three types (the later two all already stored), then
    the cumulative round-2 export (5 new, the edit refused, then applied), every judgment's orientation
    checked against the batch key. Needs a store that counts already stored, changed and skipped rows."""
    from planner.store.study import BatchItem, Study, init_study

    if not hasattr(Study, "unanswered_items"):
        pytest.skip("needs a store that counts already stored / changed / skipped rows")
    from planner.errors import DataError
    from planner.store.study import ingest

    key = json.loads((REAL / "key.json").read_text(encoding="utf-8"))
    expected = json.loads((REAL / "expected.json").read_text(encoding="utf-8"))
    systems = sorted({k[s] for k in key.values() for s in ("left", "right")})
    prompts = tmp_path / "prompts.jsonl"
    ids = sorted({k["prompt"] for k in key.values()})
    prompts.write_text("".join(json.dumps({"id": p, "text": p}) + "\n" for p in ids), encoding="utf-8")
    init_study(tmp_path / "s", systems=systems, prompts_file=prompts)
    with Study.open(tmp_path / "s") as s:
        s.record_batch({}, [BatchItem(i, k["prompt"], k["left"], k["right"], annotator=k["annotator"])
                            for i, k in sorted(key.items())])
    first = ingest(tmp_path / "s", [REAL / "round1.json"]).files[0]
    assert (first.rows, first.skipped) == (6, {"cancelled annotation": 1})
    for name in ("round1.min.json", "round1.csv"):
        again = ingest(tmp_path / "s", [REAL / name]).files[0]
        assert (again.rows, again.already) == (0, 6), name
    with pytest.raises(DataError):  # ls:13:13 was edited in LS after round 1: refused by default
        ingest(tmp_path / "s", [REAL / "round2.json"])
    second = ingest(tmp_path / "s", [REAL / "round2.json"], accept_changes=True).files[0]
    assert (second.rows, second.already, second.replaced) == (5, 5, 1)
    side = {"left": "left", "right": "right"}
    with Study.open(tmp_path / "s") as s:
        got = {j.id: j for j in s.judgments()}
    assert set(got) == set(expected["round2"])
    errors = 0
    for jid, (item, verdict, _email) in expected["round2"].items():
        j, k = got[jid], key[item]
        winner = k[side[verdict]] if verdict in side else None
        stored_winner = {"A": j.a, "B": j.b}.get(j.verdict)
        errors += winner != stored_winner
    assert errors == 0
