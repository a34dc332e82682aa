"""The acceptability gate: the candidate's absolute pass rate against the baseline's and a floor.

Wilson intervals per system and Newcombe's hybrid score interval for the
difference (:mod:`planner.stats.proportions`, the one implementation).
"""

from __future__ import annotations

import numpy as np

from planner.gate.results import AcceptabilityGate
from planner.stats.proportions import newcombe_difference, wilson_interval


def acceptability_gate(acc, ci: int, bi: int, min_pass_rate: float | None,
                       confidence_level: float, candidate: str, baseline: str) -> AcceptabilityGate:
    """The gate on the two systems' pass/fail verdicts (``acc``: ``passed``/``failed`` with systems as rows)."""
    if acc is None:
        cp = cf = bp = bf = 0
    else:
        cp, cf = int(np.asarray(acc.passed)[ci].sum()), int(np.asarray(acc.failed)[ci].sum())
        bp, bf = int(np.asarray(acc.passed)[bi].sum()), int(np.asarray(acc.failed)[bi].sum())
    cn, bn = cp + cf, bp + bf
    cr = cp / cn if cn else None
    br = bp / bn if bn else None
    cl, ch = wilson_interval(cp, cn, confidence_level)
    bl, bh = wilson_interval(bp, bn, confidence_level)
    d, dl, dh = newcombe_difference(cp, cn, bp, bn, confidence_level)
    pct = lambda v: f"{100 * v:.0f}%"  # noqa: E731
    fails, undecided, fine = [], [], []
    if d is not None and dl is not None and dh is not None:   # all three, or none without verdicts
        if dh < 0:
            fails.append(f"{candidate}'s pass rate {pct(cr)} is credibly below {baseline}'s {pct(br)} "
                         f"(difference {100 * d:+.0f} points, {confidence_level:.0%} Newcombe interval "
                         f"[{100 * dl:+.0f}, {100 * dh:+.0f}])")
        else:
            fine.append(f"pass rate {pct(cr)} vs {baseline}'s {pct(br)} (difference {100 * d:+.0f} points, "
                        f"{confidence_level:.0%} interval [{100 * dl:+.0f}, {100 * dh:+.0f}])")
    if min_pass_rate is not None:
        if cr is None:
            undecided.append(f"{candidate} has no acceptability verdicts to check against "
                             f"--min-pass-rate {pct(min_pass_rate)}")
        elif ch is not None and ch < min_pass_rate:
            fails.append(f"{candidate}'s pass rate {pct(cr)} ({confidence_level:.0%} interval {pct(cl)}–{pct(ch)}) "
                         f"is credibly below --min-pass-rate {pct(min_pass_rate)}")
        elif cr < min_pass_rate:
            undecided.append(f"{candidate}'s pass rate {pct(cr)} is below --min-pass-rate {pct(min_pass_rate)} "
                             f"but not credibly (interval {pct(cl)}–{pct(ch)}): collect more acceptability items")
        else:
            fine.append(f"pass rate {pct(cr)} meets --min-pass-rate {pct(min_pass_rate)}")
    if fails:
        status, msg = "fail", "; ".join(fails)
    elif undecided:
        status, msg = "undecided", "; ".join(undecided)
    elif fine:
        status, msg = "pass", f"{candidate}: " + "; ".join(fine)
    else:
        status = "not-applicable"
        msg = ("no acceptability verdicts for the two systems" if cn + bn == 0 else
               f"acceptability verdicts for only one of the two systems ({candidate}: {cn}, {baseline}: {bn})")
    return AcceptabilityGate(status, cp, cf, bp, bf, cr, cl, ch, br, bl, bh, d, dl, dh, min_pass_rate, msg)
