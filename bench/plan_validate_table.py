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
    if math.isinf(a) or math.isinf(med):
        within = math.isinf(a) and math.isinf(med)
        ratio = 1.0 if within else INF
    elif a == 0 or med == 0:
        within = a == med
        ratio = 1.0 if within else INF
    else:
        within = abs(med - a) <= 0.25 * a
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


def _summary_row(metric: str, variant: str, ss: list[dict]) -> None:
    n = len(ss)
    cov = sum(s["covered"] for s in ss)
    win = sum(s["within"] for s in ss)
    worst = max(s["ratio"] for s in ss)
    low = sum(s["pit"] < 0.1 for s in ss)
    high = sum(s["pit"] > 0.9 for s in ss)
    print(f"| {metric} | {variant} | {n} | {cov}/{n} = {cov / n:.0%} | {win}/{n} = {win / n:.0%} | "
          f"{'∞' if math.isinf(worst) else f'{worst:.2f}'} | {low} / {high} |")
