"""`planner report`: the ranking with honest intervals and every diagnostic, for one study.

:func:`build_report` opens a study, fits the Bradley–Terry–Davidson model
(:func:`planner.model.fit`), runs the diagnostics of :mod:`planner.diagnostics`
and returns a :class:`Report` (a frozen dataclass; ``to_dict()`` gives the
JSON document of ``planner report --json``). The posterior is saved in the
study as ArviZ netcdf (artifact ``posterior-<engine>[-by-stratum].nc``).
:func:`render_markdown` turns a report into a shareable Markdown document and
:func:`write_plots` writes a forest plot of the strengths (Elo scale, 95%
credible intervals) and a win-rate heatmap as PNG and SVG; both live at the
edge (:mod:`planner.formats.markdown`, :mod:`planner.formats.plots`) and are
re-exported here. The flags' and notes' sentences are in :mod:`planner.sentences`.

Conventions
-----------
* Strengths ``beta`` are on the logit scale and sum to zero; the Elo scale is
  ``R = 1500 + 400/ln(10) * beta`` (:func:`planner.model.bt.to_elo`), so 100 Elo
  points are a 64% expected win rate.
* Intervals are equal-tailed 95% credible intervals (model) or Wilson 95%
  intervals (observed proportions).
* ``A``/``B`` totals are relative to each judgment's stored orientation
  ``(a, b)``; position figures use the cells of :class:`planner.counts.Counts`
  (``a`` = shown left / first).
* The half-tie score is ``(wins + ties/2) / (wins + losses + ties)`` and is
  ``None`` without a usable judgment; invalid judgments are counted and shown,
  never part of a score or of the likelihood.
* Systems that are not credibly separated share a letter and separated ones
  never do (:func:`planner.diagnostics.rank_fit`); each system has a 95%
  rank interval and P(leader better); "tied with the leader" = not credibly
  below the top. Nothing chains: no displayed grouping holds two systems
  whose 95% difference interval excludes 0. Under Laplace the separation,
  P(leader > x) and the pairs' P(a > b) are exact (the posterior mean and
  covariance, no seed); rank intervals and P(best) come from enough Gaussian
  draws that a tail share's Monte Carlo sd is at most 0.001. Above 26
  systems the letters are left out (a note says why).

Scale: the model is fitted on aggregated cells, and the judgment-level figures
(A/B totals, kinds, length bias, reason shares) come with the counts from one
scan of the store (:meth:`Study.report_scan`, read in two halves at once), so
memory and Python work do not follow the number of judgments; the letters, rank
intervals and circular triads are array operations whose cost follows the
number of systems (bench/bench_report_arena.py: 300 systems, 1,000,000
judgments). The dense algebra runs on one BLAS thread
(:func:`planner.stats.blas.blas_policy`). Annotator quality control needs
judgments one by one and uses at most the latest :data:`ANNOTATOR_QC_MAX`
judgments that name an annotator (the report says so when it caps).

Formulas and references: docs/methods.md, sections "Report diagnostics" and
"The report (`planner report`)".
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import numpy as np

from planner import diagnostics as dg
from planner import sentences
from planner.counts import Counts, half_tie_score, half_tie_scores
from planner.errors import UsageError, check_range
from planner.model.bt import to_elo
from planner.report_results import (
    LeaderRow,
    ModelReport,
    RankingReading,
    Report,
    StrataReport,
    StratumRow,
    cluster_report,
)
from planner.stats.clusters import (
    JudgmentArrays,
    applied_design_effect,
    check_cluster_by,
    cluster_cells,
    cluster_ids,
    design_effects_against,
)
from planner.strata import stratum_weights

__all__ = ["ANNOTATOR_QC_MAX", "build_report"]

ANNOTATOR_QC_MAX = 20_000   # judgments (latest first) read for annotator QC
from planner.vocabulary import ENGINES  # noqa: E402


# --------------------------------------------------------------- store reads
def _warm_imports(engine: str) -> None:
    """Import arviz (and pymc for NUTS) ahead of use, in a worker thread (see build_report)."""
    import arviz  # noqa: F401

    if engine == "nuts":
        import pymc  # noqa: F401


def _interval95(fit):
    """``fit.interval(0.95)`` without importing scipy.stats for Laplace (same formula: mean ± z sd)."""
    if fit.engine != "laplace":
        return fit.interval(0.95)
    from scipy.special import ndtri

    z = float(ndtri(0.975))
    return fit.mean - z * fit.sd, fit.mean + z * fit.sd


def _attention_expected(study) -> dict[str, str]:
    """Expected verdicts of attention items, from batch manifests.

    A batch records them in its manifest as ``"attention_expected": {item id:
    "left" | "right"}`` (the unbroken side). Batches that do not are skipped.
    """
    out: dict[str, str] = {}
    for b in study.batches():
        exp = b.manifest.get("attention_expected") if isinstance(b.manifest, dict) else None
        if isinstance(exp, dict):
            out.update({str(k): str(v) for k, v in exp.items()})
    return out


# ------------------------------------------------------------ aggregations
def _strata_report(study, counts: Counts, fit, by_stratum: bool, weights: dict[str, float],
                   source: str) -> StrataReport:
    systems, strata = counts.systems, counts.strata
    per = _per_system(counts)                      # (K, M, 4): system vs everyone in stratum k
    usable_k = (per[:, :, :3].sum(axis=(1, 2)) // 2).astype(np.int64)
    invalid_k = (per[:, :, 3].sum(axis=1) // 2).astype(np.int64)
    all_usable = int(usable_k.sum())
    prompts_per = Counter((p.stratum or "all") for p in study.prompts())
    rows = []
    for k, s in enumerate(strata):
        scores = tuple(half_tie_score(*per[k, i, :3]) for i in range(len(systems)))
        usable = tuple(int(per[k, i, :3].sum()) for i in range(len(systems)))
        ties_k = int(per[k, :, 2].sum() // 2)
        mean = sd = None
        if by_stratum and fit.stratum_mean is not None:
            mean = tuple(float(x) for x in fit.stratum_mean[k])
            sd = tuple(float(x) for x in fit.stratum_sd[k])
        rows.append(StratumRow(s, weights.get(s, 0.0), prompts_per.get(s, 0), int(usable_k[k]),
                               int(invalid_k[k]), float(usable_k[k] / all_usable) if all_usable else None,
                               float(ties_k / usable_k[k]) if usable_k[k] else None, scores, usable, mean, sd))
    weighted = []
    for i in range(len(systems)):
        num = den = 0.0
        for r in rows:
            score = r.scores[i]
            if score is not None and r.weight > 0:
                num += r.weight * score
                den += r.weight
        weighted.append(num / den if den else None)
    gaps = [abs(r.judgment_share - r.weight) for r in rows if r.judgment_share is not None]
    return StrataReport(tuple(systems), source, tuple(rows), tuple(weighted), float(max(gaps)) if gaps else None)


def _per_system(counts: Counts) -> np.ndarray:
    """``(K, M, 4)``: each system's wins, losses, ties and invalid judgments against everyone, per stratum (the pair
    tensor ``counts.pair_tensor(by_stratum=True)`` summed over opponents, without building it: the same integers)."""
    m, k = len(counts.systems), len(counts.strata)
    side_a, side_b = counts.stratum * m + counts.a, counts.stratum * m + counts.b
    cols = []
    for own, other in ((counts.a_wins, counts.b_wins), (counts.b_wins, counts.a_wins),
                       (counts.ties, counts.ties), (counts.invalid, counts.invalid)):
        cols.append(np.bincount(side_a, weights=own, minlength=k * m) + np.bincount(side_b, weights=other,
                                                                                     minlength=k * m))
    return np.stack(cols, axis=1).astype(np.int64).reshape(k, m, 4)


def _acceptability(study, ranking, min_pass_rate: float, judged: bool):
    """Acceptability from the acceptability judgments (``judged``: the scan met any; otherwise their query, a
    scan of the judgments, is skipped), else from the responses' labels; ``(None, None)`` without either."""
    acc = study.acceptability_counts() if judged else None
    if acc is not None and int(acc.passed.sum() + acc.failed.sum() + acc.invalid.sum()):
        return dg.acceptability(acc, ranking=ranking, min_pass_rate=min_pass_rate), "judgments"
    labels = study.acceptability_labels()
    if labels:
        return dg.acceptability(labels, ranking=ranking, min_pass_rate=min_pass_rate), "responses"
    return None, None


