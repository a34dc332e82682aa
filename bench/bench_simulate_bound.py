"""How far can a *fixed* design go? The non-adaptive bound behind bench/RESULTS.md.

For the issue-7 scenarios, the comparisons a non-adaptive design needs so that
the expected number of discordant pairs, averaged over the benchmark's truths,
falls to the target's level (mean Kendall tau >= 0.9: D <= 6 of 120 pairs for
16 systems, 9.5 of 190 for 20; tau >= 0.8 for arena: D <= 19 of 190) — with
the TRUE strengths known when the design is drawn up.

Model (large-sample Gaussian): the estimate is N(beta, C) with
C = pinv(sum_pairs n_ij I_ij d d^T), I_ij = p (1 - p) the Bradley–Terry Fisher
information at the true gap (asap: the Thurstone scores on the logistic scale,
x 1.702 / 1.4865, as the simulator does), and
E[D] = sum_{k<l} Phi(-|beta_k - beta_l| / sd(beta_k - beta_l)). Designs:
round-robin (every pair equally), bands (pairs at most b apart in the true
ranking, equally), and weights 1 / d^a over the rank distance d; the best of
them is the bound quoted. The truths are the benchmark's (seed 0, reps 0-19).

    python bench/bench_simulate_bound.py
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
from scipy.optimize import brentq
from scipy.special import ndtr

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from planner.simulation.truth import make_truth

SCEN = {"linear": (16, 0.9), "arena": (20, 0.8), "asap": (20, 0.9)}


def truths(scenario: str, m: int, reps: int = 20, seed: int = 0) -> list[np.ndarray]:
    """The benchmark's truths: the same SeedSequence scheme as planner.workflows.simulate._run_one."""
    truth_seq, _ = np.random.SeedSequence(seed).spawn(2)
    out = []
    for rep in range(reps):
        rng = np.random.default_rng(truth_seq.spawn(rep + 1)[rep])
        out.append(make_truth(scenario, m, rng).strengths)
    return out


def expected_discordant(beta: np.ndarray, n: float, weight) -> float:
    """E[D] for ``n`` comparisons spread over pairs by ``weight(dist)`` (dist = true rank distance)."""
    m = beta.size
    rank = np.empty(m, int)
    rank[np.argsort(-beta)] = np.arange(m)
    i, j = np.triu_indices(m, 1)
    w = weight(np.abs(rank[i] - rank[j])).astype(float)
    nij = n * w / w.sum()
    p = 1.0 / (1.0 + np.exp(-(beta[i] - beta[j])))
    info = nij * p * (1 - p)
    lap = np.zeros((m, m))
    np.add.at(lap, (i, i), info)
    np.add.at(lap, (j, j), info)
    np.add.at(lap, (i, j), -info)
    np.add.at(lap, (j, i), -info)
    c = np.linalg.pinv(lap)
    v = np.clip(np.diag(c)[i] + np.diag(c)[j] - 2 * c[i, j], 1e-300, None)
    return float(ndtr(-np.abs(beta[i] - beta[j]) / np.sqrt(v)).sum())


def needed(betas, d_max, weight) -> float:
    f = lambda n: np.mean([expected_discordant(b, n, weight) for b in betas]) - d_max  # noqa: E731
    return brentq(f, 20, 1e6, xtol=5)


def main() -> None:
    for name, (m, tau) in SCEN.items():
        betas = truths(name, m)
        d_max = (1 - tau) * m * (m - 1) / 4          # tau = 1 - 4 D / (M (M - 1))
        rr = needed(betas, d_max, np.ones_like)
        rows = [("round-robin", rr)]
        for b in (1, 2, 3, 4, 6, 8):
            rows.append((f"band {b}", needed(betas, d_max, lambda d, b=b: (d <= b) * 1.0)))
        for a in (0.5, 1.0, 1.5, 2.0):
            rows.append((f"1/d^{a:g}", needed(betas, d_max, lambda d, a=a: d ** -a)))
        best = min(rows[1:], key=lambda r: r[1])
        print(f"{name}: {m} systems, mean tau >= {tau} (E[D] <= {d_max:.1f}); truths known, fixed design")
        print("   " + ", ".join(f"{k} {v:.0f}" for k, v in rows))
        print(f"   best fixed design: {best[0]}, {best[1]:.0f} comparisons = {best[1] / rr:.2f} x round-robin")


if __name__ == "__main__":
    main()
