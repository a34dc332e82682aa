"""Issue 14 benchmark: active vs the baselines on the shared real replays, under four targets.

For each shared real set (QLoRA OA GPT-4, Vicuna80 GPT-4, Vicuna80 human;
../shared/data/judgments; or, named in ``--sets``, a set of bench/data/replays
such as ``prd_vicuna80_claude``) the real loop is replayed without replacement
(`planner.workflows.simulate.simulate`, batches of 50, seed 0) and every finished run is
kept in ``OUT/<set>.jsonl`` (``--out``/``--resume``), so the same runs are then
summarised under several targets without being run again:

* ``tau=0.8`` / ``tau=0.9``: Kendall tau against the full-pool fit, all pairs;
* ``credible-tau=0.9``: only the pairs the full pool separates with P(order) > 0.95;
* ``credible-all``: every such pair right.

The verdicts are common random numbers (``planner/simulation/streams.py``): the
n-th judgment a strategy draws for a pair is the same real verdict for every
strategy, so the repetitions are paired and the bands are of the choices' effect.
Each line also gives the strategy's metric averaged over the budget and its
paired difference to round-robin's (``over budget``, 95% band).

Per strategy: comparisons at which the mean curve meets the target, reps that
reached it, ratio to round-robin and to the best other baseline with their 95%
paired bootstrap bands over repetitions.

    python bench/bench_simulate_replay.py [--reps 10] [--budget 1500] [--out /tmp/simrep] [--workers 1]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from planner.workflows.simulate import read_replay, simulate  # noqa: E402
from planner.simulation.spec import SimulationSpec, parse_strategies  # noqa: E402
from planner.simulation.replay import replay_truth  # noqa: E402

DATA = ROOT.parent / "shared" / "data" / "judgments"
MORE = ROOT / "bench" / "data" / "replays"  # further real sets (bench/data/replays/README.md)
SETS = ("vicuna80_human", "vicuna80_gpt4", "oa_gpt4")
TARGETS = ("tau=0.8", "tau=0.9", "credible-tau=0.9", "credible-all")


def _band(b):
    if b is None:
        return "      -      "
    hi = "inf" if b[1] == float("inf") else f"{b[1]:.2f}"
    return f"[{b[0]:.2f}-{hi:>4s}]"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--reps", type=int, default=10)
    ap.add_argument("--budget", type=int, default=1500)
    ap.add_argument("--batch", type=int, default=50)
    ap.add_argument("--strategies", default="active,round-robin,random,swiss,entropy")
    ap.add_argument("--out", default="/tmp/simrep")
    ap.add_argument("--workers", type=int, default=1)
    ap.add_argument("--sets", default=",".join(SETS))
    args = ap.parse_args()
    Path(args.out).mkdir(parents=True, exist_ok=True)
    for name in args.sets.split(","):
        path = DATA / f"qlora_{name}.jsonl"
        if not path.exists() and (MORE / f"{name}.jsonl").exists():
            path = MORE / f"{name}.jsonl"
        if not path.exists():
            print(f"{name}: {path} absent, skipped")
            continue
        pool = read_replay(path)
        truth = replay_truth(pool)
        spec = SimulationSpec("replay", parse_strategies(args.strategies), n_systems=len(pool.systems),
                              budget=args.budget, batch=args.batch, reps=args.reps, seed=0, truth=truth,
                              replay=pool)
        out = Path(args.out) / f"{name}.jsonl"
        t0 = time.perf_counter()
        for target in TARGETS:
            res = simulate(spec, target=target, workers=args.workers, out=out, resume=out.exists())
            if target == TARGETS[0]:
                print(f"\n== {name}: {len(pool.systems)} systems, {pool.size} judgments, budget {args.budget}, "
                      f"batch {args.batch}, {args.reps} reps ({time.perf_counter() - t0:.0f} s)")
                weak = [f"{p['a']}>{p['b']} {p['p_order']:.2f}" for p in res.pairs if not p["credible"]]
                print(f"pairs not credibly separated by the full pool ({len(weak)} of {len(res.pairs)}): "
                      + ", ".join(weak))
            print(f"-- target {target}")
            for s in res.strategies:
                n = "-" if s.needed_mean_curve is None else f"{s.needed_mean_curve}"
                rr = "-" if s.ratio_to_round_robin is None else f"{s.ratio_to_round_robin:.2f}"
                xb = "-" if s.ratio_to_best is None else f"{s.ratio_to_best:.2f}"
                over = "" if s.budget_mean is None else f"  over budget {s.budget_mean:.4f}"
                if s.vs_round_robin is not None:
                    d, lo, hi = s.vs_round_robin
                    over += f" ({d:+.4f} vs RR [{lo:+.4f} {hi:+.4f}])"
                print(f"  {s.name:12s} needed {n:>5s}  reached {s.reached:>2d}/{len(s.needed):<2d} "
                      f"xRR {rr:>5s} {_band(s.rr_band)}  xbest {xb:>5s} {_band(s.best_band)} "
                      f"({s.best_baseline or '-'}){over}")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
