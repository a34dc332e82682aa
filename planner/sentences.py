"""The English sentences the tool prints, each derived from the numbers it is given (core, pure).

Every function here takes the result objects (or plain numbers) that a table
beside the sentence also shows, and formats them; none computes a figure of
its own, so a sentence cannot disagree with its table: the report's flags and
notes and the style report's sentences; other commands' sentences move here as
they are touched.

Duck typing: the arguments are the result dataclasses of
:mod:`planner.diagnostics`, :mod:`planner.model` and
:mod:`planner.services.style_report`; only their attributes are read, so this
module imports nothing from the rest of the package.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any


def pct(x, digits: int = 1) -> str:
    """``x`` as a percentage with ``digits`` decimals; ``—`` when missing."""
    return "—" if x is None else f"{100 * x:.{digits}f}%"


def num(x, fmt: str = ".3f") -> str:
    """``x`` in ``fmt``; ``—`` when missing or not finite."""
    return "—" if x is None or (isinstance(x, float) and not math.isfinite(x)) else format(x, fmt)


# ------------------------------------------------------------- report: diagnostics
def tie_rate_sentence(tr: Any, nu: Any) -> str:
    """Overall tie rate (:class:`planner.diagnostics.StratumTieRate`) and the model's Davidson ν."""
    return (f"Tie rate: {pct(tr.rate)} of {tr.usable:,} usable judgments "
            f"[{pct(tr.ci_low)}, {pct(tr.ci_high)}]; Davidson ν = {nu.mean:.3f} "
            f"[{nu.lo:.3f}, {nu.hi:.3f}].")


def position_sentence(p: Any, gamma: Any, mark: str = "") -> str:
    """Left vs right (:class:`planner.diagnostics.PositionBias`) and γ; ``mark`` goes before the full stop."""
    return (f"Position: left wins {pct(p.left_win_rate)} of {p.n_decisive:,} decisive judgments "
            f"[{pct(p.ci_low)}, {pct(p.ci_high)}], "
            f"right {pct(None if p.left_win_rate is None else 1 - p.left_win_rate)}; "
            f"γ = {gamma.mean:.3f} [{gamma.lo:.3f}, {gamma.hi:.3f}] logit" + mark + ".")


def length_sentence(lb: Any, mark: str = "") -> str:
    """Longer-wins share (:class:`planner.diagnostics.LengthBias`); ``mark`` goes before the full stop."""
    return (f"Length: the longer response wins {pct(lb.share)} of {lb.n:,} decisive judgments "
            f"[{pct(lb.ci_low)}, {pct(lb.ci_high)}]" + mark + ".")


def triads_sentence(c: Any) -> str:
    """Circular triads and ζ (:class:`planner.diagnostics.CircularTriads`), with one example."""
    return (f"Circular triads: d = {c.d:g} of at most {c.d_max:g}; Kendall's ζ = {num(c.zeta)}"
            + (f" (e.g. {' > '.join(c.examples[0])} > {c.examples[0][0]})" if c.examples else "") + ".")


def reasons_sentence(rs: Any) -> str:
    """Share of decisive judgments without a reason (:class:`planner.diagnostics.ReasonShares`)."""
    return f"Reasons: {pct(rs.share_without_reason)} of {rs.n_decisive:,} decisive judgments carry no reason."


def agreement_sentence(ag: Any) -> str:
    """Chance-corrected agreement on overlap comparisons (:class:`planner.diagnostics.Agreement`)."""
    return (f"Agreement on {ag.n_items} overlap comparisons ({ag.n_annotators} annotators): "
            f"{ag.method} κ = {num(ag.kappa, '.2f')}.")

# ------------------------------------------------------------------ report: flags
def position_bias_flag(position: Any, gamma: Any) -> str:
    """Flag line for a flagged :class:`planner.diagnostics.PositionBias`; ``gamma`` = the model's position shift."""
    return (f"position bias: the left-shown response wins {100 * position.left_win_rate:.1f}% of "
            f"decisive judgments ({position.difference_points:+.1f} points left vs right, "
            f"threshold {position.threshold_points:g}); model gamma = {gamma.mean:.2f} "
            f"[{gamma.lo:.2f}, {gamma.hi:.2f}] logit - the ranking is net of it")