def _item_words(study, judgments) -> dict[str, int]:
    """Words to read per item (prompt + both responses), for the speed check."""
    timed = {j.item for j in judgments if j.item is not None and j.seconds is not None}
    if not timed:
        return {}
    ptext = {p.id: len(p.text.split()) for p in study.prompts()}
    rwords = {(r.prompt, r.system): len(r.text.split()) for r in study.responses()}
    out = {}
    for it in study.items():
        if it.item_id in timed:
            out[it.item_id] = (ptext.get(it.prompt, 0) + rwords.get((it.prompt, it.left), 0)
                               + (rwords.get((it.prompt, it.right), 0) if it.right else 0))
    return out


# --------------------------------------------------------------------- build
def build_report(study_path, *, engine: str = "laplace", by_stratum: bool = False, seed: int = 0,
                 draws: int = 1000, tune: int = 1000, chains: int = 2, progressbar: bool = False,
                 min_pass_rate: float = 0.8, save_posterior: bool | None = None, style_control: bool = False,
                 lc_anchor: str | None = None, cluster: str = "item") -> Report:
    """Fit the study's judgments and run every diagnostic.

    Parameters
    ----------
    study_path : path-like
        A study directory (``planner init``).
    engine : {"laplace", "nuts"}
        ``"laplace"`` (default): Gaussian at the posterior mode — milliseconds,
        agrees with NUTS within 0.05 logit on the tested fixtures;
        ``"nuts"``: pymc NUTS sampling (seconds to minutes; r-hat / ESS /
        divergences checked).
    by_stratum : bool
        Partially pooled per-stratum strengths; the leaderboard is then the
        population ranking re-weighted to the stratum weights (sum of prompt
        weights per stratum, or prompts per stratum when no prompt has a weight).
    seed : int
        Seeds the sampler / the Laplace draws; same study + seed → same report.
    draws, tune, chains : int
        Posterior draws (per chain for NUTS; total for Laplace), NUTS tuning
        steps and chains.
    progressbar : bool
        NUTS progress on stderr.
    min_pass_rate : float in [0, 1]
        The leader is flagged when its acceptability pass rate is below this.
    save_posterior : bool or None
        Save the posterior in the study as ArviZ netcdf (artifact
        ``posterior-<engine>[-by-stratum].nc``). ``None`` (default): only for
        NUTS, whose draws are costly to redo; a Laplace posterior is
        recomputed in well under a second, and writing it meant importing
        arviz (about half of every report's time).
    style_control : bool
        Also fit the style-controlled model (:mod:`planner.model.style`) with the
        same engine and seed and report it beside the raw leaderboard; for an
        anchor design (every judgment involves the study's anchor) also the
        length-controlled win rates (:mod:`planner.model.style_lc`).
    lc_anchor : str, optional
        Length-controlled win rates of every system against this system
        (judgments involving it), with or without ``style_control``.
    cluster : {"item", "prompt", "annotator", "none"}
        Which judgments share a cluster (:func:`planner.stats.clusters.cluster_ids`): the strength
        intervals (and everything read from the posterior) are cluster-robust
        (:mod:`planner.model.robust`), the anchor intervals use the clusters' design effect;
        ``"none"``: judgments independent.

    Returns
    -------
    Report

    Raises
    ------
    DataError
        Not a study.
    UsageError
        Bad engine / draws / tune / chains / min_pass_rate, or a study without
        any usable judgment.
    """
    from concurrent.futures import ThreadPoolExecutor

    from planner.stats.blas import blas_policy
    from planner.store.study import Study
    if save_posterior is None:
        save_posterior = engine == "nuts"
    _check_options(engine, seed, draws, tune, chains, min_pass_rate)
    check_cluster_by(cluster)
    opts = dict(engine=engine, seed=seed, draws=draws, tune=tune, chains=chains)
    from planner.services.forecast_saved import remaining

    with blas_policy(engine), Study.open(study_path) as study, ThreadPoolExecutor(max_workers=1) as pool:
        # one scan of the judgments (Study.report_scan: the counts and every judgment-level figure; a large
        # table is read in two halves at once, sqlite releasing the GIL)
        systems = tuple(study.systems)
        scan = study.report_scan()
        counts_k = scan.judged
        # the judgments one by one for the clusters: from the same scan, or with annotator codes (one more scan)
        judged = (study.judgment_arrays(by_stratum=True, annotators=True) if cluster == "annotator"
                  else scan.arrays)
        counts = counts_k.pooled()
        if int(counts.usable.sum()) == 0:   # before any heavy import is started: fails fast
            raise UsageError(f"STUDY ({study_path}) has no usable judgment yet (A, B or tie); "
                             "ingest judgments first (planner ingest)", parameters=())
        if save_posterior:   # arviz (pymc for NUTS) imported in a worker while the model is fitted
            pool.submit(_warm_imports, engine)
        sw = stratum_weights(study.prompts(), counts_k.strata)
        cells = None if cluster == "none" else cluster_cells(judged, cluster)
        fit, style = _fits(study, counts_k, counts, sw.weights, by_stratum, progressbar, style_control, lc_anchor,
                           dict(opts, clusters=cells))
        artifact = None
        if save_posterior:
            artifact = f"posterior-{engine}{'-by-stratum' if by_stratum else ''}.nc"
            study.save_artifact(artifact, fit.to_netcdf())
        rg = dg.rank_fit(fit, min_rank_draws=draws)
        acc, acc_source = _acceptability(study, rg.order, min_pass_rate, "acceptability" in scan.kinds)
        board, win_matrix = _leaderboard(systems, fit, rg, counts, acc)
        totals, kinds, length, reasons = _judgment_figures(scan, systems)
        notes: list[str] = [] if length is not None else [sentences.LENGTH_NOT_COMPUTED_NOTE]
        annotators = _annotator_report(study, notes, scan.annotated)
        chosen_batches, chosen = study.prompt_choice_judgments()
        if chosen:
            notes.append(sentences.prompt_choice_note(chosen_batches, chosen, int(counts.usable.sum())))
        strata = _strata_report(study, counts_k, fit, by_stratum, sw.weights, sw.source)
        anchor = study.anchor
        forecast = remaining(study, posterior=fit.posterior)
        tie_conv = "half" if study.config.get("tie_convention", "half") == "half" else "drop"

    clusters = cluster_report(judged, counts, fit, cluster, cells)
    pairs = dg.pair_table(counts, p_better=dg.p_better_fit(fit),
                          design_effects=None if fit.clustering is None else fit.clustering.pair_design_effects())
    anchor_res = (dg.anchor_tests(counts, anchor, ties=tie_conv,
                                  design_effects=_anchor_design_effects(judged, cluster, anchor, tie_conv))
                  if anchor else None)
    ties = dg.tie_rates(counts_k)
    position = dg.position_bias(counts, gamma=fit.gamma)
    triads = dg.circular_triads(counts)
    model = ModelReport(engine, by_stratum, seed, draws, tune if engine == "nuts" else None,
                        chains if engine == "nuts" else None, fit.n_usable, fit.n_invalid, fit.gamma, fit.nu,
                        fit.sigma, fit.tau, fit.diagnostics, fit.stratum_weights)
    flags = _flags(position, fit, length, style, acc, min_pass_rate, annotators)
    notes += _closing_notes(style, by_stratum, len(counts_k.strata), strata, triads, reasons)
    notes += _ranking_notes(rg)

    from planner.store.ledger import judge_totals

    return Report(str(study_path), systems, anchor, totals, dict(sorted(kinds.items())), tuple(board),
                  rg.tied_with_leader, pairs, win_matrix, anchor_res, ties, position, length, triads, reasons,
                  annotators, strata, acc, acc_source, model, artifact, tuple(flags), tuple(notes),
                  judges=tuple(judge_totals(study_path)), style_control=style, clusters=clusters, fit=fit,
                  ranking=RankingReading(rg.method, rg.confidence_level, rg.rank_draws, rg.rank_mc_sd,
                                         bool(rg.letters) or not rg.order, rg.letters_note, rg.near_threshold),
                  forecast=forecast)


