"""planner.store.study.ingest: accounting, refusals, all-or-nothing, concurrency, crashes, streaming."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
import tracemalloc
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as hst

from planner.errors import DataError
from planner.store.study import BatchItem, Study, ingest, init_study

ROOT = Path(__file__).resolve().parents[1]
SYSTEMS = ["s0", "s1", "s2", "s3"]
VERDICTS = ["A", "B", "tie", "invalid"]


def write_jsonl(path, rows):
    Path(path).write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return Path(path)


def big_file(path, n, seed=0, prefix="r"):
    """``n`` normalized rows over SYSTEMS, written in one go (vectorised)."""
    rng = np.random.default_rng(seed)
    a = rng.integers(0, 4, n)
    b = (a + rng.integers(1, 4, n)) % 4
    v = rng.integers(0, 4, n)
    with open(path, "w", encoding="utf-8") as f:
        for k in range(n):
            f.write(f'{{"id": "{prefix}{k}", "prompt": "p{k % 50}", "a": "s{a[k]}", "b": "s{b[k]}", '
                    f'"verdict": "{VERDICTS[v[k]]}", "judge": "j"}}\n')
    return Path(path), {name: int((v == i).sum()) for i, name in enumerate(VERDICTS)}


@pytest.fixture
def st(tmp_path):
    init_study(tmp_path / "st", systems=SYSTEMS)
    return tmp_path / "st"


def totals(study):
    with Study.open(study) as s:
        return s.counts().totals()


def test_seed_fixture(st, tmp_path):
    # Seed fixture (the hand-counted four-verdict study): q1 A, q2 tie, q3 B, q4 invalid -> A=1 B=1 tie=1 invalid=1
    f = write_jsonl(tmp_path / "seed.jsonl", [
        {"id": f"q{i}", "prompt": f"q{i}", "a": "s0", "b": "s1", "verdict": v}
        for i, v in enumerate(["A", "tie", "B", "invalid"], 1)])
    res = ingest(st, [f])
    r = res.files[0]
    assert (r.format, r.rows, r.A, r.B, r.tie, r.invalid, r.stored) == ("normalized", 4, 1, 1, 1, 1, True)
    assert totals(st) == {"A": 1, "B": 1, "tie": 1, "invalid": 1}


def test_qlora_vicuna80_gpt4_published_counts(vicuna_data, tmp_path):
    # ../shared/data/README.md: "Verdicts: A 2,512 / B 1,355 / tie 600 (13.4%) / invalid 13 (0.3%)"
    init_study(tmp_path / "v", prompts_file=vicuna_data / "vicuna80/prompts.jsonl",
               responses_file=vicuna_data / "vicuna80/responses.jsonl")
    res = ingest(tmp_path / "v", [vicuna_data / "judgments/qlora_vicuna80_gpt4.jsonl"])
    f = res.files[0]
    assert (f.rows, f.A, f.B, f.tie, f.invalid) == (4480, 2512, 1355, 600, 13)
    assert totals(tmp_path / "v") == {"A": 2512, "B": 1355, "tie": 600, "invalid": 13}
    with Study.open(tmp_path / "v") as s:
        c = s.counts(by_stratum=True)
        coding = c.strata.index("coding")
        # README: 4,480 rows = 80 prompts x 56 ordered pairs; coding has 7 prompts -> 7 * 56 judgments
        m = c.stratum == coding
        assert int((c.a_wins + c.b_wins + c.ties + c.invalid)[m].sum()) == 7 * 56


def test_refusals_name_file_line_value_expected(st, tmp_path):
    f = tmp_path / "bad.jsonl"
    f.write_text("\n".join([
        json.dumps({"id": "1", "prompt": "p", "a": "s0", "b": "s1", "verdict": "A"}),
        "{not json",
        json.dumps({"id": "2", "prompt": "p", "a": "s0", "b": "s1", "verdict": "win"}),
        json.dumps({"id": "3", "prompt": "p", "a": "s0", "b": "nobody", "verdict": "A"}),
        json.dumps({"id": "4", "prompt": "p", "a": "s2", "b": "s2", "verdict": "B"}),
        json.dumps({"id": "1", "prompt": "p", "a": "s0", "b": "s1", "verdict": "tie"}),
        json.dumps({"id": "5", "prompt": "p", "a": "s0", "b": "s1", "verdict": 0}),
    ]) + "\n", encoding="utf-8")
    with pytest.raises(DataError) as e:
        ingest(st, [f])
    p = e.value.problems
    assert "bad.jsonl:2: malformed JSON" in p[0]
    assert p[1] == "bad.jsonl:3: verdict 'win'; expected one of A, B, tie, invalid"  # never guessed
    assert "bad.jsonl:4: unknown system 'nobody'" in p[2]
    assert "bad.jsonl:5: a == b ('s2')" in p[3]
    assert "bad.jsonl:6: duplicate judgment id '1' (earlier in this file)" in p[4]
    assert p[5] == "bad.jsonl:7: verdict 0; expected one of A, B, tie, invalid"  # 0 is not a tie
    assert "6 problems" in e.value.message
    assert totals(st) == {"A": 0, "B": 0, "tie": 0, "invalid": 0}  # all-or-nothing: row 1 not stored
    with Study.open(st) as s:
        assert s.connection.execute("SELECT count(*) FROM files").fetchone()[0] == 0


def test_at_most_20_problems_listed(st, tmp_path):
    f = write_jsonl(tmp_path / "many.jsonl", [{"id": str(k), "prompt": "p", "a": "s0", "b": "x", "verdict": "A"}
                                              for k in range(100)])
    with pytest.raises(DataError) as e:
        ingest(st, [f])
    assert len(e.value.problems) == 20 and "100 problems" in e.value.message


def test_reingest_and_duplicates_against_study(st, tmp_path):
    f = write_jsonl(tmp_path / "a.jsonl", [{"id": "x1", "prompt": "p", "a": "s0", "b": "s1", "verdict": "A"}])
    ingest(st, [f])
    res = ingest(st, [f]).files[0]  # the same content again: a counted no-op (ingest is idempotent)
    assert (res.rows, res.already, res.stored) == (0, 1, True) and "nothing new" in res.notes[0]
    copy = tmp_path / "renamed.jsonl"
    copy.write_bytes(f.read_bytes())  # same content under another name: the same no-op
    assert ingest(st, [copy]).files[0].already == 1
    g = write_jsonl(tmp_path / "b.jsonl", [{"id": "x1", "prompt": "p", "a": "s1", "b": "s0", "verdict": "B"},
                                           {"id": "x2", "prompt": "p", "a": "s1", "b": "s0", "verdict": "B"}])
    with pytest.raises(DataError) as e:  # an id reused for another comparison is a conflict, not an edit
        ingest(st, [g])
    assert e.value.problems[0] == ("b.jsonl:1: judgment id 'x1' is already stored for a different comparison; "
                                   "expected ids that name one judgment")
    assert totals(st)["A"] == 1 and sum(totals(st).values()) == 1


def test_good_file_stays_when_later_file_refused(st, tmp_path):
    good = write_jsonl(tmp_path / "good.jsonl", [{"id": "g", "prompt": "p", "a": "s0", "b": "s1", "verdict": "A"}])
    bad = write_jsonl(tmp_path / "bad.jsonl", [{"id": "h", "prompt": "p", "a": "s0", "b": "s1", "verdict": "?"}])
    with pytest.raises(DataError) as e:
        ingest(st, [good, bad])
    assert "stored: good.jsonl (1 new)" in e.value.message
    assert totals(st)["A"] == 1


def test_dry_run_stores_nothing(st, tmp_path):
    f = write_jsonl(tmp_path / "a.jsonl", [{"id": "x1", "prompt": "p", "a": "s0", "b": "s1", "verdict": "A"}])
    res = ingest(st, [f], dry_run=True)
    assert res.dry_run and res.files[0].A == 1 and not res.files[0].stored
    assert totals(st)["A"] == 0
    ingest(st, [f])  # not recorded as ingested by the dry run
    assert totals(st)["A"] == 1


def _batch(st, items):
    with Study.open(st) as s:
        return s.record_batch({"seed": 0}, items)


def test_position_verdicts_annotator_twice_and_planned_repeat(tmp_path):
    init_study(tmp_path / "s", systems=SYSTEMS,
               prompts_file=write_jsonl(tmp_path / "p.jsonl", [{"id": "p1", "text": "t"}]))
    st = tmp_path / "s"
    _batch(st, [BatchItem("i1", "p1", "s0", "s1", annotator="ann"),
                BatchItem("i2", "p1", "s1", "s0", kind="repeat", annotator="ann", link="i1")])
    ok = write_jsonl(tmp_path / "ok.jsonl", [{"item": "i1", "verdict": "left"},  # annotator from the key
                                             {"item": "i2", "verdict": "right", "annotator": "ann"}])
    res = ingest(st, [ok])
    assert (res.files[0].A, res.files[0].B) == (1, 1)
    again = write_jsonl(tmp_path / "again.jsonl", [{"item": "i1", "verdict": "tie", "annotator": "ann"},
                                                   {"item": "zzz", "verdict": "tie"},
                                                   {"item": "i1", "verdict": "pass", "annotator": "bob"}])
    with pytest.raises(DataError) as e:
        ingest(st, [again])
    p = e.value.problems
    assert "again.jsonl:2: unknown item 'zzz'" in p[0]
    assert "again.jsonl:3: verdict 'pass' for regular item 'i1'; expected one of left, right, tie, invalid" in p[1]
    # ann's verdict on i1 changed (left -> tie): never overwritten silently (an edit is refused unless accepted)
    assert p[2].startswith("again.jsonl: 1 stored judgment(s) changed at the source ('i1@ann' A -> tie)")


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=hst.data())
def test_permutation_and_split_give_same_counts(tmp_path_factory, data):
    rows = data.draw(hst.lists(hst.tuples(hst.integers(0, 3), hst.integers(1, 3), hst.sampled_from(VERDICTS),
                                          hst.booleans()), min_size=1, max_size=40))
    recs = [{"id": f"j{k}", "prompt": f"p{k % 3}", "a": f"s{a}", "b": f"s{(a + d) % 4}", "verdict": v,
             "a_position": "right" if r else "left"} for k, (a, d, v, r) in enumerate(rows)]
    perm = data.draw(hst.permutations(recs))
    n_files = data.draw(hst.integers(1, min(4, len(perm))))
    cuts = sorted(data.draw(hst.lists(hst.integers(1, len(perm)), min_size=n_files - 1, max_size=n_files - 1)))
    parts = [perm[i:j] for i, j in zip([0] + cuts, cuts + [len(perm)]) if j > i]
    tmp = tmp_path_factory.mktemp("perm")
    results = []
    for name, groups in (("one", [recs]), ("split", parts)):
        init_study(tmp / name, systems=SYSTEMS)
        ingest(tmp / name, [write_jsonl(tmp / f"{name}{k}.jsonl", g) for k, g in enumerate(groups)])
        with Study.open(tmp / name) as s:
            results.append(s.counts())
    a, b = results
    for f in ("a", "b", "stratum", "a_wins", "b_wins", "ties", "invalid"):
        np.testing.assert_array_equal(getattr(a, f), getattr(b, f))


@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(keys=hst.lists(hst.tuples(hst.integers(0, 3), hst.integers(1, 3),
                                 hst.sampled_from(["left", "right", "tie", "invalid"])), min_size=1, max_size=30))
def test_left_right_translation_round_trips(tmp_path_factory, keys):
    tmp = tmp_path_factory.mktemp("rt")
    init_study(tmp / "s", systems=SYSTEMS, prompts_file=write_jsonl(tmp / "p.jsonl", [{"id": "p", "text": "t"}]))
    items = [BatchItem(f"it{k}", "p", f"s{a}", f"s{(a + d) % 4}") for k, (a, d, _) in enumerate(keys)]
    _batch(tmp / "s", items)
    ingest(tmp / "s", [write_jsonl(tmp / "v.jsonl", [{"item": f"it{k}", "verdict": v}
                                                      for k, (_, _, v) in enumerate(keys)])])
    back = {"A": "left", "B": "right", "tie": "tie", "invalid": "invalid"}
    with Study.open(tmp / "s") as s:
        got = {j.item: (j.a if j.a_position == "left" else j.b, back[j.verdict]) for j in s.judgments()}
        for it, (_, _, v) in zip(items, keys):
            assert got[it.item_id] == (it.left, v)
        c = s.counts()
        for it, (_, _, v) in zip(items, keys):
            cell = np.flatnonzero((c.a == SYSTEMS.index(it.left)) & (c.b == SYSTEMS.index(it.right)))
            assert cell.size == 1  # the cell's a is the left system


# ------------------------------------------------------------------ reliability
_CHILD = textwrap.dedent("""
    import sys
    from planner.store.study import ingest
    def tick(k, done, total):
        print("progress", done, total, flush=True)
    ingest(sys.argv[1], sys.argv[2:], progress=tick)
    print("done", flush=True)
