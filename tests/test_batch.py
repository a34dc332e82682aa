"""Batch assembly (planner/batch/assemble.py): ids, positions, QC items, skips, style normalization."""

from __future__ import annotations

import copy
import itertools
import re
from collections import Counter, defaultdict

import _batch_fixture as fx
import numpy as np
import pytest

from planner.batch.assemble import assemble_batch
from planner.batch.items import ID_ALPHABET, PlannedComparison
from planner.batch.textnorm import count_words, normalize_text, truncate_words
from planner.errors import DataError, UsageError

ID_RE = re.compile(r"^it-[" + ID_ALPHABET + r"]{12}$")


def build(seed=0, planned=None, **kw):
    return assemble_batch(planned if planned is not None else fx.planned(4), prompt_text=fx.prompts(),
                          response_text=fx.responses(), rng=np.random.default_rng(seed), **kw)


FULL_QC = dict(attention=0.05, repeat=0.05, overlap=0.15, acceptability=0.1, both_orders=True,
               annotators=["ann1", "ann2", "ann3"])


# ------------------------------------------------------------ determinism / ids
def test_same_seed_identical_batch_other_seed_differs():
    a, b = build(7, **FULL_QC), build(7, **FULL_QC)
    assert a == b  # frozen dataclasses compare field by field, manifest included
    c = build(8, **FULL_QC)
    assert {it.item_id for it in a.items}.isdisjoint({it.item_id for it in c.items})


def test_ids_opaque_unique_and_avoid_previous():
    batch = build(1, **FULL_QC)
    ids = [it.item_id for it in batch.items]
    assert len(set(ids)) == len(ids)
    assert all(ID_RE.match(i) for i in ids)
    # same seed, previous ids given: every new id is fresh
    again = build(1, previous_items=ids, **FULL_QC)
    assert set(ids).isdisjoint(it.item_id for it in again.items)


# ------------------------------------------------------------------- positions
def test_positions_balanced_per_pair_and_per_system():
    # 15 pairs x 4 prompts (even per pair) + 15 x 3 (odd per pair) planned comparisons
    for reps in (3, 4):
        for seed in range(5):
            batch = build(seed, planned=fx.planned(reps))
            per_pair = defaultdict(lambda: [0, 0])
            per_sys = defaultdict(lambda: [0, 0])
            for it in batch.items:
                a, b = sorted((it.left_system, it.right_system))
                per_pair[(a, b)][0 if it.left_system == a else 1] += 1
                per_sys[it.left_system][0] += 1
                per_sys[it.right_system][1] += 1
            # within a pair the split is exact up to the odd item
            assert all(abs(l - r) <= reps % 2 for l, r in per_pair.values())
            # across the batch each system is left about half the time: the odd items
            # are given to the system with fewer left appearances, so at most 1 off
            # per system after the greedy pass (hand bound: one odd item per pair, 5 pairs per system)
            assert all(abs(l - r) <= 2 for l, r in per_sys.values()), dict(per_sys)


# ------------------------------------------------------------------- QC counts
@pytest.mark.parametrize("rates", [
    dict(attention=0.05, repeat=0.05, overlap=0.15, acceptability=0.1),
    dict(attention=0.1, repeat=0.0, overlap=0.0, acceptability=0.0),
    dict(attention=0.02, repeat=0.07, overlap=0.3, acceptability=0.2),
])
@pytest.mark.parametrize("both_orders", [False, True])
def test_qc_counts_match_rates_within_rounding(rates, both_orders):
    batch = build(3, annotators=["a", "b", "c", "d"], both_orders=both_orders, **rates)
    kinds = Counter(it.kind for it in batch.items)
    n = len(batch.items)
    # Defined in planner/batch/assemble.py: k_x = round(r_x * n_base / (1 - S)) so |k_x - r_x * N| < 1.
    for kind, rate in rates.items():
        assert abs(kinds[kind] - rate * n) < 1, (kind, kinds[kind], rate * n)
        assert batch.manifest.qc[kind]["n"] == kinds[kind]
    assert kinds["swap"] == (kinds["regular"] if both_orders else 0)
    assert batch.manifest.n_items == n


