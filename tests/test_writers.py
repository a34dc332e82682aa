"""Batch writers (planner/formats/writers.py): blinding, formats, CSV injection, atomic writes."""

from __future__ import annotations

import csv
import io
import itertools
import json
import re
import xml.etree.ElementTree as ET

import _batch_fixture as fx
import numpy as np
import pytest

from planner.batch.assemble import assemble_batch
from planner.csvcell import neutralize_cell
from planner.errors import UsageError
from planner.formats.templates import check_template
from planner.formats.writers import FORMATS, render_batch, staged_files, write_batch

REASONS = ("correctness", "helpfulness", "style", "safety", "other")
QC = dict(attention=0.1, repeat=0.05, overlap=0.15, acceptability=0.1, both_orders=True)


def batch_of(seed=0, annotators=("ann1", "ann2"), **kw):
    opts = {**QC, **kw}
    if annotators is None:
        opts["overlap"] = 0.0
    return assemble_batch(fx.planned(3), prompt_text=fx.prompts(), response_text=fx.responses(),
                          rng=np.random.default_rng(seed), annotators=list(annotators) if annotators else None,
                          **opts)


def name_regex(names):
    # whole-token match: "bard" must not hit "bombarded"; "gpt-4" must not hit "gpt-4o"
    return re.compile("|".join(r"(?<![\w-])" + re.escape(n) + r"(?![\w-])" for n in names), re.IGNORECASE)


def written(tmp_path, batch, fmt, name="batch", **kw):
    kw.setdefault("judge_model", "judge-model-x")
    return write_batch(batch, tmp_path / name, fmt, reasons=REASONS, **kw)


# ------------------------------------------------------------------- blinding
@pytest.mark.parametrize("fmt", FORMATS)
def test_no_system_name_in_any_file(tmp_path, fmt):
    batch = batch_of(annotators=("ann1", "ann2"))
    paths = written(tmp_path, batch, fmt)
    rx = name_regex(batch.systems())
    assert set(batch.systems()) == set(fx.SYSTEMS)
    for p in paths:
        text = p.read_text(encoding="utf-8")
        assert not rx.search(text), (p.name, rx.search(text))
        for leak in ("left_system", "right_system", '"kind"', "expected", "attention", "qc_source",
                     "swap", "overlap"):
            assert leak not in text, (p.name, leak)


def test_blinding_on_real_vicuna_data_every_format(tmp_path, vicuna_data):
    ptext, resp, strata, systems = fx.vicuna(vicuna_data)
    pids = sorted(ptext)
    planned = [(pids[(5 * n + r) % 80], a, b, strata[pids[(5 * n + r) % 80]])
               for n, (a, b) in enumerate(itertools.combinations(systems, 2)) for r in range(2)]
    rx = name_regex(systems)
    for style in ("none", "full"):
        batch = assemble_batch(planned, prompt_text=ptext, response_text=resp, rng=np.random.default_rng(1),
                               annotators=["a1", "a2", "a3"], normalize_style=style, max_words=400,
                               truncate=True, **QC)
        for fmt in FORMATS:
            out = tmp_path / style / fmt
            out.mkdir(parents=True)
            for p in write_batch(batch, out / "b", fmt, reasons=REASONS, judge_model="judge-model-x"):
                hit = rx.search(p.read_text(encoding="utf-8"))
                assert hit is None, (style, p.name, hit)
        # the stored responses are untouched by normalization / truncation
        assert resp == fx.vicuna(vicuna_data)[1]


# ----------------------------------------------------------------- layout
def test_per_annotator_files_and_shared_configs(tmp_path):
    batch = batch_of(annotators=("ann1", "ann2"))
    names = sorted(p.name for p in written(tmp_path, batch, "label-studio", name="round1.json"))
    assert names == ["round1.acceptability.label-config.xml", "round1.ann1.acceptability.json",
                     "round1.ann1.json", "round1.ann2.acceptability.json", "round1.ann2.json",
                     "round1.label-config.xml"]
    names = sorted(p.name for p in written(tmp_path, batch, "jsonl", name="round1"))
    assert names == ["round1.ann1.jsonl", "round1.ann2.jsonl"]
    single = batch_of(annotators=None)
    assert [p.name for p in written(tmp_path, single, "csv", name="one.csv")] == ["one.csv"]


