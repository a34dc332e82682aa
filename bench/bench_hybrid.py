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

from planner.hybrid.items import items_from_verdicts
from planner.hybrid.ppi import human_only_bradley_terry, ppi_bradley_terry

SYSTEMS = ("gpt-4", "gpt-3.5-turbo", "bard", "vicuna-13b", "guanaco-7b", "guanaco-13b", "guanaco-33b", "guanaco-65b")


def vicuna_items(data: Path | None = None):
    """The Vicuna80 items: from ``data/judgments`` when given, else the package's copy (`planner example vicuna80`)."""
    from planner.workflows.example import example_bytes

    rows = []
    for name in ("qlora_vicuna80_gpt4.jsonl", "qlora_vicuna80_human.jsonl"):
        text = ((data / "judgments" / name).read_text(encoding="utf-8") if data is not None
                else example_bytes("vicuna80", f"judgments/{name}").decode("utf-8"))
        for line in text.splitlines():
            r = json.loads(line)
            rows.append((r["prompt"], r["a"], r["b"], r["verdict"], r["judge"]))
    return items_from_verdicts(SYSTEMS, rows, "gpt-4")


def _ranks(theta):
    order = np.argsort(-theta)
    r = np.empty(len(theta), dtype=int)
    r[order] = np.arange(1, len(theta) + 1)
    return r


def replay(items, fraction: float, reps: int, rng: np.random.Generator, confidence_level: float = 0.9,
           model: str = "logistic") -> dict:
    from planner.hybrid.ppi import ppi_davidson

    names = items.names
    truth = _truth(items, model, confidence_level)
    y, yh = (items.y3, items.yhat3) if model == "davidson" else (items.y, items.yhat)
    fit = ppi_davidson if model == "davidson" else ppi_bradley_terry
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
        p = fit(names, items.pairs[lab], y[lab], yh[lab], items.pairs[~lab], yh[~lab], confidence_level=confidence_level)
        h = fit(names, items.pairs[lab], y[lab], yh[lab], items.pairs[:0], yh[:0], confidence_level=confidence_level, lam=0.0)
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


def _truth(items, model: str, confidence_level: float):
    from planner.hybrid.ppi import ppi_davidson
    if model == "davidson":
        return ppi_davidson(items.names, items.pairs, items.y3, items.yhat3, items.pairs[:0], items.yhat3[:0],
                            confidence_level=confidence_level, lam=0.0)
    return human_only_bradley_terry(items.names, items.pairs, items.y, confidence_level=confidence_level)


def _score(acc, tag, r, truth, true_rank, iu):
    hit = (r.lo <= truth.theta) & (truth.theta <= r.hi)
    acc.setdefault(f"hit_s_{tag}", []).append(hit)
    acc.setdefault(f"cov_s_{tag}", []).append(np.mean(hit))
    acc.setdefault(f"cov_w_{tag}", []).append(
        np.mean((r.win_lo[iu] <= truth.win[iu]) & (truth.win[iu] <= r.win_hi[iu])))
    acc.setdefault(f"rank_{tag}", []).append(bool(np.all((r.rank_low <= true_rank) & (true_rank <= r.rank_high))))
    acc.setdefault(f"width_s_{tag}", []).append(np.mean(r.hi - r.lo))
    acc.setdefault(f"width_w_{tag}", []).append(np.mean(r.win_hi[iu] - r.win_lo[iu]))
    acc.setdefault(f"lam_{tag}", []).append(r.lam)
    acc.setdefault(f"n_{tag}", []).append(r.n)


def replay_active(items, fraction: float, reps: int, rng: np.random.Generator, *, confidence_level: float = 0.9,
                  model: str = "logistic", objective: str = "strengths", floor: float = 0.2,
                  pilot: float = 0.0) -> dict:
    """Active (IPW) against uniform selection at the same expected human budget.

    Per replicate: ``uniform`` labels each item with probability n/N (Bernoulli), IPW-PPI with that π;
    ``active`` draws with :func:`planner.hybrid.select.select_for_humans` from the judge alone (no
    pilot), IPW-PPI with its π. With ``pilot`` > 0 that share of the budget is first spent on a
    uniform pilot (rate p0), the rest drawn actively given the pilot's labels; an item's overall
    probability is then 1 − (1 − p0)(1 − π_i) (π_i = 0 for pilot items). The truth is the
    full-human fit of the same model.
    """
    from dataclasses import replace

    from planner.hybrid.ppi import ipw_bradley_terry
    from planner.hybrid.select import select_for_humans

    names = items.names
    truth = _truth(items, model, confidence_level)
    iu = np.triu_indices(len(names), 1)
    true_rank = _ranks(truth.theta)
    m = len(items.y)
    n = fraction * m
    blind = replace(items, y=np.full(m, np.nan), y3=np.full((m, 3), np.nan))
    y, yh = (items.y3, items.yhat3) if model == "davidson" else (items.y, items.yhat)
    acc: dict = {}
    p0 = pilot * fraction
    for _ in range(reps):
        first = rng.random(m) < p0
        seen = replace(blind, y=np.where(first, items.y, np.nan))
        sel = select_for_humans(seen, n - first.sum(), rng, floor=floor, objective=objective, prior=pilot == 0)
        act, pi_act = first | sel.chosen, 1 - (1 - p0) * (1 - sel.prob)
        uni = rng.random(m) < fraction
        for tag, lab, pi in (("uni", uni, np.full(m, fraction)), ("act", act, pi_act)):
            r = ipw_bradley_terry(names, items.pairs, y, yh, lab, pi, model=model, confidence_level=confidence_level)
            _score(acc, tag, r, truth, true_rank, iu)
    out = {k: float(np.mean(v)) for k, v in acc.items() if not k.startswith("hit_")}
    for tag in ("uni", "act"):
        out[f"worst_s_{tag}"] = float(np.min(np.mean(acc[f"hit_s_{tag}"], axis=0)))
    out.update(fraction=fraction, n=n, N=m, reps=reps, model=model, objective=objective, floor=floor, pilot=pilot)
    return out