def test_rate_validation():
    for bad in (dict(attention=-0.1), dict(repeat=1.0), dict(acceptability=float("nan")),
                dict(attention=0.5, acceptability=0.5), dict(overlap=0.1),  # overlap needs >= 2 annotators
                dict(overlap=0.1, annotators=["solo"]), dict(normalize_style="fancy"), dict(max_words=0),
                dict(truncate=True), dict(annotators=["a", "a"]), dict(annotators=["a/b"]), dict(annotators=[])):
        with pytest.raises(UsageError):
            build(0, **bad)
    with pytest.raises(UsageError, match="`repeat`"):
        build(0, planned=fx.planned(1)[:3], repeat=0.6, attention=0.3)  # 3 regular, asks for 18 repeats
    with pytest.raises(UsageError, match="no planned"):
        build(0, planned=[])


# --------------------------------------------------------------- QC semantics
def test_repeat_swap_overlap_semantics():
    batch = build(11, **FULL_QC)
    by_id = {it.item_id: it for it in batch.items}
    order = {it.item_id: n for n, it in enumerate(batch.items)}
    kinds = Counter(it.kind for it in batch.items)
    assert kinds["repeat"] > 0 and kinds["overlap"] > 0 and kinds["swap"] == kinds["regular"]
    holders = defaultdict(set)
    for it in batch.items:
        if it.kind == "regular":
            holders[it.item_id].add(it.annotator)
    for it in batch.items:
        if it.kind in ("repeat", "swap", "overlap"):
            orig = by_id[it.link]
            assert orig.kind == "regular" and orig.prompt_id == it.prompt_id
        if it.kind in ("repeat", "swap"):
            assert it.annotator == orig.annotator
            assert (it.left_system, it.right_system) == (orig.right_system, orig.left_system)
            assert (it.left_text, it.right_text) == (orig.right_text, orig.left_text)
        if it.kind == "repeat":
            assert order[it.item_id] > order[orig.item_id]  # later, same annotator file
        if it.kind == "overlap":
            assert it.annotator != orig.annotator
            assert (it.left_system, it.right_system, it.left_text) == (orig.left_system, orig.right_system,
                                                                       orig.left_text)
            holders[orig.item_id].add(it.annotator)
    assert any(len(h) >= 2 for h in holders.values())
    # items are grouped by annotator in the order given
    seen = [a for a, _ in itertools.groupby(it.annotator for it in batch.items)]
    assert seen == ["ann1", "ann2", "ann3"]


def test_attention_items_have_a_broken_side_and_expected_verdict():
    batch = build(5, planned=fx.planned(4), attention=0.3)
    att = [it for it in batch.items if it.kind == "attention"]
    assert len(att) >= 10
    texts = set(fx.responses().values())
    for it in att:
        good, bad = (it.left_text, it.right_text) if it.expected == "left" else (it.right_text, it.left_text)
        assert good in texts  # the unbroken side is the stored response (style "none")
        if it.qc_source == "truncated":
            assert 3 <= count_words(bad) <= 6
        else:
            assert it.qc_source == "off-topic"
            # a stored response to another prompt
            assert any(bad == t for (pid, _), t in fx.responses().items() if pid != it.prompt_id)
    expected = Counter(it.expected for it in att)
    assert abs(expected["left"] - expected["right"]) <= 1  # broken side alternates left/right
    assert {it.qc_source for it in att} == {"truncated", "off-topic"}


def test_attention_pool():
    pool = ["The capital of the moon is cheese.", "Lorem ipsum dolor sit amet."]
    batch = build(2, attention=0.2, attention_pool=pool)
    att = [it for it in batch.items if it.kind == "attention"]
    assert att and all(it.qc_source == "pool" for it in att)
    for it in att:
        bad = it.right_text if it.expected == "left" else it.left_text
        assert bad in pool
        # the key names the system whose slot was broken, never None or the good side's system
        broken, good = ((it.right_system, it.left_system) if it.expected == "left"
                        else (it.left_system, it.right_system))
        assert broken is not None and broken != good


