"""One home per concept: the same input means the same thing everywhere.

* normalized judgments: ``ingest``, ``simulate --replay`` and ``allocate --pilot``
  read one file through one reader (formerly the last two refused ``"verdict": "a"``
  and ``"Tie"``, which ingest accepts).
"""

from __future__ import annotations

import json

import numpy as np
import pytest

from planner.errors import DataError, UsageError
from planner.store.study import Study, ingest, init_study
from planner.workflows.allocate import allocate_files, read_pilot
from planner.workflows.simulate import read_replay

PROMPTS = [{"id": f"{h}{i}", "text": f"question {h}{i}", "stratum": h} for h in "xy" for i in range(4)]
# every label spelling the normalized reader accepts; a_position right swaps who was shown first
ROWS = [
    {"id": "j1", "prompt": "x0", "a": "s1", "b": "s2", "verdict": "a"},
    {"id": "j2", "prompt": "x1", "a": "s1", "b": "s2", "verdict": "Tie"},
    {"id": "j3", "prompt": "x2", "a": "s2", "b": "s1", "verdict": "B"},
    {"id": "j4", "prompt": "y0", "a": "s1", "b": "s2", "verdict": "INVALID"},
    {"id": "j5", "prompt": "y1", "a": "s1", "b": "s2", "verdict": "b", "a_position": "right"},
    {"id": "j6", "prompt": "y2", "a": "s1", "b": "s2", "verdict": "A", "judge": "gpt-4", "seconds": 3},
]


