"""planner.formats.readers: each adapter on a small real-shaped fixture, detection, spreadsheet CSV."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from planner.errors import DataError, UsageError
from planner.formats.readers import READERS, Reader, detect_format, register
from planner.formats.reading import iter_csv
from planner.store.study import BatchItem, Study, ingest, init_study


def rows(reader_name, path, **kw):
    return list(READERS[reader_name].read(Path(path), **kw))


def jl(path, objs):
    Path(path).write_text("".join(json.dumps(o) + "\n" for o in objs), encoding="utf-8")
    return Path(path)


# Shapes follow the tools' own writers: FastChat llm_judge/common.py play_a_match_pair (g1/g2 winners
# already mapped to model_1/model_2), arena-hard-auto gen_judgment.py (games[0] baseline first),
# alpaca_eval annotations.json, Label Studio "JSON" full export.
MT_BENCH = [{"question_id": 81, "model_1": "alpha", "model_2": "beta", "g1_winner": "model_1",
             "g2_winner": "model_2", "judge": ["gpt-4", "pair-v2"], "g1_user_prompt": "...",
             "g1_judgment": "[[A]]", "g2_user_prompt": "...", "g2_judgment": "[[A]]", "turn": 1, "tstamp": 1.7e9},
            {"question_id": 81, "model_1": "alpha", "model_2": "beta", "g1_winner": "tie", "g2_winner": "error",
             "judge": ["gpt-4", "pair-v2-multi-turn"], "turn": 2}]
ARENA = [{"question_id": "q1", "model": "beta", "judge": "gpt-4-1106-preview",
          "games": [{"user_prompt": "...", "judgment": "... [[B>A]]", "score": "B>A"},
                    {"user_prompt": "...", "judgment": "... [[A>>B]]", "score": "A>>B"}]},
         {"question_id": "q2", "model": "beta", "judge": "gpt-4-1106-preview",
          "games": [{"score": "A=B"}, {"score": None}]}]
ALPACA = [{"instruction": "Say hi", "output_1": "hi", "output_2": "hello", "generator_1": "alpha",
           "generator_2": "beta", "annotator": "weighted_alpaca_eval_gpt4_turbo", "preference": 2.0},
          {"instruction": "Count", "output_1": "1", "output_2": "1 2", "generator_1": "alpha",
           "generator_2": "beta", "annotator": "g4", "preference": 1.5},
          {"instruction": "Old", "generator_1": "alpha", "generator_2": "beta", "annotator": "g4", "preference": 0},
          {"instruction": "Bad", "generator_1": "alpha", "generator_2": "beta", "annotator": "g4",
           "preference": float("nan")},
          {"instruction": "Won", "generator_1": "alpha", "generator_2": "beta", "annotator": "g4", "preference": 1}]
LABEL_STUDIO = [
    {"id": 11, "data": {"item_id": "it1", "prompt": "p", "left": "x", "right": "y"},
     "annotations": [{"id": 101, "completed_by": 3, "lead_time": 12.5, "was_cancelled": False,
                      "result": [{"from_name": "verdict", "to_name": "prompt", "type": "choices",
                                  "value": {"choices": ["left"]}},
                                 {"from_name": "reason", "to_name": "prompt", "type": "choices",
                                  "value": {"choices": ["accuracy"]}}]},
                     {"id": 102, "completed_by": {"id": 4, "email": "b@x.org"}, "was_cancelled": True,
                      "result": []}]},
    {"id": 12, "data": {"item_id": "it2"},
     "annotations": [{"id": 103, "completed_by": 3, "lead_time": 3,
                      "result": [{"from_name": "verdict", "value": {"choices": ["tie"]}}]}]},
]


def test_mt_bench_keeps_both_orders(tmp_path):
    got = [r for _, r, p in rows("mt-bench", jl(tmp_path / "m.jsonl", MT_BENCH))]
    assert [(r["prompt"], r["a"], r["b"], r["verdict"], r["a_position"]) for r in got] == [
        ("81", "alpha", "beta", "A", "left"),    # g1: model_1 shown first and won
        ("81", "alpha", "beta", "B", "right"),   # g2: model_2 shown first and won -> inconsistent, kept
        ("81:turn2", "alpha", "beta", "tie", "left"),
        ("81:turn2", "alpha", "beta", "invalid", "right")]  # error -> invalid, not tie
    assert got[0]["annotator"] == "gpt-4/pair-v2"
    assert detect_format(tmp_path / "m.jsonl").name == "mt-bench"


def test_arena_hard_positions_and_confidence(tmp_path):
    got = [r for _, r, p in rows("arena-hard", jl(tmp_path / "a.jsonl", ARENA), baseline="gpt-4-0314")]
    assert [(r["a"], r["b"], r["verdict"], r["confidence"]) for r in got] == [
        ("gpt-4-0314", "beta", "B", 0.5),   # game 1: baseline shown first, B>A -> model won
        ("beta", "gpt-4-0314", "A", 1.0),   # game 2: swapped, A>>B -> model won strongly
        ("gpt-4-0314", "beta", "tie", None),
        ("beta", "gpt-4-0314", "invalid", None)]  # unparsed score -> invalid
    bad = jl(tmp_path / "b.jsonl", [{"question_id": "q", "model": "m", "games": [{"score": "A>>>B"}]}])
    probs = [p for _, r, p in rows("arena-hard", bad, baseline="z") if p]
    # every one of the ten upstream labels is accepted, so the message lists them
    assert probs == ["b.jsonl:1: games[0].score 'A>>>B'; expected one of A>>B, A>B, A=B, B>A, B>>A "
                     "(or B<<A, B<A, B=A, A<B, A<<B) or null"]
    nob = [p for _, r, p in rows("arena-hard", bad) if p]
    assert "baseline missing; expected a 'baseline' field or the --baseline option" in nob[0]


def test_alpaca_eval_preferences(tmp_path):
    f = tmp_path / "annotations.json"
    f.write_text(json.dumps(ALPACA, indent=2), encoding="utf-8")  # json.dumps writes NaN, as pandas does
    got = rows("alpaca-eval", f)
    assert [r["verdict"] for _, r, p in got] == ["B", "tie", "tie", "invalid", "A"]
    # line where each element starts (indent=2): "[" is line 1; an element with k keys spans k + 2 lines
    # (7, 7, 5, 5 keys) -> 2, 2+9, 11+9, 20+7, 27+7
    assert [line for line, _, _ in got] == [2, 11, 20, 27, 34]
    # continuous preferences are accepted (tie only within tie_band of 1.5); rows without
    # raw_completion / referenced_models do not say which output was shown first -> position unknown
    assert {r["a_position"] for _, r, p in got} == {None}
    f.write_text(json.dumps([dict(ALPACA[0], preference=1.27)]), encoding="utf-8")
    (_, rec, _), = rows("alpaca-eval", f)
    assert (rec["verdict"], rec["confidence"]) == ("A", pytest.approx(0.46))
    f.write_text(json.dumps([dict(ALPACA[0], preference=2.5)]), encoding="utf-8")
    assert "preference 2.5; expected a number in [1, 2]" in rows("alpaca-eval", f)[0][2]
    assert detect_format(f).name == "alpaca-eval"


def test_label_studio_export(tmp_path):
    f = tmp_path / "export.json"
    f.write_text(json.dumps(LABEL_STUDIO, indent=1), encoding="utf-8")
    got = [r for _, r, p in rows("label-studio", f)]
    # numeric LS user ids read as ls-user:<id>; records carry the task label for messages
    assert got[0] == {"item": "it1", "verdict": "left", "id": "ls:11:101", "annotator": "ls-user:3",
                      "reason": "accuracy", "seconds": 12.5, "confidence": None, "where": "export.json:task 11"}
    # the cancelled annotation is not a judgment: a skip record, counted by the store
    assert got[1] == {"skip": "cancelled annotation", "item": "it1", "where": "export.json:task 11"}
    assert len(got) == 3 and got[2]["verdict"] == "tie"
    assert detect_format(f).name == "label-studio"


def test_spreadsheet_csv_positions(tmp_path):
    # Excel "CSV UTF-8": BOM, CRLF, quoted commas and newlines, non-ASCII
    f = tmp_path / "v.csv"
    f.write_bytes(("\ufeffitem,verdict,reason,annotator,seconds\r\n"
                   "it1,Left,\"format, length\",Zoë,4.5\r\n"
                   "it2,tie,\"multi\r\nline 東京\",Zoë,\r\n"
                   "it3,draw,,Zoë,\r\n").encode("utf-8"))
    assert detect_format(f).name == "positions"
    got = rows("positions", f)
    assert got[0][1] == {"item": "it1", "verdict": "left", "id": None, "annotator": "Zoë",
                         "reason": "format, length", "seconds": 4.5, "confidence": None, "where": "v.csv:row 1"}
    assert got[1][1]["reason"] == "multi\r\nline 東京"
    # CSV problems cite logical data rows (header not counted, the 2-line cell does not shift)
    assert got[2] == (3, None, "v.csv:row 3: verdict 'draw'; expected one of left, right, tie, invalid "
                               "(pass, fail for acceptability items)")


def test_csv_wrong_cell_count(tmp_path):
    f = tmp_path / "x.csv"
    f.write_text("item,verdict\nit1,left,extra\n", encoding="utf-8")
    assert list(iter_csv(f)) == [(2, None, "x.csv:2: 3 cells; expected 2 (the header's columns)")]


def test_detection_and_override(tmp_path):
    n = jl(tmp_path / "n.jsonl", [{"id": "1", "prompt": "p", "a": "x", "b": "y", "verdict": "A"}])
    assert detect_format(n).name == "normalized"
    assert detect_format(n, "positions").name == "positions"
    with pytest.raises(UsageError, match="`format`"):
        detect_format(n, "excel")
    u = jl(tmp_path / "u.jsonl", [{"foo": 1}])
    with pytest.raises(DataError, match="cannot tell the format"):
        detect_format(u)


def test_registry_is_extensible(tmp_path):
    def read_custom(path, **_):
        for line, obj in enumerate(Path(path).read_text().splitlines(), 1):
            o = json.loads(obj)
            yield line, {"item": o["ticket"], "verdict": "left" if "[[A]]" in o["out"] else "invalid"}, None

    register(Reader("judge-test", read_custom, lambda s: "ticket" in s.keys, "test"), before="positions")
    try:
        f = jl(tmp_path / "j.jsonl", [{"ticket": "it1", "out": "[[A]]"}])
        assert detect_format(f).name == "judge-test"
        assert list(READERS).index("judge-test") < list(READERS).index("positions")
    finally:
        READERS.pop("judge-test")


# The store side (skip records, a_position unknown) lives in planner/store/; these tests need it.
needs_store_v2 = pytest.mark.skipif(not hasattr(Study, "unanswered_items"),
                                    reason="needs a store with skip records and unknown positions")


@needs_store_v2
def test_external_formats_ingest_end_to_end(tmp_path):
    init_study(tmp_path / "s", systems=["alpha", "beta", "gpt-4-0314"])
    st = tmp_path / "s"
    res = ingest(st, [jl(tmp_path / "m.jsonl", MT_BENCH)])
    assert (res.files[0].A, res.files[0].B, res.files[0].tie, res.files[0].invalid) == (1, 1, 1, 1)
    res = ingest(st, [jl(tmp_path / "a.jsonl", ARENA)], baseline="gpt-4-0314")
    assert (res.files[0].A, res.files[0].B, res.files[0].tie, res.files[0].invalid) == (1, 1, 1, 1)
    f = tmp_path / "annotations.json"
    f.write_text(json.dumps(ALPACA), encoding="utf-8")
    res = ingest(st, [f])
    assert (res.files[0].A, res.files[0].B, res.files[0].tie, res.files[0].invalid) == (1, 1, 2, 1)
    with Study.open(st) as s:
        conf = [j.confidence for j in s.judgments() if j.source == "a.jsonl"]
    assert conf == [0.5, 1.0, None, None]


@needs_store_v2
def test_label_studio_ingest_with_acceptability(tmp_path):
    Path(tmp_path / "p.jsonl").write_text(json.dumps({"id": "p", "text": "t"}) + "\n", encoding="utf-8")
    init_study(tmp_path / "s", systems=["x", "y"], prompts_file=tmp_path / "p.jsonl")
    with Study.open(tmp_path / "s") as s:
        s.record_batch({}, [BatchItem("it1", "p", "y", "x"), BatchItem("it2", "p", "x", None, kind="acceptability")])
    export = [LABEL_STUDIO[0], {"id": 13, "data": {"item_id": "it2"}, "annotations": [
        {"id": 104, "completed_by": 3, "result": [{"from_name": "verdict", "value": {"choices": ["fail"]}}]}]}]
    f = tmp_path / "e.json"
    f.write_text(json.dumps(export), encoding="utf-8")
    res = ingest(tmp_path / "s", [f]).files[0]
    assert (res.A, res.failed) == (1, 1)
    with Study.open(tmp_path / "s") as s:
        j = {x.item: x for x in s.judgments()}
        assert (j["it1"].a, j["it1"].verdict, j["it1"].seconds, j["it1"].reason) == ("y", "A", 12.5, "accuracy")
        assert j["it2"].kind == "acceptability" and j["it2"].b is None
        assert int(s.acceptability_counts().failed[0, 0]) == 1


def test_judge_outputs_are_detected(tmp_path):
    # OpenAI batch output line (shape documented in docs/formats.md, parser in planner/formats/judge.py)
    f = jl(tmp_path / "out.jsonl", [{"custom_id": "it1", "error": None, "response": {"status_code": 200, "body": {
        "model": "gpt-4o", "choices": [{"message": {"content": "Reason: accuracy\n[[B]]"}}]}}}])
    assert detect_format(f).name == "judge"
    (_, rec, _), = rows("judge", f)
    assert (rec["item"], rec["verdict"], rec["reason"]) == ("it1", "right", "accuracy")
