"""Benchmark: wall time of `planner size --effect 0.04` relative to importing its stack.

Runs, in the same session and interleaved, `planner size --effect 0.04` (via the
installed console script, falling back to `python -m cli`) and
`python -c "import numpy, scipy.stats, typer, rich"`, REPS times each, and prints
the medians and their ratio. Target (issue 2): ratio <= 1.5.

Usage: python bench/bench_size.py [REPS]
"""

from __future__ import annotations

import shutil
import statistics
import subprocess
import sys
import time


def wall(cmd: list[str]) -> float:
    t0 = time.perf_counter()
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - t0


def main() -> None:
    reps = int(sys.argv[1]) if len(sys.argv) > 1 else 9
    planner = shutil.which("planner")
    size_cmd = ([planner] if planner else [sys.executable, "-m", "cli"]) + ["size", "--effect", "0.04"]
    base_cmd = [sys.executable, "-c", "import numpy, scipy.stats, typer, rich"]
    wall(size_cmd), wall(base_cmd)  # warm the file cache
    t_size, t_base = [], []
    for _ in range(reps):
        t_size.append(wall(size_cmd))
        t_base.append(wall(base_cmd))
    ms, mb = statistics.median(t_size), statistics.median(t_base)
    print(f"planner size --effect 0.04         median {ms * 1000:7.1f} ms over {reps} runs")
    print(f"import numpy, scipy.stats, typer, rich median {mb * 1000:7.1f} ms over {reps} runs")
    print(f"ratio {ms / mb:.2f} (target <= 1.5)")


if __name__ == "__main__":
    main()
