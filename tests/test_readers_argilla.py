"""Argilla v2 export readers, on files written by the real argilla SDK (offline: no server needed).

``dataset.records.to_json(path)`` and ``dataset.records.to_list(flatten=True)`` both go through
``argilla.records._io`` (``JsonIO.to_json`` / ``GenericIO.to_list``) on a list of ``rg.Record``; the tests
call those with records built locally, exactly as a dataset fetched from a server would hand them over.
"""

from __future__ import annotations

import json
import uuid

import pytest

from planner.formats.readers import READERS, detect_format

rg = pytest.importorskip("argilla")
from argilla.records._io import GenericIO, JsonIO

U1, U2, U3 = (uuid.UUID(int=k) for k in (1, 2, 3))


def _records():
    def resp(q, v, user, status="submitted"):
        return rg.Response(question_name=q, value=v, user_id=user, status=status)

    fields = {"prompt": "Say hi", "left": "hi", "right": "hello"}
    return [
        rg.Record(id="it-aaaa", fields=fields, metadata={"item_id": "it-aaaa"},
                  responses=[resp("verdict", "left", U1), resp("reason", "accuracy", U1),
                             resp("verdict", "tie", U2)]),
        rg.Record(id="it-bbbb", fields=fields, metadata={"item_id": "it-bbbb"},
                  responses=[resp("verdict", "right", U1), resp("reason", "style", U1),
                             resp("verdict", "left", U3, status="draft")]),
        rg.Record(id="it-cccc", fields=fields, metadata={"item_id": "it-cccc"}),
    ]


@pytest.fixture()
def exports(tmp_path):
    recs = _records()
    to_json = tmp_path / "records.json"
    JsonIO.to_json(recs, to_json)
    flat = tmp_path / "records_flat.json"
    flat.write_text(json.dumps(GenericIO.to_list(recs, flatten=True)), encoding="utf-8")
    return to_json, flat


def test_both_shapes_detected(exports):
    to_json, flat = exports
    assert detect_format(to_json).name == "argilla"
    assert detect_format(flat).name == "argilla-flat"


def test_flat_shape_reads_status(exports):
    _, flat = exports
    out = list(READERS["argilla-flat"].read(flat))
    assert [p for _, _, p in out if p] == []
    recs = [r for _, r, _ in out]
    uid = lambda u: f"argilla-user:{u}"
    assert recs == [
        {"item": "it-aaaa", "verdict": "left", "id": f"argilla:it-aaaa:{U1}", "annotator": uid(U1),
         "reason": "accuracy", "seconds": None, "confidence": None, "where": "records_flat.json:record it-aaaa"},
        {"item": "it-aaaa", "verdict": "tie", "id": f"argilla:it-aaaa:{U2}", "annotator": uid(U2),
         "reason": None, "seconds": None, "confidence": None, "where": "records_flat.json:record it-aaaa"},
        {"item": "it-bbbb", "verdict": "right", "id": f"argilla:it-bbbb:{U1}", "annotator": uid(U1),
         "reason": "style", "seconds": None, "confidence": None, "where": "records_flat.json:record it-bbbb"},
        {"skip": "draft response", "item": "it-bbbb", "where": "records_flat.json:record it-bbbb"},
        {"skip": "record without responses", "item": "it-cccc", "where": "records_flat.json:record it-cccc"}]


def test_to_json_shape_same_ids(exports):
    to_json, flat = exports
    a = [r for _, r, _ in READERS["argilla"].read(to_json)]
    b = [r for _, r, _ in READERS["argilla-flat"].read(flat)]
    key = lambda rs: {(r["id"], r["item"], r["verdict"], r["reason"]) for r in rs if "verdict" in r}
    # the to_json shape carries no response status (argilla writes value and user only): the draft of U3
    # counts there -- documented; export submitted responses only, or use the flattened shape
    assert key(a) - key(b) == {(f"argilla:it-bbbb:{U3}", "it-bbbb", "left", None)}
    assert key(b) <= key(a)
    assert [r for r in a if "skip" in r] == [
        {"skip": "record without responses", "item": "it-cccc", "where": "records.json:record it-cccc"}]


def test_records_round_trip_through_the_sdk(exports):
    """The file the reader reads is one the SDK itself loads back (Record.from_dict)."""
    to_json, _ = exports
    back = JsonIO._records_from_json(to_json)
    assert [r.id for r in back] == ["it-aaaa", "it-bbbb", "it-cccc"]


@pytest.mark.parametrize("mutate, expected", [
    (lambda d: d[0].update(responses=5), "records.json:record it-aaaa: responses 5; expected an object"),
    (lambda d: d[0]["responses"].update(verdict={"value": "left"}),
     "records.json:record it-aaaa: responses.verdict {'value': 'left'}; expected a list"),
    (lambda d: d[0]["responses"]["verdict"][0].update(value="maybe"),
     f"records.json:record it-aaaa: user '{U1}': verdict 'maybe'; expected one of left, right, tie"),
    (lambda d: d[0]["responses"]["verdict"][0].update(user_id=["x"]),
     "records.json:record it-aaaa: user ['x']: missing or blank user_id"),
    (lambda d: d[0]["metadata"].update(item_id=" "), "records.json:record it-aaaa: metadata.item_id ' '"),
    (lambda d: d[0].update(id=""), "records.json:element 1: record id ''; expected the Argilla record id"),
])
def test_wrong_shapes_are_problems(exports, mutate, expected):
    to_json, _ = exports
    data = json.loads(to_json.read_text(encoding="utf-8"))
    mutate(data)
    to_json.write_text(json.dumps(data), encoding="utf-8")
    problems = [p for _, _, p in READERS["argilla"].read(to_json) if p]
    assert len(problems) == 1 and problems[0].startswith(expected), problems