def test_jsonl_records_and_acceptability(tmp_path):
    batch = batch_of(annotators=None)
    (path,) = written(tmp_path, batch, "jsonl")
    recs = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    assert [r["item"] for r in recs] == [it.item_id for it in batch.items]
    acc = [r for r in recs if "response" in r]
    assert acc and all(set(r) == {"item", "prompt", "response", "question"} for r in acc)
    assert all(set(r) == {"item", "prompt", "left", "right"} for r in recs if "response" not in r)


def test_same_seed_byte_identical_files(tmp_path):
    for fmt in FORMATS:
        outs = []
        for run in ("x", "y"):
            d = tmp_path / fmt / run
            d.mkdir(parents=True)
            paths = write_batch(batch_of(seed=4), d / "b", fmt, reasons=REASONS, judge_model="judge-model-x")
            outs.append({p.name: p.read_bytes() for p in paths})
        assert outs[0] == outs[1], fmt


# --------------------------------------------------------------------- CSV
def test_csv_injection_neutralized(tmp_path):
    for cell in ("=1+1", "+1", "-1", "@SUM(A1)", "\tx", "\rx"):
        assert neutralize_cell(cell) == "'" + cell
    assert neutralize_cell("plain - text") == "plain - text"
    planned = [("p07", "zeta", "alpha-7b", "writing")]  # zeta's p07 response starts with =HYPERLINK(
    batch = assemble_batch(planned, prompt_text=fx.prompts(), response_text=fx.responses(),
                           rng=np.random.default_rng(0))
    (path,) = written(tmp_path, batch, "csv")
    rows = list(csv.DictReader(io.StringIO(path.read_text(encoding="utf-8"), newline="")))
    (row,) = rows
    cells = [row["left"], row["right"]]
    assert any(c.startswith("'=HYPERLINK(") for c in cells)
    assert not any(c.startswith(("=", "+", "-", "@", "\t", "\r")) for r in rows for c in r.values())
    assert list(rows[0]) == ["item", "prompt", "left", "right", "response", "question", "verdict", "reason"]


def test_csv_acceptability_rows(tmp_path):
    (path,) = written(tmp_path, batch_of(annotators=None), "csv")
    rows = list(csv.DictReader(io.StringIO(path.read_text(encoding="utf-8"), newline="")))
    acc = [r for r in rows if r["response"]]
    assert acc and all(r["question"] and not r["left"] and not r["right"] for r in acc)


# ------------------------------------------------------------ Label Studio
def test_label_studio_tasks_and_config_parse(tmp_path):
    batch = batch_of(annotators=None)
    paths = {p.name: p for p in written(tmp_path, batch, "label-studio")}
    tasks = json.loads(paths["batch.json"].read_text(encoding="utf-8"))
    assert tasks and all(set(t["data"]) == {"item_id", "prompt", "left", "right"} for t in tasks)
    acc = json.loads(paths["batch.acceptability.json"].read_text(encoding="utf-8"))
    assert acc and all(set(t["data"]) == {"item_id", "prompt", "response"} for t in acc)
    assert len(tasks) + len(acc) == len(batch.items)

    root = ET.fromstring(paths["batch.label-config.xml"].read_text(encoding="utf-8"))
    choices = {c.get("name"): c for c in root.iter("Choices")}
    assert [c.get("value") for c in choices["verdict"]] == ["left", "right", "tie", "invalid"]
    assert [c.get("value") for c in choices["reason"]] == list(REASONS)
    r = choices["reason"]
    assert (r.get("required"), r.get("visibleWhen"), r.get("whenTagName"), r.get("whenChoiceValue")) == (
        "true", "choice-selected", "verdict", "left,right,invalid")
    # every $variable of the config exists in every task (Label Studio checks this on import)
    variables = {e.get("value")[1:] for e in root.iter() if (e.get("value") or "").startswith("$")}
    assert variables == {"prompt", "left", "right"}

    aroot = ET.fromstring(paths["batch.acceptability.label-config.xml"].read_text(encoding="utf-8"))
    averdict = next(c for c in aroot.iter("Choices") if c.get("name") == "verdict")
    assert [c.get("value") for c in averdict] == ["pass", "fail", "invalid"]
    avars = {e.get("value")[1:] for e in aroot.iter() if (e.get("value") or "").startswith("$")}
    assert avars == {"prompt", "response"}


