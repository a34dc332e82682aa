"""Style control on a study: the controlled fit, the side-by-side leaderboard, LC win rates (workflow).

Reads an open :class:`planner.store.study.Study` (judgments and response texts),
builds the per-judgment :class:`planner.model.style.StyleDesign`, fits it and
compares it with the raw fit. Used by ``report --style-control`` /
``--lc-anchor``, ``decide --style-control`` and ``next-batch --style-control``.

Missing response texts: a judgment whose two responses are not both stored
cannot be controlled; it is left out of the controlled fit and the number left
out is reported (a note, and ``n_excluded`` in JSON). The raw leaderboard
beside it keeps every judgment. With no controllable judgment at all the
command stops with a one-line error.

Clustered verdicts: the controlled fit's covariance is cluster-robust over the ``cluster`` the command
was given (default ``item``: same prompt and unordered pair; docs/methods.md, "Style control under
clustering"), its judgments' clusters read from the same rows as the fit (:func:`style_cluster_ids`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from planner import sentences
from planner.equality import array_eq
from planner.errors import DataError, UsageError
from planner.sentences import style_sentence

__all__ = [
    "VERDICT_CODE",
    "CoefRow",
    "StyleControlReport",
    "StyleInputs",
    "StyleRow",
    "controlled_fit",
    "controlled_fit_by_stratum",
    "design_from_inputs",
    "is_anchor_design",
    "lc_rates",
    "read_style_inputs",
    "style_cluster_ids",
    "style_control_report",
    "style_judgment_arrays",
]

VERDICT_CODE = {"A": 0, "B": 1, "tie": 2}


@array_eq
@dataclass(frozen=True)
class StyleInputs:
    """Usable pairwise judgments with both response texts, in study order.

    ``a``/``b`` as stored; ``a_left`` 1 (a shown left), -1 (a shown right), 0 (unknown); ``annotators``
    the judgment's annotator (None when it names none).
    """

    systems: tuple[str, ...]
    prompts: tuple[str, ...]
    a: np.ndarray
    b: np.ndarray
    a_left: np.ndarray
    outcome: np.ndarray
    text_a: tuple[str, ...]
    text_b: tuple[str, ...]
    n_excluded: int
    difficulty: dict
    annotators: tuple = ()


def read_style_inputs(study) -> StyleInputs:
    """Collect the counted-kind, non-invalid pairwise judgments whose two responses are stored."""
    from planner.store.study import COUNTED_KINDS

    texts = {(r.prompt, r.system): r.text for r in study.responses()}
    sidx = {s: i for i, s in enumerate(study.systems)}
    rows, excluded = [], 0
    for j in study.judgments():
        if j.b is None or j.kind not in COUNTED_KINDS or j.verdict not in VERDICT_CODE:
            continue
        ta, tb = texts.get((j.prompt, j.a)), texts.get((j.prompt, j.b))
        if ta is None or tb is None:
            excluded += 1
            continue
        side = 1 if j.a_position == "left" else -1 if j.a_position == "right" else 0
        rows.append((j.prompt, sidx[j.a], sidx[j.b], side, VERDICT_CODE[j.verdict], ta, tb, j.annotator))
    diff = {p.id: p.difficulty for p in study.prompts() if p.difficulty is not None}
    cols = list(zip(*rows)) if rows else [()] * 8
    return StyleInputs(tuple(study.systems), tuple(cols[0]), np.array(cols[1], dtype=np.int64),
                       np.array(cols[2], dtype=np.int64), np.array(cols[3], dtype=np.int64),
                       np.array(cols[4], dtype=np.int64), tuple(cols[5]), tuple(cols[6]), excluded, diff,
                       tuple(cols[7]))


def style_judgment_arrays(inp: StyleInputs):
    """The judgments of ``inp`` as :class:`planner.stats.clusters.JudgmentArrays` (``a``/``b`` as stored, one
    stratum), with prompt and annotator codes."""
    from planner.stats.clusters import JudgmentArrays

    def codes(values) -> np.ndarray:
        known = sorted({v for v in values if v is not None})
        index = {v: i for i, v in enumerate(known)}
        return np.array([index.get(v, -1) for v in values], dtype=np.int64).reshape(-1)

    return JudgmentArrays.build(inp.systems, inp.a, inp.b, inp.outcome, prompt=codes(inp.prompts),
                                annotator=codes(inp.annotators) if inp.annotators else None)


def style_cluster_ids(inp: StyleInputs, by: str) -> np.ndarray:
    """The cluster of each judgment of ``inp`` (:func:`planner.stats.clusters.cluster_ids`: ``item`` = same
    prompt and unordered pair, ``prompt``, ``annotator`` or ``none``)."""
    from planner.stats.clusters import cluster_ids

    return cluster_ids(style_judgment_arrays(inp), by)


def design_from_inputs(inp: StyleInputs, cluster: str = "none"):
    """The :class:`planner.model.style.StyleDesign`, rows oriented with the left response first when known;
    with its judgments' clusters (:func:`style_cluster_ids`) unless ``cluster`` is ``none``."""
    from planner.model.style import StyleDesign, style_features

    cache: dict[str, np.ndarray] = {}

    def feats(t: str) -> np.ndarray:
        if t not in cache:
            cache[t] = style_features(t)
        return cache[t]

    n = inp.a.size
    fa = np.array([feats(t) for t in inp.text_a]).reshape(n, -1)
    fb = np.array([feats(t) for t in inp.text_b]).reshape(n, -1)
    swap = inp.a_left == -1
    a = np.where(swap, inp.b, inp.a)
    b = np.where(swap, inp.a, inp.b)
    out = inp.outcome.copy()
    out[swap & (inp.outcome == 0)] = 1
    out[swap & (inp.outcome == 1)] = 0
    fa2 = np.where(swap[:, None], fb, fa)
    fb2 = np.where(swap[:, None], fa, fb)
    ids = None if cluster == "none" else style_cluster_ids(inp, cluster)
    return StyleDesign.build(inp.systems, a, b, (inp.a_left != 0).astype(float), out, fa2, fb2, cluster=ids,
                             cluster_by=cluster)