def test_flat_parallel_lists_checked(exports):
    _, flat = exports
    data = json.loads(flat.read_text(encoding="utf-8"))
    data[0]["verdict.responses.users"] = data[0]["verdict.responses.users"][:1]
    flat.write_text(json.dumps(data), encoding="utf-8")
    problems = [p for _, _, p in READERS["argilla-flat"].read(flat) if p]
    assert problems == [(f"records_flat.json:record it-aaaa: verdict.responses ['left', 'tie'] with users "
                        f"['{U1}']; expected parallel lists")]


# ------------------------------------------------------------------ JSON Lines
def _strip_where(rows):
    return [{k: v for k, v in r.items() if k != "where"} for _, r, _ in rows]


def _hf_jsonl(recs, path):
    """``dataset.records.to_datasets().to_json(path)``: the SDK's ``HFDatasetsIO.to_datasets`` body (flat
    ``GenericIO.to_dict`` into ``datasets.Dataset.from_dict``, then its attribute uncasting, a no-op without
    image fields; the method itself needs a server-bound ``rg.Dataset`` for the schema) and the Hugging Face
    dataset's own ``to_json``, which writes JSON Lines."""
    datasets = pytest.importorskip("datasets")
    from argilla.records._io._datasets import HFDatasetsIO

    hf = datasets.Dataset.from_dict(GenericIO.to_dict(recs, flatten=True))
    hf = HFDatasetsIO._uncast_argilla_attributes_to_datasets(hf, {})
    hf.to_json(str(path))
    return path


@pytest.mark.parametrize("how", ["hf-datasets", "json-lines", "pandas"])
def test_flat_records_as_json_lines(exports, tmp_path, how):
    _, flat = exports
    recs = _records()
    path = tmp_path / "records.jsonl"
    if how == "hf-datasets":
        _hf_jsonl(recs, path)
    elif how == "json-lines":
        path.write_text("".join(json.dumps(r) + "\n" for r in GenericIO.to_list(recs, flatten=True)))
    else:
        pd = pytest.importorskip("pandas")
        pd.DataFrame(GenericIO.to_list(recs, flatten=True)).to_json(path, orient="records", lines=True)
    assert detect_format(path).name == "argilla-flat"
    got = list(READERS["argilla-flat"].read(path))
    assert [p for _, _, p in got] == [None] * len(got)
    assert _strip_where(got) == _strip_where(READERS["argilla-flat"].read(flat))
    assert got[0][1]["where"] == "records.jsonl:record it-aaaa" and [ln for ln, _, _ in got] == [1, 1, 2, 2, 3]


def test_nested_records_as_json_lines(exports, tmp_path):
    to_json, _ = exports
    path = tmp_path / "nested.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in json.loads(to_json.read_text(encoding="utf-8"))))
    assert detect_format(path).name == "argilla"
    assert _strip_where(READERS["argilla"].read(path)) == _strip_where(READERS["argilla"].read(to_json))


def test_json_lines_problems_name_the_line(tmp_path):
    path = tmp_path / "records.jsonl"
    rows = GenericIO.to_list(_records(), flatten=True)
    rows[1]["verdict.responses"] = ["sideways", "left"]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows) + "{not json\n")
    problems = [p for _, _, p in READERS["argilla-flat"].read(path) if p]
    assert problems[0].startswith(f"records.jsonl:record it-bbbb: user '{U1}': verdict 'sideways'")
    assert problems[1].startswith("records.jsonl:4: ")


def test_flat_json_lines_ingest_then_the_array_is_already_stored(exports, tmp_path):
    from planner.store.study import BatchItem, Study, ingest, init_study

    _to_json, flat = exports
    prompts = tmp_path / "p.jsonl"
    prompts.write_text(json.dumps({"id": "p0", "text": "Say hi"}) + "\n")
    init_study(tmp_path / "s", systems=["s0", "s1"], prompts_file=prompts)
    with Study.open(tmp_path / "s") as s:
        s.record_batch({}, [BatchItem(i, "p0", "s0", "s1") for i in ("it-aaaa", "it-bbbb", "it-cccc")])
    first = ingest(tmp_path / "s", [_hf_jsonl(_records(), tmp_path / "records.jsonl")]).files[0]
    assert (first.format, first.rows, sum(first.skipped.values())) == ("argilla-flat", 3, 2)
    again = ingest(tmp_path / "s", [flat]).files[0]
    assert (again.rows, again.already) == (0, 3)
