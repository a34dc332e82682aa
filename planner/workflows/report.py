"""`planner report`: the ranking with honest intervals and every diagnostic, for one study.

:func:`build_report` opens a study, fits the Bradley–Terry–Davidson model
(:func:`planner.model.fit`), runs the diagnostics of :mod:`planner.diagnostics`
and returns a :class:`Report` (a frozen dataclass; ``to_dict()`` gives the
JSON document of ``planner report --json``). The posterior is saved in the
study as ArviZ netcdf (artifact ``posterior-<engine>[-by-stratum].nc``).
:func:`render_markdown` turns a report into a shareable Markdown document and
:func:`write_plots` writes a forest plot of the strengths (Elo scale, 95%
credible intervals) and a win-rate heatmap as PNG and SVG.

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
  never do (:func:`planner.diagnostics.rank_groups`); each system has a 95%
  rank interval and P(leader better); "tied with the leader" = not credibly
  below the top. Nothing chains: no displayed grouping holds two systems
  whose 95% difference interval excludes 0.

Scale: the model is fitted on aggregated cells, and the judgment-level figures
(A/B totals, length bias, reason shares) come from one grouped SQL scan of the
store, so memory and Python work do not follow the number of judgments; only
the store scans do, and the grouped scan runs in a worker thread (its own
connection) while :meth:`Study.counts` runs and arviz is imported, so their
cost overlaps (bench/bench_report.py). Annotator quality control needs
judgments one by one and uses at most the latest :data:`ANNOTATOR_QC_MAX`
judgments that name an annotator (the report says so when it caps).

Formulas and references: docs/methods.md, sections "Report diagnostics" and
"The report (`planner report`)".
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from planner import diagnostics as dg
from planner.model.bt import ELO_SCALE, to_elo
from planner.counts import Counts, half_tie_score
from planner.errors import UsageError, check_range
from planner.strata import stratum_weights

ANNOTATOR_QC_MAX = 20_000   # judgments (latest first) read for annotator QC
ENGINES = ("laplace", "nuts")


# ----------------------------------------------------------------- results
@dataclass(frozen=True)
class LeaderRow:
    """One system on the leaderboard (rows are ordered by posterior mean, best first).

    Attributes
    ----------
    system : str
    tied_with_leader : bool
        Not credibly below the leader: P(leader > system) < 0.95 (the leader
        itself is True). A comparison with the leader only: two systems tied
        with the leader can still be separated from each other.
    mean, sd, lo, hi : float
        Posterior mean, sd and 95% credible interval of the strength (logit).
    elo, elo_lo, elo_hi : float
        The same on the Elo scale (``1500 + 173.7 * beta``).
    p_best : float
        Posterior probability of being the strongest system.
    rank_low, rank_high : int
        95% interval of the system's rank over posterior draws (1 = best).
    wins, losses, ties, invalid : int
        Judgments over all opponents, positions and strata (counted kinds).
    score : float or None
        Observed half-tie score.
    pass_rate, pass_low, pass_high : float or None
        Acceptability pass rate with its Wilson 95% interval (``None`` when
        the study has no acceptability labels for the system).
    pass_n : int
        Pass + fail labels behind ``pass_rate``.
    letters : str
        Compact letter display (:func:`planner.diagnostics.compact_letters`):
        two systems share a letter if and only if their 95% difference
        interval includes 0.
    p_leader_better : float or None
        Posterior P(leader > system); ``None`` for the leader.
    """

    system: str
    tied_with_leader: bool
    mean: float
    sd: float
    lo: float
    hi: float
    elo: float
    elo_lo: float
    elo_hi: float
    p_best: float
    rank_low: int
    rank_high: int
    wins: int
    losses: int
    ties: int
    invalid: int
    score: float | None
    pass_rate: float | None = None
    pass_low: float | None = None
    pass_high: float | None = None
    pass_n: int = 0
    letters: str = ""
    p_leader_better: float | None = None


@dataclass(frozen=True)
class StratumRow:
    """One stratum: its weight, judgments, tie rate and per-system figures.

    ``scores[i]`` is system i's half-tie score in the stratum (``None``
    without a usable judgment), ``usable[i]`` its usable judgments there.
    ``mean``/``sd`` are the per-stratum strengths (logit) from the partially
    pooled model (``by_stratum`` only, else ``None``).
    """

    stratum: str
    weight: float
    prompts: int
    judgments: int
    invalid: int
    judgment_share: float | None
    tie_rate: float | None
    scores: tuple[float | None, ...]
    usable: tuple[int, ...]
    mean: tuple[float, ...] | None = None
    sd: tuple[float, ...] | None = None


@dataclass(frozen=True)
class StrataReport:
    """Per-stratum figures and the population figure re-weighted to stratum weights.

    Attributes
    ----------
    systems : tuple of str
    weights_source : str
        :attr:`planner.strata.StratumWeights.source` of the one weight rule:
        ``"prompt weights"`` (sum of the prompts' ``weight`` per stratum; a
        prompt without one counts 1), ``"stratum sizes"`` (prompts per stratum:
        no weights, or all 0) or ``"equal"`` (the study has no prompts).
    rows : tuple of StratumRow
    weighted_scores : tuple of float or None
        Per system: ``sum_k w_k s_k / sum_k w_k`` over the strata where the
        system has a usable judgment (``s_k`` its half-tie score in stratum k).
    max_share_gap : float or None
        Largest ``|judgment share - weight|`` over strata: how far the pooled
        (unweighted) fit is from the population mix.
    """

    systems: tuple[str, ...]
    weights_source: str
    rows: tuple[StratumRow, ...]
    weighted_scores: tuple[float | None, ...]
    max_share_gap: float | None


@dataclass(frozen=True)
class ModelReport:
    """The fitted model in brief: engine, nuisance parameters and diagnostics.

    ``gamma``: left-position logit shift; ``nu``: Davidson tie parameter
    (``P(tie) = nu / (2 + nu)`` for equal systems without position effect);
    ``sigma``/``tau``: strength and stratum-deviation scales (Laplace: fixed at
    their mode, so their sd and interval are ``None``).
    """

    engine: str
    by_stratum: bool
    seed: int
    draws: int
    tune: int | None
    chains: int | None
    n_usable: int
    n_invalid: int
    gamma: Any
    nu: Any
    sigma: Any
    tau: Any
    diagnostics: Any
    stratum_weights: dict | None


@dataclass(frozen=True)
class Report:
    """Everything ``planner report`` shows; ``to_dict()`` is its JSON document.

    Attributes
    ----------
    study : str
        The study directory.
    systems : tuple of str
        In study order (``win_matrix`` follows it).
    anchor : str or None
    totals : dict
        ``A``/``B``/``tie``/``invalid`` over ranking judgments (kinds regular,
        overlap, swap, external), relative to the stored orientation.
    kinds : dict
        Stored judgments per kind (all kinds).
    leaderboard : tuple of LeaderRow
        Best first; see :class:`LeaderRow`.
    tied_with_leader : tuple of str
        Systems not credibly below the leader (P(leader > x) < 0.95), best
        first. Not a group: see ``LeaderRow.tied_with_leader``.
    pairs : planner.diagnostics.PairTable
        Per unordered pair: A/B/tie/invalid, half-tie score, P(a better than b).
    win_matrix : tuple of tuple of (float or None)
        ``win_matrix[i][j]`` = system i's half-tie score against system j
        (both positions pooled); ``None`` on the diagonal and for unobserved pairs.
    anchor_tests : planner.diagnostics.AnchorTests or None
    ties : planner.diagnostics.TieRates
    position : planner.diagnostics.PositionBias
        With ``gamma`` = the model's position shift (Summary, logit).
    length : planner.diagnostics.LengthBias or None
        ``None`` when the study holds no responses (lengths unknown).
    triads : planner.diagnostics.CircularTriads
    reasons : planner.diagnostics.ReasonShares
    annotators : planner.diagnostics.AnnotatorReport or None
    strata : StrataReport
    acceptability : planner.diagnostics.Acceptability or None
    acceptability_source : str or None
        ``"judgments"`` (acceptability items) or ``"responses"`` (labels in the
        responses file).
    model : ModelReport
    posterior_artifact : str or None
        Artifact name of the saved posterior in the study.
    flags : tuple of str
        Problems a reader must see (position bias, length bias, leader's pass
        rate, annotator flags, sampler warnings).
    notes : tuple of str
        What was skipped or approximated, and why.
    judges : tuple of dict
        LLM-judge totals per model (``planner.connectors.cache.judge_totals``:
        ``model``, ``answers``, ``prompt_tokens``, ``completion_tokens``,
        ``cost_usd`` or None without a price); empty before any judge ran.
    style_control : planner.workflows.style_report.StyleControlReport or None
        Raw and style-controlled leaderboards, style coefficients and, for an
        anchor, length-controlled win rates (``style_control=True`` or
        ``lc_anchor``); None otherwise.
    fit : planner.model.Fit
        The fit itself (not in ``to_dict``).
    """

    study: str
    systems: tuple[str, ...]
    anchor: str | None
    totals: dict
    kinds: dict
    leaderboard: tuple[LeaderRow, ...]
    tied_with_leader: tuple[str, ...]
    pairs: Any
    win_matrix: tuple[tuple[float | None, ...], ...]
    anchor_tests: Any
    ties: Any
    position: Any
    length: Any
    triads: Any
    reasons: Any
    annotators: Any
    strata: StrataReport
    acceptability: Any
    acceptability_source: str | None
    model: ModelReport
    posterior_artifact: str | None
    flags: tuple[str, ...]
    notes: tuple[str, ...]
    judges: tuple[dict, ...] = ()
    style_control: Any = None
    fit: Any = field(default=None, repr=False, compare=False)

    def to_dict(self) -> dict:
        """JSON-ready dict of every field except ``fit`` (and ``style_control`` when not computed)."""
        from planner.jsonable import jsonable

        skip = {"fit"} | ({"style_control"} if self.style_control is None else set())  # key only when asked
        return {name: jsonable(getattr(self, name)) for name in self.__dataclass_fields__ if name not in skip}


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
def _ranking_groups(groups: list[tuple]):
    """Grouped rows ``(a, b, verdict, kind, reason, sign, n)`` of ranking judgments (pairwise, QC kinds out)."""
    return (g for g in groups if g[1] is not None and g[3] not in dg.NON_RANKING_KINDS)


def _strata_report(study, counts: Counts, fit, by_stratum: bool, weights: dict[str, float],
                   source: str) -> StrataReport:
    systems, strata = counts.systems, counts.strata
    t = counts.pair_tensor(by_stratum=True)        # (K, M, M, 4)
    per = t.sum(axis=2)                            # (K, M, 4): system vs everyone in stratum k
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
            if r.scores[i] is not None and r.weight > 0:
                num += r.weight * r.scores[i]
                den += r.weight
        weighted.append(num / den if den else None)
    gaps = [abs(r.judgment_share - r.weight) for r in rows if r.judgment_share is not None]
    return StrataReport(tuple(systems), source, tuple(rows), tuple(weighted), float(max(gaps)) if gaps else None)


def _acceptability(study, ranking, min_pass_rate: float):
    acc = study.acceptability_counts()
    if int(acc.passed.sum() + acc.failed.sum() + acc.invalid.sum()):
        return dg.acceptability(acc, ranking=ranking, min_pass_rate=min_pass_rate), "judgments"
    labels = [(r.system, r.acceptable) for r in study.responses() if r.acceptable is not None]
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
                 lc_anchor: str | None = None) -> Report:
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
        arviz (about half of every report's time, issue 13).
    style_control : bool
        Also fit the style-controlled model (:mod:`planner.model.style`) with the
        same engine and seed and report it beside the raw leaderboard; for an
        anchor design (every judgment involves the study's anchor) also the
        length-controlled win rates (:mod:`planner.model.style_lc`).
    lc_anchor : str, optional
        Length-controlled win rates of every system against this system
        (judgments involving it), with or without ``style_control``.

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

    from planner.model import fit as fit_model
    from planner.store.study import DB_NAME, Study, grouped_judgments
    if save_posterior is None:
        save_posterior = engine == "nuts"

    if engine not in ENGINES:
        raise UsageError(f"--engine ({engine!r}) must be one of 'laplace' or 'nuts'")
    from planner.limits import check_report_options

    check_report_options(seed=seed, draws=draws, tune=tune, chains=chains)
    check_range("--min-pass-rate", min_pass_rate, 0.0, 1.0, low_open=False, high_open=False)
    notes: list[str] = []
    flags: list[str] = []
    with Study.open(study_path) as study, ThreadPoolExecutor(max_workers=2) as pool:
        # Overlap the two store scans and the heavy imports: sqlite releases the GIL while scanning,
        # so the grouped scan (worker), Study.counts (here) and importing arviz (worker) run together.
        grouped = pool.submit(grouped_judgments, Path(study.path) / DB_NAME)
        systems = tuple(study.systems)
        counts_k = study.counts(by_stratum=True)
        counts = counts_k.pooled()
        if int(counts.usable.sum()) == 0:   # before any heavy import is started: fails fast (issue 13)
            raise UsageError(f"STUDY ({study_path}) has no usable judgment yet (A, B or tie); "
                             "ingest judgments first (planner ingest)")
        if save_posterior:
            pool.submit(_warm_imports, engine)
        sw = stratum_weights(study.prompts(), counts_k.strata)
        weights, w_source = sw.weights, sw.source
        fit = fit_model(counts_k if by_stratum else counts, engine=engine, by_stratum=by_stratum,
                        stratum_weights=weights if by_stratum else None,
                        seed=seed, draws=draws, tune=tune, chains=chains, progressbar=progressbar)
        style = None
        if style_control or lc_anchor is not None:
            from planner.workflows.style_report import style_control_report

            style = style_control_report(study, fit if not by_stratum else fit_model(
                counts, engine=engine, seed=seed, draws=draws, tune=tune, chains=chains), engine=engine,
                seed=seed, draws=draws, tune=tune, chains=chains, progressbar=progressbar, lc_anchor=lc_anchor,
                control=style_control)
        artifact = None
        if save_posterior:
            artifact = f"posterior-{engine}{'-by-stratum' if by_stratum else ''}.nc"
            study.save_artifact(artifact, fit.to_netcdf())

        # ---- leaderboard
        lo, hi = _interval95(fit)
        rg = dg.rank_groups(systems, fit.mean, draws=fit.beta_draws)
        t = counts.pair_tensor()
        acc, acc_source = _acceptability(study, rg.order, min_pass_rate)
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
                None if a is None else a.ci_high, 0 if a is None else a.passed + a.failed, rg.letters[pos],
                rg.p_leader_better[pos]))
        win_matrix = tuple(tuple(None if i == j else half_tie_score(*t[i, j, :3]) for j in range(len(systems)))
                           for i in range(len(systems)))

        # ---- judgment-level aggregates (one grouped scan)
        groups = grouped.result()
        from planner.store.study import COUNTED_KINDS

        totals = {"A": 0, "B": 0, "tie": 0, "invalid": 0}
        kinds: dict[str, int] = {}
        for _a, b, v, kind, _r, _s, n in groups:
            kinds[kind] = kinds.get(kind, 0) + n
            if b is not None and kind in COUNTED_KINDS:
                totals[v] += n
        has_lengths = any(s is not None for *_, s, _n in groups)
        length = (dg.length_bias_counts((v, sign, n) for _a, _b, v, _k, _r, sign, n in _ranking_groups(groups))
                  if has_lengths else None)
        if length is None:
            notes.append("length bias not computed: the study holds no responses (lengths unknown)")
        reasons = dg.reason_shares_counts(((a, b, v, r, n) for a, b, v, _k, r, _s, n in _ranking_groups(groups)),
                                          systems)

        # ---- annotator QC
        annotated, capped = study.annotated_judgments(ANNOTATOR_QC_MAX)
        annotators = None
        if annotated:
            expected = _attention_expected(study)
            n_att = sum(j.kind == "attention" for j in annotated)
            if n_att and not any(j.item in expected for j in annotated if j.kind == "attention"):
                notes.append(f"attention checks skipped: {n_att} attention judgments, but the study does not "
                             "record which side was broken (batch manifest key 'attention_expected')")
            qc_input = [j for j in annotated if j.kind != "attention" or j.item in expected]
            annotators = dg.annotator_qc(qc_input, attention_expected=expected,
                                         item_words=_item_words(study, qc_input))
            if capped:
                notes.append(f"annotator QC uses the latest {ANNOTATOR_QC_MAX:,} judgments that name an annotator")
        else:
            notes.append("annotator QC skipped: no judgment names an annotator")

        strata = _strata_report(study, counts_k, fit, by_stratum, weights, w_source)
        anchor = study.anchor
        tie_conv = "half" if study.config.get("tie_convention", "half") == "half" else "drop"

    pairs = dg.pair_table(counts, p_better=dg.p_better_from_draws(fit.beta_draws))
    anchor_res = dg.anchor_tests(counts, anchor, ties=tie_conv) if anchor else None
    ties = dg.tie_rates(counts_k)
    position = dg.position_bias(counts, gamma=fit.gamma)
    triads = dg.circular_triads(counts)
    model = ModelReport(engine, by_stratum, seed, draws, tune if engine == "nuts" else None,
                        chains if engine == "nuts" else None, fit.n_usable, fit.n_invalid, fit.gamma, fit.nu,
                        fit.sigma, fit.tau, fit.diagnostics, fit.stratum_weights)

    # ---- flags and notes
    if position.flagged:
        flags.append(f"position bias: the left-shown response wins {100 * position.left_win_rate:.1f}% of "
                     f"decisive judgments ({position.difference_points:+.1f} points left vs right, "
                     f"threshold {position.threshold_points:g}); model gamma = {fit.gamma.mean:.2f} "
                     f"[{fit.gamma.lo:.2f}, {fit.gamma.hi:.2f}] logit - the ranking is net of it")
    if length is not None and length.flagged:
        flags.append(f"length bias: the longer response wins {100 * length.share:.1f}% of decisive judgments "
                     f"(95% [{100 * length.ci_low:.1f}%, {100 * length.ci_high:.1f}%])")
    if style is not None:
        if style.n_excluded:
            notes.append(f"style control: {style.n_excluded:,} judgment(s) without both response texts are left "
                         f"out of the controlled fit ({style.n_used:,} used)")
        notes.extend(style.lc_notes)
        flags.extend(f"style-controlled model: {w}" for w in style.warnings)
    if acc is not None and acc.leader_flagged:
        flags.append(f"acceptability: {acc.message} (below {100 * min_pass_rate:.0f}%)")
    if annotators is not None:
        for r in annotators.annotators:
            if r.flags:
                flags.append(f"annotator {r.annotator}: {', '.join(r.flags)}")
        if annotators.agreement.flagged:
            flags.append(f"agreement: {annotators.agreement.method} kappa = {annotators.agreement.kappa:.2f} "
                         f"(< {dg.KAPPA_FLAG})")
    flags.extend(f"model: {w}" for w in fit.diagnostics.warnings)
    if not by_stratum and len(counts_k.strata) > 1 and (strata.max_share_gap or 0) > 0.05:
        notes.append(f"the pooled ranking weights strata by their share of judgments (up to "
                     f"{100 * strata.max_share_gap:.0f} points away from the stratum weights); "
                     "use --by-stratum for the ranking re-weighted to stratum weights")
    if triads.zeta is None and triads.n_unobserved_pairs:
        notes.append(f"consistency zeta not computed: {triads.n_unobserved_pairs} pair(s) without a usable judgment")
    if reasons.n_decisive and reasons.share_without_reason:
        notes.append(f"{reasons.n_without_reason:,} of {reasons.n_decisive:,} decisive judgments "
                     f"({100 * reasons.share_without_reason:.0f}%) carry no reason code")

    from planner.connectors.cache import judge_totals

    return Report(str(study_path), systems, anchor, totals, dict(sorted(kinds.items())), tuple(board),
                  rg.tied_with_leader, pairs, win_matrix, anchor_res, ties, position, length, triads, reasons,
                  annotators, strata, acc, acc_source, model, artifact, tuple(flags), tuple(notes),
                  judges=tuple(judge_totals(study_path)), style_control=style, fit=fit)


# ------------------------------------------------------------------ markdown
def _pct(x, digits: int = 1) -> str:
    return "—" if x is None else f"{100 * x:.{digits}f}%"


def _num(x, fmt: str = ".3f") -> str:
    return "—" if x is None or (isinstance(x, float) and not math.isfinite(x)) else format(x, fmt)


def _table(header: list[str], rows: list[list[str]]) -> list[str]:
    out = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    out += ["| " + " | ".join(str(c) for c in r) + " |" for r in rows]
    return out + [""]


def render_markdown(report: Report) -> str:
    """The report as a Markdown document (deterministic for a given report)."""
    r = report
    m = r.model
    L: list[str] = [f"# Report: {Path(r.study).name}", ""]
    tot = r.totals
    L += [f"Judgments: A {tot['A']:,} / B {tot['B']:,} / tie {tot['tie']:,} / invalid {tot['invalid']:,} "
          f"(ranking kinds; A/B relative to the stored orientation). Engine: {m.engine}"
          + (", per-stratum model re-weighted to stratum weights" if m.by_stratum else "") + f", seed {m.seed}.",
          ""]
    if r.flags:
        L += ["## Flags", ""] + [f"- {f}" for f in r.flags] + [""]
    L += ["## Leaderboard", "",
          "Strength β on the logit scale (sum to zero), Elo = 1500 + 173.7 β. Two systems sharing a letter are "
          "not credibly separated (95% interval of their difference includes 0); systems sharing no letter are. "
          "`rank` is the 95% interval of the system's rank over posterior draws (1 = best). "
          "`P(lead>x)` = posterior probability that the leader is stronger; `tied` marks systems not "
          "credibly below the leader (P(lead>x) < 0.95). That is a comparison with the leader only: two "
          "tied systems may still be separated from each other (their letters say so).", ""]
    has_acc = r.acceptability is not None
    head = ["tied", "letters", "system", "Elo", "Elo 95% CrI", "β", "β 95% CrI", "P(best)", "P(lead>x)", "rank",
            "score", "W/L/T/inv"]
    if has_acc:
        head.append("acceptable")
    rows = []
    for x in r.leaderboard:
        row = ["tied" if x.tied_with_leader else "", x.letters, x.system, f"{x.elo:.0f}",
               f"[{x.elo_lo:.0f}, {x.elo_hi:.0f}]", f"{x.mean:+.3f}",
               f"[{x.lo:+.3f}, {x.hi:+.3f}]", f"{x.p_best:.3f}",
               "leader" if x.p_leader_better is None else f"{x.p_leader_better:.3f}",
               f"{x.rank_low}" if x.rank_low == x.rank_high else f"{x.rank_low}–{x.rank_high}",
               _num(x.score), f"{x.wins}/{x.losses}/{x.ties}/{x.invalid}"]
        if has_acc:
            row.append("—" if x.pass_rate is None else
                       f"{_pct(x.pass_rate, 0)} [{_pct(x.pass_low, 0)}, {_pct(x.pass_high, 0)}] (n={x.pass_n})")
        rows.append(row)
    L += _table(head, rows)
    L += ["Tied with the leader (not credibly below it): " + ", ".join(r.tied_with_leader), ""]
    L += ["## Pairs", ""]
    L += _table(["a", "b", "a wins", "b wins", "ties", "invalid", "a's score", "P(a better)"],
                [[p.system_a, p.system_b, p.a_wins, p.b_wins, p.ties, p.invalid, _num(p.score),
                  _num(p.p_a_better)] for p in r.pairs.rows])
    if r.anchor_tests is not None:
        at = r.anchor_tests
        L += [f"## Against the anchor ({at.anchor})", "",
              f"Win rate (ties: {at.ties}) with Wilson 95% interval and the exact two-sided binomial test of 50%.",
              ""]
        L += _table(["system", "wins", "losses", "ties", "invalid", "win rate", "95% CI", "p"],
                    [[a.system, a.wins, a.losses, a.ties, a.invalid, _pct(a.win_rate),
                      f"[{_pct(a.ci_low)}, {_pct(a.ci_high)}]", _num(a.pvalue, ".3g")] for a in at.rows])
    L += ["## Diagnostics", ""]
    tr = r.ties.overall
    L.append(f"- Tie rate: {_pct(tr.rate)} of {tr.usable:,} usable judgments "
             f"[{_pct(tr.ci_low)}, {_pct(tr.ci_high)}]; Davidson ν = {m.nu.mean:.3f} "
             f"[{m.nu.lo:.3f}, {m.nu.hi:.3f}].")
    p = r.position
    L.append(f"- Position: left wins {_pct(p.left_win_rate)} of {p.n_decisive:,} decisive judgments "
             f"[{_pct(p.ci_low)}, {_pct(p.ci_high)}], "
             f"right {_pct(None if p.left_win_rate is None else 1 - p.left_win_rate)}; "
             f"γ = {m.gamma.mean:.3f} [{m.gamma.lo:.3f}, {m.gamma.hi:.3f}] logit"
             + (" — **flagged**" if p.flagged else "") + ".")
    if r.length is not None:
        lb = r.length
        L.append(f"- Length: the longer response wins {_pct(lb.share)} of {lb.n:,} decisive judgments "
                 f"[{_pct(lb.ci_low)}, {_pct(lb.ci_high)}]" + (" — **flagged**" if lb.flagged else "") + ".")
    c = r.triads
    L.append(f"- Circular triads: d = {c.d:g} of at most {c.d_max:g}; Kendall's ζ = {_num(c.zeta)}"
             + (f" (e.g. {' > '.join(c.examples[0])} > {c.examples[0][0]})" if c.examples else "") + ".")
    rs = r.reasons
    L.append(f"- Reasons: {_pct(rs.share_without_reason)} of {rs.n_decisive:,} decisive judgments carry no reason.")
    L.append("")
    if any(x.win_reasons and any(s.reason for s in x.win_reasons) for x in rs.rows):
        L += ["### Reasons (share of each system's wins / losses)", ""]
        L += _table(["system", "wins", "win reasons", "losses", "loss reasons"],
                    [[x.system, x.wins, ", ".join(f"{s.reason or 'none'} {_pct(s.share, 0)}" for s in x.win_reasons),
                      x.losses, ", ".join(f"{s.reason or 'none'} {_pct(s.share, 0)}" for s in x.loss_reasons)]
                     for x in rs.rows])
    if r.annotators is not None:
        ag = r.annotators.agreement
        L += ["### Annotators", ""]
        L += _table(["annotator", "judgments", "attention", "swap consistency", "kappa", "fast", "left share",
                     "longest run", "flags"],
                    [[a.annotator, a.n_judgments, _pct(a.attention_rate, 0), _pct(a.swap_rate, 0), _num(a.kappa, ".2f"),
                      _pct(a.fast_share, 0), _pct(a.left_share, 0), a.longest_run, ", ".join(a.flags) or "—"]
                     for a in r.annotators.annotators])
        if ag.method:
            L += [f"Agreement on {ag.n_items} overlap comparisons ({ag.n_annotators} annotators): "
                  f"{ag.method} κ = {_num(ag.kappa, '.2f')}.", ""]
    st = r.strata
    if len(st.rows) > 1:
        L += ["## Strata", "",
              f"Half-tie score of each system per stratum; weights from {st.weights_source}. The last row is the "
              "population figure re-weighted to the stratum weights.", ""]
        head = ["stratum", "weight", "judgments", "tie rate"] + list(st.systems)
        rows = [[s.stratum, f"{s.weight:.3f}", s.judgments, _pct(s.tie_rate)] + [_num(v) for v in s.scores]
                for s in st.rows]
        rows.append(["**re-weighted**", "1.000", sum(s.judgments for s in st.rows), ""]
                    + [_num(v) for v in st.weighted_scores])
        L += _table(head, rows)
        if st.rows[0].mean is not None:
            L += ["Per-stratum strengths (Elo, partially pooled):", ""]
            L += _table(["stratum"] + list(st.systems),
                        [[s.stratum] + [f"{1500 + ELO_SCALE * v:.0f}" for v in s.mean] for s in st.rows])
    if r.acceptability is not None:
        a = r.acceptability
        L += ["## Acceptability", "", f"Pass rates (source: {r.acceptability_source}) with Wilson 95% intervals, in "
              "ranking order. Pairwise order is silent about level.", ""]
        L += _table(["system", "pass", "fail", "invalid", "pass rate", "95% CI"],
                    [[x.system, x.passed, x.failed, x.invalid, _pct(x.pass_rate),
                      f"[{_pct(x.ci_low)}, {_pct(x.ci_high)}]"]
                     for x in a.rows])
    d = m.diagnostics
    L += ["## Model", "",
          f"Bradley–Terry–Davidson with a left-position shift; engine {m.engine}; {m.n_usable:,} usable judgments in "
          f"the likelihood, {m.n_invalid:,} invalid excluded.", ""]
    if m.engine == "nuts":
        L.append(f"- max r̂ = {_num(d.max_r_hat)}, min ESS bulk/tail = {_num(d.min_ess_bulk, '.0f')}/"
                 f"{_num(d.min_ess_tail, '.0f')}, divergences = {d.divergences}.")
    else:
        L.append(f"- Newton iterations {d.iterations}, converged: {'yes' if d.converged else 'no'}.")
    L.append(f"- γ = {m.gamma.mean:.3f} [{m.gamma.lo:.3f}, {m.gamma.hi:.3f}], ν = {m.nu.mean:.3f} "
             f"[{m.nu.lo:.3f}, {m.nu.hi:.3f}], σ = {m.sigma.mean:.3f}"
             + (f", τ = {m.tau.mean:.3f}" if m.tau is not None else "") + ".")
    if r.posterior_artifact:
        L.append(f"- Posterior saved in the study as `{r.posterior_artifact}` (ArviZ netcdf).")
    L.append("")
    if r.style_control is not None:
        from planner.workflows.style_report import markdown_section

        L += markdown_section(r.style_control)
    if r.judges:
        L += ["## LLM judges", ""]
        L += _table(["model", "answers", "prompt tokens", "completion tokens", "cost (USD)"],
                    [[j["model"], f"{j['answers']:,}", f"{j['prompt_tokens']:,}", f"{j['completion_tokens']:,}",
                      "—" if j.get("cost_usd") is None else f"{j['cost_usd']:.4f}"] for j in r.judges])
    if r.notes:
        L += ["## Notes", ""] + [f"- {n}" for n in r.notes] + [""]
    return "\n".join(L).rstrip() + "\n"


# --------------------------------------------------------------------- plots
def write_plots(report: Report, directory) -> tuple[str, ...]:
    """Write ``strengths.{png,svg}`` (forest plot) and ``win_rates.{png,svg}`` (heatmap).

    The forest plot shows each system's posterior mean strength on the Elo
    scale with its 95% credible interval, best at the top, blue when not
    credibly below the leader (grey otherwise), labelled with its letters and
    95% rank interval (nothing is coloured by a chaining group). The heatmap
    shows row system's half-tie score against the column
    system (blank = unobserved). Headless: figures are built with
    :class:`matplotlib.figure.Figure` (no pyplot, the global backend is left
    alone) and rendered by the Agg / SVG backends. SVGs carry no date and a
    fixed hash salt, so the same report gives identical SVG files. Returns the
    paths.
    """
    import matplotlib
    from matplotlib.figure import Figure

    out = Path(directory)
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise UsageError(f"--plot ({directory}) cannot be created: {exc.strerror or exc}") from None
    paths: list[str] = []
    rows = report.leaderboard
    with matplotlib.rc_context({"svg.hashsalt": "planner", "font.size": 9}):
        fig = Figure(figsize=(6.4, 0.45 * len(rows) + 1.2))
        ax = fig.subplots()
        y = np.arange(len(rows))[::-1]
        colours = matplotlib.colormaps["tab10"]
        for yi, x in zip(y, rows):
            col = colours(0) if x.tied_with_leader else colours(7)
            ax.plot([x.elo_lo, x.elo_hi], [yi, yi], color=col, lw=2)
            ax.plot([x.elo], [yi], "o", color=col)
        ax.set_yticks(y, [f"{x.system} [{x.letters}] rank {x.rank_low}"
                          + ("" if x.rank_low == x.rank_high else f"–{x.rank_high}") for x in rows])
        ax.axvline(1500, color="grey", lw=0.8, ls="--")
        ax.set_xlabel("strength, Elo scale (1500 + 173.7 β); bars = 95% credible interval\n"
                      "blue = not credibly below the leader; [letters]: shared letter = not separated")
        ax.set_title(f"{Path(report.study).name}: strengths ({report.model.engine})")
        fig.tight_layout()
        paths += _save(fig, out / "strengths")

        names = [x.system for x in rows]
        idx = [report.systems.index(s) for s in names]
        mat = np.array([[np.nan if report.win_matrix[i][j] is None else report.win_matrix[i][j] for j in idx]
                        for i in idx], dtype=float)
        n = len(names)
        fig = Figure(figsize=(0.6 * n + 2.4, 0.55 * n + 1.6))
        ax = fig.subplots()
        im = ax.imshow(np.ma.masked_invalid(mat), cmap="RdBu", vmin=0, vmax=1)
        ax.set_xticks(range(n), names, rotation=45, ha="right")
        ax.set_yticks(range(n), names)
        for i in range(n):
            for j in range(n):
                if np.isfinite(mat[i, j]):
                    ax.text(j, i, f"{mat[i, j]:.2f}", ha="center", va="center", fontsize=7,
                            color="white" if abs(mat[i, j] - 0.5) > 0.3 else "black")
        fig.colorbar(im, ax=ax, label="row's half-tie score vs column")
        ax.set_title("win rates (ties = half)")
        fig.tight_layout()
        paths += _save(fig, out / "win_rates")
    return tuple(paths)


def _save(fig, stem: Path) -> list[str]:
    png, svg = stem.with_suffix(".png"), stem.with_suffix(".svg")
    fig.savefig(png, dpi=120, metadata={"Software": None})
    fig.savefig(svg, metadata={"Date": None})
    return [str(png), str(svg)]


def write_markdown(report: Report, path) -> str:
    """Write :func:`render_markdown` to ``path`` (UTF-8); returns the path.

    Raises :class:`UsageError` naming ``--markdown`` when the file cannot be written.
    """
    p = Path(path)
    try:
        if p.parent and not p.parent.exists():
            p.parent.mkdir(parents=True, exist_ok=True)
        tmp = p.with_name(p.name + ".tmp")
        tmp.write_text(render_markdown(report), encoding="utf-8")
        tmp.replace(p)
    except OSError as exc:
        raise UsageError(f"--markdown ({path}) cannot be written: {exc.strerror or exc}") from None
    return str(p)
