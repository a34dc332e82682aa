"""Issue 14 item 1: is the Bradley–Terry model misspecified on the real replay sets?

For each real set (the three shared QLoRA sets in ../shared/data/judgments when
present, and the PRD sets of bench/data/replays) three checks, each printed as
one markdown row:

* **position**: share of decisive verdicts won by the response shown first, with
  its exact (Clopper–Pearson) 95 % interval — a judge-level position bias, which
  the fit's global position effect absorbs when it is one number per set;
* **clustering by prompt**: verdicts oriented to the pair's sorted order (+1, 0
  tie, -1), centred within (pair, shown order) so that position bias is not read
  as clustering; one-way ANOVA intraclass correlation of the (pair, prompt)
  clusters (unequal sizes: Donner's n0) and the Kish design effect
  ``1 + (n̄ - 1) ICC`` of the full pool (:func:`planner.stats.clusters.verdict_icc`, the
  estimate the report, ``size --icc`` and the plan forecast use);
* **lack of fit**: plain Bradley–Terry maximum likelihood on the decisive
  verdicts (ties out), Pearson χ² of each pair's decisive count against the fit,
  df = pairs - (systems - 1), the dispersion χ²/df and the worst pair.

    python bench/diagnose_replays.py
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
from scipy.optimize import minimize
from scipy.stats import binomtest, chi2

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from planner.stats.clusters import JudgmentArrays, verdict_icc  # noqa: E402

SHARED = ROOT.parent / "shared" / "data" / "judgments"
MORE = ROOT / "bench" / "data" / "replays"


def sets() -> dict[str, Path]:
    out = {f"{n}": SHARED / f"qlora_{n}.jsonl" for n in ("vicuna80_human", "vicuna80_gpt4", "oa_gpt4")}
    out = {n: p for n, p in out.items() if p.exists()}
    out.update({p.stem: p for p in sorted(MORE.glob("*.jsonl"))})
    return out


def position_row(rows) -> str:
    dec = [r for r in rows if r["verdict"] in ("A", "B")]
    first = sum(r["verdict"] == "A" for r in dec)
    ci = binomtest(first, len(dec)).proportion_ci()
    return f"{first / len(dec):.3f} [{ci.low:.3f}, {ci.high:.3f}] of {len(dec):,}"


def clustering(rows) -> tuple[float, float | None, float]:
    """(mean verdicts per (pair, prompt), ICC, Kish design effect) by :func:`planner.stats.clusters.verdict_icc`:
    verdicts centred within (pair, shown order), so that position bias is not read as clustering."""
    systems = sorted({r["a"] for r in rows} | {r["b"] for r in rows})
    ix = {s: i for i, s in enumerate(systems)}
    prompts = {p: i for i, p in enumerate(sorted({r["prompt"] for r in rows}))}
    outcome = {"A": 0, "B": 1, "tie": 2}
    est = verdict_icc(JudgmentArrays.build(systems, [ix[r["a"]] for r in rows], [ix[r["b"]] for r in rows],
                                           [outcome.get(r["verdict"], 3) for r in rows],
                                           prompt=[prompts[r["prompt"]] for r in rows]))
    return est.mean_size, est.icc, est.design_effect


def lack_of_fit(rows) -> tuple[int, int, float, int, str]:
    systems = sorted({r["a"] for r in rows} | {r["b"] for r in rows})
    ix = {s: i for i, s in enumerate(systems)}
    m = len(systems)
    w = np.zeros((m, m))
    for r in rows:
        if r["verdict"] == "A":
            w[ix[r["a"]], ix[r["b"]]] += 1
        elif r["verdict"] == "B":
            w[ix[r["b"]], ix[r["a"]]] += 1

    def nll(x):
        x = np.concatenate([[0.0], x])
        return float((w * np.logaddexp(0.0, -(x[:, None] - x[None, :]))).sum())

    x = np.concatenate([[0.0], minimize(nll, np.zeros(m - 1), method="BFGS").x])
    stat, worst = 0.0, (0.0, "")
    for i in range(m):
        for j in range(i + 1, m):
            n = w[i, j] + w[j, i]
            if n == 0:
                continue
            p = 1.0 / (1.0 + np.exp(-(x[i] - x[j])))
            z = (w[i, j] - n * p) / np.sqrt(n * p * (1 - p))
            stat += z * z
            if abs(z) > abs(worst[0]):
                worst = (z, f"{systems[i]}–{systems[j]} {w[i, j] / n:.2f} vs {p:.2f}, z {z:+.1f}")
    pairs = m * (m - 1) // 2
    return m, pairs, stat, pairs - (m - 1), worst[1]


def main() -> None:
    print("| set | rows | first-shown wins (decisive) [95 %] | verdicts per (pair, prompt) | ICC | design effect (full pool) "
          "| BT χ² / df | dispersion | p | worst pair (observed vs fitted share) |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for name, path in sets().items():
        rows = [json.loads(line) for line in path.open(encoding="utf-8")]
        nbar, icc, deff = clustering(rows)
        _m, _pairs, stat, df, worst = lack_of_fit(rows)
        print(f"| `{name}` | {len(rows):,} | {position_row(rows)} | {nbar:.2f} | {icc:.3f} | {deff:.2f} "
              f"| {stat:.1f} / {df} | {stat / df:.2f} | {chi2.sf(stat, df):.2g} | {worst} |")


if __name__ == "__main__":
    main()
