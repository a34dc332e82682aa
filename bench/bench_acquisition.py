"""Benchmark of planner.acquisition: selection speed and selection quality.

1. Speed: ``select_pairs`` for 100 systems (4,950 candidate pairs), batch 200,
   on a Gaussian posterior from ~100,000 judgments (linear truth over 800 Elo).
2. Quality: a small simulation loop of our own — truth 16 systems evenly
   spread over 400 Elo, Bradley–Terry without ties or position effect,
   batches of 50, refit after each batch with a plain Newton/Laplace MAP
   (prior beta ~ N(0, 1.5^2), sum-to-zero) — comparisons until Kendall tau
   to the truth >= 0.9, per strategy; ratio to round-robin.
   (planner simulate, issue 7, runs the real loop with planner.model.)

3. Overhead (issue 14): ``--overhead`` — selection (active/ranking, batch 200)
   against ``planner.model.fit`` (Laplace) on the same 100-system, ~100,000
   judgment counts, CPU time (``time.process_time``: the 2-core machine is
   shared, CPU time is what the ratio should compare), best of 3 each.
   ``--arena-scale [--study DIR]``: 300 systems, 1,000,000 judgments (built
   with ``bench_next_batch.build`` unless ``--study`` names one), batch 1,000:
   wall time of the whole ``next-batch --dry-run`` in a subprocess (target
   < 10 s) and an in-process breakdown (study scans, fit, selection).

Run: python bench/bench_acquisition.py [--reps 20] [--quick] [--skip-speed]
     python bench/bench_acquisition.py --overhead | --arena-scale [--study DIR]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np
from scipy.stats import kendalltau

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))   # this checkout's planner, not an installed one

from planner import acquisition as acq
from planner.counts import Counts
from planner.model import bt

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


def run_once(truth, strategy, objective, seed, batch, budget, options=None):
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
                               rng=rng, true_mean=truth, anchor=systems[m // 2], options=options)
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
    base = acq.SelectionOptions()
    default = (base.ranking_risk, base.lookahead)
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
        opts = acq.SelectionOptions(ranking_risk=mode, lookahead=look)
        t0 = time.perf_counter()
        curves = [run_once(truth, strategy, objective, 1000 + r, batch, budget, opts) for r in range(reps)]
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


def _cpu(fn, repeat=3):
    best = np.inf
    for _ in range(repeat):
        t0 = time.process_time()
        out = fn()
        best = min(best, time.process_time() - t0)
    return best, out


def overhead(m=100, n=100_000, k=200):
    """Selection vs the Laplace fit of planner.model on the same counts (CPU seconds, best of 3)."""
    from planner.model import fit

    rng = np.random.default_rng(0)
    truth = np.linspace(-800, 800, m) / bt.ELO_SCALE / 2
    systems = tuple(f"s{i}" for i in range(m))
    i, j = np.triu_indices(m, 1)
    per = max(1, n // i.size)
    a, b = np.repeat(i, per), np.repeat(j, per)
    o = (rng.random(a.size) > 1.0 / (1.0 + np.exp(-(truth[a] - truth[b])))).astype(int)
    judged = Counts.from_arrays(systems, a, b, o)
    t_fit, f = _cpu(lambda: fit(judged, engine="laplace", seed=0, progressbar=False))
    t_sel, sel = _cpu(lambda: acq.select_pairs(f.posterior, k, judged=judged, rng=np.random.default_rng(0)))
    print(f"overhead: {m} systems, {a.size:,} judgments, batch {k}: Laplace fit {t_fit:.3f} s CPU, "
          f"selection {t_sel:.3f} s CPU = {t_sel / t_fit:.2f}x the fit (target <= 1); "
          f"distinct pairs {len(set(sel.pairs))}")


def arena_scale(study_dir=None, m=300, n=1_000_000, k=1000, prompts=300):
    """Whole next-batch --dry-run at Arena scale (wall, subprocess) and where its time goes."""
    import subprocess
    import sys
    import tempfile
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    sys.path.insert(0, str(root / "bench"))
    from bench_next_batch import build

    from planner.acquisition.clustering import from_pair_usage
    from planner.batch.pair_prompts import PairUsage, pair_prompts
    from planner.model import fit
    from planner.stats.blas import one_blas_thread
    from planner.store.study import Study

    tmp = None
    if study_dir is None:
        tmp = tempfile.TemporaryDirectory()
        t0 = time.perf_counter()
        study_dir = build(Path(tmp.name), m, n, prompts, seed=0)
        print(f"arena scale: built {m} systems, {n:,} judgments in {time.perf_counter() - t0:.0f} s")
    cmd = [sys.executable, "-m", "cli", "next-batch", str(study_dir), "--size", str(k), "--dry-run", "--json"]
    import resource

    walls, cpus = [], []
    for _ in range(2):
        r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
        t0 = time.perf_counter()
        subprocess.run(cmd, check=True, capture_output=True, cwd=root)
        walls.append(time.perf_counter() - t0)
        r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpus.append(r1.ru_utime + r1.ru_stime - r0.ru_utime - r0.ru_stime)
    t0 = time.perf_counter()
    with Study.open(study_dir) as st:
        counts, pending = st.counts(), st.pending_counts()
        t_scan = time.perf_counter() - t0
        t0 = time.perf_counter()
        usage = PairUsage(st.systems, *st.pair_prompt_usage_codes())   # as next-batch reads it
        t_usage = time.perf_counter() - t0
        pp = pair_prompts(st.systems, st.response_keys(), usage)
    both = counts + pending            # the clusters as next-batch builds them (next_batch_plan._clusters)
    per = np.zeros((len(pp.systems),) * 2)
    np.add.at(per, (both.a, both.b), both.usable + both.invalid)
    clusters = from_pair_usage(pp.pair_i, pp.pair_j, (per + per.T)[pp.pair_i, pp.pair_j], pp.n_both - pp.n_fresh,
                               pp.n_fresh)
    # the selection as next-batch calls it (allowed pairs, their unused prompts, the clusters), CPU time,
    # fit and selection alternated 5 times (best of each): the ratio within one run is what is compared
    t_fit, t_sel = [], []
    with one_blas_thread():   # as next-batch runs them (planner.stats.blas)
        for _ in range(5):
            t0 = time.process_time()
            f = fit(counts, engine="laplace", seed=0, progressbar=False)
            t_fit.append(time.process_time() - t0)
            t0 = time.process_time()
            acq.select_pairs(f.posterior, k, judged=counts, pending=pending, rng=np.random.default_rng(0),
                             allowed=pp.allowed(), capacity=pp.capacities(), clusters=clusters)
            t_sel.append(time.process_time() - t0)
    print(f"arena scale: {len(counts.systems)} systems, {int(counts.usable.sum()):,} usable judgments, "
          f"batch {k}: whole next-batch --dry-run {min(walls):.2f} s wall, {min(cpus):.2f} s CPU (best of 2; "
          f"target < 5 s); "
          f"in process: counts {t_scan:.2f} s, pair-prompt usage {t_usage:.2f} s ({len(usage):,} pairs), "
          f"fit {min(t_fit):.3f} s CPU, selection {min(t_sel):.3f} s CPU = {min(t_sel) / min(t_fit):.2f}x the fit "
          f"(best of 5 each; target <= 1)")
    if tmp is not None:
        tmp.cleanup()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--overhead", action="store_true")
    ap.add_argument("--arena-scale", action="store_true")
    ap.add_argument("--study", default=None)
    ap.add_argument("--reps", type=int, default=20)
    ap.add_argument("--budget", type=int, default=3000)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--skip-speed", action="store_true")
    args = ap.parse_args()
    if args.overhead or args.arena_scale:
        if args.overhead:
            overhead()
        if args.arena_scale:
            arena_scale(args.study)
        return
    if not args.skip_speed:
        speed()
    quality(args.reps, args.budget, args.quick)


if __name__ == "__main__":
    main()