def controlled_fit(study, *, engine: str = "laplace", seed: int = 0, draws: int = 1000, tune: int = 1000,
                   chains: int = 2, progressbar: bool = False, cluster: str = "item"):
    """``(StyleFit, StyleInputs)`` of an open study; a DataError when no judgment can be controlled.

    ``cluster`` (:data:`planner.vocabulary.CLUSTER_BY`): the covariance is cluster-robust over those
    clusters (``fit.clustering`` says by how much it widened); ``none``: judgments independent.
    """
    from planner.model.style import fit_style
    from planner.stats.clusters import check_cluster_by

    check_cluster_by(cluster)
    inp = read_style_inputs(study)
    if inp.a.size == 0:
        raise DataError(f"style control needs response texts: none of the {inp.n_excluded:,} usable judgments "
                        "has both responses stored in the study (responses are loaded by planner init `responses`)"
                        if inp.n_excluded else "style control needs usable judgments (A, B or tie); none yet",
                        parameters=('responses',))
    sf = fit_style(design_from_inputs(inp, cluster), engine=engine, seed=seed, draws=draws, tune=tune, chains=chains,
                   progressbar=progressbar)
    return sf, inp


def controlled_fit_by_stratum(study, strata, *, engine: str = "laplace", seed: int = 0, cluster: str = "item"):
    """The controlled strengths as a by-stratum :class:`planner.model.Fit` for ``decide``.

    The style-controlled model pools strata, so every stratum gets the same
    draws (the win probability between responses of equal style); the
    per-stratum frequentist tests in ``decide`` still use the raw counts. ``cluster``: as in
    :func:`controlled_fit`.
    """
    from dataclasses import replace

    sf, _ = controlled_fit(study, engine=engine, seed=seed, cluster=cluster)
    k = len(strata)
    draws = np.repeat(sf.fit.beta_draws[:, None, :], k, axis=1)
    return replace(sf.fit, strata=tuple(strata), stratum_draws=draws,
                   stratum_mean=np.repeat(sf.fit.mean[None, :], k, axis=0),
                   stratum_sd=np.repeat(sf.fit.sd[None, :], k, axis=0))


# ------------------------------------------------------------------ report
@dataclass(frozen=True)
class StyleRow:
    """A system in raw and controlled rankings (1 = best; rank interval from the controlled draws)."""

    system: str
    raw_rank: int
    raw_mean: float
    raw_lo: float
    raw_hi: float
    rank: int
    mean: float
    lo: float
    hi: float
    rank_low: int
    rank_high: int
    p_best: float


@dataclass(frozen=True)
class CoefRow:
    """A style coefficient: logit per rms unit of its covariate, and the odds ratio exp(coef)."""

    feature: str
    scale: float
    mean: float
    sd: float
    lo: float
    hi: float
    odds_ratio: float
    odds_lo: float
    odds_hi: float


@dataclass(frozen=True)
class StyleControlReport:
    """``report --style-control``: raw and controlled leaderboards, coefficients, LC win rates.

    ``rows`` follow the controlled order; ``sentence`` is derived from the
    length coefficient row and the two orders; ``lc`` holds one
    :class:`planner.model.style_lc.LCResult` per system against ``lc_anchor``; ``clusters`` (a
    :class:`planner.report_results.ClusterReport`) what the clustering did to the controlled intervals.
    """

    engine: str
    n_used: int
    n_excluded: int
    rows: tuple[StyleRow, ...]
    coefficients: tuple[CoefRow, ...]
    position: object
    nu: object
    sentence: str
    reordered: int
    lc_anchor: str | None
    lc: tuple
    lc_notes: tuple[str, ...]
    warnings: tuple[str, ...]
    clusters: object = None


def _coef_rows(sf) -> tuple[CoefRow, ...]:
    return tuple(CoefRow(f, float(sc), c.mean, c.sd, c.lo, c.hi, math.exp(c.mean), math.exp(c.lo), math.exp(c.hi))
                 for f, sc, c in zip(sf.features, sf.scale, sf.coef))