def _fits(study, counts_k: Counts, counts: Counts, weights: dict, by_stratum: bool, progressbar: bool,
          style_control: bool, lc_anchor: str | None, opts: dict):
    """The model fit (per stratum or pooled) and, when asked, the style-control report beside it."""
    from planner.model import fit as fit_model

    fit = fit_model(counts_k if by_stratum else counts, by_stratum=by_stratum,
                    stratum_weights=weights if by_stratum else None, progressbar=progressbar, **opts)
    style = None
    if style_control or lc_anchor is not None:
        from planner.services.style_report import style_control_report

        # beside the controlled fit (which pools strata), the raw pooled fit, clustered alike
        raw = fit if not by_stratum else fit_model(counts, **opts)
        cells = opts.get("clusters")
        opts = {k: v for k, v in opts.items() if k != "clusters"}
        style = style_control_report(study, raw, progressbar=progressbar, lc_anchor=lc_anchor,
                                     control=style_control, cluster="none" if cells is None else cells.by, **opts)
    return fit, style


def _anchor_design_effects(judged: JudgmentArrays, cluster: str, anchor: str, ties: str) -> dict[str, float] | None:
    """Per candidate: the design effect of its score against the anchor (applied: never below 1)."""
    if cluster == "none":
        return None
    k = judged.systems.index(anchor)
    got = design_effects_against(judged, cluster_ids(judged, cluster), k, ties)
    return {judged.systems[i]: applied_design_effect(v) for i, v in got.items()}


