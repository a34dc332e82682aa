"""``planner report --html FILE``: the report as one self-contained page to share (edge).

:func:`render_html` turns the :class:`planner.report_results.Report` that ``--json``
prints (and, with ``--surrogate``, the :class:`planner.workflows.hybrid_report.HybridReport`)
into one HTML document: CSS, JavaScript and SVG inline, no request to any network,
deterministic bytes for a given report (no clock). Sentences come from
:mod:`planner.sentences`, the same functions the Markdown report uses, on the same numbers
as the tables. Every name (system, annotator, stratum, feature, study) is escaped.
The report object is also embedded as JSON (``<script type="application/json"
id="report-data">``) so a reader can take the numbers out of the page.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from planner import __version__, sentences
from planner.formats.html_svg import esc, heatmap, interval_bar, rank_slopes
from planner.formats.markdown import write_document
from planner.jsonable import jsonable
from planner.model.bt import ELO_SCALE
from planner.sentences import num, pct

__all__ = ["render_html", "write_html"]

CSS = """
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;margin:0;color:#1b1b1b;background:#fff}
main{max-width:1100px;margin:0 auto;padding:24px}
h1{font-size:22px;margin:0 0 4px}h2{font-size:18px;margin:28px 0 8px;border-bottom:1px solid #ddd}
h3{font-size:15px;margin:18px 0 6px}
table{border-collapse:collapse;margin:6px 0 12px}th,td{padding:3px 8px;border-bottom:1px solid #eee;
text-align:right;white-space:nowrap}th{background:#f5f5f5;cursor:pointer;user-select:none}
td.t,th.t{text-align:left}tr.tied td{background:#fff8e1}.flag{color:#9a3412}.muted{color:#666}
ul.flags li{color:#9a3412}svg text{font:11px system-ui,sans-serif;fill:#222}svg .head{font-weight:600}
svg.bar .ci{stroke:#2563eb;stroke-width:3}svg.bar .pt{fill:#1e3a8a}
.slopes line{stroke:#9ca3af;stroke-width:1.5}.slopes .moved line{stroke:#dc2626;stroke-width:2}
.side{display:flex;gap:28px;flex-wrap:wrap;align-items:flex-start}section{overflow-x:auto}
"""

# sortable tables: click a header to sort by that column (numbers by value, text by text)
JS = """
document.querySelectorAll("table.sortable").forEach(function (table) {
  table.querySelectorAll("th").forEach(function (th, col) {
    th.addEventListener("click", function () {
      var body = table.tBodies[0], rows = Array.prototype.slice.call(body.rows);
      var dir = th.dataset.dir === "asc" ? -1 : 1; th.dataset.dir = dir === 1 ? "asc" : "desc";
      function key(r) { var t = r.cells[col].textContent.trim(); var v = parseFloat(t.replace(/,/g, ""));
        return isNaN(v) ? t : v; }
      rows.sort(function (a, b) { var x = key(a), y = key(b);
        return (typeof x === typeof y ? (x < y ? -1 : x > y ? 1 : 0) : (typeof x === "number" ? -1 : 1)) * dir; });
      rows.forEach(function (r) { body.appendChild(r); });
    });
  });
});
document.body.dataset.ready = "1";
"""


def _table(head: Sequence[str], rows: Sequence[Sequence[Any]], *, cls: str = "", text_cols: Sequence[int] = (0,),
           row_cls: Sequence[str] | None = None, raw_cols: Sequence[int] = ()) -> str:
    """A sortable table; cells escaped except the columns in ``raw_cols`` (SVG built here)."""
    th = "".join(f'<th class="{"t" if i in text_cols else ""}">{esc(h)}</th>' for i, h in enumerate(head))
    body = []
    for k, row in enumerate(rows):
        tds = "".join(f'<td class="{"t" if i in text_cols else ""}">{c if i in raw_cols else esc(c)}</td>'
                      for i, c in enumerate(row))
        body.append(f'<tr class="{row_cls[k] if row_cls else ""}">{tds}</tr>')
    return (f'<table class="sortable {cls}"><thead><tr>{th}</tr></thead>'
            f'<tbody>{"".join(body)}</tbody></table>')


def _p(sentence: str, cls: str = "") -> str:
    return f'<p class="{cls}">{esc(sentence)}</p>'


def _rank(lo: int, hi: int) -> str:
    return str(lo) if lo == hi else f"{lo}–{hi}"


# ------------------------------------------------------------------------------------ sections
def _head(r) -> str:
    t = r.totals
    engine = f"engine {r.model.engine}" + (" (by stratum, re-weighted)" if r.model.by_stratum else "")
    parts = [f"<h1>Report: {esc(Path(r.study).name)}</h1>",
             _p(f"Judgments: A {t['A']:,} / B {t['B']:,} / tie {t['tie']:,} / invalid {t['invalid']:,}; {engine}; "
                f"seed {r.model.seed}. Made by planner {__version__}.", "muted")]
    if r.flags:
        parts.append('<ul class="flags">' + "".join(f"<li>{esc(f)}</li>" for f in r.flags) + "</ul>")
    return "".join(parts)


def _leaderboard(r) -> str:
    lo = min(x.elo_lo for x in r.leaderboard)
    hi = max(x.elo_hi for x in r.leaderboard)
    has_acc = r.acceptability is not None
    head = ["tied", "letters", "system", "Elo", "95% CrI", "interval", "P(best)", "P(lead>x)", "rank", "score"]
    head += ["acceptable"] if has_acc else []
    rows = []
    for x in r.leaderboard:
        bar = interval_bar(x.elo_lo, x.elo, x.elo_hi, lo, hi,
                           label=f"{x.system}: Elo {x.elo:.0f} [{x.elo_lo:.0f}, {x.elo_hi:.0f}]")
        row = ["tied" if x.tied_with_leader else "", x.letters, x.system, f"{x.elo:.0f}",
               f"[{x.elo_lo:.0f}, {x.elo_hi:.0f}]", bar, f"{x.p_best:.3f}",
               "leader" if x.p_leader_better is None else f"{x.p_leader_better:.3f}",
               _rank(x.rank_low, x.rank_high), num(x.score)]
        if has_acc:
            row.append("—" if x.pass_rate is None else
                       f"{pct(x.pass_rate, 0)} [{pct(x.pass_low, 0)}, {pct(x.pass_high, 0)}]")
        rows.append(row)
    tied = ", ".join(r.tied_with_leader)
    cols: tuple[tuple[int, ...], tuple[int, ...]] = ((0, 1, 2), (5,))
    note = ""
    if r.ranking is not None and not r.ranking.letters_shown:   # above 26 systems: no letters column
        head, rows, cols = head[:1] + head[2:], [x[:1] + x[2:] for x in rows], ((0, 1), (4,))
        note = _p(r.ranking.letters_note[0].upper() + r.ranking.letters_note[1:] + ".")
    return ('<section id="leaderboard"><h2>Leaderboard</h2>'
            + _p("Elo = 1500 + 173.7 β with its 95% credible interval (the bars share one axis, "
                 f"{lo:.0f} to {hi:.0f}). Systems sharing a letter are not credibly separated; rank is the "
                 "95% interval of the rank over posterior draws; P(lead>x) is the posterior probability that "
                 "the leader is stronger.") + note
            + _table(head, rows, text_cols=cols[0], raw_cols=cols[1], cls="leaderboard",
                     row_cls=["tied" if x.tied_with_leader else "" for x in r.leaderboard])
            + f'<p id="tied-with-leader">Tied with the leader (not credibly below it): {esc(tied)}</p>'
            + (f'<p id="clusters">{esc(r.clusters.sentence[0].upper() + r.clusters.sentence[1:])}.</p>'
               if getattr(r, "clusters", None) is not None else "")
            + "</section>")


def _heatmap(r) -> str:
    index = {s: i for i, s in enumerate(r.systems)}
    order = [index[x.system] for x in r.leaderboard]
    return ('<section id="heatmap"><h2>Win rates</h2>'
            + _p("Cell (row, column): the row system's half-tie score against the column system "
                 "((wins + ties/2) / (wins + losses + ties)); red above 50%, blue below, grey without judgments. "
                 "Systems in leaderboard order.")
            + heatmap(r.systems, r.win_matrix, order) + "</section>")


def _pairs(r) -> str:
    rows = [[p.system_a, p.system_b, f"{p.a_wins:,}", f"{p.b_wins:,}", f"{p.ties:,}", f"{p.invalid:,}",
             num(p.score), num(p.p_a_better)] for p in r.pairs.rows]
    out = ('<section id="pairs"><h2>Pairs</h2><details><summary>every pair\'s counts, score and '
           'P(a better)</summary>'
           + _table(["a", "b", "a wins", "b wins", "ties", "invalid", "a's score", "P(a>b)"], rows, text_cols=(0, 1))
           + "</details>")
    at = r.anchor_tests
    if at is not None:
        out += (f"<h3>Against the anchor {esc(at.anchor)}</h3>"
                + _p(f"Win rate (ties: {at.ties}) with Wilson {at.confidence_level:.0%} interval and the exact "
                     "two-sided binomial test of 50%.")
                + _table(["system", "wins", "losses", "ties", "invalid", "win rate", "95% CI", "p"],
                         [[a.system, a.wins, a.losses, a.ties, a.invalid, pct(a.win_rate),
                           f"[{pct(a.ci_low)}, {pct(a.ci_high)}]", num(a.pvalue, ".3g")] for a in at.rows]))
    return out + "</section>"


def _diagnostics(r) -> str:
    m = r.model
    items = [sentences.tie_rate_sentence(r.ties.overall, m.nu),
             sentences.position_sentence(r.position, m.gamma, " — flagged" if r.position.flagged else "")]
    if r.length is not None:
        items.append(sentences.length_sentence(r.length, " — flagged" if r.length.flagged else ""))
    items += [sentences.triads_sentence(r.triads), sentences.reasons_sentence(r.reasons)]
    out = ('<section id="diagnostics"><h2>Diagnostics</h2><ul>'
           + "".join(f"<li>{esc(s)}</li>" for s in items) + "</ul>")
    ties = r.ties.per_stratum
    if len(ties) > 1:
        out += "<h3>Ties per stratum</h3>" + _table(
            ["stratum", "ties", "usable", "tie rate", "95% CI"],
            [[t.stratum, f"{t.ties:,}", f"{t.usable:,}", pct(t.rate), f"[{pct(t.ci_low)}, {pct(t.ci_high)}]"]
             for t in ties])
    if r.annotators is not None and r.annotators.annotators:
        out += "<h3>Annotators</h3>" + _table(
            ["annotator", "judgments", "attention", "swap consistency", "kappa", "fast", "left share",
             "longest run", "flags"],
            [[a.annotator, f"{a.n_judgments:,}", pct(a.attention_rate, 0), pct(a.swap_rate, 0), num(a.kappa, ".2f"),
              pct(a.fast_share, 0), pct(a.left_share, 0), a.longest_run, ", ".join(a.flags) or "—"]
             for a in r.annotators.annotators], text_cols=(0, 8))
        if r.annotators.agreement is not None and r.annotators.agreement.method:
            out += _p(sentences.agreement_sentence(r.annotators.agreement))
    return out + "</section>"


def _strata(r) -> str:
    st = r.strata
    if len(st.rows) <= 1:
        return ""
    rows = [[s.stratum, f"{s.weight:.3f}", f"{s.judgments:,}", pct(s.tie_rate)] + [num(v) for v in s.scores]
            for s in st.rows]
    rows.append(["re-weighted", "1.000", f"{sum(s.judgments for s in st.rows):,}", pct(r.ties.overall.rate)]
                + [num(v) for v in st.weighted_scores])
    out = ('<section id="strata"><h2>Strata</h2>'
           + _p(f"Half-tie score of each system per stratum; weights from {st.weights_source}. The last row is "
                "re-weighted to the stratum weights.")
           + _table(["stratum", "weight", "judgments", "tie rate", *st.systems], rows))
    if st.rows[0].mean is not None:
        out += "<h3>Per-stratum strengths (Elo, partially pooled)</h3>" + _table(
            ["stratum", *st.systems], [[s.stratum] + [f"{1500 + ELO_SCALE * v:.0f}" for v in s.mean]
                                       for s in st.rows])
    return out + "</section>"


def _style(r) -> str:
    sc = r.style_control
    if sc is None:
        return ('<section id="style"><h2>Raw and style-controlled ranking</h2>'
                + _p("Not computed: run planner report --style-control --html FILE to add the ranking "
                     "controlled for length and markdown.", "muted") + "</section>")
    if not sc.rows:
        return ""
    rows = [[x.system, x.raw_rank, f"{x.raw_mean:+.3f} [{x.raw_lo:+.3f}, {x.raw_hi:+.3f}]", x.rank,
             f"{x.mean:+.3f} [{x.lo:+.3f}, {x.hi:+.3f}]", _rank(x.rank_low, x.rank_high), f"{x.p_best:.3f}"]
            for x in sc.rows]
    coefs = [[c.feature, f"{c.scale:.3f}", f"{c.mean:+.3f} [{c.lo:+.3f}, {c.hi:+.3f}]",
              f"{c.odds_ratio:.2f} [{c.odds_lo:.2f}, {c.odds_hi:.2f}]"] for c in sc.coefficients]
    cs = sentences.style_cluster_sentence(sc)
    return ('<section id="style"><h2>Raw and style-controlled ranking</h2>' + _p(sc.sentence)
            + (_p(cs[0].upper() + cs[1:] + ".") if cs else "")
            + '<div class="side">'
            + _table(["system", "raw rank", "raw β [95% CrI]", "controlled rank", "controlled β [95% CrI]",
                      "controlled rank 95%", "controlled P(best)"], rows, cls="style")
            + rank_slopes([x.system for x in sc.rows], [x.raw_rank for x in sc.rows], [x.rank for x in sc.rows])
            + "</div><h3>Style coefficients (logit per rms unit of the normalised difference a − b)</h3>"
            + _table(["feature", "rms unit", "coefficient [95% CrI]", "odds ratio [95% CrI]"], coefs)
            + "".join(_p(sentences.lc_sentence(sc.lc_anchor, x)) for x in sc.lc) + "</section>")


def _hybrid(h) -> str:
    if h is None:
        return ""
    c = h.comparison
    lvl = f"{100 * c.ppi.confidence_level:.0f}%"
    order = sorted(range(len(c.ppi.names)), key=lambda i: -c.ppi.theta[i])
    rows = [[c.ppi.names[i]] + [f"{ELO_SCALE * x.theta[i]:.0f} [{ELO_SCALE * x.lo[i]:.0f}, {ELO_SCALE * x.hi[i]:.0f}]"
                                for x in (c.ppi, c.human, c.judge)]
            + [_rank(int(c.ppi.rank_low[i]), int(c.ppi.rank_high[i]))] for i in order]
    return ('<section id="hybrid"><h2>Hybrid fit: humans with a judge as surrogate</h2>'
            + _p(f"{h.target} ({h.target_votes:,} votes on {h.n_labelled:,} items) with {h.surrogate} as surrogate "
                 f"({h.surrogate_verdicts:,} verdicts; {h.n_unlabelled:,} items judged only by it); λ = "
                 f"{c.ppi.lam:.2f}; effective human items {c.effective_n:,.0f} (the judge was worth "
                 f"{c.labels_gained:,.0f} human-labelled items).")
            + _table(["system", f"PPI Elo [{lvl}]", f"{h.target} only", f"{h.surrogate} only (its own preference)",
                      "rank set"], rows, cls="hybrid")
            + "</section>")


def _forecast(r) -> str:
    """The remaining-budget forecast, when the study holds one (``planner plan`` saves it)."""
    fc = getattr(r, "forecast", None)
    if fc is None:
        return ""
    data = jsonable(fc)
    sentence = getattr(fc, "sentence", None) or (data.get("sentence") if isinstance(data, dict) else None)
    sentence = sentence() if callable(sentence) else sentence
    rows = ([[k, json.dumps(v, ensure_ascii=False) if isinstance(v, (dict, list)) else v]
             for k, v in data.items() if k != "sentence"] if isinstance(data, dict) else [["forecast", data]])
    return ('<section id="forecast"><h2>Remaining budget</h2>' + (_p(sentence) if sentence else "")
            + _table(["quantity", "value"], rows, text_cols=(0, 1)) + "</section>")


def _model_and_notes(r) -> str:
    m, d = r.model, r.model.diagnostics
    fit = (f"max r̂ {num(d.max_r_hat)}, min ESS bulk/tail {num(d.min_ess_bulk, '.0f')}/{num(d.min_ess_tail, '.0f')}, "
           f"divergences {d.divergences}" if m.engine == "nuts"
           else f"{d.iterations} Newton iterations, converged: {'yes' if d.converged else 'no'}")
    out = ('<section id="model"><h2>Model</h2>'
           + _p(f"Bradley–Terry–Davidson with a left-position shift; engine {m.engine}; {m.n_usable:,} usable "
                f"judgments, {m.n_invalid:,} invalid excluded; {fit}. γ = {m.gamma.mean:.3f} "
                f"[{m.gamma.lo:.3f}, {m.gamma.hi:.3f}], ν = {m.nu.mean:.3f} [{m.nu.lo:.3f}, {m.nu.hi:.3f}]."))
    if r.notes:
        out += "<h3>Notes</h3><ul>" + "".join(f"<li>{esc(n)}</li>" for n in r.notes) + "</ul>"
    return out + "</section>"


def _data(report, hybrid) -> str:
    doc = {"report": jsonable(report)} | ({"hybrid": jsonable(hybrid)} if hybrid is not None else {})
    # "<" as \u003c: no "</script>" inside the data can end the element
    body = json.dumps(doc, ensure_ascii=False, sort_keys=True, allow_nan=False, default=str).replace("<", "\\u003c")
    return f'<script type="application/json" id="report-data">{body}</script>'


def render_html(report: Any, hybrid: Any = None) -> str:
    """The report (and the hybrid fit, when given) as one self-contained HTML document."""
    r = report
    body = (_head(r) + _leaderboard(r) + _heatmap(r) + _style(r) + _hybrid(hybrid) + _diagnostics(r)
            + _pairs(r) + _strata(r) + _forecast(r) + _model_and_notes(r))
    return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
            "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'; "
            "script-src 'unsafe-inline'; img-src data:\">"
            f"<title>planner report: {esc(Path(r.study).name)}</title><style>{CSS}</style></head>"
            f"<body><main>{body}</main>{_data(r, hybrid)}<script>{JS}</script></body></html>\n")


def write_html(report: Any, path, hybrid: Any = None) -> str:
    """Write :func:`render_html` to ``path`` (UTF-8) through a temporary file; returns the path.

    Raises :class:`UsageError` naming ``html`` when the file cannot be written.
    """
    return write_document(render_html(report, hybrid), path, "html")
