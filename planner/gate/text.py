"""The release gate's English: the verdict in one sentence (from the same rows as the table) and its notes."""

from __future__ import annotations


def decision_sentence(verdict, rows, gate, candidate, baseline, mode, margin, theta_reg, confidence_level, K) -> str:
    def names(rs):
        xs = [r.stratum for r in rs]
        return xs[0] if len(xs) == 1 else ", ".join(xs[:-1]) + " and " + xs[-1]

    where = "" if K == 1 and rows[0].stratum == "all" else " in "
    if verdict == "regress":
        bad = [r for r in rows if r.verdict == "regress"]
        parts = []
        if bad:
            def fig(r):
                return f"{r.win_rate:.0%}, upper {confidence_level:.0%} bound {r.ci_high:.0%}"

            if where:
                listed = [f"{r.stratum} ({fig(r)})" for r in bad]
                scope = listed[0] if len(listed) == 1 else ", ".join(listed[:-1]) + " and " + listed[-1]
                parts.append(f"{candidate}'s win rate against {baseline} is credibly below "
                             f"{theta_reg:.0%} in {scope}")
            else:
                parts.append(f"{candidate}'s win rate against {baseline} is credibly below "
                             f"{theta_reg:.0%} ({fig(bad[0])})")
        if gate.status == "fail":
            parts.append(f"acceptability: {gate.message}")
        return "Release gate: REGRESS — " + "; ".join(parts) + "."
    if verdict == "undecided":
        und = [r for r in rows if r.verdict == "undecided"]
        if where:
            parts = ["no stratum regresses"]
        elif und:
            parts = [f"{candidate} neither passes nor regresses yet"]
        else:  # the win rate passes; only the acceptability gate is undecided
            parts = [f"{candidate}'s win rate against {baseline} passes"]
        if not any(r.n for r in rows):
            figs = [r.more_comparisons for r in rows]
            total = f" — about {sum(figs):,} comparisons needed" if all(f is not None for f in figs) else ""
            per = " over all strata" if len(rows) > 1 and total else ""
            parts = [f"{candidate} and {baseline} have not been compared yet{total}{per}"]
        elif not where and und:
            f = und[0].more_comparisons
            if f is not None:
                parts[-1] += f" — about {f:,} more comparisons needed"
            else:
                parts[-1] += " — more comparisons may not settle it (see notes)"
        elif und:
            figs = [r.more_comparisons for r in und]
            verb = "is" if len(und) == 1 else "are"
            label = names(und) if where else "the comparison"
            known = [f for f in figs if f is not None]
            if len(und) > 3:
                tail = [f"about {sum(known):,} more comparisons in all"] if known else []
                if len(known) < len(figs):
                    tail.append(f"{len(figs) - len(known)} may not settle with more data")
                parts[-1] += f"; {len(und)} strata are undecided ({label}) — " + ", ".join(tail)
            elif len(known) == len(figs):
                if len(und) == 1:
                    more = f"about {figs[0]:,} more comparisons there"
                else:
                    more = (f"about {', '.join(f'{f:,}' for f in figs[:-1])} and {figs[-1]:,} more comparisons "
                            f"there ({sum(figs):,} in all)")
                parts[-1] += f"; {label} {verb} undecided — {more}"
            else:
                parts[-1] += f"; {label} {verb} undecided — more comparisons may not settle it (see notes)"
        if gate.status == "undecided":
            parts.append(f"acceptability undecided: {gate.message}")
        return "Release gate: UNDECIDED — " + "; ".join(parts) + "."
    claim = (f"non-inferior to {baseline} (margin {margin:g})" if mode == "non-inferiority"
             else f"better than {baseline}" + (f" (margin {margin:g} for regressions)" if margin else ""))
    scope = f" in all {K} strata" if K > 1 else (f" in {rows[0].stratum}" if where else "")
    ok = f"; acceptability OK ({gate.message})" if gate.status == "pass" else ""
    return f"Release gate: PASS — {candidate} is {claim}{scope}{ok}."


def multiplicity_note(alpha: float, K: int) -> str:
    """How the family-wise error is controlled: Holm–Bonferroni over ``K`` strata."""
    return (f"Holm–Bonferroni across {K} strat{'um' if K == 1 else 'a'} "
            f"(family-wise alpha {alpha:g}, each one-sided test at alpha/2 = {alpha / 2:g} before adjustment)")


def decision_notes(first: list[str], *, look: int, looks: int, boundary: str, strictest: float, fixed: float,
          theta_pass: float, positions: list[tuple[str, float, int]], candidate: str, baseline: str,
          pair_n: int, weighted: bool) -> list[str]:
    """The decision's notes after ``first`` (multiplicity, then the model's warnings).

    ``strictest`` is the critical z at Holm's strictest step, ``fixed`` the
    fixed-sample threshold it replaces with looks; ``positions`` the
    (stratum, share of judgments with the candidate first, judgments) rows.
    """
    out = list(first)
    if looks > 1:
        out.append(f"look {look} of {looks}: the tests use the two-sided {boundary} group-sequential boundary "
                   f"at each Holm step's level (|z| >= {strictest:.3f} at the strictest step) instead of the "
                   f"fixed-sample threshold {fixed:.3f}")
    out.append(f"the model columns (win probability and P(win >= {theta_pass:.0%})) come from the "
               "Bradley-Terry-Davidson model fitted per stratum to every system's judgments (strata partially "
               "pooled, indirect comparisons through other systems included, position effect removed), so "
               "they can be far surer than this pair's direct W-L-T; P(win >= ...) is a posterior "
               "probability: it needs no correction for strata or looks, but it is not a p-value and does "
               "not decide the verdict")
    for name, share, used in positions:
        if used >= 20 and abs(share - 0.5) > 0.1:
            out.append(f"positions unbalanced in {name}: {candidate} was shown first in {share:.0%} of {used} "
                       "judgments; the win rate includes any position bias (the posterior corrects for it)")
    if pair_n == 0:
        out.append(f"no comparisons between {candidate} and {baseline} yet: every stratum is undecided")
    if not weighted:
        out.append("strata weighted equally (no stratum weights given)")
    return out


def clustering_note(cluster: str, strata) -> str:
    """How clustered verdicts entered the gate: the design effects the tests and intervals used."""
    if cluster == "none":
        return "judgments treated as independent (--cluster none)"
    used = [r.design_effect for r in strata if r.n > 0]
    if not used or max(used) <= 1.0:
        return (f"clustered by {cluster}: verdicts agree no more than chance, so tests and intervals are those of "
                "independent judgments")
    span = f"{min(used):.2f}" if max(used) - min(used) < 0.005 else f"{min(used):.2f}–{max(used):.2f}"
    return (f"clustered by {cluster}: verdicts on the same prompt agree beyond chance, so each stratum's tests and "
            f"interval use its design effect ({span}; intervals widened up to {max(used) ** 0.5:.2f}×)")
