"""The tables of bench_plan_validate.py's results file (imported by it with ``--table``).

Per case (set, variant, pilot, target): the forecast's median and 80% interval, the actual (the first
replay continuation), the continuations' median and range (context), and the three scores; then the
acceptance figures per target and variant, and the PIT (the share of the forecast's repetitions below the
actual, ties split: a calibrated forecast gives PIT uniform on [0, 1]).
"""

from __future__ import annotations

import json
import math
from pathlib import Path

INF = math.inf


def _v(x):
    return INF if x is None else float(x)


def scores(t: dict) -> dict:
    """covered / within 25% / ratio / PIT of one target's forecast against its actual."""
    a, med, lo, hi = _v(t["actual"]), _v(t["median"]), _v(t["lo"]), _v(t["hi"])
    covered = lo <= a <= hi
    within = _within(med, a)
    if math.isinf(a) or math.isinf(med) or a == 0 or med == 0:
        ratio = 1.0 if within else INF
    else:
        ratio = max(med / a, a / med)
    reps = [_v(x) for x in t["per_rep"]]
    below = sum(r < a for r in reps) + 0.5 * sum(r == a for r in reps)
    return {"covered": covered, "within": within, "ratio": ratio, "pit": below / len(reps)}


def _fmt(x) -> str:
    x = _v(x)
    return "beyond" if math.isinf(x) else f"{x:,.0f}"


def _cont(vals) -> str:
    v = sorted(_v(x) for x in vals)
    if not v:
        return "—"
    med = v[len(v) // 2] if len(v) % 2 else 0.5 * (v[len(v) // 2 - 1] + v[len(v) // 2])
    return f"{_fmt(med)} [{_fmt(v[0])}–{_fmt(v[-1])}]"


def load(path: Path) -> list[dict]:
    return [json.loads(line) for line in Path(path).read_text().splitlines() if line.strip()]


def print_tables(path: Path) -> None:
    cases = load(path)
    print("| set | variant | pilot | ICC | target | forecast median [80%] | actual | continuations median "
          "[range] | covered | within 25% | ratio | PIT |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    summary: dict[tuple, list] = {}
    for c in sorted(cases, key=lambda c: (c["variant"], c["set"], c["pilot"])):
        for metric, t in c["targets"].items():
            s = scores(t)
            summary.setdefault((metric, c["variant"]), []).append(s)
            ratio = "∞" if math.isinf(s["ratio"]) else f"{s['ratio']:.2f}"
            print(f"| `{c['set']}` | {c['variant']} | {c['pilot']} | {c['icc']:.2f} | {metric} | {_fmt(t['median'])} "
                  f"[{_fmt(t['lo'])}–{_fmt(t['hi'])}] | {_fmt(t['actual'])} | {_cont(t['continuations'])} | "
                  f"{'yes' if s['covered'] else '**no**'} | {'yes' if s['within'] else 'no'} | "
                  f"{ratio} | "
                  f"{s['pit']:.2f} |")
    print()
    print("| target | variant | cases | covered by the 80% interval | median within ±25% | largest ratio | "
          "PIT < 0.1 / > 0.9 |")
    print("|---|---|---|---|---|---|---|")
    everything = []
    for (metric, variant), ss in sorted(summary.items()):
        everything += ss
        _summary_row(metric, variant, ss)
    _summary_row("all", "all", everything)
    print()
    _context(cases)
    print()
    _per_set(cases)


def _context(cases: list[dict]) -> None:
    """What no forecast can beat, and the same scores read looser (context, not the acceptance)."""
    n = oracle = loose = 0
    secs, reps = [], []
    for c in cases:
        secs.append(c["seconds_forecast"])
        reps.append(c["seconds_forecast"] / c["reps"])
        for t in c["targets"].values():
            n += 1
            a = _v(t["actual"])
            others = sorted(_v(x) for x in t["continuations"][1:])
            if others:
                oracle += _within(others[len(others) // 2], a)
            med = _v(t["median"])
            loose += _within(med, a) or (not math.isinf(a) and not math.isinf(med)
                                         and abs(med - a) <= c["batch"])
    print(f"* a forecast that knew the real pool's other continuations (their median) would be within ±25% of "
          f"the actual in {oracle}/{n} = {oracle / n:.0%} of cases;")
    print(f"* within ±25% or one round of {cases[0]['batch']}: {loose}/{n} = {loose / n:.0%};")
    secs.sort()
    reps.sort()
    print(f"* one forecast ({cases[0]['reps']} repetitions, one worker, the loaded 2-core machine): median "
          f"{secs[len(secs) // 2]:.0f} s (range {secs[0]:.0f}–{secs[-1]:.0f} s), {reps[len(reps) // 2]:.2f} s per "
          "repetition.")


def _per_set(cases: list[dict]) -> None:
    """Per set and variant, ``resolved``: how far the forecast's median sits from the real pool's continuations."""
    print("| set | variant | resolved: real continuations' median ÷ forecast median, per pilot | covered | "
          "within ±25% |")
    print("|---|---|---|---|---|")
    groups: dict[tuple, list] = {}
    for c in sorted(cases, key=lambda c: (c["variant"], c["set"], c["pilot"])):
        groups.setdefault((c["set"], c["variant"]), []).append(c["targets"]["resolved"])
    for (name, variant), ts in groups.items():
        ratios = []
        for t in ts:
            conts = sorted(_v(x) for x in t["continuations"])
            med, cm = _v(t["median"]), conts[len(conts) // 2]
            ratios.append("—" if math.isinf(med) or math.isinf(cm) or med == 0 else f"{cm / med:.2f}")
        sc = [scores(t) for t in ts]
        print(f"| `{name}` | {variant} | {', '.join(ratios)} | {sum(x['covered'] for x in sc)}/{len(sc)} | "
              f"{sum(x['within'] for x in sc)}/{len(sc)} |")


def _within(med: float, a: float) -> bool:
    if math.isinf(a) or math.isinf(med):
        return math.isinf(a) and math.isinf(med)
    if a == 0 or med == 0:
        return a == med
    return abs(med - a) <= 0.25 * a


def _summary_row(metric: str, variant: str, ss: list[dict]) -> None:
    n = len(ss)
    cov = sum(s["covered"] for s in ss)
    win = sum(s["within"] for s in ss)
    worst = max(s["ratio"] for s in ss)
    low = sum(s["pit"] < 0.1 for s in ss)
    high = sum(s["pit"] > 0.9 for s in ss)
    print(f"| {metric} | {variant} | {n} | {cov}/{n} = {cov / n:.0%} | {win}/{n} = {win / n:.0%} | "
          f"{'∞' if math.isinf(worst) else f'{worst:.2f}'} | {low} / {high} |")