def length_bias_flag(length: Any) -> str:
    """Flag line for a flagged :class:`planner.diagnostics.LengthBias`."""
    return (f"length bias: the longer response wins {100 * length.share:.1f}% of decisive judgments "
            f"(95% [{100 * length.ci_low:.1f}%, {100 * length.ci_high:.1f}%])")


def acceptability_message(leader: str, pass_rate: float, half_width: float) -> str:
    """``"gpt-4: ranked first, acceptable 41% ± 7%"`` (± = half the Wilson interval width)."""
    return f"{leader}: ranked first, acceptable {100 * pass_rate:.0f}% ± {100 * half_width:.0f}%"


def acceptability_flag(message: str, min_pass_rate: float) -> str:
    """Flag line for a leader below ``min_pass_rate`` (``message`` from :func:`acceptability_message`)."""
    return f"acceptability: {message} (below {100 * min_pass_rate:.0f}%)"


def annotator_flag(row: Any) -> str:
    """Flag line naming one annotator's raised flags (:class:`planner.diagnostics.AnnotatorQC`)."""
    return f"annotator {row.annotator}: {', '.join(row.flags)}"


def agreement_flag(agreement: Any, threshold: float) -> str:
    """Flag line for a flagged :class:`planner.diagnostics.Agreement` (κ below ``threshold``)."""
    return f"agreement: {agreement.method} kappa = {agreement.kappa:.2f} (< {threshold})"


def model_flag(warning: str) -> str:
    """A sampler / optimiser warning of the raw fit."""
    return f"model: {warning}"


def style_model_flag(warning: str) -> str:
    """A sampler / optimiser warning of the style-controlled fit."""
    return f"style-controlled model: {warning}"


# ------------------------------------------------------------------ report: notes
LENGTH_NOT_COMPUTED_NOTE = "length bias not computed: the study holds no responses (lengths unknown)"
ANNOTATOR_QC_SKIPPED_NOTE = "annotator QC skipped: no judgment names an annotator"


def attention_skipped_note(n_attention: int) -> str:
    """Attention judgments whose broken side no batch manifest records."""
    return (f"attention checks skipped: {n_attention} attention judgments, but the study does not "
            "record which side was broken (batch manifest key 'attention_expected')")


def annotator_qc_cap_note(cap: int) -> str:
    """Annotator QC read only the latest ``cap`` annotated judgments."""
    return f"annotator QC uses the latest {cap:,} judgments that name an annotator"


def style_excluded_note(n_excluded: int, n_used: int) -> str:
    """Judgments left out of the style-controlled fit for want of both response texts."""
    return (f"style control: {n_excluded:,} judgment(s) without both response texts are left "
            f"out of the controlled fit ({n_used:,} used)")


def strata_gap_note(max_share_gap: float) -> str:
    """The pooled ranking's stratum mix is ``max_share_gap`` away from the stratum weights."""
    return (f"the pooled ranking weights strata by their share of judgments (up to "
            f"{100 * max_share_gap:.0f} points away from the stratum weights); "
            "use --by-stratum for the ranking re-weighted to stratum weights")


def prompt_choice_note(n_batches: int, n_judgments: int, n_usable: int) -> str:
    """Usable judgments from batches whose prompts were drawn by discriminativeness (the estimand shifts)."""
    share = n_judgments / n_usable if n_usable else 0.0
    return (f"{n_judgments:,} of {n_usable:,} usable judgments ({100 * share:.0f}%) come from {n_batches} "
            "batch(es) whose prompts were drawn by discriminativeness (next-batch --prompts-by discriminative): "
            "within a stratum the strengths describe the prompts as drawn, weighted toward those that separate "
            "the systems, not the stratum's prompts uniformly (the draw probabilities are in those batches' "
            "manifests, prompt_choice)")


def zeta_note(n_unobserved_pairs: int) -> str:
    """Kendall's ζ undefined because some pairs were never judged."""
    return f"consistency zeta not computed: {n_unobserved_pairs} pair(s) without a usable judgment"


