"""Issue 24: are `planner plan`'s forecasts right? Forecast from random 10% pilots, then replay the real rest.

For every real replay set (the three shared QLoRA sets in ../shared/data/judgments when present, the five
PRD sets of bench/data/replays) and its fixed-order variant (each pair kept in one presentation order,
chosen at random, the other order dropped), and for ``--pilots`` random 10% pilots of it:

1. **pilot**: 10% of the set's verdicts drawn uniformly at random (seeded by set, variant and pilot);
   a study is made for it (``init`` with the set's prompts and a placeholder response per (prompt,
   system): the forecast reads which prompts each pair can be shown on, never the texts) and the
   pilot is ingested with ``planner ingest``;
2. **forecast**: :func:`planner.workflows.plan.plan` on that study — targets credible-τ 0.9 and
   ``resolved`` at ``--margin`` Elo (70: the smallest round margin that the full pool of every set as
   published resolves, 39–55 Elo needed; ``--margin-fixed`` 150 on the fixed-order variants, whose
   pools hold half the verdicts and confound position: 22–135 Elo needed), strategy ``active``,
   batches of ``--batch``, ``--reps``
   repetitions, level 0.8; the design is the set's (both orders and one verdict per order for the
   PRD, Vicuna GPT-4 and OA sets; one order and three votes per item for the human set; ``fixed`` for
   the fixed-order variants); every feature of the simulated judge is the pilot's (``plan``'s defaults);
3. **actual**: the real loop continues from the same pilot on the rest of the real set, drawing real
   verdicts without replacement (the replay of ``simulate --replay``), same targets, strategy and
   batch; the truth of credible-τ is the fit of the whole set, as in ``simulate --replay``.

**The actual is one continuation.** A replay continuation is itself random (which real verdict of a
pair comes next); a real study is one such continuation, so each (set, pilot) is scored against its
first continuation (seed 10,000 + pilot). ``--continuations N`` runs N of them and also reports their
median and range (context only, never scored).

Scoring, per (set, variant, pilot, target): **covered** when the actual lies in the forecast's 80%
interval (a target not met within the pool counts as +inf: covered when the interval's upper end is
beyond the budget too); **within 25%** when |median − actual| <= 0.25 actual (an actual of 0 needs a
median of 0; both beyond the budget agree); **ratio** max(median/actual, actual/median) (0/0 = 1).

Output: one JSON line per (set, variant, pilot) in ``--out`` (resumable: finished lines are kept and
skipped); ``--table`` prints the markdown tables of bench/RESULTS.md from that file.

    nice -n 10 python bench/bench_plan_validate.py --reps 100 --out bench/out/plan_validate.jsonl
    python bench/bench_plan_validate.py --out bench/out/plan_validate.jsonl --table
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))
SHARED = ROOT.parent / "shared" / "data" / "judgments"
MORE = ROOT / "bench" / "data" / "replays"
CODE = {"A": 0, "B": 1, "tie": 2, "invalid": 3}
TARGETS = ("credible-tau=0.9", "resolved")


def _commit() -> str:
    import subprocess

    try:
        return subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True,
                              check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return ""


COMMIT = _commit()


def sets(shared: Path = SHARED) -> dict[str, Path]:
    """The real sets: the three shared QLoRA sets (those present in ``shared``) and the five PRD sets."""
    out = {n: shared / f"qlora_{n}.jsonl" for n in ("vicuna80_human", "vicuna80_gpt4", "oa_gpt4")}
    out = {n: p for n, p in out.items() if p.exists()}
    out.update({p.stem: p for p in sorted(MORE.glob("*.jsonl"))})
    return out


def fixed_order(rows: list[dict], seed: int) -> list[dict]:
    """Each unordered pair in one presentation order, chosen at random; the other order's rows dropped."""
    rng = np.random.default_rng(seed)
    pairs = sorted({tuple(sorted((r["a"], r["b"]))) for r in rows})
    first_left = {p: bool(rng.integers(2)) for p in pairs}
    return [r for r in rows if (r["a"] == min(r["a"], r["b"])) == first_left[tuple(sorted((r["a"], r["b"])))]]


def design_of(name: str, variant: str) -> tuple[str, int]:
    """(orders, votes) of a set: the human set shows each item in one order to three raters."""
    votes = 3 if name == "vicuna80_human" else 1
    if variant == "fixed":
        return "fixed", votes
    return ("one" if name == "vicuna80_human" else "both"), votes


