"""Hostile input in every reader: each class gives one-line problems (never a traceback, never a silent read).

For every registered reader a small valid file is written first (and must read cleanly); each hostile
variant of it must then give at least one problem, and every problem must be one line, bounded, without
Python's ``None``. Classes: truncated JSON arrays, duplicated keys with conflicting values, blank
ids, lone UTF-16 surrogates, integers of hundreds of digits, 100k-level nesting, NUL bytes, bytes that are
not UTF-8, an I/O error while reading, control characters in echoed values.
"""

from __future__ import annotations

import errno
import io
import json
from pathlib import Path

import pytest

from planner.errors import DataError, UsageError
from planner.formats import jsonsafe
from planner.formats.readers import READERS

JUDGE_LINE = {"custom_id": "it-a", "response": {"status_code": 200, "body": {
    "model": "m", "choices": [{"message": {"content": "[[A]]"}}]}}, "error": None}
LS_TASK = {"id": 17, "data": {"item_id": "it-a"}, "annotations": [
    {"id": 5, "completed_by": 1, "lead_time": 2.5,
     "result": [{"from_name": "verdict", "value": {"choices": ["left"]}}]}]}
ARGILLA = {"id": "it-a", "fields": {"prompt": "p"}, "metadata": {"item_id": "it-a"}, "suggestions": {},
           "responses": {"verdict": [{"value": "left", "user_id": "u1"}]}, "vectors": {}, "status": "completed",
           "_server_id": None}

# reader -> (file name, kind, valid rows, key to duplicate with a conflicting value)
SAMPLES = {
    "positions": ("v.jsonl", "jsonl", [{"item": "it-a", "verdict": "left", "seconds": 3}], "verdict"),
    "normalized": ("n.jsonl", "jsonl", [{"id": "j1", "prompt": "p", "a": "x", "b": "y", "verdict": "A"}], "verdict"),
    "mt-bench": ("m.jsonl", "jsonl", [{"question_id": 81, "model_1": "x", "model_2": "y", "g1_winner": "model_1",
                                       "g2_winner": "model_2", "judge": ["gpt-4", "pair-v2"]}], "g1_winner"),
    "arena-hard": ("a.jsonl", "jsonl", [{"uid": "q1", "model": "y", "baseline": "x", "judge": "j",
                                         "games": [{"score": "A>B"}, {"score": "B>A"}]}], "model"),
    "judge": ("o.jsonl", "jsonl", [JUDGE_LINE], "custom_id"),
    "label-studio": ("export.json", "json", [LS_TASK], "id"),
    "label-studio-min": ("min.json", "json", [{"item_id": "it-a", "id": 17, "verdict": "left", "annotator": 1,
                                               "annotation_id": 5, "lead_time": 2.5}], "verdict"),
    "argilla": ("records.json", "json", [ARGILLA], "id"),
    "argilla-flat": ("flat.json", "json", [{"id": "it-a", "status": "completed", "_server_id": None,
                                            "item_id": "it-a", "verdict.responses": ["left"],
                                            "verdict.responses.users": ["u1"],
                                            "verdict.responses.status": ["submitted"]}], "item_id"),
    "alpaca-eval": ("annotations.json", "json", [{"instruction": "Say hi", "generator_1": "x", "generator_2": "y",
                                                  "annotator": "g", "preference": 1.0}], "preference"),
}
CSV_SAMPLES = {
    "positions": "item,verdict,seconds\r\nit-a,left,3\r\n",
    "normalized": "id,prompt,a,b,verdict\r\nj1,p,x,y,A\r\n",
    "label-studio-csv": '"annotation_id","annotator","id","item_id","lead_time","verdict"\r\n5,"1",17,"it-a",2.5,"left"\r\n',
}


def text_of(kind, objs):
    if kind == "jsonl":
        return "".join(json.dumps(o) + "\n" for o in objs)
    return json.dumps(objs, indent=1)


def read(reader, path):
    return list(READERS[reader].read(Path(path)))


def assert_one_line_problems(out, at_least=1):
    problems = [p for _, r, p in out if p is not None]
    assert len(problems) >= at_least, out
    for p in problems:
        assert "\n" not in p and "\r" not in p, p
        assert len(p) <= 400, p
        assert "None" not in p, p
    return problems


def inject(text, snippet):
    """Put ``snippet`` (``"key": value``) first in the first JSON object of ``text``."""
    i = text.index("{")
    return text[: i + 1] + snippet + ", " + text[i + 1:]


@pytest.mark.parametrize("reader", list(SAMPLES))
def test_valid_sample_reads_cleanly(tmp_path, reader):
    name, kind, objs, _ = SAMPLES[reader]
    f = tmp_path / name
    f.write_text(text_of(kind, objs), encoding="utf-8")
    out = read(reader, f)
    assert out and all(p is None for _, _, p in out), out