def test_acceptability_items_spread_over_systems_and_strata():
    batch = build(4, planned=fx.planned(4), acceptability=0.3)
    acc = [it for it in batch.items if it.kind == "acceptability"]
    assert len(acc) >= 2 * len(fx.SYSTEMS)
    assert all(it.right_system is None and it.right_text is None for it in acc)
    per_sys = Counter(it.left_system for it in acc)
    assert set(per_sys) == set(fx.SYSTEMS) and max(per_sys.values()) - min(per_sys.values()) <= 1
    assert {it.stratum for it in acc} == set(fx.STRATA)
    assert len({(it.prompt_id, it.left_system) for it in acc}) == len(acc)  # no response asked twice


# ---------------------------------------------------------------- max words
def test_max_words_skips_and_reports():
    planned = fx.planned(4)
    batch = build(0, planned=planned, max_words=100)
    long_pairs = [p for p in planned if p[0] == "p05" and "gamma" in p[1:3]]
    assert long_pairs, "fixture: p05/gamma (500 words) is planned"
    assert len(batch.skipped) == len(long_pairs)
    assert all("500 words > --max-words 100" in s.reason and s.prompt_id == "p05" for s in batch.skipped)
    assert batch.manifest.skipped == {"n": len(long_pairs), "prompts": ["p05"]}
    assert len(batch.items) == len(planned) - len(long_pairs)
    assert all(count_words(t) <= 100 for it in batch.items for t in (it.left_text, it.right_text))


def test_max_words_truncates_with_visible_marker():
    planned = fx.planned(4)
    batch = build(0, planned=planned, max_words=100, truncate=True)
    assert not batch.skipped and len(batch.items) == len(planned)
    cut = [t for it in batch.items for t in (it.left_text, it.right_text) if "truncated by planner" in t]
    assert cut and all(t.endswith("[… truncated by planner: 100 of 500 words shown]") for t in cut)
    assert batch.manifest.truncated_texts == 1  # one stored text, cut once (cached)


def test_every_comparison_skipped_is_an_error():
    only_long = [("p05", "gamma", "zeta", "math")]
    with pytest.raises(UsageError, match="`max_words`"):
        build(0, planned=only_long, max_words=10)
    with pytest.raises(DataError, match="no planned comparison"):
        build(0, planned=[("nope", "gamma", "zeta", "math")])
    with pytest.raises(DataError):
        build(0, planned=[("p01", "gamma", "gamma", "math")])


def test_missing_response_is_skipped_with_reason():
    resp = fx.responses()
    del resp[("p01", "zeta")]
    planned = [("p01", "alpha-7b", "zeta", "writing"), ("p02", "alpha-7b", "zeta", "math")]
    batch = assemble_batch(planned, prompt_text=fx.prompts(), response_text=resp, rng=np.random.default_rng(0))
    assert [s.reason for s in batch.skipped] == ["no response from 'zeta'"]
    assert len(batch.items) == 1


def test_planned_entries_accept_tuples_and_dataclasses():
    a = build(9, planned=fx.planned(2))
    b = build(9, planned=[PlannedComparison(*p) for p in fx.planned(2)])
    assert a == b


# ------------------------------------------------------------ normalization
NORMALIZE_CASES = [
    # (style, input, expected)
    ("none", "## Title\n**bold**", "## Title\n**bold**"),
    ("markdown", "## Title\n\n- **bold** and *it* and _u_\n* two", "Title\n\nbold and it and u\ntwo"),
    ("markdown", "```python\nx = a*b*c  # keep_this\n- not a bullet\n```", "x = a*b*c  # keep_this\n- not a bullet"),
    ("markdown", "snake_case_name and 2 * 3 * 4", "snake_case_name and 2 * 3 * 4"),
    ("full", "As an AI language model, I cannot feel.", "I cannot feel."),
    ("full", "I'm sorry, but as an AI language model, I am not able.", "I'm sorry, but I am not able."),
    ("full", "I'm ChatGPT, a large language model trained by OpenAI. The sum is 4.", "The sum is 4."),
    ("full", "Sure! Here's a list:\n\n1. one", "1. one"),
    ("full", "Certainly! Quantum computing uses qubits.", "Quantum computing uses qubits."),
    ("full", "Sure, I'd be happy to help with that.\n\nThe answer is 7.", "The answer is 7."),
    ("full", "The answer is 7.\n\nI hope this helps! Let me know if you have questions.", "The answer is 7."),
    ("full", "Hello and welcome to the show.", "Hello and welcome to the show."),  # content, kept
    ("full", "Sure!", "Sure!"),  # nothing would remain: kept
]


