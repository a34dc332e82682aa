"""Benchmark: everyday commands on the full Vicuna80 GPT-4 study, as ratios to `planner status` (issue 13).

Builds the study once (not timed): ../shared/data vicuna80 prompts and
responses, the 4,480 GPT-4 judgments ingested. Then times fresh processes
(``python -m cli ...``, as a user runs them), the commands interleaved round
by round so machine load hits them alike, best of ``--repeat`` (and the median of the per-round ratios):

* ``status STUDY`` — the reference;
* ``report STUDY --engine laplace --json`` — target <= 2x status;
* ``decide STUDY --candidate guanaco-7b --baseline gpt-3.5-turbo --json`` — target <= 2x;
* ``next-batch STUDY --dry-run --size 40 --reuse-prompts`` — target <= 2.5x.

Ratios, not seconds, are the result: the machine is shared. Exit codes 3/4 of
decide (regress/undecided) are results, not failures.

Usage: python bench/bench_everyday.py [--data ../shared/data] [--repeat 5]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TARGETS = {"report": 2.0, "decide": 2.0, "next-batch": 2.5}


def _run(args: list[str]) -> float:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    t0 = time.perf_counter()
    r = subprocess.run([sys.executable, "-m", "cli", *args], cwd=ROOT, env=env, capture_output=True, text=True)
    dt = time.perf_counter() - t0
    if r.returncode not in (0, 3, 4):
        raise SystemExit(f"{args[0]} failed ({r.returncode}): {r.stderr.strip()[:300]}")
    return dt


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", default=str(ROOT.parent / "shared" / "data"))
    ap.add_argument("--repeat", type=int, default=5)
    a = ap.parse_args()
    data = Path(a.data)
    sys.path.insert(0, str(ROOT))
    from planner.store.study import ingest, init_study

    with tempfile.TemporaryDirectory() as tmp:
        st = Path(tmp) / "v80"
        init_study(st, prompts_file=data / "vicuna80" / "prompts.jsonl",
                   responses_file=data / "vicuna80" / "responses.jsonl")
        ingest(st, [data / "judgments" / "qlora_vicuna80_gpt4.jsonl"])
        cmds = {
            "status": ["status", str(st)],
            "report": ["report", str(st), "--engine", "laplace", "--json"],
            "decide": ["decide", str(st), "--candidate", "guanaco-7b", "--baseline", "gpt-3.5-turbo", "--json"],
            "next-batch": ["next-batch", str(st), "--dry-run", "--size", "40", "--reuse-prompts"],
        }
        _run(cmds["status"])                      # warm the file cache once
        times = {k: [] for k in cmds}
        for _ in range(a.repeat):
            for k, c in cmds.items():
                times[k].append(_run(c))
    best = {k: min(v) for k, v in times.items()}
    print(f"status: {best['status']:.2f} s (reference)")
    ok = True
    for k, target in TARGETS.items():
        ratio = best[k] / best["status"]
        # the same round's status run is the fairest reference on a noisy machine: median of those ratios
        paired = sorted(t / s for t, s in zip(times[k], times["status"]))
        median = paired[len(paired) // 2] if len(paired) % 2 else 0.5 * sum(paired[len(paired) // 2 - 1:][:2])
        ok &= ratio <= target
        print(f"{k}: {best[k]:.2f} s = {ratio:.2f}x status (target <= {target}x) {'ok' if ratio <= target else 'OVER'}; "
              f"median of per-round ratios {median:.2f}x")
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
