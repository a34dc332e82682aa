"""next-batch's plan at Arena scale (hundreds of systems): the fast paths against the slow ones they replace.

Each oracle below is the code ``planner/services/batch_choice.py (was workflows/next_batch_plan.py)`` ran before
(copied here unchanged): the stratum totals summed cell by cell in Python, the
prompt choice handing every candidate of the pair to ``choose_prompts`` for each
stratum tried, and the showable responses read with their texts. The fast paths
must give the same values, the same notes and leave the batch's generator in
the same state (every later random choice depends on it). Equality is exact.
"""

from __future__ import annotations

import json
from collections import Counter, defaultdict

import numpy as np
import pytest

from planner.batch.pair_prompts import pair_prompts
from planner.counts import Counts
from planner.services import batch_choice as plan
from planner.store.records import Prompt
from planner.store.study import Study, init_study


def _old_received(received) -> Counter:
    already = Counter()
    for s_idx, n in zip(received.stratum, received.usable + received.invalid):
        already[received.strata[int(s_idx)]] += int(n)
    return already


def _old_choose(prompts, pp, pairs, strata, slots, rng, frozen_first, notes):
    from planner.allocation.maths import choose_prompts
    from planner.batch.assemble import PlannedComparison

    systems = pp.systems
    by_id = {p.id: p for p in prompts}
    unused: dict = {}
    planned = []
    used_now: dict = defaultdict(set)
    fallbacks = 0
    dropped = Counter()
    for (i, j), stratum in zip(pairs, slots):
        key = (min(i, j), max(i, j))
        if key not in unused:
            unused[key] = pp.unused(*key)
        candidates = [by_id[pid] for pid in sorted(unused[key] - used_now[key]) if pid in by_id]
        pid = None
        for s in [stratum] + [x for x in strata if x != stratum]:
            got = choose_prompts(candidates, s, 1, used=frozenset(), rng=rng, frozen_first=frozen_first)
            if got:
                pid = got[0]
                fallbacks += s != stratum
                break
        if pid is None:
            dropped[(systems[key[0]], systems[key[1]])] += 1
            continue
        used_now[key].add(pid)
        planned.append(PlannedComparison(pid, systems[key[0]], systems[key[1]], by_id[pid].stratum or "all"))
    if fallbacks:
        notes.append(f"{fallbacks} comparison(s) took a prompt from another stratum: their planned stratum had "
                     "no unused prompt for the pair")
    if dropped:
        notes.append("no unused prompt was left for " + ", ".join(f"{a} vs {b} (x{n})" for (a, b), n in
                                                                   sorted(dropped.items()))
                     + "; those picks were dropped")
    return planned


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_received_by_stratum_equals_the_cell_loop(seed):
    rng = np.random.default_rng(seed)
    strata = ("s1", "s2", "s3", "all")
    n = 500
    a = rng.integers(0, 6, n)
    b = (a + rng.integers(1, 6, n)) % 6
    got_strata = rng.choice([0, 1, 3], n)  # stratum s3 has no cell: it must not become a key
    counts = Counts.from_arrays(tuple("abcdef"), a, b, rng.integers(0, 4, n), got_strata, strata)
    got, want = plan._received_by_stratum(counts), _old_received(counts)
    assert got == want and set(got) == set(want) == {"s1", "s2", "all"}
    assert sum(got.values()) == n
    empty = Counts.empty(tuple("abc"), strata)
    assert plan._received_by_stratum(empty) == _old_received(empty) == Counter()


@pytest.mark.parametrize("seed,frozen_first", [(0, True), (1, False), (2, True), (3, True)])
def test_choose_equals_the_slow_path(seed, frozen_first):
    # 5 systems, 24 prompts in strata s1/s2/s3, none and a blank label ("all" for choose_prompts, kept
    # as stored in the planned stratum), some frozen; responses missing at random, some prompts used;
    # 160 picks over 10 pairs exhaust several pairs, so fallbacks and drops both happen
    rng = np.random.default_rng(100 + seed)
    systems = tuple(f"m{k}" for k in range(5))
    labels = ["s1", "s2", "s3", None, " "]
    prompts = [Prompt(f"q{k:02d}", f"question {k}", labels[k % 5], frozen=bool(k % 7 == 0)) for k in range(24)]
    responses = [(p.id, s) for p in prompts for s in systems if rng.random() < 0.85]
    usage = {}
    for i in range(5):
        for j in range(i + 1, 5):
            usage[(systems[i], systems[j])] = frozenset(p.id for p in prompts if rng.random() < 0.3)
    pp = pair_prompts(systems, responses, usage)
    allowed = sorted(pp.allowed())
    pairs = [allowed[int(t)] for t in rng.integers(0, len(allowed), 160)]
    pairs = [(j, i) if rng.random() < 0.5 else (i, j) for i, j in pairs]  # either orientation
    strata = sorted({p.stratum or "all" for p in prompts})
    slots = [strata[int(t)] for t in rng.integers(0, len(strata), len(pairs))]
    new_rng, old_rng = np.random.default_rng(seed), np.random.default_rng(seed)
    new_notes, old_notes = [], []
    got = plan._choose(prompts, pp, pairs, strata, slots, new_rng, frozen_first, new_notes)
    want = _old_choose(prompts, pp, pairs, strata, slots, old_rng, frozen_first, old_notes)
    assert got == want and new_notes == old_notes
    assert new_rng.random() == old_rng.random()  # the generator is left in the same state
    assert any("another stratum" in n for n in new_notes) and any("dropped" in n for n in new_notes)
    assert len(got) > 60


