"""The real replay sets of bench/data/replays/ match what their README states.

Each shipped file is read by the replay reader (`read_replay`, the ingest
reader); its record, system and per-verdict counts and the per-pair pool
size equal the README's counts table (computed there from the upstream PRD
files); ids are unique; the md5 sums are the README's. With the PRD
repository at hand (``PRD_REPO=/path/to/PRD``, a checkout or its git
directory) the converter is rerun and must reproduce every file byte for byte.
No simulation here.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import subprocess
import sys
from itertools import combinations
from pathlib import Path

import numpy as np
import pytest

from planner.workflows.simulate import read_replay

ROOT = Path(__file__).resolve().parents[1]
REPLAYS = ROOT / "bench" / "data" / "replays"
README = (REPLAYS / "README.md").read_text(encoding="utf-8")
SETS = sorted(p.stem for p in REPLAYS.glob("*.jsonl"))


def _readme_table() -> dict[str, dict]:
    """Rows of the README's counts table: set -> records, systems, pool, A, B, tie."""
    rows = {}
    num = r" \| ([\d,]+)"
    pattern = re.compile(r"^\| `(\w+)` \| [^|]+" + num + num + r" \| (\d+)[^|]*" + num * 3 + r" \|", re.M)
    for m in pattern.finditer(README):
        n, m_sys, pool, a, b, tie = (int(x.replace(",", "")) for x in m.groups()[1:])
        rows[m[1]] = {"records": n, "systems": m_sys, "pool": pool, "A": a, "B": b, "tie": tie}
    return rows


TABLE = _readme_table()


def _records(name: str) -> list[dict]:
    with open(REPLAYS / f"{name}.jsonl", encoding="utf-8") as f:
        return [json.loads(line) for line in f]


def test_every_shipped_set_is_in_the_readme_table():
    assert SETS, "no replay set shipped"
    assert sorted(TABLE) == SETS


@pytest.mark.parametrize("name", SETS)
def test_set_reads_and_matches_readme_counts(name):
    want = TABLE[name]
    pool = read_replay(REPLAYS / f"{name}.jsonl")
    assert pool.size == want["records"]
    assert len(pool.systems) == want["systems"]
    # outcome codes 0 = A, 1 = B, 2 = tie, 3 = invalid (planner.counts.Counts.from_arrays)
    totals = np.bincount(pool.outcome, minlength=4)
    assert totals.tolist() == [want["A"], want["B"], want["tie"], 0]
    # every pair of systems has its own pool, each at least the stated minimum
    assert set(pool.by_pair) == set(combinations(range(len(pool.systems)), 2))
    assert min(len(ix) for ix in pool.by_pair.values()) >= want["pool"]


@pytest.mark.parametrize("name", SETS)
def test_ids_unique_and_format(name):
    recs = _records(name)
    ids = [r["id"] for r in recs]
    assert len(set(ids)) == len(ids)
    for r in recs:
        assert set(r) == {"id", "prompt", "a", "b", "verdict", "judge"}
        assert r["a"] != r["b"] and r["verdict"] in {"A", "B", "tie"}
        assert re.fullmatch(r"vicuna80-q([1-9]|[1-7]\d|80)", r["prompt"])
    # both presentation orders of every (prompt, pair) are present exactly once
    ordered = {(r["prompt"], r["a"], r["b"]) for r in recs}
    assert len(ordered) == len(recs)
    assert all((p, b, a) in ordered for p, a, b in ordered)


@pytest.mark.parametrize("name", SETS)
def test_md5_as_in_readme(name):
    short = name.removeprefix("prd_vicuna80_")
    m = re.search(rf"\b{short} `([0-9a-f]{{32}})`", README)
    assert m, f"no md5 for {name} in the README"
    assert hashlib.md5((REPLAYS / f"{name}.jsonl").read_bytes()).hexdigest() == m[1]


def test_converter_reproduces_the_files(tmp_path):
    src = os.environ.get("PRD_REPO")
    if not src or not Path(src).exists():
        pytest.skip("set PRD_REPO to a PRD checkout or git directory to rerun the converter")
    subprocess.run([sys.executable, str(ROOT / "bench" / "make_replay_sets.py"), src, "--out", str(tmp_path)],
                   check=True, capture_output=True)
    for name in SETS:
        assert (tmp_path / f"{name}.jsonl").read_bytes() == (REPLAYS / f"{name}.jsonl").read_bytes(), name
