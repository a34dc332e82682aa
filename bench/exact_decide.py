"""Exact (enumerated) size and coverage of decide's trinomial score test and interval.

Every outcome (W, T, L) of N judgments is enumerated and weighted by its trinomial
probability at a true (win, tie, loss) share, so the figures carry no Monte Carlo error.

* **size** of each one-sided test at nominal alpha/2 = 0.025 (one stratum, one look), at
  the boundary of its null: ``pass`` (H0: S <= 0.5 - M; M = 0 is superiority) and ``regress``
  (H0: S >= 0.5 - M), for every N from 20 to ``--n-max``, margins M in {0, 0.05, 0.1, 0.15,
  0.2} and every tie share from 0 to the largest the boundary allows (2 min(θ, 1 - θ)) in
  steps of 0.01 (the end point included);
* **coverage** of the 95% interval: tie share in steps of 0.05 (0 to 0.95), decisive win
  share in steps of 0.01 (0.01 to 0.99), N = 10, 30, 100.

Both with the continuity correction decide uses (``planner.stats.proportions.CONTINUITY``)
and, with ``--continuity 0``, without it (the test before issue 26).

    python bench/exact_decide.py size [--n-max 300] [--continuity 0.5]
    python bench/exact_decide.py coverage [--continuity 0.5]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
from scipy.special import gammaln

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from planner.stats import proportions as pr  # noqa: E402

Z975 = 1.959963984540054   # the one-sided critical value at 0.025
MARGINS = (0.0, 0.05, 0.1, 0.15, 0.2)


def outcomes(n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(W, T, L)`` of every outcome of ``n`` judgments (float arrays)."""
    w, t = np.meshgrid(np.arange(n + 1), np.arange(n + 1), indexing="ij")
    keep = w + t <= n
    w, t = w[keep].astype(float), t[keep].astype(float)
    return w, t, n - w - t


def trinomial_pmf(w, t, l, pw: float, pt: float, pl: float) -> np.ndarray:
    """Multinomial probabilities of the outcomes (a zero share gives 0 to outcomes that need it)."""
    n = w + t + l
    lp = gammaln(n + 1) - gammaln(w + 1) - gammaln(t + 1) - gammaln(l + 1)
    for k, p in ((w, pw), (t, pt), (l, pl)):
        lp = lp + (k * np.log(p) if p > 0 else np.where(k > 0, -np.inf, 0.0))
    return np.exp(lp)


def boundary_ties(theta: float, step: float = 0.01) -> np.ndarray:
    """Tie shares at which ``S = theta`` is possible: 0 to ``2 min(theta, 1 - theta)`` in ``step``s, end included."""
    top = 2 * min(theta, 1 - theta)
    return np.append(np.arange(0.0, top - 1e-12, step), top)


def exact_size(n: int, side: str, margin: float, tie: float, continuity: float = pr.CONTINUITY) -> float:
    """P(reject) of one one-sided test at the null boundary ``S = 0.5 - margin`` with tie share ``tie``."""
    theta = 0.5 - margin
    w, t, l = outcomes(n)
    z = pr.half_tie_z(w, l, t, theta, continuity=continuity)
    rej = (z if side == "pass" else -z) >= Z975
    return float(trinomial_pmf(w[rej], t[rej], l[rej], max(theta - tie / 2, 0.0), tie, 1 - theta - tie / 2).sum())


def size_grid(ns, margins=MARGINS, step: float = 0.01, continuity: float = pr.CONTINUITY) -> dict:
    """``{(side, margin): (worst size, n, tie share)}`` over ``ns`` and the boundary's tie shares."""
    worst: dict = {}
    for n in ns:
        w, t, l = outcomes(n)
        for m in margins:
            theta = 0.5 - m
            z = pr.half_tie_z(w, l, t, theta, continuity=continuity)
            for side in ("pass", "regress") if m > 0 else ("pass",):
                rej = (z if side == "pass" else -z) >= Z975
                wr, tr, lr = w[rej], t[rej], l[rej]
                for tie in boundary_ties(theta, step):
                    size = float(trinomial_pmf(wr, tr, lr, max(theta - tie / 2, 0.0), tie,
                                               1 - theta - tie / 2).sum())
                    if size > worst.get((side, m), (-1.0,))[0]:
                        worst[(side, m)] = (size, n, round(float(tie), 4))
    return worst


def intervals(n: int, continuity: float = pr.CONTINUITY) -> tuple[np.ndarray, ...]:
    """``(W, T, L, low, high)`` of decide's 95% interval for every outcome of ``n`` judgments."""
    w, t, l = outcomes(n)
    saved = pr.CONTINUITY
    pr.CONTINUITY = continuity
    try:
        iv = np.array([pr.half_tie_interval(a, b, c) for a, b, c in zip(w, l, t)])
    finally:
        pr.CONTINUITY = saved
    return w, t, l, iv[:, 0], iv[:, 1]


def coverage_grid(ns=(10, 30, 100), continuity: float = pr.CONTINUITY) -> list[tuple[int, float, float, float]]:
    """``(n, tie share, decisive win share, coverage)`` over the grid of the module docstring."""
    rows = []
    for n in ns:
        w, t, l, lo, hi = intervals(n, continuity)
        for tie in np.round(np.arange(0.0, 0.951, 0.05), 2):
            for q in np.round(np.arange(0.01, 0.995, 0.01), 2):
                pw, pl = (1 - tie) * q, (1 - tie) * (1 - q)
                s = pw + tie / 2
                p = trinomial_pmf(w, t, l, pw, tie, pl)
                rows.append((n, float(tie), float(q), float(p[(lo <= s) & (s <= hi)].sum())))
    return rows


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("what", choices=("size", "coverage"))
    ap.add_argument("--n-max", type=int, default=300)
    ap.add_argument("--continuity", type=float, default=pr.CONTINUITY)
    a = ap.parse_args()
    if a.what == "size":
        worst = size_grid(range(20, a.n_max + 1), continuity=a.continuity)
        print(f"exact size at nominal 0.025, N = 20..{a.n_max}, tie share step 0.01, continuity {a.continuity}")
        print("| test | margin | worst size | at N | tie share |")
        print("|---|---|---|---|---|")
        for (side, m), (size, n, tie) in sorted(worst.items()):
            print(f"| {side} | {m:.2f} | {size:.4f} | {n} | {tie:.2f} |")
        return
    rows = coverage_grid(continuity=a.continuity)
    print(f"exact coverage of the 95% interval, continuity {a.continuity}")
    print("| N | min | at (tie, win share) | mean | min with ties | share of points >= 0.94 |")
    print("|---|---|---|---|---|---|")
    for n in sorted({r[0] for r in rows}):
        sub = [r for r in rows if r[0] == n]
        cov = np.array([r[3] for r in sub])
        worst = sub[int(cov.argmin())]
        ties = [r[3] for r in sub if r[1] > 0]
        print(f"| {n} | {cov.min():.4f} | ({worst[1]:.2f}, {worst[2]:.2f}) | {cov.mean():.4f} | {min(ties):.4f} "
              f"| {np.mean(cov >= 0.94):.3f} |")


if __name__ == "__main__":
    main()