def test_response_keys_equal_responses(tmp_path):
    rng = np.random.default_rng(5)
    systems = ["zeta", "alpha", "mid"]  # study order is not name order
    (tmp_path / "prompts.jsonl").write_text("".join(
        json.dumps({"id": f"p{k}", "text": f"q {k}", "stratum": "s1" if k % 2 else "s2"}) + "\n"
        for k in (3, 1, 10, 2)), encoding="utf-8")  # file order is not id order
    (tmp_path / "responses.jsonl").write_text("".join(
        json.dumps({"prompt": f"p{k}", "system": s, "text": "word " * int(rng.integers(1, 9))}) + "\n"
        for k in (10, 1, 2, 3) for s in systems if rng.random() < 0.8), encoding="utf-8")
    init_study(tmp_path / "st", systems=systems, prompts_file=tmp_path / "prompts.jsonl",
               responses_file=tmp_path / "responses.jsonl")
    with Study.open(tmp_path / "st") as st:
        want = [(r.prompt, r.system) for r in st.responses()]
        assert st.response_keys() == want and len(want) > 6
        assert plan._showable(st, None, []) == want
        notes: list[str] = []
        assert plan._showable(st, 4, notes) == [(r.prompt, r.system) for r in st.responses()
                                                if len(r.text.split()) <= 4]
        assert notes and "--max-words 4" in notes[0]


@pytest.fixture
def used_study(tmp_path):
    """Five systems, eight prompts with responses missing at random, 300 judgments (some on a prompt the
    study does not hold, every kind, both orders), issued items, a gap in the storage order."""
    rng = np.random.default_rng(11)
    systems = ["e", "a", "d", "b", "c"]
    (tmp_path / "prompts.jsonl").write_text("".join(
        json.dumps({"id": f"q{k}", "text": f"question {k}", "stratum": f"s{k % 3}"}) + "\n"
        for k in (7, 0, 5, 1, 6, 2, 4, 3)), encoding="utf-8")
    (tmp_path / "responses.jsonl").write_text("".join(
        json.dumps({"prompt": f"q{k}", "system": s, "text": f"answer {k}"}) + "\n"
        for k in range(8) for s in systems if rng.random() < 0.8), encoding="utf-8")
    init_study(tmp_path / "st", systems=systems, prompts_file=tmp_path / "prompts.jsonl",
               responses_file=tmp_path / "responses.jsonl")
    from planner.store.study import BatchItem

    with Study.open(tmp_path / "st") as st:
        con = st.connection
        con.execute("INSERT INTO files (id, sha256, name, format, ingested) VALUES (1, 'h', 'f', 'jsonl', 't')")
        ids = [r[0] for r in con.execute("SELECT id FROM systems ORDER BY id")]
        rows = []
        for k in range(300):
            a, b = rng.choice(ids, size=2, replace=False)
            kind = ["regular", "external", "swap", "overlap", "attention"][k % 5]
            prompt = f"q{rng.integers(8)}" if k % 13 else "elsewhere"
            rows.append((k + 1 + (40 if k >= 150 else 0), f"j{k}", prompt, int(a), int(b),
                         str(rng.choice(["A", "B", "tie"])), kind))
        con.executemany("INSERT INTO judgments (seq, id, prompt, a, b, verdict, kind, file) "
                        "VALUES (?, ?, ?, ?, ?, ?, ?, 1)", rows)
        st.record_batch({"seed": 0}, [BatchItem("i1", "q3", "c", "e"), BatchItem("i2", "q6", "b", "a")])
    return tmp_path / "st"


@pytest.mark.parametrize("reuse", [False, True])
def test_pair_usage_arrays_equal_the_sets(used_study, reuse):
    from planner.batch.pair_prompts import PairUsage

    with Study.open(used_study) as st:
        systems = st.systems
        shown = st.response_keys()
        sets = st.pair_prompt_usage()
        usage = PairUsage(systems, *st.pair_prompt_usage_codes())
    held = {f"q{k}" for k in range(8)}
    # the mapping: the old sets restricted to the prompts the study holds
    want = {k: v & held for k, v in sets.items() if v & held}
    assert dict(usage.items()) == want and len(usage) == len(want) and set(usage) == set(want)
    assert any("elsewhere" in v for v in sets.values())  # the fixture has the case left out
    assert ("a", "e") not in usage and usage.get(("zz", "a")) is None
    fast = pair_prompts(systems, shown, usage, reuse_prompts=reuse)
    slow = pair_prompts(systems, shown, sets, reuse_prompts=reuse)
    for name in ("have", "pair_i", "pair_j", "n_both", "n_fresh", "capacity"):
        np.testing.assert_array_equal(getattr(fast, name), getattr(slow, name), err_msg=name)
    assert fast.prompts == slow.prompts and fast.allowed() == slow.allowed()
    for i, j in zip(slow.pair_i.tolist(), slow.pair_j.tolist()):
        assert fast.unused(i, j) == slow.unused(i, j)
    assert (slow.n_fresh == 0).any() and (slow.n_fresh > 0).any()  # exhausted pairs and open ones
