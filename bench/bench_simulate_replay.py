"""Active selection against round-robin on the real replays, their fixed-order variants and synthetic pools.

Sets (``--sets``, comma-separated):

* the three shared real sets (``vicuna80_human``, ``vicuna80_gpt4``, ``oa_gpt4``: the QLoRA files
  of ``shared/data/judgments``) and the five PRD sets of bench/data/replays
  (``prd_vicuna80_claude``, ...): every pair in both presentation orders;
* ``NAME~fixed``: the fixed-order variant of a set — per pair ONE presentation order kept, chosen
  by a fair coin from ``numpy.random.default_rng(FIXED_SEED)`` over the pairs in sorted order
  (:func:`planner.simulation.replay.fixed_order`), the other order's verdicts dropped; its truth is
  its own full-pool fit, as for every replay;
* ``linear~fixed`` / ``linear~both``: a synthetic pool, 8 systems evenly over 400 Elo, position
  effect γ = 0.5 logit, Davidson ν = 0.3, 400 verdicts per pair drawn from the model, in one
  random order per pair (``~fixed``) or half in each (``~both``); the truth is the generating one
  (every pair counts for credible-τ).

For each set and batch size (``--batches``) the real loop is replayed without replacement
(:func:`planner.workflows.simulate.simulate`, seed 0, common random numbers: the n-th verdict a
strategy draws in a presentation order of a pair is the same for every strategy) and every
finished run is kept in ``OUT/<set>_b<batch>.jsonl`` (``--out``/``--resume``). Budget: 1,000
comparisons, or 3/4 of the pool when that is less (the PRD variants: 800 verdicts, budget 600).

Per strategy and target: comparisons at which the mean curve meets the target, reps that reached
it, ratio to round-robin with its 95% paired bootstrap band, and the target metric averaged over
the budget with its paired difference to round-robin (95% band). ``--markdown FILE`` appends one
table row per (set, batch) for credible-τ 0.9.

    python bench/bench_simulate_replay.py [--reps 100] [--batches 10,20,50] [--sets all] [--out /tmp/simrep]
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from planner.model import bt  # noqa: E402
from planner.simulation.replay import ReplayPool, fixed_order, order_balance, pool_from_records, replay_truth  # noqa: E402
from planner.simulation.spec import SimulationSpec, parse_strategies  # noqa: E402
from planner.simulation.truth import Truth, synthetic_names  # noqa: E402
from planner.workflows.simulate import read_replay, simulate  # noqa: E402

# the shared sets: $PLANNER_SHARED_DATA, else ../shared/data/judgments beside the checkout (or beside its parent,
# for a worktree one level down)
SHARED = ([Path(os.environ["PLANNER_SHARED_DATA"])] if os.environ.get("PLANNER_SHARED_DATA") else []) + \
    [p / "shared" / "data" / "judgments" for p in (ROOT.parent, ROOT.parent.parent)]
MORE = ROOT / "bench" / "data" / "replays"  # further real sets (bench/data/replays/README.md)
REAL = ("vicuna80_human", "vicuna80_gpt4", "oa_gpt4", "prd_vicuna80_claude", "prd_vicuna80_bard",
        "prd_vicuna80_gpt35", "prd_vicuna80_vicuna13b", "prd_vicuna80_gpt4")
SETS = REAL + tuple(f"{s}~fixed" for s in REAL)
TARGETS = ("credible-tau=0.9", "tau=0.9", "credible-all")
FIXED_SEED = 0          # the coin of the fixed-order variants
SYNTH_SEED = 25         # the synthetic pools


def _real_pool(name: str) -> ReplayPool:
    for folder in SHARED:
        if (folder / f"qlora_{name}.jsonl").exists():
            return read_replay(folder / f"qlora_{name}.jsonl")
    if (MORE / f"{name}.jsonl").exists():
        return read_replay(MORE / f"{name}.jsonl")
    raise SystemExit(f"{name}: no such set (looked in {', '.join(map(str, SHARED))} and {MORE})")


def synthetic_pool(both: bool, m: int = 8, per_pair: int = 400, gamma: float = 0.5, nu: float = 0.3):
    """(pool, truth): ``linear`` strengths over 400 Elo judged with a position effect, per pair in one
    random order (or half in each), verdicts drawn from the Davidson model."""
    rng = np.random.default_rng(SYNTH_SEED)
    names = synthetic_names(m)
    beta = np.linspace(200, -200, m) / bt.ELO_SCALE
    records = []
    for i in range(m):
        for j in range(i + 1, m):
            first_left = rng.random() < 0.5
            for k in range(per_pair):
                left_i = (k % 2 == 0) if both else first_left
                a, b = (i, j) if left_i else (j, i)
                pa, pb, _ = bt.outcome_probs(beta[a] - beta[b] + gamma, nu)
                u = rng.random()
                verdict = "A" if u < pa else "B" if u < pa + pb else "tie"
                records.append({"a": names[a], "b": names[b], "verdict": verdict, "prompt": f"p{k // 2}"})
    pool = pool_from_records(records, f"synthetic linear, {'both orders' if both else 'one order per pair'}")
    order = [pool.systems.index(s) for s in names]
    return pool, Truth(pool.systems, beta[np.argsort(order)] - beta.mean())


def load(name: str) -> tuple[ReplayPool, Truth]:
    if name.startswith("linear~"):
        return synthetic_pool(both=name == "linear~both")
    base, _, variant = name.partition("~")
    pool = _real_pool(base)
    if variant == "fixed":
        pool = fixed_order(pool, np.random.default_rng(FIXED_SEED))
    elif variant:
        raise SystemExit(f"{name}: unknown variant {variant!r} (fixed)")
    return pool, replay_truth(pool)


def _band(b):
    if b is None:
        return "–"
    hi = "∞" if b[1] == float("inf") else f"{b[1]:.2f}"
    return f"[{b[0]:.2f}–{hi}]"


def _row(name, pool, batch, budget, reps, res) -> str:
    act = next(s for s in res.strategies if s.strategy == "active")
    rr = next(s for s in res.strategies if s.strategy == "round-robin")
    ratio = "—" if act.ratio_to_round_robin is None else f"**{act.ratio_to_round_robin:.2f}** {_band(act.rr_band)}"
    need = f"{act.needed_mean_curve or '—'} vs {rr.needed_mean_curve or '—'}"
    d = act.vs_round_robin
    over = "—" if d is None else f"{act.budget_mean:.4f} vs {rr.budget_mean:.4f}: **{d[0]:+.4f}** [{d[1]:+.4f}, {d[2]:+.4f}]"
    return (f"| `{name}` | {batch} | {pool.size:,} / {budget:,} | {reps} | {need} | {ratio} | "
            f"{act.reached} / {rr.reached} | {over} |")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--reps", type=int, default=100)
    ap.add_argument("--budget", type=int, default=1000)
    ap.add_argument("--batches", default="10,20,50")
    ap.add_argument("--strategies", default="active,round-robin")
    ap.add_argument("--targets", default=",".join(TARGETS))
    ap.add_argument("--out", default="/tmp/simrep")
    ap.add_argument("--workers", type=int, default=1)
    ap.add_argument("--sets", default="all", help="comma-separated; 'all' = the eight real sets and their variants")
    ap.add_argument("--markdown", help="append a credible-tau=0.9 table row per (set, batch) to this file")
    ap.add_argument("--gamma-known", action="store_true",
                    help="ablation: the selection treats the position effect as known at its mean (the rule "
                         "before issue 25, in this simulator); use another --out")
    args = ap.parse_args()
    if args.gamma_known:
        from planner.acquisition import state

        full = state._joint

        def plugged(posterior, cov):
            joint = full(posterior, cov)
            joint[-1, :] = joint[:, -1] = 0.0
            return joint
        state._joint = plugged
    Path(args.out).mkdir(parents=True, exist_ok=True)
    names = SETS if args.sets == "all" else tuple(args.sets.split(","))
    for name in names:
        pool, truth = load(name)
        budget = min(args.budget, (3 * pool.size) // 4)
        note = order_balance(pool).note()
        for batch in (int(b) for b in args.batches.split(",")):
            spec = SimulationSpec("replay", parse_strategies(args.strategies), n_systems=len(pool.systems),
                                  budget=budget, batch=batch, reps=args.reps, seed=0, truth=truth, replay=pool)
            out = Path(args.out) / f"{name}_b{batch}.jsonl"
            t0 = time.perf_counter()
            for target in args.targets.split(","):
                res = simulate(spec, target=target, workers=args.workers, out=out, resume=out.exists())
                if target == args.targets.split(",")[0]:
                    print(f"\n== {name}: {len(pool.systems)} systems, {pool.size} judgments, budget {budget}, "
                          f"batch {batch}, {args.reps} reps ({time.perf_counter() - t0:.0f} s)"
                          + (f"\n   {note}" if note else ""))
                    if args.markdown and target == "credible-tau=0.9":
                        with open(args.markdown, "a", encoding="utf-8") as fh:
                            fh.write(_row(name, pool, batch, budget, args.reps, res) + "\n")
                print(f"-- target {target}")
                for s in res.strategies:
                    n = "-" if s.needed_mean_curve is None else f"{s.needed_mean_curve}"
                    rr = "-" if s.ratio_to_round_robin is None else f"{s.ratio_to_round_robin:.2f}"
                    over = "" if s.budget_mean is None else f"  over budget {s.budget_mean:.4f}"
                    if s.vs_round_robin is not None:
                        d, lo, hi = s.vs_round_robin
                        over += f" ({d:+.4f} vs RR [{lo:+.4f} {hi:+.4f}])"
                    print(f"  {s.name:12s} needed {n:>5s}  reached {s.reached:>3d}/{len(s.needed):<3d} "
                          f"xRR {rr:>5s} {_band(s.rr_band)}{over}")
            sys.stdout.flush()


if __name__ == "__main__":
    main()
