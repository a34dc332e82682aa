"""Benchmark of planner.acquisition: selection speed and selection quality.

1. Speed: ``select_pairs`` for 100 systems (4,950 candidate pairs), batch 200,
   on a Gaussian posterior from ~100,000 judgments (linear truth over 800 Elo).
2. Quality: a small simulation loop of our own — truth 16 systems evenly
   spread over 400 Elo, Bradley–Terry without ties or position effect,
   batches of 50, refit after each batch with a plain Newton/Laplace MAP
   (prior beta ~ N(0, 1.5^2), sum-to-zero) — comparisons until Kendall tau
   to the truth >= 0.9, per strategy; ratio to round-robin.
   (planner simulate, issue 7, runs the real loop with planner.model.)

Run: python bench/bench_acquisition.py [--reps 20] [--quick] [--skip-speed]
"""

from __future__ import annotations

import argparse
import time

import numpy as np
from scipy.stats import kendalltau

from planner import acquisition as acq
from planner import bt
from planner.counts import Counts

PRIOR_SD = 1.5


def laplace_fit(systems, nmat_wins, prior_sd=PRIOR_SD, theta=None):
    """MAP + Laplace for plain BT. ``nmat_wins[i, j]`` = wins of i over j."""
    m = len(systems)
    n = nmat_wins + nmat_wins.T
    theta = np.zeros(m) if theta is None else theta.copy()
    for _ in range(50):
        p = 1.0 / (1.0 + np.exp(-(theta[:, None] - theta[None, :])))
        grad = (nmat_wins - n * p).sum(axis=1) - theta / prior_sd ** 2
        w = n * p * (1 - p)
        hess = np.diag(w.sum(axis=1)) - w + np.eye(m) / prior_sd ** 2
        step = np.linalg.solve(hess, grad)
        theta += step
        if np.abs(step).max() < 1e-9:
            break
    p = 1.0 / (1.0 + np.exp(-(theta[:, None] - theta[None, :])))
    w = n * p * (1 - p)
    hess = np.diag(w.sum(axis=1)) - w + np.eye(m) / prior_sd ** 2
    cov = np.linalg.inv(hess)
    c = np.eye(m) - 1.0 / m
    cov = c @ cov @ c
    return bt.GaussianPosterior(tuple(systems), theta - theta.mean(), 0.5 * (cov + cov.T)), theta