def _jsonl(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def _csv(path, rows):
    keys = ["id", "prompt", "a", "b", "verdict", "a_position"]
    path.write_text(",".join(keys) + "\n" + "".join(",".join(str(r.get(k, "")) for k in keys) + "\n"
                                                    for r in rows), encoding="utf-8")
    return path


@pytest.mark.parametrize("fmt", ["jsonl", "csv"])
def test_the_same_file_passes_ingest_replay_and_pilot(tmp_path, fmt):
    f = (_jsonl if fmt == "jsonl" else _csv)(tmp_path / f"j.{fmt}", ROWS)
    prompts = _jsonl(tmp_path / "p.jsonl", PROMPTS)
    root = tmp_path / "study"
    init_study(root, systems=["s1", "s2"], prompts_file=prompts)
    ingest(root, [f])
    with Study.open(root) as st:
        stored = st.counts(by_stratum=False)
    pool = read_replay(f)
    # the replay pool holds the same judgments as the study, position for position
    assert pool.size == len(ROWS)
    assert pool.counts().totals() == stored.totals() == {"A": 3, "B": 1, "tie": 1, "invalid": 1}
    assert pool.counts() == stored
    pilot = read_pilot(f, {p["id"] for p in PROMPTS})
    assert [r["verdict"] for r in pilot] == ["A", "tie", "B", "invalid", "B", "A"]
    res = allocate_files(budget=4, prompts=prompts, pilot=f, method="neyman", seed=0)
    assert sum(s.allocated for s in res.strata) == 4


def test_replay_and_pilot_refuse_what_ingest_refuses(tmp_path):
    bad = _jsonl(tmp_path / "bad.jsonl", [
        {"id": "j1", "prompt": "x0", "a": "s1", "b": "s2", "verdict": "win"},
        {"id": "j2", "prompt": "x0", "a": "s1", "b": "s1", "verdict": "A"},
        {"prompt": "x0", "a": "s1", "b": "s2", "verdict": "A"},
    ])
    for read in (read_replay, lambda p: read_pilot(p, {"x0"})):
        with pytest.raises(DataError) as e:
            read(bad)
        lines = e.value.lines()
        assert [q.split(": ", 1)[0] for q in lines] == ["bad.jsonl:1", "bad.jsonl:2", "bad.jsonl:3"]
        assert "verdict 'win'; expected one of A, B, tie, invalid" in lines[0]
        assert "a system cannot be compared with itself" in lines[1]
    prompts = _jsonl(tmp_path / "p.jsonl", PROMPTS)
    root = tmp_path / "study"
    init_study(root, systems=["s1", "s2"], prompts_file=prompts)
    with pytest.raises(DataError):
        ingest(root, [bad])
    with pytest.raises(UsageError, match=r"`replay` \(.*nope.jsonl\): no such file"):
        read_replay(tmp_path / "nope.jsonl")


def test_replay_orientation_follows_a_position(tmp_path):
    f = _jsonl(tmp_path / "j.jsonl", ROWS)
    pool = read_replay(f)
    # j5: a = s1 shown right, verdict b (s2 won) -> left s2 won: outcome 0 (left wins)
    assert (pool.systems[pool.left[4]], pool.systems[pool.right[4]], int(pool.outcome[4])) == ("s2", "s1", 0)
    assert np.array_equal(pool.outcome, [0, 2, 1, 3, 0, 0])


# --------------------------------------------------------------------------- prompts
# one prompts reader (planner.formats.prompts) behind `init --prompts` and `allocate --prompts`
FROZEN_TRUE = ["true", "True", "t", "T", "yes", "Y", "1", " y "]
FROZEN_FALSE = ["false", "F", "no", "n", "0", ""]


def _prompts_csv(path, frozen_cells):
    body = "".join(f"p{i},text {i},s,{v}\n" for i, v in enumerate(frozen_cells))
    path.write_text("id,text,stratum,frozen\n" + body, encoding="utf-8")
    return path


def _read_both(tmp_path, f):
    from planner.workflows.allocate import read_prompts

    got_alloc = [p.frozen for p in read_prompts(f)]
    root = tmp_path / f"study-{f.stem}"
    init_study(root, systems=["s1", "s2"], prompts_file=f)
    with Study.open(root) as st:
        got_study = [p.frozen for p in st.prompts()]
    return got_alloc, got_study


def test_frozen_spellings_are_the_same_for_init_and_allocate(tmp_path):
    cells = FROZEN_TRUE + FROZEN_FALSE
    f = _prompts_csv(tmp_path / "p.csv", cells)
    want = [True] * len(FROZEN_TRUE) + [False] * len(FROZEN_FALSE)
    assert _read_both(tmp_path, f) == (want, want)
    j = tmp_path / "pj.jsonl"
    j.write_text("".join(json.dumps({"id": f"q{i}", "text": "t", "frozen": v}) + "\n"
                         for i, v in enumerate([True, False, 1, 0, None, "yes"])), encoding="utf-8")
    assert _read_both(tmp_path, j) == ([True, False, True, False, False, True],) * 2


@pytest.mark.parametrize("cell", ["pass", "fail", "maybe", "2"])
def test_bad_frozen_gets_one_message_from_both(tmp_path, cell):
    from planner.workflows.allocate import read_prompts

    f = _prompts_csv(tmp_path / "p.csv", ["true", cell])
    want = f"p.csv:3: frozen '{cell}'; expected true or false (or t/f, yes/no, y/n, 1/0)"
    with pytest.raises(DataError) as e:
        read_prompts(f)
    assert e.value.lines() == [want]
    with pytest.raises(DataError) as e:
        init_study(tmp_path / "st", systems=["s1", "s2"], prompts_file=f)
    assert any(line.endswith(want) for line in e.value.lines())  # a single problem is the one line
    assert not (tmp_path / "st" / "study.json").exists()


def test_acceptable_keeps_pass_fail(tmp_path):
    """Responses' `acceptable` shares the flag words and adds pass/fail (its own vocabulary)."""
    prompts = _prompts_csv(tmp_path / "p.csv", ["", ""])
    resp = tmp_path / "r.jsonl"
    resp.write_text("".join(json.dumps({"prompt": f"p{i}", "system": s, "text": "x", "acceptable": v}) + "\n"
                            for i, (s, v) in enumerate([("s1", "pass"), ("s2", "t")])), encoding="utf-8")
    init_study(tmp_path / "st", systems=["s1", "s2"], prompts_file=prompts, responses_file=resp)
    resp.write_text(json.dumps({"prompt": "p0", "system": "s1", "text": "x", "acceptable": "ok"}) + "\n")
    with pytest.raises(DataError) as e:
        init_study(tmp_path / "st2", systems=["s1", "s2"], prompts_file=prompts, responses_file=resp)
    assert any(line.endswith("r.jsonl:1: acceptable 'ok'; expected true or false (or t/f, yes/no, y/n, 1/0, "
                             "pass/fail)") for line in e.value.lines())


def test_other_prompt_fields_read_alike(tmp_path):
    from planner.workflows.allocate import read_prompts

    f = tmp_path / "p.jsonl"
    f.write_text("".join(json.dumps(r) + "\n" for r in [
        {"id": 7, "text": "seven", "stratum": " a ", "weight": "2.5", "difficulty": "hard"},
        {"id": "p8", "text": "eight", "weight": 0, "difficulty": 3},
    ]), encoding="utf-8")
    got = [(p.id, p.stratum, p.weight, p.difficulty) for p in read_prompts(f)]
    assert got == [("7", "a", 2.5, "hard"), ("p8", None, 0.0, 3.0)]
    init_study(tmp_path / "st", systems=["s1", "s2"], prompts_file=f)
    with Study.open(tmp_path / "st") as st:
        assert [(p.id, p.stratum, p.weight, p.difficulty) for p in st.prompts()] == got
    bad = tmp_path / "bad.jsonl"
    bad.write_text(json.dumps({"id": "", "text": "x"}) + "\n" + json.dumps({"id": "q", "text": None}) + "\n"
                   + json.dumps({"id": "r", "text": "x", "weight": -1, "difficulty": "nan"}) + "\n")
    with pytest.raises(DataError) as e:
        read_prompts(bad)
    assert e.value.lines() == [
        "bad.jsonl:1: id '' is empty; expected a non-empty prompt id on one printable line (columns id, text) "
        "(and 3 more bad prompt rows below)",
        "bad.jsonl:2: text of prompt 'q' is missing; expected the prompt text",
        "bad.jsonl:3: weight -1; expected a finite number >= 0",
        "bad.jsonl:3: difficulty 'nan'; expected a finite number or a label",
    ]


# --------------------------------------------------------------------------- version
def test_version_has_one_source():
    """pyproject's version is dynamic, read from planner.__version__ (no second copy to drift)."""
    import re
    import tomllib
    from pathlib import Path

    import planner

    root = Path(__file__).resolve().parents[1]
    project = tomllib.loads((root / "pyproject.toml").read_text(encoding="utf-8"))
    assert "version" not in project["project"] and "version" in project["project"]["dynamic"]
    assert project["tool"]["setuptools"]["dynamic"]["version"] == {"attr": "planner.__version__"}
    assert re.fullmatch(r"\d+\.\d+\.\d+([ab]|rc)?\d*", planner.__version__)
    import warnings

    from setuptools.config.pyprojecttoml import read_configuration  # what a build will record
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert read_configuration(root / "pyproject.toml", expand=True)["project"]["version"] == planner.__version__
    license_text = (root / "LICENSE").read_text(encoding="utf-8")
    assert license_text.startswith("MIT License\n\nCopyright (c) 2026 the planner authors")
