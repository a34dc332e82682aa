"""The result types of ``planner report`` (core): frozen dataclasses, ``Report.to_dict()`` is its JSON.

Built by :func:`planner.workflows.report.build_report` (which re-exports
them); rendered by :mod:`planner.formats.markdown`, :mod:`planner.formats.plots`
and the CLI. Conventions (scales, intervals, orientation) are in the
docstring of :mod:`planner.workflows.report`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

__all__ = ["ClusterReport", "LeaderRow", "ModelReport", "RankingReading", "Report", "StrataReport", "StratumRow",
           "cluster_report"]


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
class ClusterReport:
    """How clustered verdicts widened the report's intervals (docs/methods.md, "Clustered verdicts").

    Attributes
    ----------
    by : str
        ``item`` (prompt and unordered pair), ``prompt``, ``annotator`` or ``none``.
    n_clusters : int
        Clusters with a usable judgment (judgments, for ``none``).
    icc : float or None
        ANOVA ICC of the verdicts on the same prompt and pair
        (:func:`planner.stats.clusters.verdict_icc`), whatever ``by``: the ``rho`` of
        ``size --icc``.
    verdicts_per_cluster : float
        Usable verdicts per (prompt, pair).
    icc_design_effect : float
        Kish's design effect from ``icc`` (the figure ``size --icc`` plans with).
    design_effect : float
        Variance inflation of the strengths applied (``tr`` robust / ``tr`` model; 1 for ``none``).
    widened : float
        ``sqrt(design_effect)``: how much wider the intervals are.
    pair_low, pair_high : float or None
        Smallest and largest design effect of a compared pair's strength difference.
    sentence : str
    """

    by: str
    n_clusters: int
    icc: float | None
    verdicts_per_cluster: float
    icc_design_effect: float
    design_effect: float
    widened: float
    pair_low: float | None
    pair_high: float | None
    sentence: str = ""


@dataclass(frozen=True)
class RankingReading:
    """How the leaderboard's letters, P(leader > x), rank intervals and P(best) were read.

    Attributes
    ----------
    method : str
        ``"gaussian"`` (Laplace: separation, P(leader > x) and tied-with-the-leader
        in closed form from the posterior mean and covariance, the same for every
        seed) or ``"draws"`` (NUTS: shares of the posterior draws).
    confidence_level : float
    rank_draws : int
        Draws behind the rank intervals and P(best).
    rank_mc_sd : float or None
        Monte Carlo sd of a rank interval's tail share, ``sqrt(q (1 - q) / rank_draws)``
        with ``q = (1 - level) / 2`` (independent Gaussian draws; ``None`` for NUTS).
    letters_shown : bool
        False above :data:`planner.diagnostics.LETTERS_MAX_SYSTEMS` systems (each row's
        ``letters`` is then empty and ``letters_note`` says why).
    letters_note : str or None
    near_threshold : tuple of planner.diagnostics.NearThreshold
        NUTS only: decisions within two Monte Carlo standard errors of their threshold.
    """

    method: str
    confidence_level: float
    rank_draws: int
    rank_mc_sd: float | None
    letters_shown: bool
    letters_note: str | None
    near_threshold: tuple = ()


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
        LLM-judge totals per model (``planner.store.ledger.judge_totals``:
        ``model``, ``answers``, ``prompt_tokens``, ``completion_tokens``,
        ``cost_usd`` or None without a price); empty before any judge ran.
    style_control : planner.services.style_report.StyleControlReport or None
        Raw and style-controlled leaderboards, style coefficients and, for an
        anchor, length-controlled win rates (``style_control=True`` or
        ``lc_anchor``); None otherwise.
    clusters : ClusterReport or None
        How clustered verdicts widened the intervals (and the ICC behind it).
    fit : planner.model.Fit
        The fit itself (not in ``to_dict``).
    ranking : RankingReading or None
        How the leaderboard's letters and intervals were read (JSON key ``ranking``).
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
    clusters: ClusterReport | None = None
    fit: Any = field(default=None, repr=False, compare=False)
    ranking: RankingReading | None = None
    # the forecast `planner plan` saved, updated with the judgments now (planner.simulation.remaining.Remaining)
    forecast: Any = None

    JSON_READY = True   # to_dict() gives plain JSON values (planner.jsonable takes them as they are)

    def to_dict(self) -> dict:
        """JSON-ready dict of every field except ``fit`` (and ``style_control`` when not computed)."""
        from planner.jsonable import jsonable

        skip = ({"fit"} | ({"style_control"} if self.style_control is None else set())  # key only when asked
                | ({"ranking"} if self.ranking is None else set())
                | ({"forecast"} if self.forecast is None else set()))
        out = {name: jsonable(getattr(self, name)) for name in self.__dataclass_fields__ if name not in skip}
        if self.forecast is not None:
            out["forecast"]["sentence"] = self.forecast.sentence()
        return out


def cluster_report(judged, counts, fit, cluster: str, cells=None) -> ClusterReport:
    """The ICC of verdicts on the same prompt and pair, and what the chosen clustering did to ``fit``'s intervals
    (``fit.clustering``; ``judged``: the judgments it was fitted to (``JudgmentArrays``), ``counts`` their pooled
    counts; ``cells``: their tallies when at hand)."""
    from dataclasses import replace

    import numpy as np

    from planner import sentences
    from planner.stats.clusters import verdict_icc

    est = verdict_icc(judged, cells)
    c = fit.clustering
    if c is None:
        deff, n, low, high = 1.0, int(counts.usable.sum()), None, None
    else:
        deff, n = c.design_effect, c.n_clusters
        pairs = c.pair_design_effects()[np.triu(counts.pair_matrix() > 0, 1)]
        pairs = pairs[np.isfinite(pairs)]
        low, high = (float(pairs.min()), float(pairs.max())) if pairs.size else (None, None)
    rep = ClusterReport(cluster, n, est.icc, est.mean_size, est.design_effect, deff, float(np.sqrt(deff)), low, high)
    return replace(rep, sentence=sentences.cluster_sentence(rep))