def run_once(truth, strategy, objective, seed, batch, budget):
    m = truth.size
    systems = tuple(f"s{i}" for i in range(m))
    rng = np.random.default_rng(seed)
    wins = np.zeros((m, m))
    post, theta = laplace_fit(systems, wins)
    judged = Counts.empty(systems)
    a_all, b_all, o_all = [], [], []
    spent = 0
    curve = []
    while spent < budget:
        sel = acq.select_pairs(post, batch, strategy=strategy, objective=objective, judged=judged,
                               rng=rng, true_mean=truth, anchor=systems[m // 2])
        for i, j in sel.pairs:
            a, b = (i, j) if rng.random() < 0.5 else (j, i)
            pa = 1.0 / (1.0 + np.exp(-(truth[a] - truth[b])))
            won = rng.random() < pa
            wins[(a, b) if won else (b, a)] += 1
            a_all.append(a), b_all.append(b), o_all.append(0 if won else 1)
        spent += batch
        judged = Counts.from_arrays(systems, a_all, b_all, o_all)
        post, theta = laplace_fit(systems, wins, theta=theta)
        tau = kendalltau(post.mean, truth).statistic
        curve.append((spent, tau))
    return curve


def first_reach(curves, target):
    """Comparisons at which the MEAN tau over reps first reaches the target."""
    n = min(len(c) for c in curves)
    spent = np.array([c[t][0] for t in range(n) for c in curves[:1]])
    mean_tau = np.array([np.mean([c[t][1] for c in curves]) for t in range(n)])
    hit = np.flatnonzero(mean_tau >= target)
    per_rep = [next((s for s, t in c if t >= target), np.nan) for c in curves]
    return (int(spent[hit[0]]) if hit.size else None), np.array(per_rep, dtype=float)


def speed(reps=3):
    m = 100
    rng = np.random.default_rng(0)
    truth = np.linspace(-800, 800, m) / bt.ELO_SCALE / 2
    systems = tuple(f"s{i}" for i in range(m))
    n_pairs = m * (m - 1) // 2
    per = 100_000 // n_pairs                       # ~20 judgments per pair
    i, j = np.triu_indices(m, 1)
    p = 1.0 / (1.0 + np.exp(-(truth[i] - truth[j])))
    w = rng.binomial(per, p)
    wins = np.zeros((m, m))
    wins[i, j] = w
    wins[j, i] = per - w
    t0 = time.perf_counter()
    post, _ = laplace_fit(systems, wins)
    t_fit = time.perf_counter() - t0
    judged = Counts.from_arrays(systems, np.repeat(i, per), np.repeat(j, per), np.zeros(per * n_pairs, int))
    print(f"speed: {m} systems, {per * n_pairs} judgments, batch 200 "
          f"(numpy Newton/Laplace fit of this bench: {t_fit:.3f} s)")
    for strategy, objective in [("active", "ranking"), ("active", "top-k"), ("active", "entropy"),
                                ("active", "variance"), ("active", "anchor"), ("round-robin", "ranking"),
                                ("arena", "ranking"), ("swiss", "ranking")]:
        times = []
        for r in range(reps):
            t0 = time.perf_counter()
            sel = acq.select_pairs(post, 200, strategy=strategy, objective=objective, top_k=10,
                                   anchor="s50", judged=judged, rng=np.random.default_rng(r))
            times.append(time.perf_counter() - t0)
        print(f"  {strategy:12s} {objective:9s} median {np.median(times):.3f} s "
              f"(distinct pairs {len(set(sel.pairs))}, expected reduction {sel.expected_reduction:.4g})")
    draws = np.random.default_rng(1).multivariate_normal(post.mean, post.cov, size=2000, method="eigh")
    t0 = time.perf_counter()
    sel = acq.select_pairs(post, 200, judged=judged, rng=np.random.default_rng(0), draws=draws)
    print(f"  active       ranking   draws path (2,000 draws, importance re-weighting): "
          f"{time.perf_counter() - t0:.3f} s (distinct pairs {len(set(sel.pairs))})")


def quality(reps, budget, quick):
    m, batch, target = 16, 50, 0.9
    truth = np.linspace(-200, 200, m) / bt.ELO_SCALE   # 400 Elo spread, logit scale
    default = (acq.RANKING_RISK, acq.LOOKAHEAD)
    runs = [("round-robin", "round-robin", "ranking", default),
            ("random", "random", "ranking", default),
            ("swiss", "swiss", "ranking", default),
            ("arena", "arena", "ranking", default),
            ("active/entropy", "active", "entropy", default),
            ("active/variance", "active", "variance", default),
            ("active/ranking (default)", "active", "ranking", default),
            ("active/ranking bayes L=1", "active", "ranking", ("bayes", (1,))),
            ("active/ranking truth", "active", "ranking", ("truth", (1,))),
            ("active/ranking fixed", "active", "ranking", ("fixed", (1,))),
            ("oracle/ranking", "oracle", "ranking", default)]
    if quick:
        runs = [r for r in runs if r[0] in ("round-robin", "active/ranking (default)", "oracle/ranking")]
    print(f"\nquality: {m} systems linear over 400 Elo, no ties, batches of {batch}, {reps} reps, "
          f"target mean Kendall tau >= {target} (to the truth); default ranking risk "
          f"{default[0]!r}, look-ahead {default[1]}")
    results = {}
    for name, strategy, objective, (mode, look) in runs:
        acq.RANKING_RISK, acq.LOOKAHEAD = mode, look
        t0 = time.perf_counter()
        curves = [run_once(truth, strategy, objective, 1000 + r, batch, budget) for r in range(reps)]
        acq.RANKING_RISK, acq.LOOKAHEAD = default
        hit, per_rep = first_reach(curves, target)
        results[name] = hit
        med = np.nanmedian(per_rep) if np.isfinite(per_rep).any() else np.nan
        q1, q3 = (np.nanpercentile(per_rep, [25, 75]) if np.isfinite(per_rep).any() else (np.nan, np.nan))
        print(f"  {name:28s} mean-tau hit at {hit!s:>6}  per-rep median {med:6.0f} "
              f"[IQR {q1:.0f}-{q3:.0f}, not reached {int(np.isnan(per_rep).sum())}]  "
              f"({time.perf_counter() - t0:.1f} s)", flush=True)
    rr = results.get("round-robin")
    if rr:
        print("  ratio to round-robin (mean-tau hit):")
        for name, hit in results.items():
            print(f"    {name:28s} {hit / rr:.2f}" if hit else f"    {name:28s} not reached")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--reps", type=int, default=20)
    ap.add_argument("--budget", type=int, default=3000)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--skip-speed", action="store_true")
    args = ap.parse_args()
    if not args.skip_speed:
        speed()
    quality(args.reps, args.budget, args.quick)


if __name__ == "__main__":
    main()