""")


def _child(study, *files):
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    return subprocess.Popen([sys.executable, "-c", _CHILD, str(study), *map(str, files)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)


def test_two_concurrent_ingests_both_land(st, tmp_path):
    f1, c1 = big_file(tmp_path / "f1.jsonl", 60_000, seed=1, prefix="a")
    f2, c2 = big_file(tmp_path / "f2.jsonl", 60_000, seed=2, prefix="b")
    procs = [_child(st, f1), _child(st, f2)]
    outs = [p.communicate(timeout=240) for p in procs]
    assert [p.returncode for p in procs] == [0, 0], outs
    assert totals(st) == {k: c1[k] + c2[k] for k in c1}


def test_sigkill_mid_ingest_leaves_study_unchanged(st, tmp_path):
    first = write_jsonl(tmp_path / "first.jsonl", [{"id": "k", "prompt": "p", "a": "s0", "b": "s1", "verdict": "A"}])
    ingest(st, [first])
    before = totals(st)
    f, counts = big_file(tmp_path / "big.jsonl", 200_000, seed=5)
    p = _child(st, f)
    line = p.stdout.readline()  # first progress report: after 50,000 rows, mid-transaction
    assert line.startswith("progress"), (line, p.stderr.read() if p.poll() is not None else "")
    p.send_signal(signal.SIGKILL)
    p.wait(timeout=30)
    assert p.returncode == -signal.SIGKILL
    assert totals(st) == before
    with Study.open(st) as s:
        assert s.connection.execute("SELECT count(*) FROM files").fetchone()[0] == 1
        assert s.connection.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    res = ingest(st, [f])  # not marked as ingested: it can be ingested now
    assert res.files[0].rows == 200_000
    assert totals(st) == {k: before[k] + counts[k] for k in before}


def _peak_ingest(study, path) -> int:
    tracemalloc.start()
    try:
        ingest(study, [path])
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_streaming_memory_is_bounded(tmp_path):
    # the peak of Python allocations must not grow with the file: 10k vs 50k rows
    peaks = []
    for n in (10_000, 50_000):
        init_study(tmp_path / f"s{n}", systems=SYSTEMS)
        f, counts = big_file(tmp_path / f"f{n}.jsonl", n, seed=n)
        peaks.append(_peak_ingest(tmp_path / f"s{n}", f))
        assert totals(tmp_path / f"s{n}") == counts
    # 5x the rows; allow 1 MiB of slack (sqlite page cache and interpreter noise are outside tracemalloc)
    assert peaks[1] < peaks[0] + (1 << 20), peaks
    assert peaks[1] < 16 << 20, peaks  # far below the 7 MB file held in memory several times over


@pytest.mark.slow
def test_million_rows_streaming(tmp_path):
    init_study(tmp_path / "s", systems=SYSTEMS)
    f, counts = big_file(tmp_path / "m.jsonl", 1_000_000, seed=7)
    peak = _peak_ingest(tmp_path / "s", f)
    assert totals(tmp_path / "s") == counts
    assert peak < 16 << 20, peak
    db = sqlite3.connect(tmp_path / "s" / "study.sqlite")
    assert db.execute("SELECT count(*) FROM judgments").fetchone()[0] == 1_000_000