HOSTILE = {
    "duplicate key, conflicting": lambda t, key: inject(t, f'"{key}": "conflicting-value"'),
    "lone surrogate": lambda t, key: inject(t, '"zz": "ab\\ud800cd"'),
    "lone surrogate in a key": lambda t, key: inject(t, '"\\udfff": 1'),
    "integer of 400 digits": lambda t, key: inject(t, '"zz": ' + "9" * 400),
    "100k-level nesting": lambda t, key: inject(t, '"zz": ' + "[" * 100_000 + "]" * 100_000),
    "NUL byte in a string": lambda t, key: inject(t, '"zz": "a\x00b"'),
    "raw control character": lambda t, key: inject(t, '"zz": "line\nbreak"'),
}


@pytest.mark.parametrize("case", list(HOSTILE))
@pytest.mark.parametrize("reader", list(SAMPLES))
def test_hostile_json(tmp_path, reader, case):
    name, kind, objs, key = SAMPLES[reader]
    f = tmp_path / name
    f.write_text(HOSTILE[case](text_of(kind, objs), key), encoding="utf-8", errors="surrogatepass")
    problems = assert_one_line_problems(read(reader, f))
    if case == "duplicate key, conflicting":
        assert "duplicated key" in problems[0]
    if case == "100k-level nesting":
        assert "nested too deeply" in problems[0]


@pytest.mark.parametrize("reader", list(SAMPLES))
def test_identical_duplicate_keys_pass(tmp_path, reader):
    name, kind, objs, key = SAMPLES[reader]
    text = text_of(kind, objs)
    f = tmp_path / name
    f.write_text(inject(text, f'"{key}": {json.dumps(objs[0][key])}'), encoding="utf-8")
    assert all(p is None for _, _, p in read(reader, f))


@pytest.mark.parametrize("reader", list(SAMPLES))
def test_not_utf8_and_nul_bytes(tmp_path, reader):
    name, kind, objs, _ = SAMPLES[reader]
    raw = text_of(kind, objs).encode("utf-8")
    f = tmp_path / name
    f.write_bytes(raw[:-3] + b"\xff\xfe" + raw[-3:])
    assert_one_line_problems(read(reader, f))
    f.write_bytes(b"\x00" * 64)
    problems = assert_one_line_problems(read(reader, f))
    assert all("\x00" not in p for p in problems)


ARRAY_READERS = [r for r, (_, kind, _, _) in SAMPLES.items() if kind == "json"]


