"""One home per concept (issue 12): the same input means the same thing everywhere.

* normalized judgments: ``ingest``, ``simulate --replay`` and ``allocate --pilot``
  read one file through one reader (formerly the last two refused ``"verdict": "a"``
  and ``"Tie"``, which ingest accepts).
"""

from __future__ import annotations

import json

import numpy as np
import pytest

from planner.allocation import allocate_files, read_pilot
from planner.errors import DataError, UsageError
from planner.simulate import read_replay
from planner.study import Study, ingest, init_study

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
    with pytest.raises(UsageError, match=r"--replay \(.*nope.jsonl\): no such file"):
        read_replay(tmp_path / "nope.jsonl")


def test_replay_orientation_follows_a_position(tmp_path):
    f = _jsonl(tmp_path / "j.jsonl", ROWS)
    pool = read_replay(f)
    # j5: a = s1 shown right, verdict b (s2 won) -> left s2 won: outcome 0 (left wins)
    assert (pool.systems[pool.left[4]], pool.systems[pool.right[4]], int(pool.outcome[4])) == ("s2", "s1", 0)
    assert np.array_equal(pool.outcome, [0, 2, 1, 3, 0, 0])