def prompt_pools(rows: list[dict]) -> tuple[int, ...]:
    """Prompts each pair is shown on in the set, per pair in the forecast's pair order (sorted systems):
    a fixed-order variant of the human set keeps each pair only on the prompts its kept order was on."""
    from planner.simulation.study_pool import pair_index

    systems = sorted({r["a"] for r in rows} | {r["b"] for r in rows})
    seen: dict[tuple[str, str], set] = {}
    for r in rows:
        seen.setdefault(tuple(sorted((r["a"], r["b"]))), set()).add(r["prompt"])
    i, j = pair_index(len(systems))
    return tuple(len(seen.get((systems[a], systems[b]), ())) for a, b in zip(i.tolist(), j.tolist()))


def make_study(tmp: Path, rows: list[dict], pilot: list[dict]) -> Path:
    """A study holding the set's prompts, a placeholder response per (prompt, system), and the pilot."""
    from planner.store.study import ingest, init_study

    prompts = sorted({r["prompt"] for r in rows})
    systems = sorted({r["a"] for r in rows} | {r["b"] for r in rows})
    (tmp / "prompts.jsonl").write_text("".join(json.dumps({"id": p, "text": p}) + "\n" for p in prompts))
    (tmp / "responses.jsonl").write_text("".join(json.dumps({"prompt": p, "system": s, "text": f"{s} on {p}"}) + "\n"
                                                 for p in prompts for s in systems))
    (tmp / "pilot.jsonl").write_text("".join(json.dumps(r) + "\n" for r in pilot))
    study = tmp / "study"
    init_study(study, systems=systems, prompts_file=tmp / "prompts.jsonl", responses_file=tmp / "responses.jsonl")
    ingest(study, [tmp / "pilot.jsonl"])
    return study


def replay_pool(systems: tuple[str, ...], rows: list[dict]):
    """A replay pool over the study's system order (``a`` shown first, as in the files)."""
    from planner.simulation.replay import ReplayPool

    six = {s: k for k, s in enumerate(systems)}
    left = np.array([six[r["a"]] for r in rows], dtype=np.int64)
    right = np.array([six[r["b"]] for r in rows], dtype=np.int64)
    out = np.array([CODE[r["verdict"]] for r in rows], dtype=np.int64)
    lo, hi = np.minimum(left, right), np.maximum(left, right)
    by_pair = {}
    for i, j in sorted(set(zip(lo.tolist(), hi.tolist()))):
        by_pair[(i, j)] = np.flatnonzero((lo == i) & (hi == j))
    return ReplayPool(systems, left, right, out, by_pair, "bench")


def actual(systems, rows, rest, start, args, pilot_k: int) -> list[dict]:
    """The replay continuations from the pilot: per continuation, comparisons to each target (None: never)."""
    from planner.simulation.forecast import needed
    from planner.simulation.loop import run_one
    from planner.simulation.replay import replay_truth
    from planner.simulation.spec import SimulationSpec, parse_strategies, parse_target

    full = replay_pool(systems, rows)
    truth = replay_truth(full)
    stop = tuple(parse_target(t) for t in TARGETS)
    spec = SimulationSpec("replay", parse_strategies(args.strategy), n_systems=len(systems), budget=len(rest),
                          batch=args.batch, reps=args.continuations, seed=10_000 + pilot_k, truth=truth,
                          replay=replay_pool(systems, rest), margin_elo=args.margin, start=start, stop_at=stop)
    runs = []
    for rep in range(args.continuations):
        tr = run_one(spec, 0, rep)
        runs.append({m: (None if math.isinf(needed(tr, m, v)) else needed(tr, m, v)) for m, v in stop})
    return runs