# ------------------------------------------------------------------ Argilla
def test_argilla_records_and_settings(tmp_path):
    # flat records (records.log maps keys by name) and settings in the SDK's own serialized shape;
    # tests/test_writers_argilla.py loads both with the real argilla SDK
    batch = batch_of(annotators=None)
    paths = {p.name: p for p in written(tmp_path, batch, "argilla")}
    recs = json.loads(paths["batch.json"].read_text(encoding="utf-8"))
    assert all(set(r) == {"id", "prompt", "left", "right", "item_id"} and r["item_id"] == r["id"] for r in recs)
    acc = json.loads(paths["batch.acceptability.json"].read_text(encoding="utf-8"))
    assert acc and all(set(r) == {"id", "prompt", "response", "question", "item_id"} for r in acc)
    settings = json.loads(paths["batch.argilla-settings.json"].read_text(encoding="utf-8"))
    verdict = next(q for q in settings["questions"] if q["name"] == "verdict")
    assert verdict["type"] == "label_selection"
    assert [o["value"] for o in verdict["settings"]["options"]] == ["left", "right", "tie", "invalid"]
    asettings = json.loads(paths["batch.acceptability.argilla-settings.json"].read_text(encoding="utf-8"))
    averdict = next(q for q in asettings["questions"] if q["name"] == "verdict")
    assert [o["value"] for o in averdict["settings"]["options"]] == ["pass", "fail", "invalid"]


# -------------------------------------------------------------------- judge
def test_judge_requests_unique_ids_and_rendering(tmp_path):
    batch = batch_of(annotators=None)
    (path,) = written(tmp_path, batch, "judge", judge_model="judge-model-x")
    reqs = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    ids = [r["custom_id"] for r in reqs]
    assert len(set(ids)) == len(ids) == len(batch.items)
    assert ids == [it.item_id for it in batch.items]
    for r, it in zip(reqs, batch.items):
        assert r["method"] == "POST" and r["url"] == "/v1/chat/completions"
        assert r["body"]["model"] == "judge-model-x"
        user = r["body"]["messages"][-1]["content"]
        assert it.prompt in user and it.left_text in user
        if it.kind == "acceptability":
            assert "[[PASS]]" in user
        else:
            assert it.right_text in user and "[[A]]" in user and "correctness, helpfulness" in user
    # both orders: an item and its swap are separate requests
    swaps = [it for it in batch.items if it.kind == "swap"]
    assert swaps and all(s.link in ids for s in swaps)


def test_judge_template_validation_and_custom_template(tmp_path):
    with pytest.raises(UsageError, match=r"\{answer\}"):
        check_template("Q {prompt} A {left} B {right} {answer}")
    with pytest.raises(UsageError, match=r"lacks the placeholder \{right\}"):
        check_template("Q {prompt} A {left}")
    with pytest.raises(UsageError, match="`template`"):
        check_template("Q {prompt} {left} {right} {")
    with pytest.raises(UsageError):
        check_template("{prompt!r} {left} {right}")
    batch = batch_of(annotators=None, acceptability=0.0)
    tmpl = "Q: {prompt}\nA: {left}\nB: {right}\nCodes: {reasons}\nUse {{braces}}"
    (path,) = written(tmp_path, batch, "judge", template=tmpl)
    first = json.loads(path.read_text(encoding="utf-8").splitlines()[0])
    user = first["body"]["messages"][-1]["content"]
    assert user.startswith("Q: ") and user.endswith("Use {braces}")
    with pytest.raises(UsageError, match="`format`"):
        written(tmp_path, batch, "xlsx")
    with pytest.raises(UsageError, match="`judge_model` is required"):
        written(tmp_path, batch, "judge", judge_model=None)
    (o_path,) = written(tmp_path, batch, "judge", name="o.jsonl", judge_model="o4-mini")
    body = json.loads(o_path.read_text(encoding="utf-8").splitlines()[0])["body"]
    assert body["model"] == "o4-mini" and "temperature" not in body  # reasoning models take none


