"""Hybrid budgeting (issue 16): does money spent on the planned humans + judge split buy the promised width?

1. Synthetic pairs (known truth): per judge quality and prices, the planned split for each money
   budget (planner.hybrid.budget.plan_for_money) against humans only; achieved 95% half-width,
   coverage and power from the real PPI++ / human-only fits (planner.workflows.simulate_hybrid.simulate_money).
2. Vicuna80 replay: 2,240 items, GPT-4 verdicts in both orders as the judge, the three MTurk votes of
   an item as its human label (truth: the human fit on all items); for each budget, humans only vs the
   planned split, 90% strength intervals (planner.workflows.simulate_hybrid.replay_money).

    PYTHONPATH=. nice -n 10 python bench/bench_hybrid_budget.py [--reps 500] [--seed 0]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from planner.simulation.money import replay_money, simulate_money

SYNTHETIC = [  # (agreement per order, position logit, human cost, judge cost)
    (0.8, 0.5, 1.0, 0.05),
    (0.6, 1.0, 1.0, 0.02),
    (0.9, 0.0, 1.0, 0.2),
]
BUDGETS = (200, 500, 1500)
REPLAY_COSTS = ((1.0, 0.002), (1.0, 0.01), (1.0, 0.03))
REPLAY_BUDGETS = (200, 500, 1000)


def _rows(rho, rows, **extra):
    return [dict(rho=rho, **extra, **r.__dict__) for r in rows]


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=500)
    ap.add_argument("--replay-reps", type=int, default=200)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--json", type=Path, help="also write every row here")
    a = ap.parse_args(argv)
    rng = np.random.default_rng(a.seed)
    out = []
    print("synthetic: win rate 55%, no ties; 95% intervals; cells: achieved (planned)")
    print(f"{'agree':>5} {'pos':>4} {'c_j':>5} {'rho':>5} {'money':>6} {'plan':>6} {'n':>5} {'N':>6} "
          f"{'half-width':>17} {'coverage':>10} {'power':>12}")
    for agree, pos, ch, cj in SYNTHETIC:
        t = time.perf_counter()
        rho, rows = simulate_money(BUDGETS, human_cost=ch, judge_cost=cj, win_rate=0.55, agreement=agree,
                                   position=pos, reps=a.reps, rng=rng)
        for r in rows:
            print(f"{agree:5.2f} {pos:4.1f} {cj:5.3f} {rho:5.3f} {r.budget:6.0f} {'hybrid' if r.N else 'humans':>6} "
                  f"{r.n:5d} {r.N:6d} {r.half_width:8.4f} ({r.predicted_half_width:.4f}) "
                  f"{r.coverage:6.3f}±{r.coverage_se:.3f} {r.power:5.3f} ({r.predicted_power:.3f})")
        out += _rows(rho, rows, agreement=agree, position=pos, kind="synthetic")
        print(f"  ({time.perf_counter() - t:.0f} s)")
    from bench_hybrid import DATA, vicuna_items

    if not (DATA / "judgments").is_dir():
        print(f"{DATA} absent: replay skipped")
    else:
        items = vicuna_items()
        print("\nVicuna80 replay: 90% strength intervals; mean half-width (log scale), achieved (planned)")
        for ch, cj in REPLAY_COSTS:
            rho, rows = replay_money(items, REPLAY_BUDGETS, human_cost=ch, judge_cost=cj, reps=a.replay_reps,
                                     rng=rng)
            for r in rows:
                print(f"c_j {cj:5.3f} rho {rho:5.3f} money {r.budget:5.0f} {'hybrid' if r.N else 'humans':>6} "
                      f"n {r.n:4d} N {r.N:5d} eff {r.effective_n:6.0f} half-width {r.half_width:.4f} "
                      f"({r.predicted_half_width:.4f}) coverage {r.coverage:.3f} lambda {r.mean_lambda:.2f}")
            out += _rows(rho, rows, kind="vicuna80")
    if a.json:
        a.json.write_text(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