@pytest.mark.parametrize("reader", ARRAY_READERS)
def test_truncated_array_never_reads_its_head(tmp_path, reader):
    name, _, objs, _ = SAMPLES[reader]
    text = json.dumps(objs * 3)  # one line, as LS exports are
    first_end = text.index("}, {") + 1
    for cut in (first_end, first_end + 1, first_end + 2, len(text) - 1, len(text) // 2):
        f = tmp_path / name
        f.write_text(text[:cut], encoding="utf-8")
        assert_one_line_problems(read(reader, f))
    f.write_text(text + "\n[]", encoding="utf-8")  # data after the closing bracket
    assert "data after the closing ']'" in assert_one_line_problems(read(reader, f))[0]


@pytest.mark.parametrize("reader", list(SAMPLES))
def test_io_error_while_reading(tmp_path, reader, monkeypatch):
    name, kind, objs, _ = SAMPLES[reader]
    f = tmp_path / name
    f.write_text(text_of(kind, objs), encoding="utf-8")
    real_open = jsonsafe._OPEN

    class Failing(io.RawIOBase):
        def readinto(self, b):
            raise OSError(errno.EIO, "Input/output error")

        def readable(self):
            return True

    def failing_open(path, mode="r", *args, **kwargs):
        if Path(path) != f:
            return real_open(path, mode, *args, **kwargs)
        raw = io.BufferedReader(Failing())
        return raw if "b" in mode else io.TextIOWrapper(raw, encoding=kwargs.get("encoding", "utf-8"))

    monkeypatch.setattr(jsonsafe, "_OPEN", failing_open)
    try:
        out = read(reader, f)
    except (DataError, UsageError) as exc:  # judge raises before the first row
        msg = str(exc)
    else:
        msg = assert_one_line_problems(out)[0]
    assert "Input/output error" in msg and "\n" not in msg
    assert msg.startswith(f"{name}")


@pytest.mark.parametrize("reader", list(SAMPLES))
def test_a_directory_is_not_a_traceback(tmp_path, reader):
    d = tmp_path / "dir.json"
    d.mkdir()
    try:
        out = read(reader, d)
    except (DataError, UsageError) as exc:
        assert "\n" not in str(exc)
    else:
        assert_one_line_problems(out)


@pytest.mark.parametrize("reader, text", list(CSV_SAMPLES.items()))
def test_hostile_csv(tmp_path, reader, text):
    f = tmp_path / "s.csv"
    f.write_text(text, encoding="utf-8")
    assert all(p is None for _, _, p in read(reader, f))
    header, row = text.split("\r\n")[:2]
    cases = {
        "NUL": row.replace("it-a", "it\x00a").replace("j1", "j\x001"),
        "huge number": row.replace("3", "9" * 400).replace("2.5", "9" * 400).replace(",A", ",Q"),
        "unterminated quote (cut-off file)": row + '\r\nit-b,"lef',
    }
    for case, bad in cases.items():
        f.write_text(header + "\r\n" + bad + "\r\n", encoding="utf-8")
        assert_one_line_problems(read(reader, f)), case
    f.write_bytes((header + "\r\n").encode() + b"\xff" + row.encode() + b"\r\n")
    assert_one_line_problems(read(reader, f))


@pytest.mark.parametrize("reader, row, expected", [
    ("positions", {"item": "  ", "verdict": "left"}, "v.jsonl:1: item '  '; expected the item id"),
    ("positions", {"item": "it-a", "verdict": "left", "id": " "}, "v.jsonl:1: id ' '; expected a non-blank"),
    ("normalized", {"id": "\t", "prompt": "p", "a": "x", "b": "y", "verdict": "A"}, "n.jsonl:1: id '\\t'"),
    ("mt-bench", {"question_id": " ", "model_1": "x", "model_2": "y", "g1_winner": "model_1"},
     "m.jsonl:1: question_id ' '"),
    ("arena-hard", {"uid": "q", "model": " ", "baseline": "x", "games": []}, "a.jsonl:1: model ' '"),
    ("judge", {"custom_id": "", "content": "[[A]]"}, "o.jsonl:1: custom_id ''"),
])
def test_blank_ids(tmp_path, reader, row, expected):
    name = SAMPLES[reader][0]
    f = tmp_path / name
    f.write_text(json.dumps(row) + "\n", encoding="utf-8")
    problems = assert_one_line_problems(read(reader, f))
    assert problems[0].startswith(expected), problems


@pytest.mark.parametrize("reader, row", [
    ("mt-bench", {"question_id": 1, "model_1": "x", "model_2": "y", "g1_winner": ["model_1"]}),
    ("arena-hard", {"uid": "q", "model": "y", "baseline": "x", "games": [{"score": ["A>B"]}, {"score": "A>B"}]}),
    ("arena-hard", {"uid": "q", "model": "y", "baseline": "x", "games": {"0": {"score": "A>B"}}}),
    ("positions", {"item": "it-a", "verdict": ["left"]}),
    ("positions", {"item": "it-a", "verdict": "left", "seconds": [3]}),
    ("positions", {"item": "it-a", "verdict": "left", "annotator": {"name": "x"}}),
    ("normalized", {"id": "j", "prompt": "p", "a": "x", "b": "y", "verdict": "A", "confidence": {"v": 1}}),
])
def test_wrong_json_types_in_adapter_fields(tmp_path, reader, row):
    f = tmp_path / SAMPLES[reader][0]
    f.write_text(json.dumps(row) + "\n", encoding="utf-8")
    assert_one_line_problems(read(reader, f))


def test_control_characters_in_echoed_values_stay_on_one_line(tmp_path):
    f = tmp_path / "v.jsonl"
    f.write_text(json.dumps({"item": "it-a", "verdict": "left\nDROP TABLE\r\x1b[31m" + "x" * 10_000}) + "\n",
                 encoding="utf-8")
    (problem,) = assert_one_line_problems(read("positions", f))
    assert "\\n" in problem and "\x1b" not in problem and "(10021 characters)" in problem


@pytest.mark.parametrize("content", [
    b"\x00" * 64, b"\xff\xfe\x00garbage", b"[" * 100_000, b"{" * 100_000, b'[{"a": "\\ud800"}]',
    b'{"zz": ' + b"9" * 5000 + b"}\n", b"", b"   \n\n", ("x" * 2_000_000).encode()])
def test_detect_format_on_hostile_heads(tmp_path, content):
    from planner.formats.readers import detect_format

    f = tmp_path / "h.dat"
    f.write_bytes(content)
    try:
        reader = detect_format(f)
    except DataError as exc:
        msg = str(exc)
        assert "\n" not in msg and "None" not in msg and len(msg) < 400, msg
    else:
        assert_one_line_problems(list(reader.read(f)), at_least=0)


@pytest.mark.parametrize("reader", list(CSV_SAMPLES))
def test_duplicated_csv_column(tmp_path, reader):
    header, row = CSV_SAMPLES[reader].split("\r\n")[:2]
    f = tmp_path / "s.csv"
    f.write_text(f"{header},verdict\r\n{row},right\r\n", encoding="utf-8")
    (problem,) = assert_one_line_problems(read(reader, f))
    assert problem == "s.csv:1: column 'verdict' appears twice in the header; expected each column once"