@pytest.mark.parametrize("style,text,expected", NORMALIZE_CASES)
def test_normalize_text_cases(style, text, expected):
    assert normalize_text(text, style) == expected


def test_normalize_style_never_mutates_inputs_and_blinds_nothing_else():
    prompts, resp = fx.prompts(), fx.responses()
    p0, r0 = copy.deepcopy(prompts), copy.deepcopy(resp)
    batch = assemble_batch(fx.planned(2), prompt_text=prompts, response_text=resp,
                           rng=np.random.default_rng(0), normalize_style="full", max_words=50, truncate=True)
    assert prompts == p0 and resp == r0
    shown = [t for it in batch.items for t in (it.left_text, it.right_text)]
    assert not any("As an AI" in t or "**" in t or "## " in t for t in shown)
    assert any(t not in resp.values() for t in shown)


def test_truncate_words_keeps_whitespace_and_counts():
    text = "one  two\nthree four five"
    assert truncate_words(text, 3) == "one  two\nthree\n\n[… truncated by planner: 3 of 5 words shown]"
    assert truncate_words(text, 5) == text


def test_manifest_length_ratio_and_left_share():
    batch = build(0, planned=fx.planned(4), attention=0.1, acceptability=0.1)
    lr = batch.manifest.length_ratio
    pairwise = [it for it in batch.items if it.kind not in ("attention", "acceptability")]
    assert lr["n"] == len(pairwise)
    # ratio of (words+1): hand check of the median against numpy
    ratios = sorted((count_words(it.left_text) + 1) / (count_words(it.right_text) + 1) for it in pairwise)
    assert lr["median"] == pytest.approx(float(np.median(ratios)), rel=1e-12)  # same formula, float noise only
    assert set(batch.manifest.left_share) == set(fx.SYSTEMS)


def test_real_vicuna_batch_has_no_name_mentions(vicuna_data):
    ptext, resp, strata, systems = fx.vicuna(vicuna_data)
    pids = sorted(ptext)
    planned = [(pids[(7 * n) % 80], a, b, strata[pids[(7 * n) % 80]])
               for n, (a, b) in enumerate(itertools.combinations(systems, 2))]
    batch = assemble_batch(planned, prompt_text=ptext, response_text=resp, rng=np.random.default_rng(0),
                           attention=0.1, acceptability=0.1, repeat=0.05, normalize_style="full",
                           max_words=400, truncate=True)
    assert batch.manifest.blinding_warnings == []
    assert batch.manifest.kinds["regular"] == len(planned)


# ------------------------------------------------------------ the typed manifest
def test_manifest_json_round_trip_keeps_keys_and_order():
    import json

    from planner.batch.assemble import BatchManifest

    batch = build(2, **FULL_QC)
    doc = batch.manifest.to_json()
    # the key order the study has always stored (json.dumps without sort_keys writes it as is)
    assert list(doc) == ["n_items", "n_comparisons", "kinds", "per_pair", "per_stratum", "per_annotator",
                         "left_share", "qc", "qc_rule", "n_base", "acceptability_shortfall", "attention_fallbacks",
                         "length_ratio", "truncated_texts", "skipped", "blinding_warnings", "options"]
    back = BatchManifest.from_json(json.loads(json.dumps(doc)))
    assert back == batch.manifest and json.dumps(back.to_json()) == json.dumps(doc)
    assert back.n_items == len(batch.items) == doc["n_items"]


def test_manifest_from_an_older_study_loads_and_writes_back_unchanged():
    from planner.batch.assemble import BatchManifest

    # an older manifest: no attention_fallbacks / blinding_warnings, and a key this version does not know
    old = {"n_items": 3, "n_comparisons": 3, "kinds": {"regular": 3}, "qc_rule": "k = ...", "legacy_note": "x"}
    m = BatchManifest.from_json(old)
    assert m.attention_fallbacks is None and m.blinding_warnings is None and m.extra == {"legacy_note": "x"}
    assert m.to_json() == old
    with pytest.raises(DataError, match="must be a JSON object"):
        BatchManifest.from_json(["not", "a", "manifest"])
