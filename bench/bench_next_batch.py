"""Issue 6 benchmark: `planner next-batch --engine laplace` at 100 systems.

Builds (once, in a temporary directory) a study with 100 systems, 300 prompts
in 5 strata and one short response per (prompt, system), ingests 100,000
synthetic normalized judgments drawn from known strengths, then measures in
one run:

* the fit alone (`planner.model.fit`, Laplace) on the study's counts;
* the selection alone (`planner.acquisition.select_pairs`, active/ranking,
  batch 200, pending items none) on that posterior — target ≤ 0.2× the fit;
* the whole command `planner next-batch STUDY --size 200 --dry-run` in a
  subprocess (wall time, including interpreter start and imports) — target:
  seconds, not minutes.

    python bench/bench_next_batch.py [--systems 100] [--judgments 100000] [--size 200] [--repeat 3]
    python bench/bench_next_batch.py --stages STUDY --size 1000   # cProfile of the whole command, by stage
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from planner.acquisition import select_pairs  # noqa: E402
from planner.model import bt, fit  # noqa: E402
from planner.store.study import Study, ingest, init_study  # noqa: E402


def build(tmp: Path, m: int, n_judgments: int, n_prompts: int, seed: int) -> Path:
    rng = np.random.default_rng(seed)
    systems = [f"sys{i:03d}" for i in range(m)]
    strata = ["s1", "s2", "s3", "s4", "s5"]
    with open(tmp / "prompts.jsonl", "w") as fh:
        for p in range(n_prompts):
            fh.write(json.dumps({"id": f"p{p}", "text": f"prompt {p}", "stratum": strata[p % 5]}) + "\n")
    with open(tmp / "responses.jsonl", "w") as fh:
        for p in range(n_prompts):
            for s in systems:
                fh.write(json.dumps({"prompt": f"p{p}", "system": s, "text": f"response text {p}"}) + "\n")
    beta = np.linspace(2.0, -2.0, m)
    a = rng.integers(0, m, n_judgments)
    b = (a + rng.integers(1, m, n_judgments)) % m
    pa, pb, _ = bt.outcome_probs(beta[a] - beta[b] + 0.2, 0.3)
    u = rng.random(n_judgments)
    verdict = np.where(u < pa, "A", np.where(u < pa + pb, "B", "tie"))
    with open(tmp / "judgments.jsonl", "w") as fh:
        for k in range(n_judgments):
            fh.write(json.dumps({"id": f"j{k}", "prompt": f"p{k % n_prompts}", "a": systems[a[k]],
                                 "b": systems[b[k]], "verdict": str(verdict[k])}) + "\n")
    study = tmp / "study"
    init_study(study, prompts_file=tmp / "prompts.jsonl", responses_file=tmp / "responses.jsonl")
    ingest(study, [tmp / "judgments.jsonl"])
    return study


#: stages of the whole command, as (label, function name, file) in the cProfile of one run
STAGES = [("whole next_batch workflow", "next_batch", "workflows/next_batch.py"),
          ("  one scan: counts, pending, usage", "plan_counts", "queries.py"),
          ("  fit (_fit; before session 4: + counts, pending)", "_fit", None), ("    Study.counts", "counts", "queries.py"),
          ("    the Laplace fit", "fit_laplace", None),
          ("  showable responses", "_showable", None), ("  pair-prompt usage (old: sets)", "pair_prompt_usage", None),
          ("  pair-prompt usage (new: arrays)", "pair_prompt_usage_codes", None),
          ("  pair_prompts bookkeeping", "pair_prompts", "pair_prompts.py"),
          ("  selection (select_pairs)", "select_pairs", None), ("  stratum slots", "_stratum_slots", None),
          ("  prompt per pick (_choose)", "_choose", None), ("  batch assembly (_assemble)", "_assemble", None)]


def stages(study: Path, size: int) -> None:
    """cProfile one whole ``next-batch STUDY --dry-run --json`` (a child process) and print its stages' CPU.

    The profiler's clock is ``time.process_time`` (the child's CPU, all threads), so
    other processes' load does not count.

    ``_fit``'s line holds the fit (before session 4 also the counts and the pending
    counts, now read by ``plan_counts`` with the pair-prompt usage); the
    lines are cumulative times of one function each (profiled, so ~10-30 % above
    an unprofiled run).
    """
    import pstats

    with tempfile.TemporaryDirectory() as d:
        out = Path(d) / "nb.prof"
        child = ("import cProfile, runpy, sys, time\n"
                 f"sys.argv = ['cli', 'next-batch', {str(study)!r}, '--size', '{size}', '--dry-run', '--json']\n"
                 "pr = cProfile.Profile(time.process_time)\npr.enable()\n"
                 "try:\n    runpy.run_module('cli', run_name='__main__')\nexcept SystemExit:\n    pass\n"
                 f"pr.disable()\npr.dump_stats({str(out)!r})\n")
        subprocess.run([sys.executable, "-c", child], check=True, capture_output=True, cwd=ROOT)
        st = pstats.Stats(str(out)).stats
    for label, name, where in STAGES:
        got = [v[3] for (file, _, fn), v in st.items() if fn == name and (where is None or file.endswith(where))]
        if got:
            print(f"{label:36s} {max(got):7.2f} s")


def median_time(fn, repeat: int) -> float:
    out = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        out.append(time.perf_counter() - t)
    return statistics.median(out)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--systems", type=int, default=100)
    ap.add_argument("--judgments", type=int, default=100_000)
    ap.add_argument("--prompts", type=int, default=300)
    ap.add_argument("--size", type=int, default=200)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--stages", metavar="STUDY", help="only profile the whole command on this built study")
    args = ap.parse_args()
    if args.stages:
        stages(Path(args.stages), args.size)
        return
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        t = time.perf_counter()
        study = build(tmp, args.systems, args.judgments, args.prompts, seed=0)
        print(f"built study: {args.systems} systems, {args.judgments:,} judgments in {time.perf_counter() - t:.1f} s")
        with Study.open(study) as st:
            counts = st.counts()
            pending = st.pending_counts()
        t_fit = median_time(lambda: fit(counts, engine="laplace"), args.repeat)
        post = fit(counts, engine="laplace").posterior
        t_sel = median_time(lambda: select_pairs(post, args.size, judged=counts, pending=pending,
                                                 rng=np.random.default_rng(0)), args.repeat)
        cmd = [sys.executable, "-m", "cli", "next-batch", str(study), "--size", str(args.size), "--dry-run",
               "--json"]
        t_cmd = median_time(lambda: subprocess.run(cmd, check=True, capture_output=True, cwd=ROOT), args.repeat)
        print(f"fit (Laplace)            {t_fit * 1000:8.0f} ms")
        print(f"selection (active/rank.) {t_sel * 1000:8.0f} ms   = {t_sel / t_fit:.2f} x the fit (target <= 0.2)")
        print(f"whole command (dry run)  {t_cmd:8.2f} s    (subprocess, incl. imports)")


if __name__ == "__main__":
    main()
