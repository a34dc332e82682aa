"""`planner simulate --hybrid`: money budgets spent on humans only vs the planned humans + judge split.

Only typer-free standard imports at module level; numpy and planner.workflows.simulate_hybrid are imported
inside :func:`run_hybrid`, rich inside the renderer.
"""

from __future__ import annotations

from .common import call, out, print_json
from .tables import print_table


def run_hybrid(*, money, human_cost, judge_cost, agreement, win_rate, tie_rate, position, reps, seed,
               from_study, surrogate, json_out) -> None:
    import numpy as np

    from planner.errors import UsageError
    from planner.workflows import simulate_hybrid as sh

    def parse():
        if money is None:
            raise UsageError("--hybrid needs --money (one or more budgets, comma-separated)")
        try:
            budgets = [float(x) for x in str(money).split(",") if x.strip()]
        except ValueError:
            raise UsageError(f"--money ({str(money)[:80]!r}) must be numbers separated by commas") from None
        for name, v in (("--human-cost", human_cost), ("--judge-cost", judge_cost)):
            if v is None:
                raise UsageError(f"--hybrid needs {name} (the price of one label)")
        if (from_study is None) != (surrogate is None):
            raise UsageError("--from-study and --surrogate go together with --hybrid")
        return budgets

    budgets = call(parse)
    from planner.limits import check_seed

    call(check_seed, "--seed", seed)
    rng = np.random.default_rng(seed)
    if from_study is not None:
        rho, rows = call(sh.replay_study, from_study, surrogate, budgets, human_cost=human_cost,
                         judge_cost=judge_cost, reps=reps, rng=rng)
        what = f"replay of {from_study} ({surrogate} as the judge), 90% intervals on the strengths"
    else:
        from planner.simulation.money import simulate_money

        rho, rows = call(simulate_money, budgets, human_cost=human_cost, judge_cost=judge_cost,
                         win_rate=win_rate, tie_rate=tie_rate, agreement=agreement, position=position,
                         reps=reps, rng=rng)
        what = (f"synthetic pair: win rate {win_rate:.0%}, ties {tie_rate:.0%}, judge agreement {agreement:.0%} "
                f"per order, position logit {position:g}; 95% intervals on the win rate")
    if json_out:
        print_json({"rho": rho, "what": what, "seed": seed, "rows": rows})
        return
    _render(rho, what, rows, human_cost, judge_cost)


def _render(rho, what, rows, human_cost, judge_cost) -> None:
    from rich.table import Table

    t = Table(title=f"{what}; rho = {rho:.3f}; human label {human_cost:g}, judge label {judge_cost:g}")
    for col in ("money", "plan", "humans", "judge only", "eff. n", "half-width (plan)", "coverage", "power (plan)"):
        t.add_column(col, justify="left" if col == "plan" else "right")
    for r in rows:
        pw = "—" if r.power is None else f"{r.power:.2f} ({r.predicted_power:.2f})"
        t.add_row(f"{r.budget:,.0f}", "hybrid" if r.N else "humans", f"{r.n:,}", f"{r.N:,}", f"{r.effective_n:,.0f}",
                  f"{r.half_width:.4f} ({r.predicted_half_width:.4f})", f"{r.coverage:.3f}", pw)
    print_table(t)
    out().print(money_sentence(rows), markup=False)


def money_sentence(rows) -> str:
    """One sentence from the rows: the hybrid's achieved width relative to humans only, per budget."""
    parts = []
    for r in rows:
        if r.method != "humans + judge":
            continue
        h = next(x for x in rows if x.budget == r.budget and x.method == "humans only")
        parts.append(f"with {r.budget:,.0f} the judge split gives intervals {r.half_width / h.half_width:.0%} "
                     f"as wide as humans only (planned {r.predicted_half_width / h.predicted_half_width:.0%})")
    if not parts:
        return "At these prices the judge does not pay off: every budget is spent on human labels only."
    return "Same money: " + "; ".join(parts) + "."
