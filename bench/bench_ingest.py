"""Benchmark: ingest throughput of normalized judgments vs merely parsing them.

Writes N normalized JSONL rows (default 1,000,000) over 8 systems and 80
prompts, then in the same run measures

* ``parse``: ``json.loads`` of every line (the floor any reader pays);
* ``ingest``: ``planner.store.study.ingest`` of the same file into a fresh study
  (including the SHA-256 pass over the file and the commit)
  (stream, validate, batched ``executemany`` in one transaction), run in a
  child process so its peak resident memory (``ru_maxrss``) is its own;

and prints the ratio ingest / parse (target <= 3) and the peak memory.

Usage: python bench/bench_ingest.py [--rows N]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
SYSTEMS = ["gpt-4", "gpt-3.5-turbo", "bard", "vicuna-13b", "guanaco-7b", "guanaco-13b", "guanaco-33b",
           "guanaco-65b"]
VERDICTS = ["A", "B", "tie", "invalid"]

CHILD = """
import sys, time, resource
from planner.store.study import ingest
t, c = time.perf_counter(), time.process_time()
res = ingest(sys.argv[1], [sys.argv[2]])
dt, dc = time.perf_counter() - t, time.process_time() - c
print(dt, dc, res.files[0].rows, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)
"""


def write_rows(path: Path, n: int, seed: int = 0) -> None:
    rng = np.random.default_rng(seed)
    a = rng.integers(0, 8, n)
    b = (a + rng.integers(1, 8, n)) % 8
    v = rng.choice(4, n, p=[0.5, 0.35, 0.13, 0.02])
    with open(path, "w", encoding="utf-8") as f:
        for k in range(n):
            f.write(json.dumps({"id": f"bench:{k}", "prompt": f"vicuna80-q{1 + k % 80}", "a": SYSTEMS[a[k]],
                                "b": SYSTEMS[b[k]], "verdict": VERDICTS[v[k]], "judge": "gpt-4"}) + "\n")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=1_000_000)
    args = ap.parse_args()
    sys.path.insert(0, str(ROOT))
    from planner.store.study import init_study

    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        data = tmp / "judgments.jsonl"
        write_rows(data, args.rows)
        size_mb = data.stat().st_size / 1e6
        prompts = tmp / "prompts.jsonl"
        prompts.write_text("".join(json.dumps({"id": f"vicuna80-q{i}", "text": f"q{i}", "stratum": f"s{i % 9}"})
                                   + "\n" for i in range(1, 81)), encoding="utf-8")
        init_study(tmp / "study", systems=SYSTEMS, prompts_file=prompts)

        t, c = time.perf_counter(), time.process_time()
        with open(data, encoding="utf-8") as f:
            n = sum(1 for line in f if json.loads(line))
        parse_s, parse_cpu = time.perf_counter() - t, time.process_time() - c

        env = dict(os.environ, PYTHONPATH=str(ROOT))
        out = subprocess.run([sys.executable, "-c", CHILD, str(tmp / "study"), str(data)], env=env,
                             capture_output=True, text=True, check=True).stdout.split()
        ingest_s, ingest_cpu, rows, maxrss_kb = float(out[0]), float(out[1]), int(out[2]), int(out[3])
        db_mb = (tmp / "study" / "study.sqlite").stat().st_size / 1e6
    assert rows == n == args.rows
    print(f"rows                 {n:,} ({size_mb:.0f} MB JSONL)")
    print(f"json.loads per line  {parse_s:.2f} s wall, {parse_cpu:.2f} s CPU ({n / parse_s:,.0f} rows/s)")
    print(f"planner ingest       {ingest_s:.2f} s wall, {ingest_cpu:.2f} s CPU ({n / ingest_s:,.0f} rows/s)")
    print(f"ratio ingest/parse   {ingest_s / parse_s:.2f}x wall, {ingest_cpu / parse_cpu:.2f}x CPU (target <= 3x; "
          "CPU is the fair figure on a shared machine)")
    print(f"peak RSS of ingest   {maxrss_kb / 1024:.0f} MiB (Python + numpy + sqlite page cache)")
    print(f"database size        {db_mb:.0f} MB")


if __name__ == "__main__":
    main()
