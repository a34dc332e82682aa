"""Coverage of report's intervals when verdicts on the same (prompt, pair) are correlated.

The issue's simulation: the marginal model is exactly Bradley–Terry–Davidson, and verdicts on one
(prompt, pair) share information with intraclass correlation ``--icc`` (0.3). Each verdict draws its
outcome by inverting its own BTD distribution at a uniform ``U``; with probability ``sqrt(icc)`` that
``U`` is the cluster's shared one, else a fresh one. So every verdict's marginal is exactly BTD (its
own position included) and two verdicts of a cluster share ``U`` with probability ``icc``: their
oriented scores then agree completely, otherwise they are independent, which makes the ICC ``icc``
when the two marginals are equal.

Scenarios: ``orders`` (each cluster judged in both presentation orders, one verdict each), ``annotators``
(three verdicts, random orders) and ``independent`` (both orders, ICC 0: the cost of never narrowing).
Per study: the report's 95% strength intervals (``planner.model.fit`` with and without the clusters the
report passes) against the true centred strengths, and the anchor win-rate intervals
(``planner.diagnostics.anchor_tests`` with and without the per-candidate design effects the report
passes) against the true half-tie win rate. ``--reps`` studies per scenario, seeded.

    python bench/bench_cluster_coverage.py [--reps 200] [--icc 0.3] [--prompts 40]
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from planner import diagnostics as dg  # noqa: E402
from planner.model import bt, fit  # noqa: E402
from planner.stats.clusters import JudgmentArrays, applied_design_effect, cluster_cells, cluster_ids, pair_design_effect  # noqa: E402

M = 6
BETA = np.linspace(0.8, -0.8, M)       # logits: about +-140 Elo around the mean
NU = 0.4                               # ties: 17% between equal systems
GAMMA = 0.3                            # the first-shown response's logit shift
SYSTEMS = tuple(f"s{i}" for i in range(M))
ANCHOR = 0
SCENARIOS = {"orders": (2, True), "annotators": (3, False), "independent": (2, True)}


def simulate(rng, n_prompts: int, per_cluster: int, both_orders: bool, icc: float, offset=None) -> JudgmentArrays:
    """One study: every pair on every prompt, ``per_cluster`` verdicts per (prompt, pair).

    ``offset(q, a, b)``: a known term added to the logit of ``a`` (shown first) over ``b`` on prompt ``q``
    (the style term of bench_style_cluster_coverage.py); None: 0."""
    copy = math.sqrt(icc)
    left, right, outcome, prompt = [], [], [], []
    pairs = [(i, j) for i in range(M) for j in range(i + 1, M)]
    for q in range(n_prompts):
        for i, j in pairs:
            shared = rng.random()
            for v in range(per_cluster):
                first = (v % 2 == 0) if both_orders else bool(rng.random() < 0.5)
                a, b = (i, j) if first else (j, i)
                shift = 0.0 if offset is None else offset(q, a, b)
                pa, pb, pt = bt.outcome_probs(BETA[a] - BETA[b] + GAMMA + shift, NU)
                u = shared if rng.random() < copy else rng.random()
                # i's preference order: i wins, tie, j wins (so a shared U means the same preference)
                p_i = pa if a == i else pb
                won_i, tie = u < p_i, p_i <= u < p_i + pt
                o = 2 if tie else (0 if won_i == (a == i) else 1)
                left.append(a)
                right.append(b)
                outcome.append(o)
                prompt.append(q)
    return JudgmentArrays.build(SYSTEMS, left, right, outcome, prompt=prompt)


def true_win_rate(i: int, k: int) -> float:
    """The half-tie win rate of ``i`` against ``k``, both positions equally often."""
    out = 0.0
    for a, b in ((i, k), (k, i)):
        pa, pb, pt = bt.outcome_probs(BETA[a] - BETA[b] + GAMMA, NU)
        out += 0.5 * ((pa if a == i else pb) + pt / 2)
    return out


def one_study(ja: JudgmentArrays) -> dict:
    """Covered-or-not of every strength and anchor interval, with and without the clusters."""
    counts = ja.counts()
    truth = BETA - BETA.mean()
    ids = cluster_ids(ja, "item")
    deffs = {s: applied_design_effect(pair_design_effect(ja, ids, i, ANCHOR, "half"))
             for i, s in enumerate(SYSTEMS) if i != ANCHOR}
    out = {}
    for method, cells, anchor_deff in (("none", None, None), ("item", cluster_cells(ja, "item"), deffs)):
        f = fit(counts, clusters=cells)
        lo, hi = f.interval(0.95)
        out[f"strength {method}"] = (lo <= truth) & (truth <= hi)
        at = dg.anchor_tests(counts, SYSTEMS[ANCHOR], ties="half", design_effects=anchor_deff)
        out[f"anchor {method}"] = np.array([r.ci_low <= true_win_rate(SYSTEMS.index(r.system), ANCHOR) <= r.ci_high
                                            for r in at.rows])
        if cells is not None:
            out["deff"] = np.array([f.clustering.design_effect])
    return out


def parse_args() -> argparse.Namespace:
    """``--reps``, ``--icc``, ``--prompts``, ``--seed`` (this script's and bench_style_cluster_coverage.py's)."""
    ap = argparse.ArgumentParser()
    ap.add_argument("--reps", type=int, default=200)
    ap.add_argument("--icc", type=float, default=0.3)
    ap.add_argument("--prompts", type=int, default=40)
    ap.add_argument("--seed", type=int, default=26)
    return ap.parse_args()


def main() -> None:
    a = parse_args()
    print(f"{M} systems, every pair on each of {a.prompts} prompts, BTD beta {BETA[0]:+.1f}..{BETA[-1]:+.1f}, "
          f"nu {NU}, gamma {GAMMA}; {a.reps} studies per scenario; 95% intervals")
    print("| scenario | ICC | verdicts per cluster | strength coverage (independent / clustered) "
          "| anchor win-rate coverage (independent / clustered) | mean design effect |")
    print("|---|---|---|---|---|---|")
    for name, (per, both) in SCENARIOS.items():
        icc = 0.0 if name == "independent" else a.icc
        rng = np.random.default_rng([a.seed, list(SCENARIOS).index(name)])
        acc: dict = {}
        t0 = time.perf_counter()
        for _ in range(a.reps):
            for k, v in one_study(simulate(rng, a.prompts, per, both, icc)).items():
                acc.setdefault(k, []).append(v)
        cov = {k: float(np.mean(np.concatenate(v))) for k, v in acc.items()}
        print(f"| {name} | {icc:g} | {per} | {cov['strength none']:.3f} / {cov['strength item']:.3f} "
              f"| {cov['anchor none']:.3f} / {cov['anchor item']:.3f} | {cov['deff']:.2f} |", flush=True)
        print(f"  ({time.perf_counter() - t0:.0f} s)", file=sys.stderr)


if __name__ == "__main__":
    main()