def main_active(a, items) -> None:
    rng = np.random.default_rng(a.seed)
    print("| model | human items (expected) | coverage strengths uniform / active | coverage win rates uniform / active | "
          "width strengths uniform / active (active ÷ uniform) | width win rates uniform / active | "
          "rank set covers uniform / active | worst system uniform / active | λ uniform / active |")
    print("|---|---|---|---|---|---|---|---|---|")
    for model in a.models.split(","):
        for fr in (float(x) for x in a.fractions.split(",")):
            t = time.time()
            r = replay_active(items, fr, a.reps, rng, model=model, objective=a.objective, floor=a.floor,
                              pilot=a.pilot)
            print(f"| {model} | {100 * fr:.0f}% ({r['n']:.0f}) | {r['cov_s_uni']:.3f} / {r['cov_s_act']:.3f} | "
                  f"{r['cov_w_uni']:.3f} / {r['cov_w_act']:.3f} | {r['width_s_uni']:.3f} / {r['width_s_act']:.3f} "
                  f"({r['width_s_act'] / r['width_s_uni']:.3f}) | {r['width_w_uni']:.3f} / {r['width_w_act']:.3f} "
                  f"({r['width_w_act'] / r['width_w_uni']:.3f}) | {r['rank_uni']:.3f} / {r['rank_act']:.3f} | "
                  f"{r['worst_s_uni']:.3f} / {r['worst_s_act']:.3f} | {r['lam_uni']:.2f} / {r['lam_act']:.2f} |",
                  flush=True)
            print(f"<!-- {model} {fr}: {time.time() - t:.1f} s, {a.reps} reps, seed {a.seed}, objective "
                  f"{a.objective}, floor {a.floor}, pilot {a.pilot} -->", file=sys.stderr)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=200)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--fractions", default="0.05,0.10,0.25")
    ap.add_argument("--active", action="store_true", help="active (IPW) against uniform selection instead")
    ap.add_argument("--models", default=None, help="logistic and/or davidson (default: both with --active, "
                                                    "else logistic)")
    ap.add_argument("--objective", default="strengths", help="with --active: strengths | ranking")
    ap.add_argument("--floor", type=float, default=0.2, help="with --active: uniform share of the probabilities")
    ap.add_argument("--pilot", type=float, default=0.3, help="with --active: share of the budget on a uniform pilot")
    a = ap.parse_args(argv)
    items = vicuna_items()
    if a.active:
        a.models = a.models or "logistic,davidson"
        main_active(a, items)
        return 0
    models = (a.models or "logistic").split(",")
    rng = np.random.default_rng(a.seed)
    print("| human items | n | coverage strengths PPI / human | coverage win rates PPI / human | "
          "width PPI ÷ human (strengths, win rates) | rank set covers PPI / human | mean rank-set size PPI / human "
          "| λ | effective n (gain) | worst system's coverage PPI / human | PPI narrower (tr Σ) |")
    print("|---|---:|---|---|---|---|---|---:|---|---|---:|")
    for model, fr in ((m, float(x)) for m in models for x in a.fractions.split(",")):
        t = time.time()
        r = replay(items, fr, a.reps, rng, model=model)
        print(f"| {100 * fr:.0f}%{' (Davidson)' if model == 'davidson' else ''} | {r['n']} | {r['cov_s_ppi']:.3f} / {r['cov_s_hum']:.3f} | "
              f"{r['cov_w_ppi']:.3f} / {r['cov_w_hum']:.3f} | {r['width_s']:.3f}, {r['width_w']:.3f} | "
              f"{r['rank_ppi']:.3f} / {r['rank_hum']:.3f} | {r['rank_width_ppi']:.2f} / {r['rank_width_hum']:.2f} | "
              f"{r['lam']:.2f} | {r['eff_n']:.0f} (+{r['eff_n'] - r['n']:.0f}) | "
              f"{r['worst_s_ppi']:.3f} / {r['worst_s_hum']:.3f} | {r['narrower']:.3f} |", flush=True)
        print(f"<!-- {fr}: {time.time() - t:.1f} s, {a.reps} reps, seed {a.seed} -->", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