def _rows(raw_fit, sf) -> tuple[StyleRow, ...]:
    from planner import diagnostics as dg

    systems = raw_fit.systems
    raw_order = list(np.argsort(-raw_fit.mean, kind="stable"))
    rlo, rhi = raw_fit.interval()
    clo, chi = sf.fit.interval()
    rg = dg.rank_fit(sf.fit)
    out = []
    for pos, s in enumerate(rg.order):
        i = systems.index(s)
        out.append(StyleRow(s, raw_order.index(i) + 1, float(raw_fit.mean[i]), float(rlo[i]), float(rhi[i]),
                            pos + 1, float(sf.fit.mean[i]), float(clo[i]), float(chi[i]),
                            int(rg.rank_low[pos]), int(rg.rank_high[pos]), float(rg.p_best[pos])))
    return tuple(out)


def lc_rates(inp: StyleInputs, anchor: str, cluster: str = "item") -> tuple[tuple, tuple[str, ...]]:
    """AlpacaEval LC win rate of every other system against ``anchor`` (judgments involving it only).

    ``cluster``: ``item`` or ``prompt`` (one pair: the same) — the interval is cluster-robust over the
    prompts; ``none`` or ``annotator`` — judgment by judgment (the inputs carry no annotator)."""
    from planner.model.style_lc import is_extreme_change, lc_win_rate

    if anchor not in inp.systems:
        raise UsageError(f"`lc_anchor` ({anchor}) must be one of the systems: {', '.join(inp.systems)}",
                         parameters=('lc_anchor',))
    k = inp.systems.index(anchor)
    notes = []
    other = int(np.sum((inp.a != k) & (inp.b != k)))
    if other:
        notes.append(sentences.lc_others_note(anchor, other))
    res = []
    for s, name in enumerate(inp.systems):
        if s == k:
            continue
        idx = np.flatnonzero(((inp.a == s) & (inp.b == k)) | ((inp.a == k) & (inp.b == s)))
        if idx.size < 3:
            notes.append(sentences.lc_not_computed_note(name, idx.size, anchor))
            continue
        s_is_a = inp.a[idx] == s
        y = np.where(inp.outcome[idx] == 2, 0.5, (inp.outcome[idx] == 0) == s_is_a).astype(float)
        ls = np.array([len(inp.text_a[i] if a else inp.text_b[i]) for i, a in zip(idx, s_is_a)], float)
        la = np.array([len(inp.text_b[i] if a else inp.text_a[i]) for i, a in zip(idx, s_is_a)], float)
        d = [inp.difficulty.get(inp.prompts[i]) for i in idx]
        use_d = all(v is not None for v in d) and len(set(d)) > 1
        r = lc_win_rate(name, y, la, ls, np.array(d, float) if use_d else None,
                        clusters=[inp.prompts[i] for i in idx] if cluster in ("item", "prompt") else None)
        res.append(r)
        if is_extreme_change(r.win_rate, r.lc_win_rate):
            longer = float(np.mean(ls > la))
            notes.append(sentences.lc_extreme_note(name, r.lc_win_rate, r.win_rate, longer))
    return tuple(res), tuple(notes)


def is_anchor_design(inp: StyleInputs, anchor: str | None) -> bool:
    """Every controllable judgment involves ``anchor``."""
    if anchor is None or anchor not in inp.systems or inp.a.size == 0:
        return False
    k = inp.systems.index(anchor)
    return bool(np.all((inp.a == k) | (inp.b == k)))


def style_control_report(study, raw_fit, *, engine: str = "laplace", seed: int = 0, draws: int = 1000,
                         tune: int = 1000, chains: int = 2, progressbar: bool = False,
                         lc_anchor: str | None = None, control: bool = True,
                         cluster: str = "item") -> StyleControlReport:
    """The style-controlled leaderboard beside ``raw_fit`` and, for an anchor, LC win rates.

    ``control=False`` (``--lc-anchor`` alone) skips the controlled fit.
    """
    sf = None
    if control:
        sf, inp = controlled_fit(study, engine=engine, seed=seed, draws=draws, tune=tune, chains=chains,
                                 progressbar=progressbar, cluster=cluster)
    else:
        inp = read_style_inputs(study)
    if lc_anchor is None and is_anchor_design(inp, study.anchor):
        lc_anchor = study.anchor
    lc, lc_notes = lc_rates(inp, lc_anchor, cluster) if lc_anchor is not None else ((), ())
    if sf is None:
        return StyleControlReport(engine, int(inp.a.size), inp.n_excluded, (), (), None, None, "", 0,
                                  lc_anchor, lc, lc_notes, ())
    from planner.report_results import cluster_report

    rows = _rows(raw_fit, sf)
    coefs = _coef_rows(sf)
    judged = style_judgment_arrays(inp)
    clusters = cluster_report(judged, judged.counts(), sf.fit, cluster)
    return StyleControlReport(engine, sf.fit.n_usable, inp.n_excluded, rows, coefs, sf.fit.gamma, sf.fit.nu,
                              style_sentence(coefs, rows), sum(r.rank != r.raw_rank for r in rows), lc_anchor,
                              lc, lc_notes, sf.fit.diagnostics.warnings, clusters)