def reasons_note(reasons: Any) -> str:
    """Decisive judgments without a reason code (:class:`planner.diagnostics.ReasonShares`)."""
    return (f"{reasons.n_without_reason:,} of {reasons.n_decisive:,} decisive judgments "
            f"({100 * reasons.share_without_reason:.0f}%) carry no reason code")


def letters_omitted_note(m: int, limit: int) -> str:
    """Why a leaderboard of ``m`` systems shows no letters (:data:`planner.diagnostics.LETTERS_MAX_SYSTEMS`)."""
    return (f"letters are left out above {limit} systems ({m} here): a letter display that large needs "
            "two-character letters, many to a row; read each system's rank interval and whether it is "
            "tied with the leader instead")


def near_threshold_note(x: Any) -> str:
    """A draws-based decision within two Monte Carlo errors of its threshold
    (:class:`planner.diagnostics.NearThreshold`): ``"gpt-3.5-turbo vs guanaco-33b: separated at
    P = 0.975 ± 0.004 (threshold 0.975)"``."""
    what = "P(leader > x)" if x.what in ("below the leader", "tied with the leader") else "P"
    return (f"{x.upper} vs {x.lower}: {x.what} at {what} = {x.p:.3f} ± {x.mcse:.3f} (threshold {x.threshold:g}; "
            "± is the Monte Carlo error of the draws: more draws decide it)")


# ------------------------------------------------------------------ style control
STYLE_DECIDE_NOTE = ("style control: the Bayesian columns use the style-controlled model (pooled over strata: "
                     "the win probability between responses of equal length and markdown); the per-stratum "
                     "tests and the verdict use the raw verdict counts")


def style_sentence(coefs: Sequence[Any], rows: Sequence[Any]) -> str:
    """One sentence from the length coefficient and the two orders (the numbers in the tables)."""
    c = next(x for x in coefs if x.feature == "length")
    ratio = (1 + c.scale) / (1 - c.scale) if c.scale < 1 else float("inf")
    if c.lo > 0:
        head = "longer answers are favoured"
    elif c.hi < 0:
        head = "shorter answers are favoured"
    else:
        head = "no credible length preference"
    s = (f"{head}: an answer {ratio:.1f}x as long as its opponent's (one rms unit of the normalised length "
         f"difference, {c.scale:.2f}) multiplies its odds of winning by {c.odds_ratio:.2f} "
         f"({c.odds_lo:.2f}–{c.odds_hi:.2f})")
    moved = [r.system for r in rows if r.rank != r.raw_rank]
    raw_leader = next(r.system for r in rows if r.raw_rank == 1)
    s += (f"; controlling for style changes the rank of {len(moved)} of {len(rows)} systems"
          if moved else "; controlling for style leaves the order unchanged")
    if rows[0].system != raw_leader:
        s += f" and the leader ({raw_leader} raw, {rows[0].system} controlled)"
    return s + "."


def lc_sentence(lc_anchor: str, r: Any) -> str:
    """One line per LC row, from its numbers."""
    return (f"{r.system} vs {lc_anchor}: length-controlled win rate {100 * r.lc_win_rate:.1f}% "
            f"[{100 * r.lc_lo:.1f}%, {100 * r.lc_hi:.1f}%] (raw {100 * r.win_rate:.1f}%, n = {r.n})")


def lc_others_note(anchor: str, n_other: int) -> str:
    """LC win rates use only the judgments against the anchor."""
    return f"LC win rates use the judgments against {anchor} only ({n_other:,} others left out)"


def lc_not_computed_note(name: str, n: int, anchor: str) -> str:
    """Too few judgments against the anchor for an LC win rate."""
    return f"LC win rate of {name} not computed: {n} usable judgment(s) against {anchor}"


def lc_extreme_note(name: str, lc_win_rate: float, win_rate: float, longer_share: float) -> str:
    """AlpacaEval's warning rule fired: the LC win rate is far from the raw one."""
    return (f"LC win rate of {name} ({100 * lc_win_rate:.1f}%) is far from its raw win rate "
            f"({100 * win_rate:.1f}%; AlpacaEval's warning rule, possibly a GLM failure): its "
            f"answer is the longer one in {100 * longer_share:.0f}% of these judgments, so equal length "
            "is an extrapolation")