def one_case(name: str, variant: str, rows: list[dict], k: int, args) -> dict:
    from planner.store.study import Study
    from planner.workflows.plan import PlanOptions, plan

    rng = np.random.default_rng([abs(hash_name(name)), 0 if variant == "both" else 1, k])
    pick = rng.permutation(len(rows))
    n_pilot = len(rows) // 10
    pilot = [rows[i] for i in sorted(pick[:n_pilot])]
    rest = [rows[i] for i in sorted(pick[n_pilot:])]
    orders, votes = design_of(name, variant)
    with tempfile.TemporaryDirectory() as tmp:
        study = make_study(Path(tmp), rows, pilot)
        t0 = time.perf_counter()
        opts = PlanOptions(targets=TARGETS, margin=args.margin, strategy=args.strategy, batch=args.batch,
                           reps=args.reps, confidence_level=0.8, seed=k, orders=orders, votes=votes,
                           prompts=prompt_pools(rows), workers=args.workers)
        res = plan(study, opts, save=False)
        t_forecast = time.perf_counter() - t0
        with Study.open(study) as s:
            start, systems = s.counts(by_stratum=False), tuple(s.systems)
    t0 = time.perf_counter()
    acts = actual(systems, rows, rest, start, args, k)
    t_actual = time.perf_counter() - t0
    targets = {}
    for f in res.targets:
        targets[f.metric] = {"median": _num(f.median), "lo": _num(f.lo), "hi": _num(f.hi), "reached": f.reached,
                             "already": f.already, "budget": f.budget,
                             "per_rep": [_num(x) for x in f.per_rep],
                             "actual": acts[0][f.metric], "continuations": [a[f.metric] for a in acts]}
    icc = next(s.value for s in res.settings if s.name == "ICC")
    return {"commit": COMMIT, "set": name, "variant": variant, "pilot": k, "rows": len(rows), "pilot_rows": n_pilot, "icc": icc,
            "orders": orders, "votes": votes, "reps": args.reps, "batch": args.batch, "margin": args.margin,
            "strategy": args.strategy, "seconds_forecast": round(t_forecast, 1), "seconds_actual": round(t_actual, 1),
            "settings": [[s.name, s.shown, s.source] for s in res.settings], "targets": targets}


def hash_name(name: str) -> int:
    """A stable integer of a set's name (Python's hash() is salted per process)."""
    import hashlib

    return int(hashlib.sha256(name.encode()).hexdigest()[:12], 16)


def _num(x: float):
    return None if math.isinf(x) else float(x)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sets", default=None, help="comma-separated set names (default: all present)")
    ap.add_argument("--shared", type=Path, default=SHARED, help="folder of the shared QLoRA judgment files")
    ap.add_argument("--variants", default="both,fixed")
    ap.add_argument("--pilots", type=int, default=5)
    ap.add_argument("--reps", type=int, default=100)
    ap.add_argument("--batch", type=int, default=50)
    ap.add_argument("--margin", type=float, default=70.0, help="resolved's margin (Elo) on the sets as published")
    ap.add_argument("--margin-fixed", type=float, default=150.0, help="resolved's margin on the fixed-order variants")
    ap.add_argument("--strategy", default="active")
    ap.add_argument("--continuations", type=int, default=10)
    ap.add_argument("--workers", type=int, default=1)
    ap.add_argument("--out", type=Path, default=ROOT / "bench" / "out" / "plan_validate.jsonl")
    ap.add_argument("--table", action="store_true", help="print the tables from --out and exit")
    args = ap.parse_args()
    if args.table:
        from plan_validate_table import print_tables

        print_tables(args.out)
        return
    chosen = sets(args.shared)
    if args.sets:
        chosen = {n: chosen[n] for n in args.sets.split(",")}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    done = set()
    if args.out.exists():
        for line in args.out.read_text().splitlines():
            try:
                d = json.loads(line)
            except ValueError:
                continue
            done.add((d["set"], d["variant"], d["pilot"], d["reps"], d["batch"], d["margin"], d["strategy"]))
    for k in range(args.pilots):
        for name, path in chosen.items():
            all_rows = [json.loads(line) for line in path.open(encoding="utf-8")]
            for variant in args.variants.split(","):
                margin = args.margin if variant == "both" else args.margin_fixed
                key = (name, variant, k, args.reps, args.batch, margin, args.strategy)
                if key in done:
                    continue
                rows = all_rows if variant == "both" else fixed_order(all_rows, hash_name(name))
                case = one_case(name, variant, rows, k, argparse.Namespace(
                    **{**vars(args), "margin": args.margin if variant == "both" else args.margin_fixed}))
                with args.out.open("a", encoding="utf-8") as fh:
                    fh.write(json.dumps(case) + "\n")
                t = case["targets"]
                print(f"{name} {variant} pilot {k}: " + "; ".join(
                    f"{m} {v['median']} [{v['lo']}, {v['hi']}] actual {v['actual']}" for m, v in t.items())
                    + f" ({case['seconds_forecast']:.0f} s + {case['seconds_actual']:.0f} s)", flush=True)


if __name__ == "__main__":
    main()
