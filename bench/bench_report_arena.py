"""Issue 30: `planner report` at Arena scale against `next-batch --dry-run` and LMArena's arena-rank.

Builds (or reuses, ``--study``) the 300-system / 1,000,000-verdict study of
``bench_next_batch.build`` (300 prompts in 5 strata, Davidson verdicts from known
strengths) and its normalized JSONL, then runs, interleaved, ``--repeat`` rounds of
fresh processes:

* ``planner report STUDY --json --engine laplace`` (stdout to a file: the whole JSON is written);
* ``planner next-batch STUDY --dry-run --json --reuse-prompts`` (default size), the reference command;
* with ``--arena-rank-python PY`` (a separate virtual environment with ``arena-rank``, which pins
  its own numpy and jax): ``bench/arena_rank_script.py`` on the same JSONL.

For each: wall time and the child's CPU (user + sys), best of the rounds, and the median of
the per-round ratios (the machine is shared: ratios within a round are what to compare).
Targets: report ≤ 1.5 × next-batch, ≤ 0.5 × arena-rank. ``--dataset vicuna`` does the same on
the shipped Vicuna-80 GPT-4 study (the package's copy, as ``planner example vicuna80`` writes it).

``--blas``: the Laplace fit of the study's counts in this process with BLAS's default threads
and on one thread (``planner.stats.blas.one_blas_thread``), alternating, first on the machine
as it is, then with ``--load`` busy processes started here (and ended by their ids after).

    python bench/bench_report_arena.py [--study DIR] [--repeat 3] [--arena-rank-python PY]
    python bench/bench_report_arena.py --dataset vicuna --repeat 5 [--arena-rank-python PY]
    python bench/bench_report_arena.py --study DIR --blas [--load 2]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))


def _child(cmd: list[str], out: Path) -> tuple[float, float]:
    """``(wall, cpu)`` of one fresh process; stdout to ``out``, a failure stops the bench."""
    r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    with open(out, "wb") as fh:
        r = subprocess.run(cmd, cwd=ROOT, stdout=fh, stderr=subprocess.PIPE)
    wall = time.perf_counter() - t0
    r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    if r.returncode != 0:
        raise SystemExit(f"{' '.join(cmd[:4])} failed ({r.returncode}): {r.stderr.decode()[-400:]}")
    return wall, r1.ru_utime + r1.ru_stime - r0.ru_utime - r0.ru_stime


def build_arena(tmp: Path, study: str | None, jsonl: str | None) -> tuple[Path, Path]:
    if study is not None:
        study_p = Path(study)
        return study_p, Path(jsonl) if jsonl else study_p.parent / "judgments.jsonl"
    from bench_next_batch import build

    t = time.perf_counter()
    study_p = build(tmp, 300, 1_000_000, 300, seed=0)
    print(f"built 300 systems, 1,000,000 judgments in {time.perf_counter() - t:.0f} s")
    return study_p, tmp / "judgments.jsonl"


def build_vicuna(tmp: Path) -> tuple[Path, Path]:
    from planner.store.study import ingest, init_study
    from planner.workflows.example import write_example

    data = tmp / "example"
    write_example("vicuna80", data)   # the package's one copy of the data
    study = tmp / "vicuna"
    init_study(study, prompts_file=data / "vicuna80" / "prompts.jsonl",
               responses_file=data / "vicuna80" / "responses.jsonl")
    jsonl = data / "judgments" / "qlora_vicuna80_gpt4.jsonl"
    ingest(study, [jsonl])
    return study, jsonl


def rounds(study: Path, jsonl: Path, repeat: int, arena_py: str | None, tmp: Path) -> dict[str, list]:
    cmds = {"report": [sys.executable, "-m", "cli", "report", str(study), "--json", "--engine", "laplace"],
            # --reuse-prompts: on Vicuna-80 every pair has used every prompt (as in bench_everyday.py)
            "next-batch": [sys.executable, "-m", "cli", "next-batch", str(study), "--dry-run", "--json",
                           "--reuse-prompts"]}
    if arena_py:
        cmds["arena-rank"] = [arena_py, str(ROOT / "bench" / "arena_rank_script.py"), str(jsonl)]
    got: dict[str, list] = {k: [] for k in cmds}
    for r in range(repeat):
        line = []
        for name, cmd in cmds.items():
            wall, cpu = _child(cmd, tmp / f"{name}.out")
            got[name].append((wall, cpu))
            line.append(f"{name} {wall:.2f} s wall / {cpu:.2f} s CPU")
        print(f"round {r + 1}: " + "; ".join(line) + f" (load {os.getloadavg()[0]:.1f})", flush=True)
    return got


def summary(got: dict[str, list]) -> None:
    def ratio(a: str, b: str, k: int) -> tuple[float, float]:
        best = min(x[k] for x in got[a]) / min(x[k] for x in got[b])
        return best, statistics.median(x[k] / y[k] for x, y in zip(got[a], got[b]))

    for name, runs in got.items():
        print(f"{name:10s} best {min(w for w, _ in runs):6.2f} s wall, {min(c for _, c in runs):6.2f} s CPU")
    for other, target in (("next-batch", 1.5), ("arena-rank", 0.5)):
        if other in got:
            (bw, mw), (bc, mc) = ratio("report", other, 0), ratio("report", other, 1)
            print(f"report / {other}: wall {bw:.2f}x best-of, {mw:.2f}x median per round; CPU {bc:.2f}x best-of, "
                  f"{mc:.2f}x median per round (target <= {target})")


def blas(study: Path, load: int, repeat: int) -> None:
    """The Laplace fit with BLAS's default threads and on one thread, without and with ``load`` busy processes."""
    from planner.model import fit
    from planner.stats.blas import one_blas_thread
    from planner.store.study import Study

    with Study.open(study) as st:
        counts = st.counts()
    import threadpoolctl

    threads = [i["num_threads"] for i in threadpoolctl.threadpool_info() if i["user_api"] == "blas"]
    busy: list[subprocess.Popen] = []
    try:
        for label in ("as is", f"{load} busy processes"):
            if label != "as is":
                busy = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(load)]
                time.sleep(1.0)
            default, one = [], []
            for _ in range(repeat):
                t = time.perf_counter()
                fit(counts, engine="laplace")
                default.append(time.perf_counter() - t)
                with one_blas_thread():
                    t = time.perf_counter()
                    fit(counts, engine="laplace")
                    one.append(time.perf_counter() - t)
            print(f"Laplace fit, 300 systems, {label} (load {os.getloadavg()[0]:.1f}): default BLAS threads "
                  f"{threads}: {', '.join(f'{x:.2f}' for x in default)} s; one thread: "
                  f"{', '.join(f'{x:.2f}' for x in one)} s", flush=True)
    finally:
        for p in busy:   # only the processes started here, by their ids
            p.kill()
            p.wait()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dataset", choices=("arena", "vicuna"), default="arena")
    ap.add_argument("--study", help="reuse an Arena-scale study (built by bench_next_batch.build)")
    ap.add_argument("--jsonl", help="its normalized judgments (default: judgments.jsonl beside the study)")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--arena-rank-python", default=os.environ.get("PLANNER_ARENA_RANK_PYTHON"),
                    help="Python of a separate venv with arena-rank installed (optional)")
    ap.add_argument("--blas", action="store_true", help="the fit with default vs one BLAS thread, under load")
    ap.add_argument("--load", type=int, default=2, help="busy processes for --blas")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        if args.dataset == "vicuna":
            study, jsonl = build_vicuna(tmp)
        else:
            study, jsonl = build_arena(tmp, args.study, args.jsonl)
        if args.blas:
            blas(study, args.load, args.repeat)
            return
        if not args.arena_rank_python:
            print("arena-rank: not timed (no --arena-rank-python; see bench/arena_rank_script.py)")
        got = rounds(study, jsonl, args.repeat, args.arena_rank_python, tmp)
        summary(got)
        doc = json.loads((tmp / "report.out").read_text(encoding="utf-8"))
        print(f"report: {len(doc['leaderboard'])} systems, {len(doc['pairs']['rows']):,} pairs, "
              f"letters shown: {doc['ranking']['letters_shown']}, rank draws {doc['ranking']['rank_draws']:,}")


if __name__ == "__main__":
    main()
