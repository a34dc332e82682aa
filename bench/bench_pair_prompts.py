"""Issue 14: next-batch's per-pair prompt bookkeeping at Arena scale, before (set loop) and after (arrays).

300 systems (44,850 pairs), 300 prompts, every system answers every prompt,
1,000,000 judgments spread over the pairs (their prompt sets as
``Study.pair_prompt_usage`` returns them). "Before" is the Python loop
``plan_next_batch`` ran until issue 14 (per pair: intersection of the two
systems' prompt sets, the unused set, the reused count), written out here;
"after" is :func:`planner.batch.pair_prompts.pair_prompts` plus the prompt sets of
the 1,000 pairs a batch of 1,000 picks can touch. Both give the same allowed
pairs, capacities, reused count and unused sets (checked). CPU time
(``time.process_time``), best of ``--repeat``; run with ``nice -n 10``.

    python bench/bench_pair_prompts.py [--systems 300] [--prompts 300] [--judgments 1000000] [--repeat 3]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from test_pair_prompts import _reference

from planner.batch.pair_prompts import pair_prompts


def build(m: int, n_prompts: int, n: int, seed: int = 0):
    rng = np.random.default_rng(seed)
    systems = [f"model-{k:03d}" for k in range(m)]
    prompts = [f"prompt-{k:04d}" for k in range(n_prompts)]
    responses = [(p, s) for s in systems for p in prompts]
    pi, pj = np.triu_indices(m, 1)
    pair = rng.integers(0, pi.size, size=n)
    prompt = rng.integers(0, n_prompts, size=n)
    usage: dict[tuple[str, str], set] = {}
    for t, q in zip(pair.tolist(), prompt.tolist()):
        usage.setdefault((systems[pi[t]], systems[pj[t]]), set()).add(prompts[q])
    return systems, responses, {k: frozenset(v) for k, v in usage.items()}


def before(systems, responses, usage, reuse_prompts=False):
    """plan_next_batch's loops until issue 14 (the per-pair sets), as tests/test_pair_prompts.py keeps them."""
    unused, allowed, reused, _ = _reference(systems, responses, usage, reuse_prompts)
    return allowed, {p: len(ps) for p, ps in unused.items()}, reused, unused


def after(systems, responses, usage, chosen, reuse_prompts=False):
    pp = pair_prompts(systems, responses, usage, reuse_prompts=reuse_prompts)
    allowed, capacity, reused = pp.allowed(), pp.capacities(), pp.n_reused()
    unused = {key: pp.unused(*key) for key in chosen}
    return allowed, capacity, reused, unused


def _cpu(fn, repeat):
    best = float("inf")
    for _ in range(repeat):
        t0 = time.process_time()
        out = fn()
        best = min(best, time.process_time() - t0)
    return best, out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--systems", type=int, default=300)
    ap.add_argument("--prompts", type=int, default=300)
    ap.add_argument("--judgments", type=int, default=1_000_000)
    ap.add_argument("--picks", type=int, default=1000)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    systems, responses, usage = build(args.systems, args.prompts, args.judgments)
    pi, pj = np.triu_indices(args.systems, 1)
    pick = np.random.default_rng(1).choice(pi.size, size=min(args.picks, pi.size), replace=False)
    chosen = sorted(zip(pi[pick].tolist(), pj[pick].tolist()))
    t_before, (al_b, cap_b, re_b, un_b) = _cpu(lambda: before(systems, responses, usage), args.repeat)
    t_after, (al_a, cap_a, re_a, un_a) = _cpu(lambda: after(systems, responses, usage, chosen), args.repeat)
    same = (al_a == al_b and cap_a == {p: n for p, n in cap_b.items() if n} and re_a == re_b
            and all(un_a[k] == un_b[k] for k in chosen))
    print(f"{args.systems} systems ({pi.size:,} pairs), {args.prompts} prompts, {args.judgments:,} judgments "
          f"({sum(len(v) for v in usage.values()):,} pair-prompt uses): before {t_before:.3f} s CPU, "
          f"after {t_after:.3f} s CPU ({t_before / t_after:.1f}x); identical: {same}")
    return 0 if same else 1


if __name__ == "__main__":
    raise SystemExit(main())
