"""Markdown rendering of ``planner report`` (edge): tables, the report document, the style-control section.

:func:`render_markdown` turns a :class:`planner.workflows.report.Report` into a
shareable Markdown document (deterministic for a given report) and
:func:`write_markdown` writes it atomically. :func:`table` is the one Markdown
table writer; :func:`pct` and :func:`num` (from :mod:`planner.sentences`) the cell
formats (``—`` for a missing or non-finite value). The flags, notes and the
diagnostics' sentences come from :mod:`planner.sentences`; nothing here computes a
figure.
"""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import Any

from planner import sentences
from planner.escape import for_markdown
from planner.model.bt import ELO_SCALE
from planner.sentences import num, pct

__all__ = ["render_markdown", "style_section", "table", "write_document", "write_markdown"]


FLAGGED = " — **flagged**"   # Markdown mark after a flagged figure's sentence


class Raw(str):
    """A table cell that is Markdown written here (``**re-weighted**``), not text to escape."""


def _cell(c) -> str:
    return c if isinstance(c, Raw) else for_markdown(c)


def table(header: list[str], rows: list[list[str]]) -> list[str]:
    """A Markdown table (header, rule, one line per row) followed by a blank line.

    Every cell is text (escaped with :func:`planner.escape.for_markdown`: a name
    with ``|``, ``<script>`` or an escape byte reads as itself) unless it is :class:`Raw`.
    """
    out = ["| " + " | ".join(_cell(c) for c in header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    out += ["| " + " | ".join(_cell(c) for c in r) + " |" for r in rows]
    return out + [""]


# ---------------------------------------------------------------- report sections
def _head(r) -> list[str]:
    m = r.model
    L: list[str] = [f"# Report: {for_markdown(Path(r.study).name)}", ""]
    tot = r.totals
    L += [f"Judgments: A {tot['A']:,} / B {tot['B']:,} / tie {tot['tie']:,} / invalid {tot['invalid']:,} "
          f"(ranking kinds; A/B relative to the stored orientation). Engine: {m.engine}"
          + (", per-stratum model re-weighted to stratum weights" if m.by_stratum else "") + f", seed {m.seed}.",
          ""]
    if r.flags:
        L += ["## Flags", ""] + [f"- {for_markdown(f)}" for f in r.flags] + [""]
    return L


def _leaderboard(r) -> list[str]:
    L = ["## Leaderboard", "",
         "Strength β on the logit scale (sum to zero), Elo = 1500 + 173.7 β. Two systems sharing a letter are "
         "not credibly separated (95% interval of their difference includes 0); systems sharing no letter are. "
         "`rank` is the 95% interval of the system's rank over posterior draws (1 = best). "
         "`P(lead>x)` = posterior probability that the leader is stronger; `tied` marks systems not "
         "credibly below the leader (P(lead>x) < 0.95). That is a comparison with the leader only: two "
         "tied systems may still be separated from each other (their letters say so).", ""]
    has_acc = r.acceptability is not None
    letters = r.ranking is None or r.ranking.letters_shown
    if not letters:
        L += [r.ranking.letters_note[0].upper() + r.ranking.letters_note[1:] + ".", ""]
    head = ["tied"] + (["letters"] if letters else []) + ["system", "Elo", "Elo 95% CrI", "β", "β 95% CrI",
                                                          "P(best)", "P(lead>x)", "rank",
            "score", "W/L/T/inv"]
    if has_acc:
        head.append("acceptable")
    rows = []
    for x in r.leaderboard:
        row = ["tied" if x.tied_with_leader else ""] + ([x.letters] if letters else []) + [x.system, f"{x.elo:.0f}",
               f"[{x.elo_lo:.0f}, {x.elo_hi:.0f}]", f"{x.mean:+.3f}",
               f"[{x.lo:+.3f}, {x.hi:+.3f}]", f"{x.p_best:.3f}",
               "leader" if x.p_leader_better is None else f"{x.p_leader_better:.3f}",
               f"{x.rank_low}" if x.rank_low == x.rank_high else f"{x.rank_low}–{x.rank_high}",
               num(x.score), f"{x.wins}/{x.losses}/{x.ties}/{x.invalid}"]
        if has_acc:
            row.append("—" if x.pass_rate is None else
                       f"{pct(x.pass_rate, 0)} [{pct(x.pass_low, 0)}, {pct(x.pass_high, 0)}] (n={x.pass_n})")
        rows.append(row)
    L += table(head, rows)
    L += ["Tied with the leader (not credibly below it): " + ", ".join(map(for_markdown, r.tied_with_leader)), ""]
    L += ([r.clusters.sentence[0].upper() + r.clusters.sentence[1:] + ".", ""] if r.clusters is not None else [])
    return L + ([f"Remaining budget (the forecast `planner plan` saved): {for_markdown(r.forecast.sentence())}.", ""]
                if r.forecast is not None else [])


def _pairs_and_anchor(r) -> list[str]:
    L = ["## Pairs", ""]
    L += table(["a", "b", "a wins", "b wins", "ties", "invalid", "a's score", "P(a better)"],
               [[p.system_a, p.system_b, p.a_wins, p.b_wins, p.ties, p.invalid, num(p.score),
                 num(p.p_a_better)] for p in r.pairs.rows])
    if r.anchor_tests is not None:
        at = r.anchor_tests
        L += [f"## Against the anchor ({for_markdown(at.anchor)})", "",
              f"Win rate (ties: {at.ties}) with Wilson 95% interval and the exact two-sided binomial test of 50%.",
              ""]
        L += table(["system", "wins", "losses", "ties", "invalid", "win rate", "95% CI", "p"],
                   [[a.system, a.wins, a.losses, a.ties, a.invalid, pct(a.win_rate),
                     f"[{pct(a.ci_low)}, {pct(a.ci_high)}]", num(a.pvalue, ".3g")] for a in at.rows])
    return L


def _diagnostics(r) -> list[str]:
    m, rs = r.model, r.reasons
    L = ["## Diagnostics", "",
         "- " + sentences.tie_rate_sentence(r.ties.overall, m.nu),
         "- " + sentences.position_sentence(r.position, m.gamma, FLAGGED if r.position.flagged else "")]
    if r.length is not None:
        L.append("- " + sentences.length_sentence(r.length, FLAGGED if r.length.flagged else ""))
    L += ["- " + for_markdown(sentences.triads_sentence(r.triads)), "- " + sentences.reasons_sentence(rs), ""]
    if any(x.win_reasons and any(s.reason for s in x.win_reasons) for x in rs.rows):
        L += ["### Reasons (share of each system's wins / losses)", ""]
        L += table(["system", "wins", "win reasons", "losses", "loss reasons"],
                   [[x.system, x.wins, ", ".join(f"{s.reason or 'none'} {pct(s.share, 0)}" for s in x.win_reasons),
                     x.losses, ", ".join(f"{s.reason or 'none'} {pct(s.share, 0)}" for s in x.loss_reasons)]
                    for x in rs.rows])
    return L + _annotators(r)


def _annotators(r) -> list[str]:
    if r.annotators is None:
        return []
    ag = r.annotators.agreement
    L = ["### Annotators", ""]
    L += table(["annotator", "judgments", "attention", "swap consistency", "kappa", "fast", "left share",
                "longest run", "flags"],
               [[a.annotator, a.n_judgments, pct(a.attention_rate, 0), pct(a.swap_rate, 0), num(a.kappa, ".2f"),
                 pct(a.fast_share, 0), pct(a.left_share, 0), a.longest_run, ", ".join(a.flags) or "—"]
                for a in r.annotators.annotators])
    if ag.method:
        L += [sentences.agreement_sentence(ag), ""]
    return L


def _strata(r) -> list[str]:
    st = r.strata
    if len(st.rows) <= 1:
        return []
    L = ["## Strata", "",
         f"Half-tie score of each system per stratum; weights from {for_markdown(st.weights_source)}. The last row "
         "is the population figure re-weighted to the stratum weights.", ""]
    head = ["stratum", "weight", "judgments", "tie rate"] + list(st.systems)
    rows = [[s.stratum, f"{s.weight:.3f}", s.judgments, pct(s.tie_rate)] + [num(v) for v in s.scores]
            for s in st.rows]
    rows.append([Raw("**re-weighted**"), "1.000", sum(s.judgments for s in st.rows), ""]
                + [num(v) for v in st.weighted_scores])
    L += table(head, rows)
    if st.rows[0].mean is not None:
        L += ["Per-stratum strengths (Elo, partially pooled):", ""]
        L += table(["stratum"] + list(st.systems),
                   [[s.stratum] + [f"{1500 + ELO_SCALE * v:.0f}" for v in s.mean] for s in st.rows])
    return L


def _acceptability(r) -> list[str]:
    if r.acceptability is None:
        return []
    a = r.acceptability
    L = ["## Acceptability", "", f"Pass rates (source: {for_markdown(r.acceptability_source)}) with Wilson 95% "
         "intervals, in "
         "ranking order. Pairwise order is silent about level.", ""]
    return L + table(["system", "pass", "fail", "invalid", "pass rate", "95% CI"],
                     [[x.system, x.passed, x.failed, x.invalid, pct(x.pass_rate),
                       f"[{pct(x.ci_low)}, {pct(x.ci_high)}]"]
                      for x in a.rows])


def _model(r) -> list[str]:
    m = r.model
    d = m.diagnostics
    L = ["## Model", "",
         f"Bradley–Terry–Davidson with a left-position shift; engine {m.engine}; {m.n_usable:,} usable judgments in "
         f"the likelihood, {m.n_invalid:,} invalid excluded.", ""]
    if m.engine == "nuts":
        L.append(f"- max r̂ = {num(d.max_r_hat)}, min ESS bulk/tail = {num(d.min_ess_bulk, '.0f')}/"
                 f"{num(d.min_ess_tail, '.0f')}, divergences = {d.divergences}.")
    else:
        L.append(f"- Newton iterations {d.iterations}, converged: {'yes' if d.converged else 'no'}.")
    L.append(f"- γ = {m.gamma.mean:.3f} [{m.gamma.lo:.3f}, {m.gamma.hi:.3f}], ν = {m.nu.mean:.3f} "
             f"[{m.nu.lo:.3f}, {m.nu.hi:.3f}], σ = {m.sigma.mean:.3f}"
             + (f", τ = {m.tau.mean:.3f}" if m.tau is not None else "") + ".")
    if r.posterior_artifact:
        L.append(f"- Posterior saved in the study as `{r.posterior_artifact}` (ArviZ netcdf).")
    L.append("")
    return L


def _judges_and_notes(r) -> list[str]:
    L: list[str] = []
    if r.judges:
        L += ["## LLM judges", ""]
        L += table(["model", "answers", "prompt tokens", "completion tokens", "cost (USD)"],
                   [[j["model"], f"{j['answers']:,}", f"{j['prompt_tokens']:,}", f"{j['completion_tokens']:,}",
                     "—" if j.get("cost_usd") is None else f"{j['cost_usd']:.4f}"] for j in r.judges])
    if r.notes:
        L += ["## Notes", ""] + [f"- {for_markdown(n)}" for n in r.notes] + [""]
    return L


def render_markdown(report: Any) -> str:
    """The report (:class:`planner.workflows.report.Report`) as a Markdown document (deterministic)."""
    r = report
    L = _head(r) + _leaderboard(r) + _pairs_and_anchor(r) + _diagnostics(r) + _strata(r) + _acceptability(r)
    L += _model(r)
    if r.style_control is not None:
        L += style_section(r.style_control)
    L += _judges_and_notes(r)
    return "\n".join(L).rstrip() + "\n"


def write_markdown(report: Any, path) -> str:
    """Write :func:`render_markdown` to ``path`` (UTF-8); returns the path.

    Raises :class:`UsageError` naming ``--markdown`` when the file cannot be written.
    """
    return write_document(render_markdown(report), path, "markdown")


def write_document(content: str, path, parameter: str) -> str:
    """Write a report document (Markdown, HTML) to ``path`` through a temporary file; returns the path.

    Raises :class:`UsageError` naming ``parameter`` when the file cannot be written there, a
    :class:`DataError` when the disk is full (:func:`planner.formats.staging.write_failure`).
    """
    p = Path(path)
    tmp = p.with_name(p.name + ".tmp")
    try:
        if p.parent and not p.parent.exists():
            p.parent.mkdir(parents=True, exist_ok=True)
        tmp.write_text(content, encoding="utf-8")
        tmp.replace(p)
    except OSError as exc:
        from planner.formats.staging import write_failure

        with contextlib.suppress(OSError):   # no half-written temporary left behind
            tmp.unlink()
        raise write_failure(parameter, path, exc) from None
    return str(p)


# ------------------------------------------------------------------ style control
def style_section(sc: Any) -> list[str]:
    """The Markdown lines of the style-control section (a :class:`StyleControlReport`)."""
    L = ["## Style control", ""]
    if sc.rows:
        L += [f"Bradley–Terry–Davidson with style covariates (length, headers, list items, bold; Chatbot Arena's "
              f"style control), engine {sc.engine}, {sc.n_used:,} judgments"
              + (f" ({sc.n_excluded:,} without both response texts left out)" if sc.n_excluded else "") + ".",
              "", for_markdown(sc.sentence), ""]
        if sc.clusters is not None:
            cs = sentences.style_cluster_sentence(sc)
            L += [for_markdown(cs[0].upper() + cs[1:]) + ".", ""]
        L += table(["system", "raw rank", "raw β [95% CrI]", "controlled rank", "controlled β [95% CrI]",
                    "controlled rank 95%", "P(best)"],
                   [[r.system, r.raw_rank, f"{r.raw_mean:+.3f} [{r.raw_lo:+.3f}, {r.raw_hi:+.3f}]", r.rank,
                     f"{r.mean:+.3f} [{r.lo:+.3f}, {r.hi:+.3f}]",
                     f"{r.rank_low}" if r.rank_low == r.rank_high else f"{r.rank_low}–{r.rank_high}",
                     f"{r.p_best:.3f}"] for r in sc.rows])
        L += table(["feature", "rms unit", "coefficient (logit/unit)", "95% CrI", "odds ratio", "95% CrI"],
                   [[c.feature, f"{c.scale:.3f}", f"{c.mean:+.3f}", f"[{c.lo:+.3f}, {c.hi:+.3f}]",
                     f"{c.odds_ratio:.2f}", f"[{c.odds_lo:.2f}, {c.odds_hi:.2f}]"] for c in sc.coefficients])
        L += [f"Controlled model: position γ = {sc.position.mean:.3f} [{sc.position.lo:.3f}, {sc.position.hi:.3f}], "
              f"ν = {sc.nu.mean:.3f} [{sc.nu.lo:.3f}, {sc.nu.hi:.3f}]; strengths' prior sd fixed at 3 logits.", ""]
    if sc.lc:
        L += [f"### Length-controlled win rate against {for_markdown(sc.lc_anchor)} (AlpacaEval LC GLM)", ""]
        L += table(["system", "n", "raw win rate", "LC win rate", "95% CI", "tanh-length weight"],
                   [[r.system, r.n, f"{100 * r.win_rate:.1f}%", f"{100 * r.lc_win_rate:.1f}%",
                     f"[{100 * r.lc_lo:.1f}%, {100 * r.lc_hi:.1f}%]", f"{r.weights['tanh_length']:+.3f}"]
                    for r in sc.lc])
    return L  # its notes and warnings are in the report's Notes and Flags