def _check_options(engine: str, seed: int, draws: int, tune: int, chains: int, min_pass_rate: float) -> None:
    """The report's option checks, before the study is opened."""
    from planner.limits import check_choice, check_report_options

    check_choice("engine", engine, ENGINES)
    check_report_options(seed=seed, draws=draws, tune=tune, chains=chains)
    check_range("min_pass_rate", min_pass_rate, 0.0, 1.0, low_open=False, high_open=False)


def _leaderboard(systems, fit, rg, counts: Counts, acc) -> tuple[list[LeaderRow], tuple]:
    """Leaderboard rows in ``rg.order`` and the win matrix (half-tie scores, both positions pooled)."""
    lo, hi = _interval95(fit)
    t = counts.pair_tensor()
    acc_row = {r.system: r for r in acc.rows} if acc is not None else {}
    board = []
    for pos, s in enumerate(rg.order):
        i = systems.index(s)
        w, l, ti, inv = (int(x) for x in t[i].sum(axis=0))
        a = acc_row.get(s)
        board.append(LeaderRow(
            s, s in rg.tied_with_leader, float(fit.mean[i]), float(fit.sd[i]), float(lo[i]), float(hi[i]),
            float(to_elo(fit.mean[i])), float(to_elo(lo[i])), float(to_elo(hi[i])),
            float(rg.p_best[pos]), int(rg.rank_low[pos]), int(rg.rank_high[pos]), w, l, ti, inv,
            half_tie_score(w, l, ti),
            None if a is None else a.pass_rate, None if a is None else a.ci_low,
            None if a is None else a.ci_high, 0 if a is None else a.passed + a.failed,
            rg.letters[pos] if rg.letters else "",
            rg.p_leader_better[pos]))
    scores = half_tie_scores(t[:, :, 0], t[:, :, 1], t[:, :, 2])
    for i, row in enumerate(scores):
        row[i] = None
    win_matrix = tuple(tuple(row) for row in scores)
    return board, win_matrix


