"""planner.batch.pair_prompts (array bookkeeping of next-batch) against the per-pair set loop it replaced."""

from __future__ import annotations

import numpy as np
import pytest

from planner.batch.pair_prompts import pair_prompts


def _reference(systems, responses, usage, reuse_prompts):
    """The per-pair Python loop of plan_next_batch before the vectorised one, written out (sets, one pair at a time)."""
    have: dict[str, set] = {}
    for p, s in responses:
        have.setdefault(s, set()).add(p)
    pair_prompts_, unused = {}, {}
    for i in range(len(systems)):
        for j in range(i + 1, len(systems)):
            pair_prompts_[(i, j)] = have.get(systems[i], set()) & have.get(systems[j], set())
    for (i, j), ps in pair_prompts_.items():
        used = usage.get((systems[i], systems[j]), frozenset())
        unused[(i, j)] = (ps - used) or (ps if reuse_prompts else set())
    allowed = {p for p, ps in unused.items() if ps}
    reused = sum(1 for (i, j), ps in pair_prompts_.items()
                 if ps and not ps - usage.get((systems[i], systems[j]), frozenset()) and (i, j) in allowed)
    missing = [(systems[i], systems[j]) for (i, j), ps in pair_prompts_.items() if not ps]
    return unused, allowed, reused, missing


def _random_case(seed, m=9, n_prompts=14):
    rng = np.random.default_rng(seed)
    systems = [f"s{k}" for k in range(m)]
    prompts = [f"p{k:02d}" for k in range(n_prompts)]
    responses = [(p, s) for s in systems for p in prompts if rng.random() < 0.7]
    usage = {}
    for i in range(m):
        for j in range(i + 1, m):
            if rng.random() < 0.8:
                # used prompts include ones a system never answered and one unknown to the study
                k = int(rng.integers(0, n_prompts + 1))
                used = set(rng.choice(prompts + ["elsewhere"], size=k, replace=False).tolist())
                usage[(systems[i], systems[j])] = frozenset(used)
    usage[("s1", "s0")] = frozenset({"p00"})          # wrong order: ignored by both
    usage[("s0", "ghost")] = frozenset({"p01"})       # a system the study does not have: ignored
    return systems, responses, usage


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("reuse", [False, True])
def test_same_sets_and_counts_as_the_loop(seed, reuse):
    systems, responses, usage = _random_case(seed)
    unused, allowed, reused, missing = _reference(systems, responses, usage, reuse)
    pp = pair_prompts(systems, responses, usage, reuse_prompts=reuse)
    assert pp.allowed() == allowed
    assert pp.capacities() == {p: len(ps) for p, ps in unused.items() if ps}
    assert pp.n_reused() == reused
    assert pp.missing() == missing
    for (i, j), ps in unused.items():
        assert pp.unused(i, j) == ps


def test_hand_case():
    # s0 answered p1 p2 p3, s1 answered p2 p3, s2 answered p3; pair (0, 1) used p2 and p9 (never answered)
    responses = [("p1", "s0"), ("p2", "s0"), ("p3", "s0"), ("p2", "s1"), ("p3", "s1"), ("p3", "s2")]
    usage = {("s0", "s1"): frozenset({"p2", "p9"}), ("s1", "s2"): frozenset({"p3"})}
    pp = pair_prompts(["s0", "s1", "s2"], responses, usage)
    # pairs (0,1) (0,2) (1,2): both-answered 2, 1, 1; fresh 1 (p3), 1 (p3), 0
    assert pp.n_both.tolist() == [2, 1, 1] and pp.n_fresh.tolist() == [1, 1, 0]
    assert pp.capacity.tolist() == [1, 1, 0] and pp.allowed() == {(0, 1), (0, 2)}
    assert pp.unused(0, 1) == {"p3"} and pp.unused(1, 2) == set()
    again = pair_prompts(["s0", "s1", "s2"], responses, usage, reuse_prompts=True)
    assert again.capacity.tolist() == [1, 1, 1] and again.n_reused() == 1 and again.unused(1, 2) == {"p3"}


def test_no_usage_and_no_pairs():
    pp = pair_prompts(["a", "b"], [("p", "a"), ("p", "b")], {})
    assert pp.allowed() == {(0, 1)} and pp.missing() == []
    one = pair_prompts(["a"], [("p", "a")], {})
    assert one.allowed() == set() and one.n_reused() == 0 and one.missing() == []
