"""Tests of allocate (planner.allocation, apportion, the workflow): apportionment, methods, ordering, files."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from planner.allocation.apportion import apportion
from planner.allocation.learned import pointwise_gaps, stratum_sd
from planner.allocation.maths import allocate, choose_prompts, parse_target, plan_strata
from planner.allocation.result import Allocation
from planner.errors import DataError, UsageError
from planner.formats.prompts import PromptRow
from planner.formats.prompts_writer import write_prompts
from planner.workflows.allocate import read_pilot, read_prompts


def rows(spec: dict[str, int], **extra) -> list[PromptRow]:
    """Prompts ``<stratum>-<i>`` with ``spec[stratum]`` prompts per stratum."""
    return [PromptRow(f"{h}-{i:03d}", f"text {h} {i}", h, **extra) for h, n in spec.items() for i in range(n)]


# ---------------------------------------------------------------------------
# apportion (largest remainder with bounds)

names = st.sampled_from([f"s{i}" for i in range(8)])
basis_st = st.dictionaries(names, st.floats(0.0, 100.0, allow_nan=False), min_size=1, max_size=8).filter(
    lambda d: sum(d.values()) > 1e-3)


@settings(max_examples=200, deadline=None)
@given(basis=basis_st, n=st.integers(0, 500))
def test_apportion_sums_and_is_within_one_of_quota_when_unbounded(basis, n):
    got = apportion(basis, n)
    assert sum(got.values()) == n
    total = sum(basis.values())
    for h, v in got.items():
        quota = n * basis[h] / total  # exact Hamilton quota
        assert math.floor(quota) <= v <= math.ceil(quota)


@settings(max_examples=200, deadline=None)
@given(data=st.data(), basis=basis_st)
def test_apportion_respects_minimums_and_caps(data, basis):
    keys = sorted(basis)
    upper = {h: data.draw(st.integers(0, 40)) for h in keys}
    lower = {h: data.draw(st.integers(0, upper[h])) for h in keys}
    n = data.draw(st.integers(sum(lower.values()), sum(upper.values())))
    got = apportion(basis, n, lower=lower, upper=upper)
    assert sum(got.values()) == n
    for h in keys:
        assert lower[h] <= got[h] <= upper[h]


def test_apportion_hand_example_and_tie_break():
    # Quotas 10 * (1,1,1)/3 = 3.33 each: floors 3,3,3 leave 1, equal remainders and quotas,
    # so the tie goes to the first name.
    assert apportion({"b": 1, "a": 1, "c": 1}, 10) == {"b": 3, "a": 4, "c": 3}
    # Cap: a (basis 8) capped at 2; the surplus goes to b and c in proportion 1:1.
    # continuous: a=2, b=c=(10-2)/2=4.
    assert apportion({"a": 8, "b": 1, "c": 1}, 10, upper={"a": 2}) == {"a": 2, "b": 4, "c": 4}


def test_apportion_infeasible_bounds_are_usage_errors():
    with pytest.raises(UsageError, match=r"`budget` \(10\) must be in \[0, 4\]"):
        apportion({"a": 1, "b": 1}, 10, upper={"a": 2, "b": 2})


# ---------------------------------------------------------------------------
# allocate: methods


@settings(max_examples=60, deadline=None)
@given(spec=st.dictionaries(names, st.integers(1, 30), min_size=1, max_size=6), data=st.data(),
       method=st.sampled_from(["proportional", "equal"]))
def test_allocate_sums_to_budget_with_caps_and_minimums(spec, data, method):
    prompts = rows(spec)
    k = data.draw(st.integers(0, min(spec.values())))
    budget = data.draw(st.integers(max(1, k * len(spec)), len(prompts)))
    res = allocate(prompts, budget, method=method, min_per_stratum=k, seed=1)
    assert sum(s.allocated for s in res.strata) == budget == len(res.prompts)
    for s in res.strata:
        assert k <= s.allocated <= s.available
    assert len({c.prompt for c in res.prompts}) == budget  # without replacement: no prompt twice


def test_proportional_hand_example():
    # N = (50, 30, 20), budget 10: quotas 5, 3, 2 exactly; weights P_h / (n_h/n) = 1.
    res = allocate(rows({"a": 50, "b": 30, "c": 20}), 10)
    assert [s.allocated for s in res.strata] == [5, 3, 2]
    assert all(s.weight == pytest.approx(1.0) for s in res.strata)  # exact arithmetic up to float rounding


def test_frequency_uses_weight_sums_for_basis_and_population_share():
    prompts = (rows({"common": 4}, weight=3.0) + rows({"rare": 4}, weight=1.0))
    res = allocate(prompts, 4, method="frequency")
    # weight sums 12 : 4 -> quotas 3 : 1; population shares 0.75 : 0.25 = sample shares -> weight 1.
    assert {s.stratum: s.allocated for s in res.strata} == {"common": 3, "rare": 1}
    assert {s.stratum: s.population_share for s in res.strata} == {"common": 0.75, "rare": 0.25}


def test_target_shares_and_errors():
    prompts = rows({"common": 40, "factual": 30, "ambiguous": 20, "adversarial": 10})
    t = parse_target("common=0.4,factual=0.3,ambiguous=0.2,adversarial=0.1")
    res = allocate(prompts, 20, method="target", target=t)
    # 20 * (0.4, 0.3, 0.2, 0.1) = 8, 6, 4, 2 exactly
    assert {s.stratum: s.allocated for s in res.strata} == {"common": 8, "factual": 6, "ambiguous": 4,
                                                            "adversarial": 2}
    with pytest.raises(UsageError, match=r"sum to 0.9"):
        allocate(prompts, 20, method="target", target={"common": 0.9})
    with pytest.raises(UsageError, match="unknown strata hard"):
        allocate(prompts, 20, method="target", target={"common": 0.5, "hard": 0.5})
    with pytest.raises(UsageError, match="`target`"):
        parse_target("common:0.4")


def test_neyman_hand_example():
    # Cochran (1977) §5.5: n_h = n N_h S_h / sum(N S).
    # N = (100, 50, 50), S = (0.5, 0.2, 0.1): N*S = (50, 10, 5), sum 65.
    # n = 30: quotas 30*50/65 = 23.077, 30*10/65 = 4.615, 30*5/65 = 2.308;
    # floors 23 + 4 + 2 = 29, one left -> largest remainder 0.615 (b): (23, 5, 2).
    res = allocate(rows({"a": 100, "b": 50, "c": 50}), 30, method="neyman", sd={"a": 0.5, "b": 0.2, "c": 0.1})
    assert [s.allocated for s in res.strata] == [23, 5, 2]
    assert [s.quota for s in res.strata] == pytest.approx([30 * 50 / 65, 30 * 10 / 65, 30 * 5 / 65])
    assert [s.sd for s in res.strata] == [0.5, 0.2, 0.1]


def test_neyman_falls_back_with_a_note():
    res = allocate(rows({"a": 20, "b": 10}), 9, method="neyman", sd={})
    assert [s.allocated for s in res.strata] == [6, 3]  # proportional: 9 * 20/30, 9 * 10/30
    assert any("fell back to proportional" in n for n in res.notes)
    res = allocate(rows({"a": 20, "b": 10}), 9, method="neyman", sd={"a": 0.5})
    assert any("no S_h for b" in n for n in res.notes)


def test_stratum_sd_hand_example():
    # Stratum x, pair (s1, s2): verdicts A, then s2-first B (= s1 wins) ... y for s1 = 1, 1, 0
    # -> mean 2/3, SS = 2*(1/3)^2 + (2/3)^2 = 2/3, df = 3 - 1 = 2 -> S = sqrt(1/3).
    # Stratum y, pair (s1, s2): A, tie -> y = 1, 0.5, mean 0.75, SS = 0.125, df 1 -> S = sqrt(0.125).
    # Invalid verdicts are excluded.
    j = [
        {"prompt": "p1", "a": "s1", "b": "s2", "verdict": "A"},
        {"prompt": "p1", "a": "s2", "b": "s1", "verdict": "B"},
        {"prompt": "p2", "a": "s1", "b": "s2", "verdict": "B"},
        {"prompt": "p2", "a": "s1", "b": "s2", "verdict": "invalid"},
        {"prompt": "q1", "a": "s1", "b": "s2", "verdict": "A"},
        {"prompt": "q1", "a": "s1", "b": "s2", "verdict": "tie"},
    ]
    sd = stratum_sd(j, {"p1": "x", "p2": "x", "q1": "y"})
    assert sd == pytest.approx({"x": math.sqrt(1 / 3), "y": math.sqrt(0.125)})


def test_budget_and_min_errors():
    prompts = rows({"a": 3, "b": 3})
    with pytest.raises(UsageError, match=r"`budget` \(7\) must be <= 6"):
        allocate(prompts, 7)
    with pytest.raises(UsageError, match=r"`budget` \(0\) must be an integer >= 1"):
        allocate(prompts, 0)
    with pytest.raises(UsageError, match="`min_per_stratum`"):
        allocate(prompts, 3, min_per_stratum=2)
    with pytest.raises(UsageError, match="`method`"):
        allocate(prompts, 3, method="optimal")


def test_with_replacement_cycles_the_stratum():
    res = allocate(rows({"a": 2, "b": 8}), 20, with_replacement=True)
    a = [c.prompt for c in res.prompts if c.stratum == "a"]
    assert len(a) == 4 and sorted(a) == ["a-000", "a-000", "a-001", "a-001"]  # 20 * 2/10 = 4, cycled


def test_missing_stratum_one_stratum_or_error():
    prompts = [PromptRow(f"p{i}", "t") for i in range(5)]
    res = allocate(prompts, 3)
    assert [s.stratum for s in res.strata] == ["all"] and "one stratum" in res.notes[0]
    with pytest.raises(DataError, match="`by` stratum needs one"):
        allocate(prompts, 3, by="stratum")
    mixed = prompts + rows({"a": 2})
    with pytest.raises(DataError, match="prompt 'p0' has no stratum") as exc:
        allocate(mixed, 3)
    assert len(exc.value.lines()) == 5  # one line per prompt without a stratum


def test_by_difficulty():
    prompts = [PromptRow(f"p{i}", "t", "x", difficulty=[1, 2, 3][i % 3]) for i in range(9)]
    res = allocate(prompts, 6, by="difficulty", method="equal")
    assert {s.stratum: s.allocated for s in res.strata} == {"1": 2, "2": 2, "3": 2}


def test_bad_weights_are_data_errors():
    bad = rows({"a": 2}, weight=float("nan"))
    with pytest.raises(DataError, match="weight"):
        allocate(bad, 1)
    zero = rows({"a": 2, "b": 2}, weight=0.0)
    with pytest.raises(DataError, match="all prompt weights are 0"):
        allocate(zero, 1, method="frequency")
    dup = rows({"a": 2}) + rows({"a": 1})
    with pytest.raises(DataError, match="duplicate prompt id 'a-000'"):
        allocate(dup, 1)


# ---------------------------------------------------------------------------
# Within-stratum order


def test_frozen_first_then_contested_then_random():
    prompts = [PromptRow(f"p{i}", "t", "s", frozen=(i == 7)) for i in range(8)]
    gaps = {"p3": 0.0, "p5": 1.0, "p1": 3.0}  # others have no pointwise gap
    got = choose_prompts(prompts, "s", 8, set(), np.random.default_rng(0), frozen_first=True, pointwise=gaps)
    assert got[:4] == ["p7", "p3", "p5", "p1"]
    assert sorted(got[4:]) == ["p0", "p2", "p4", "p6"]
    only = choose_prompts(prompts, "s", 8, {"p3"}, np.random.default_rng(0), pointwise=gaps, gap=1.0)
    assert only == ["p5"]  # p3 used, p1's gap 3 > 1


def test_pointwise_gaps():
    recs = [{"prompt": "p", "system": "x", "score": 7}, {"prompt": "p", "system": "y", "score": 9},
            {"prompt": "p", "system": "z", "score": 8}, {"prompt": "q", "system": "x", "score": 5}]
    assert pointwise_gaps(recs) == {"p": 2.0}  # 9 - 7; q has one system only


def test_determinism_same_seed_same_prompts():
    prompts = rows({"a": 30, "b": 20, "c": 10})
    r1 = allocate(prompts, 17, seed=42)
    r2 = allocate(list(reversed(prompts)), 17, seed=42)  # input order does not matter either
    r3 = allocate(prompts, 17, seed=43)
    assert r1 == r2
    assert r1.prompts != r3.prompts


# ---------------------------------------------------------------------------
# Re-weighting recovers the population mean


def test_weights_recover_population_mean_when_one_stratum_is_oversampled():
    # Population: 800 easy prompts (win prob 0.8) and 200 hard (0.3): mean 0.8*0.8 + 0.2*0.3 = 0.70.
    # `equal` takes 100 + 100, oversampling hard 2.5x; weights 0.8/0.5 = 1.6 and 0.2/0.5 = 0.4.
    prompts = rows({"easy": 800, "hard": 200})
    p_win = {"easy": 0.8, "hard": 0.3}
    rng = np.random.default_rng(2024)
    unweighted, weighted = [], []
    for _rep in range(200):
        res = allocate(prompts, 200, method="equal", rng=rng)
        y = np.array([rng.random() < p_win[c.stratum] for c in res.prompts], dtype=float)
        w = np.array([c.weight for c in res.prompts])
        unweighted.append(y.mean())
        weighted.append((w * y).sum() / w.sum())
    # Unweighted expectation 0.5*0.8 + 0.5*0.3 = 0.55, biased by -0.15.
    # Weighted: SE of one estimate = sqrt(0.8^2*0.16/100 + 0.2^2*0.21/100) ≈ 0.033; of the mean
    # of 200 reps ≈ 0.0023, so 0.01 is > 4 SE; the bias of 0.15 is > 60 SE.
    assert np.mean(unweighted) == pytest.approx(0.55, abs=0.01)
    assert np.mean(weighted) == pytest.approx(0.70, abs=0.01)


# ---------------------------------------------------------------------------
# plan_strata (next-batch API)


def test_plan_strata_fills_deficits():
    # T = 10 + 10 = 20 -> desired 8, 6, 4, 2; already (6, 2, 2, 0) -> deficits 2, 4, 2, 2 = k.
    got = plan_strata({"common": 0.4, "factual": 0.3, "ambiguous": 0.2, "adversarial": 0.1},
                      {"common": 6, "factual": 2, "ambiguous": 2}, 10)
    assert got == {"common": 2, "factual": 4, "ambiguous": 2, "adversarial": 2}
    capped = plan_strata({"a": 0.5, "b": 0.5}, {}, 10, available={"a": 3, "b": 100})
    assert capped == {"a": 3, "b": 7}
    with pytest.raises(UsageError, match="`k` \\(10\\) must be <= 4"):
        plan_strata({"a": 0.5, "b": 0.5}, {}, 10, available={"a": 2, "b": 2})


@settings(max_examples=100, deadline=None)
@given(already=st.lists(st.integers(0, 50), min_size=3, max_size=3), k=st.integers(0, 60))
def test_plan_strata_sums_to_k(already, k):
    shares = {"a": 0.5, "b": 0.3, "c": 0.2}
    got = plan_strata(shares, dict(zip("abc", already)), k)
    assert sum(got.values()) == k and all(v >= 0 for v in got.values())


# ---------------------------------------------------------------------------
# Files


def test_read_prompts_csv_with_bom_and_bad_rows(tmp_path):
    f = tmp_path / "p.csv"
    f.write_text("\ufeffid,text,stratum,weight,frozen\np1,hello,a,2,true\np2,\"multi\nline\",b,,no\n",
                 encoding="utf-8")
    got = read_prompts(f)
    assert [(p.id, p.stratum, p.weight, p.frozen) for p in got] == [("p1", "a", 2.0, True), ("p2", "b", None, False)]
    bad = tmp_path / "bad.csv"
    bad.write_text("id,text,weight\np1,x,-1\np1,y,1\np3,z,abc\n", encoding="utf-8")
    with pytest.raises(DataError) as exc:
        read_prompts(bad)
    bad = bad.name  # problems name the file by its name, as the shared readers do
    assert exc.value.lines() == [
        f"{bad}:2: weight '-1'; expected a finite number >= 0 (and 2 more bad prompt rows below)",
        f"{bad}:3: duplicate prompt id 'p1' (first at {bad}:2)",
        f"{bad}:4: weight 'abc'; expected a finite number >= 0",
    ]


def test_read_pilot_rejects_unknown_and_bad_verdicts(tmp_path):
    f = tmp_path / "pilot.jsonl"
    # ids are required: --pilot reads with ingest's reader (normalized judgments need an id)
    f.write_text(json.dumps({"id": "j1", "prompt": "p1", "a": "x", "b": "y", "verdict": "A"}) + "\n"
                 + json.dumps({"id": "j2", "prompt": "zz", "a": "x", "b": "y", "verdict": "A"}) + "\n"
                 + json.dumps({"id": "j3", "prompt": "p1", "a": "x", "b": "y", "verdict": "left"}) + "\n",
                 encoding="utf-8")
    with pytest.raises(DataError) as exc:
        read_pilot(f, {"p1"})
    assert [p.split(": ", 1)[0] for p in exc.value.lines()] == ["pilot.jsonl:2", "pilot.jsonl:3"]


def test_write_prompts_refuses_overwrite_and_writes_both_formats(tmp_path):
    res = allocate(rows({"a": 3, "b": 1}), 2, min_per_stratum=1, seed=0)
    for name in ("out.csv", "out.jsonl"):
        path = tmp_path / name
        write_prompts(res, path)
        with pytest.raises(UsageError, match="exists; pass `force`"):
            write_prompts(res, path)
        write_prompts(res, path, force=True)
    lines = (tmp_path / "out.jsonl").read_text().splitlines()
    assert [json.loads(x)["stratum"] for x in lines] == ["a", "b"]
    assert (tmp_path / "out.csv").read_text().splitlines()[0] == "id,text,stratum,weight,frozen,order,gap"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.csv", "out.jsonl"]  # no temp files left
    assert isinstance(res, Allocation)