def _judgment_figures(scan, systems) -> tuple[dict, dict, Any, Any]:
    """``(totals, kinds, length bias or None, reason shares)`` from the one scan of the store."""
    length = dg.length_bias_counts(scan.length_rows) if scan.length_rows is not None else None
    reasons = dg.reason_shares_counts(scan.reason_rows, systems, (scan.no_reason_wins, scan.no_reason_losses))
    return dict(scan.totals), dict(scan.kinds), length, reasons


def _annotator_report(study, notes: list[str], n_annotated: int):
    """Annotator QC over the latest :data:`ANNOTATOR_QC_MAX` annotated judgments (``None`` without any).

    Appends to ``notes`` what was skipped or capped. ``n_annotated``: the scan's count of judgments that
    name an annotator (0: nothing to read, the query is skipped).
    """
    annotated, capped = study.annotated_judgments(ANNOTATOR_QC_MAX) if n_annotated else ([], False)
    if not annotated:
        notes.append(sentences.ANNOTATOR_QC_SKIPPED_NOTE)
        return None
    expected = _attention_expected(study)
    n_att = sum(j.kind == "attention" for j in annotated)
    if n_att and not any(j.item in expected for j in annotated if j.kind == "attention"):
        notes.append(sentences.attention_skipped_note(n_att))
    qc_input = [j for j in annotated if j.kind != "attention" or j.item in expected]
    annotators = dg.annotator_qc(qc_input, attention_expected=expected, item_words=_item_words(study, qc_input))
    if capped:
        notes.append(sentences.annotator_qc_cap_note(ANNOTATOR_QC_MAX))
    return annotators