#: clusters below which a cluster-robust variance is itself noisy (a rule of thumb of the sandwich literature)
FEW_CLUSTERS = 30
_SHARED = {"item": "the same prompt and pair", "prompt": "the same prompt", "annotator": "the same annotator"}


def style_cluster_sentence(sc: Any) -> str:
    """What clustering did to the style-controlled intervals (a :class:`StyleControlReport`); "" without a fit.

    "style-controlled model: verdicts on the same prompt and pair agree beyond chance (…): intervals
    widened 1.10× (…)"
    """
    c = getattr(sc, "clusters", None)
    return "" if c is None else f"style-controlled model: {c.sentence}"


def cluster_sentence(c: Any) -> str:
    """What clustering did to the intervals, from a :class:`planner.report_results.ClusterReport`.

    "verdicts on the same prompt and pair agree beyond chance (ICC 0.40, 2.0 per prompt and pair):
    intervals widened 1.14× (design effect 1.31, by pair 1.11–1.52; 2,240 clusters)"
    """
    icc = (f"ICC {c.icc:.2f}, {c.verdicts_per_cluster:.1f} per prompt and pair" if c.icc is not None
           else "ICC not estimable")
    if c.by == "none":
        s = "intervals treat every judgment as independent (--cluster none)"
        if c.icc is not None and c.icc > 0:
            s += f"; verdicts on the same prompt and pair agree beyond chance ({icc}), so they are too narrow"
        return s
    if c.n_clusters < 2:
        return (f"one cluster by {c.by}: the clustering cannot be estimated, intervals as for independent "
                f"judgments; on the same prompt and pair: {icc}")
    agree = "agree no more than chance" if c.design_effect <= 1.0005 else "agree beyond chance"
    s = f"verdicts on {_SHARED[c.by]} {agree}" + (f" ({icc})" if c.by == "item" else "")
    if c.design_effect <= 1.0005:
        s += f": intervals as for independent judgments ({c.n_clusters:,} clusters)"
    else:
        pairs = ("" if c.pair_low is None or c.pair_high - c.pair_low < 0.005
                 else f", by pair {c.pair_low:.2f}–{c.pair_high:.2f}")
        s += (f": intervals widened {c.widened:.2f}× (design effect {c.design_effect:.2f}{pairs}; "
              f"{c.n_clusters:,} clusters)")
    if c.by != "item":
        s += f"; on the same prompt and pair: {icc}"
    if c.n_clusters < FEW_CLUSTERS:
        s += f"; only {c.n_clusters} clusters, so the widening is itself uncertain"
    return s


#: what each next-batch objective's value counts (planner.acquisition.objectives.objective_value)
OBJECTIVE_MEASURES = {"ranking": "expected misordered system pairs",
                      "top-k": "expected misordered pairs across the top-k boundary",
                      "entropy": "posterior entropy (nats)",
                      "variance": "total posterior variance of the strengths (logit²)",
                      "anchor": "summed variance of the win rates against the anchor"}


def objective_line(objective: str, before: float, after: float) -> str:
    """The batch's expected effect on its objective, in the objective's own unit."""
    what = OBJECTIVE_MEASURES.get(objective, f"objective {objective}")
    return (f"{what[0].upper()}{what[1:]} (objective {objective}): {before:.4g} now, {after:.4g} expected after "
            f"this batch (-{before - after:.4g}).")


def concentration_note(per_pair: Sequence[tuple[str, int]], n: int) -> str:
    """A batch with most of its comparisons on one pair says why, or ``""``."""
    if n < 10 or not per_pair:
        return ""
    pair, k = max(per_pair, key=lambda t: t[1])
    if 2 * k <= n:
        return ""
    return (f"{k} of the {n} comparisons go to {pair}, the pair where one more judgment is expected to reduce "
            "the objective most; a pair past its share of the batch yields only to pairs worth at least a quarter "
            "as much, and every other pair is settled or worth less")
