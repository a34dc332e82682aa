"""Replay: prediction-powered Bradley–Terry on Vicuna80 (issue 16).

Target: the human Bradley–Terry fit on all 2,240 human-labelled items (6,720 MTurk votes).
Each replicate labels a uniform random fraction of the items with their human votes, uses all
GPT-4 verdicts (both orders, pooled per item) as the surrogate, and checks the 90% PPI++ and
human-only intervals against the full-human values: strengths (mean-0 log scale), the 28
pairwise win rates, and whether the rank sets cover the full-human ranking.

    PYTHONPATH=. python bench/bench_hybrid.py [--reps 200] [--seed 0]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from planner.hybrid import human_only_bradley_terry, ppi_bradley_terry  # noqa: E402
from planner.hybrid_report import items_from_verdicts  # noqa: E402

DATA = Path(__file__).resolve().parents[2] / "shared" / "data"
SYSTEMS = ("gpt-4", "gpt-3.5-turbo", "bard", "vicuna-13b", "guanaco-7b", "guanaco-13b", "guanaco-33b", "guanaco-65b")


def vicuna_items(data: Path = DATA):
    rows = []
    for name in ("qlora_vicuna80_gpt4.jsonl", "qlora_vicuna80_human.jsonl"):
        with open(data / "judgments" / name, encoding="utf-8") as f:
            for line in f:
                r = json.loads(line)
                rows.append((r["prompt"], r["a"], r["b"], r["verdict"], r["judge"]))
    return items_from_verdicts(SYSTEMS, rows, "gpt-4")


def _ranks(theta):
    order = np.argsort(-theta)
    r = np.empty(len(theta), dtype=int)
    r[order] = np.arange(1, len(theta) + 1)
    return r


def replay(items, fraction: float, reps: int, rng: np.random.Generator, level: float = 0.9) -> dict:
    names = items.names
    truth = human_only_bradley_terry(names, items.pairs, items.y, confidence_level=level)
    iu = np.triu_indices(len(names), 1)
    true_rank = _ranks(truth.theta)
    m = len(items.y)
    n = int(round(fraction * m))
    acc = {k: [] for k in ("cov_s_ppi", "cov_s_hum", "cov_w_ppi", "cov_w_hum", "width_s", "width_w",
                           "rank_ppi", "rank_hum", "lam", "eff_n", "rank_width_ppi", "rank_width_hum",
                           "hit_s_ppi", "hit_s_hum", "narrower")}
    for _ in range(reps):
        lab = np.zeros(m, dtype=bool)
        lab[rng.choice(m, n, replace=False)] = True
        p = ppi_bradley_terry(names, items.pairs[lab], items.y[lab], items.yhat[lab], items.pairs[~lab],
                              items.yhat[~lab], confidence_level=level)
        h = human_only_bradley_terry(names, items.pairs[lab], items.y[lab], confidence_level=level)
        for tag, r in (("ppi", p), ("hum", h)):
            acc[f"hit_s_{tag}"].append((r.lo <= truth.theta) & (truth.theta <= r.hi))
            acc[f"cov_s_{tag}"].append(np.mean(acc[f"hit_s_{tag}"][-1]))
            acc[f"cov_w_{tag}"].append(np.mean((r.win_lo[iu] <= truth.win[iu]) & (truth.win[iu] <= r.win_hi[iu])))
            acc[f"rank_{tag}"].append(bool(np.all((r.rank_low <= true_rank) & (true_rank <= r.rank_high))))
            acc[f"rank_width_{tag}"].append(np.mean(r.rank_high - r.rank_low + 1))
        acc["width_s"].append(np.mean((p.hi - p.lo) / (h.hi - h.lo)))
        acc["width_w"].append(np.mean((p.win_hi[iu] - p.win_lo[iu]) / (h.win_hi[iu] - h.win_lo[iu])))
        acc["narrower"].append(np.trace(p.cov) < np.trace(h.cov))
        acc["lam"].append(p.lam)
        acc["eff_n"].append(n * np.trace(h.cov) / np.trace(p.cov))
    out = {k: float(np.mean(v)) for k, v in acc.items() if not k.startswith("hit_")}
    for tag in ("ppi", "hum"):                       # the least-covered system's strength
        out[f"worst_s_{tag}"] = float(np.min(np.mean(acc[f"hit_s_{tag}"], axis=0)))
    out.update(fraction=fraction, n=n, N=m - n, reps=reps)
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=200)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--fractions", default="0.05,0.10,0.25")
    a = ap.parse_args(argv)
    if not (DATA / "judgments").is_dir():
        print(f"skipped: {DATA} is absent")
        return 0
    items = vicuna_items()
    rng = np.random.default_rng(a.seed)
    print("| human items | n | coverage strengths PPI / human | coverage win rates PPI / human | "
          "width PPI ÷ human (strengths, win rates) | rank set covers PPI / human | mean rank-set size PPI / human "
          "| λ | effective n (gain) | worst system's coverage PPI / human | PPI narrower (tr Σ) |")
    print("|---|---:|---|---|---|---|---|---:|---|---|---:|")
    for fr in (float(x) for x in a.fractions.split(",")):
        t = time.time()
        r = replay(items, fr, a.reps, rng)
        print(f"| {100 * fr:.0f}% | {r['n']} | {r['cov_s_ppi']:.3f} / {r['cov_s_hum']:.3f} | "
              f"{r['cov_w_ppi']:.3f} / {r['cov_w_hum']:.3f} | {r['width_s']:.3f}, {r['width_w']:.3f} | "
              f"{r['rank_ppi']:.3f} / {r['rank_hum']:.3f} | {r['rank_width_ppi']:.2f} / {r['rank_width_hum']:.2f} | "
              f"{r['lam']:.2f} | {r['eff_n']:.0f} (+{r['eff_n'] - r['n']:.0f}) | "
              f"{r['worst_s_ppi']:.3f} / {r['worst_s_hum']:.3f} | {r['narrower']:.3f} |", flush=True)
        print(f"<!-- {fr}: {time.time() - t:.1f} s, {a.reps} reps, seed {a.seed} -->", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