# ------------------------------------------------------------ atomic writes
def test_overwrite_refused_force_allowed_no_temp_files(tmp_path):
    batch = batch_of(annotators=("ann1", "ann2"))
    paths = written(tmp_path, batch, "label-studio")
    before = {p: p.read_bytes() for p in paths}
    (paths[0]).write_text("edited", encoding="utf-8")
    with pytest.raises(UsageError, match="already exists"):
        written(tmp_path, batch_of(seed=9, annotators=("ann1", "ann2")), "label-studio")
    assert paths[0].read_text(encoding="utf-8") == "edited"  # untouched
    assert all(p.read_bytes() == before[p] for p in paths[1:])
    written(tmp_path, batch, "label-studio", force=True)
    assert all(p.read_bytes() == before[p] for p in paths)
    assert sorted(tmp_path.iterdir()) == sorted(paths)  # no temporary file left


def test_staged_files_failure_leaves_nothing(tmp_path):
    files = render_batch(batch_of(), tmp_path / "b", "jsonl", reasons=REASONS)
    with pytest.raises(RuntimeError), staged_files(files) as targets:
        assert all(not t.exists() for t in targets)
        assert len(list(tmp_path.iterdir())) == len(files)  # temporaries are there
        raise RuntimeError("study write failed")
    assert list(tmp_path.iterdir()) == []


def test_missing_directory_is_a_usage_error(tmp_path):
    with pytest.raises(UsageError, match="does not exist"):
        write_batch(batch_of(), tmp_path / "no" / "b.jsonl", "jsonl", reasons=REASONS)
    with pytest.raises(UsageError, match="reason code"):
        write_batch(batch_of(), tmp_path / "b.jsonl", "jsonl", reasons=("bad code",))


def test_read_attention_pool(tmp_path):
    from planner.errors import DataError
    from planner.formats.writers import read_attention_pool

    p = tmp_path / "pool.jsonl"
    p.write_text('{"text": "one"}\n\n"two"\n', encoding="utf-8")
    assert read_attention_pool(p) == ("one", "two")
    p.write_text('{"text": "one"}\n{oops\n{"x": 1}\n', encoding="utf-8")
    with pytest.raises(DataError) as exc:
        read_attention_pool(p)
    assert [ln.split(": ")[0] for ln in exc.value.problems] == [f"{p}:2", f"{p}:3"]


def test_filled_csv_reads_back_as_position_verdicts(tmp_path):
    """The CSV sheet, once filled in, is a position-verdict file for ingest's reader."""
    readers = pytest.importorskip("planner.formats.readers")
    batch = batch_of(annotators=None)
    (path,) = written(tmp_path, batch, "csv")
    rows = list(csv.DictReader(io.StringIO(path.read_text(encoding="utf-8"), newline="")))
    for r in rows:
        r["verdict"], r["reason"] = ("pass", "") if r["response"] else ("left", "correctness")
    filled = tmp_path / "filled.csv"
    with open(filled, "w", encoding="utf-8", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    got = [rec for _, rec, problem in readers.read_positions(filled) if not problem]
    assert [g["item"] for g in got] == [it.item_id for it in batch.items]
    assert {g["verdict"] for g in got} == {"left", "pass"}


def test_label_studio_export_of_our_tasks_reads_back(tmp_path):
    """A Label Studio export of the written tasks (annotation results shaped as the config's
    Choices `verdict` and `reason`) is read by ingest's Label Studio reader, item ids intact."""
    readers = pytest.importorskip("planner.formats.readers")
    batch = batch_of(annotators=None)
    paths = {p.name: p for p in written(tmp_path, batch, "label-studio")}
    export = []
    for n, name in enumerate(("batch.json", "batch.acceptability.json")):
        for k, task in enumerate(json.loads(paths[name].read_text(encoding="utf-8"))):
            verdict = "fail" if n else "right"
            export.append({"id": 1000 * n + k, "data": task["data"], "annotations": [{
                "id": k, "was_cancelled": False, "completed_by": 7, "lead_time": 12.5,
                "result": [{"from_name": "verdict", "to_name": "prompt", "type": "choices",
                            "value": {"choices": [verdict]}},
                           {"from_name": "reason", "to_name": "prompt", "type": "choices",
                            "value": {"choices": ["style"]}}]}]})
    exp = tmp_path / "export.json"
    exp.write_text(json.dumps(export), encoding="utf-8")
    got = [rec for _, rec, problem in readers.read_label_studio(exp) if not problem]
    assert sorted(g["item"] for g in got) == sorted(it.item_id for it in batch.items)
    kinds = {it.item_id: it.kind for it in batch.items}
    assert all(g["verdict"] == ("fail" if kinds[g["item"]] == "acceptability" else "right") for g in got)
    assert all(g["reason"] == "style" for g in got)
