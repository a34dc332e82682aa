"""Benchmark: `planner report --engine laplace` on 20 systems, 100,000 vs 1,000,000 judgments; NUTS fit time.

Builds two studies once (not timed): 20 systems, 200 prompts in 4 strata, one
response per (prompt, system) with a random length, and N synthetic normalized
judgments (Davidson model with a position shift, 1% invalid, a reason on 3 of 4
decisive judgments, judge ``judge-1`` = annotator), ingested through
``planner.store.study``. Then, in the same run:

* ``report``: wall time of the command ``planner report STUDY --engine laplace
  --json`` (a fresh process each time, as a user runs it; best of ``--repeat``)
  for both studies, and the ratio large / small (target <= 1.3);
* the parts of one in-process report: ``Study.report_scan`` (counts by stratum and the
  judgment-level figures, one scan of the store), and the Laplace fit on the
  aggregated cells (which must not follow the judgment count);
* ``nuts``: :func:`planner.model.fit` with ``engine="nuts"`` on the small
  study's counts (20 systems, 2 chains, 1,000 tuning + 1,000 draws each).

Usage: python bench/bench_report.py [--small 100000] [--large 1000000] [--repeat 3] [--no-nuts]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
M = 20
N_PROMPTS = 200
STRATA = ("chat", "coding", "math", "writing")
VERDICTS = ("A", "B", "tie", "invalid")
REASONS = ("accuracy", "completeness", "format", None)


def write_inputs(d: Path, n: int, seed: int = 0) -> tuple[Path, Path, Path]:
    """prompts.jsonl, responses.jsonl and n normalized judgments under ``d``."""
    rng = np.random.default_rng(seed)
    d.mkdir(parents=True, exist_ok=True)
    systems = [f"sys-{i:02d}" for i in range(M)]
    pf, rf, jf = d / "prompts.jsonl", d / "responses.jsonl", d / f"judgments-{n}.jsonl"
    with open(pf, "w", encoding="utf-8") as f:
        for p in range(N_PROMPTS):
            f.write(json.dumps({"id": f"p{p}", "text": f"prompt {p}", "stratum": STRATA[p % len(STRATA)]}) + "\n")
    with open(rf, "w", encoding="utf-8") as f:
        for p in range(N_PROMPTS):
            for s in systems:
                f.write(json.dumps({"prompt": f"p{p}", "system": s, "text": "x" * int(rng.integers(50, 2000))}) + "\n")
    beta = np.linspace(1.0, -1.0, M)
    a = rng.integers(0, M, n)
    b = (a + rng.integers(1, M, n)) % M
    delta = beta[a] - beta[b] + 0.3
    ea, eb, nu = np.exp(delta / 2), np.exp(-delta / 2), 0.4
    u = rng.random(n) * (ea + eb + nu)
    v = np.where(u < ea, 0, np.where(u < ea + eb, 1, 2))
    v[rng.random(n) < 0.01] = 3
    reason = rng.integers(0, len(REASONS), n)
    prompt = rng.integers(0, N_PROMPTS, n)
    with open(jf, "w", encoding="utf-8") as f:
        for k in range(n):
            rec = {"id": f"b:{k}", "prompt": f"p{prompt[k]}", "a": systems[a[k]], "b": systems[b[k]],
                   "verdict": VERDICTS[v[k]], "judge": "judge-1"}
            if v[k] < 2 and REASONS[reason[k]]:
                rec["reason"] = REASONS[reason[k]]
            f.write(json.dumps(rec) + "\n")
    return pf, rf, jf


def build_study(root: Path, n: int) -> Path:
    from planner.store.study import ingest, init_study

    pf, rf, jf = write_inputs(root / f"inputs-{n}", n)
    study = root / f"study-{n}"
    init_study(study, prompts_file=pf, responses_file=rf)
    ingest(study, [jf])
    jf.unlink()
    return study


def time_command(study: Path, repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        t = time.perf_counter()
        subprocess.run([sys.executable, "-m", "cli.main", "report", str(study), "--engine", "laplace", "--json"],
                       cwd=ROOT, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        best = min(best, time.perf_counter() - t)
    return best


def parts(study: Path) -> dict[str, float]:
    from planner.model import fit
    from planner.store.study import Study

    out = {}
    with Study.open(study) as st:
        t = time.perf_counter()
        counts = st.report_scan().judged   # counts by stratum and the judgment-level figures, one scan
        out["report scan"] = time.perf_counter() - t
    t = time.perf_counter()
    fit(counts.pooled(), engine="laplace")
    out["laplace fit"] = time.perf_counter() - t
    out["cells"] = counts.pooled().n_cells
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--small", type=int, default=100_000)
    ap.add_argument("--large", type=int, default=1_000_000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--no-nuts", action="store_true")
    args = ap.parse_args()
    sys.path.insert(0, str(ROOT))
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        t = time.perf_counter()
        small, large = build_study(root, args.small), build_study(root, args.large)
        print(f"setup (write + ingest, not timed below): {time.perf_counter() - t:.1f} s")
        t_small, t_large = time_command(small, args.repeat), time_command(large, args.repeat)
        print(f"planner report --engine laplace, {M} systems: {args.small:,} judgments {t_small:.2f} s, "
              f"{args.large:,} judgments {t_large:.2f} s; ratio {t_large / t_small:.2f} (target <= 1.3)")
        ps, pl = parts(small), parts(large)
        for key in ("report scan", "laplace fit"):
            print(f"  {key:13s} {ps[key]:7.3f} s vs {pl[key]:7.3f} s (ratio {pl[key] / ps[key]:.2f})")
        print(f"  cells in the likelihood: {ps['cells']} vs {pl['cells']}")
        if not args.no_nuts:
            from planner.model import fit
            from planner.store.study import Study

            with Study.open(small) as st:
                counts = st.counts()
            t = time.perf_counter()
            f = fit(counts, engine="nuts", seed=0, draws=1000, tune=1000, chains=2)
            d = f.diagnostics
            print(f"NUTS fit, {M} systems, 2 chains x (1,000 tune + 1,000 draws): {time.perf_counter() - t:.1f} s "
                  f"(max r-hat {d.max_r_hat:.3f}, min ESS {min(d.min_ess_bulk, d.min_ess_tail):.0f}, "
                  f"divergences {d.divergences})")


if __name__ == "__main__":
    main()