def _flags(position, fit, length, style, acc, min_pass_rate: float, annotators) -> list[str]:
    """Problems a reader must see, in a fixed order (sentences from :mod:`planner.sentences`)."""
    flags = []
    if position.flagged:
        flags.append(sentences.position_bias_flag(position, fit.gamma))
    if length is not None and length.flagged:
        flags.append(sentences.length_bias_flag(length))
    if style is not None:
        flags.extend(sentences.style_model_flag(w) for w in style.warnings)
    if acc is not None and acc.leader_flagged:
        flags.append(sentences.acceptability_flag(acc.message, min_pass_rate))
    if annotators is not None:
        flags.extend(sentences.annotator_flag(r) for r in annotators.annotators if r.flags)
        if annotators.agreement.flagged:
            flags.append(sentences.agreement_flag(annotators.agreement, dg.KAPPA_FLAG))
    flags.extend(sentences.model_flag(w) for w in fit.diagnostics.warnings)
    return flags


def _closing_notes(style, by_stratum: bool, n_strata: int, strata: StrataReport, triads, reasons) -> list[str]:
    """The notes after the store reads: style control, stratum mix, ζ, reason codes."""
    notes = []
    if style is not None:
        if style.n_excluded:
            notes.append(sentences.style_excluded_note(style.n_excluded, style.n_used))
        notes.extend(style.lc_notes)
    gap = strata.max_share_gap
    if not by_stratum and n_strata > 1 and gap is not None and gap > 0.05:
        notes.append(sentences.strata_gap_note(gap))
    if triads.zeta is None and triads.n_unobserved_pairs:
        notes.append(sentences.zeta_note(triads.n_unobserved_pairs))
    if reasons.n_decisive and reasons.share_without_reason:
        notes.append(sentences.reasons_note(reasons))
    return notes


def _ranking_notes(rg) -> list[str]:
    """Why the letters are left out, and the draws-based decisions that sit near their threshold."""
    notes = [rg.letters_note] if rg.letters_note else []
    notes += [sentences.near_threshold_note(x) for x in rg.near_threshold]
    return notes
