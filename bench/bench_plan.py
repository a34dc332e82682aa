"""Issue 24: what `planner plan` costs, and what the saved forecast adds to `status` and `next-batch`.

On a pilot study (10% of the real Vicuna-80 GPT-4 verdicts, shipped in planner/data/vicuna80: 8 systems, 448
verdicts), in one run, so the ratios share the machine's load:

* one forecast: seconds per repetition (targets resolved at 70 Elo and credible-τ 0.9, `active`,
  batches of 50, both orders), single worker;
* `planner status` and `planner next-batch --dry-run` as a user runs them (a fresh process each time,
  imports included), median of ``--repeat`` runs, without and with a saved forecast, and the ratio.

    python bench/bench_plan.py [--reps 20] [--repeat 7]
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def _cli(*args: str) -> float:
    t0 = time.perf_counter()
    subprocess.run([sys.executable, "-m", "cli", *args], cwd=ROOT, check=True, capture_output=True)
    return time.perf_counter() - t0


def _median_time(args: list[str], repeat: int) -> float:
    return statistics.median(_cli(*args) for _ in range(repeat))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--reps", type=int, default=20)
    ap.add_argument("--repeat", type=int, default=7)
    args = ap.parse_args()
    from planner.workflows.example import write_example
    from planner.workflows.plan import PlanOptions, plan

    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        write_example("vicuna80", tmp / "ex")
        data = tmp / "ex"
        rows = [json.loads(line) for line in (data / "judgments" / "qlora_vicuna80_gpt4.jsonl").open()]
        random.Random(24).shuffle(rows)
        (tmp / "pilot.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows[:448]))
        study = tmp / "study"
        _cli("init", str(study), "--prompts", str(data / "vicuna80" / "prompts.jsonl"),
             "--responses", str(data / "vicuna80" / "responses.jsonl"))
        _cli("ingest", str(study), str(tmp / "pilot.jsonl"))
        bare = tmp / "bare"
        shutil.copytree(study, bare)
        t0 = time.perf_counter()
        res = plan(study, PlanOptions(targets=("resolved", "credible-tau=0.9"), margin=70.0, reps=args.reps,
                                      orders="both", workers=1))
        per_rep = (time.perf_counter() - t0) / args.reps
        f = res.targets[0]
        print(f"forecast: {args.reps} repetitions, {per_rep:.2f} s per repetition "
              f"(resolved at 70 Elo: {f.median:,.0f} [{f.lo:,.0f}–{f.hi:,.0f}] more)")
        for name, cmd in (("status", ["status"]), ("next-batch --dry-run", ["next-batch", "--dry-run"])):
            without = _median_time([cmd[0], str(bare), *cmd[1:]], args.repeat)
            with_ = _median_time([cmd[0], str(study), *cmd[1:]], args.repeat)
            print(f"{name}: {without:.2f} s without a saved forecast, {with_:.2f} s with it "
                  f"({with_ / without:.2f}x; median of {args.repeat})")


if __name__ == "__main__":
    main()
