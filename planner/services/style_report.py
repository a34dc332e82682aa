"""Style control on a study: the side-by-side leaderboard and LC win rates (``report --style-control``
/ ``--lc-anchor``).

Reads the open study's judgments and response texts (:func:`planner.services.style_data.read_style_inputs`),
fits the style-controlled model (:func:`planner.model.style_control.controlled_fit`) and compares it
with the raw fit. A judgment whose two responses are not both stored cannot be controlled; it is
left out of the controlled fit and the number left out is reported (a note, and ``n_excluded`` in
JSON). The raw leaderboard beside it keeps every judgment. With no controllable judgment at all the
command stops with a one-line error.

Clustered verdicts: the controlled fit's covariance is cluster-robust over the ``cluster`` the command
was given (default ``item``: same prompt and unordered pair; docs/methods.md, "Style control under
clustering"), its judgments' clusters read from the same rows as the fit
(:func:`planner.model.style_control.style_cluster_ids`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from planner import sentences
from planner.errors import UsageError
from planner.model.style_control import StyleInputs
from planner.sentences import style_sentence

__all__ = [
    "CoefRow",
    "StyleControlReport",
    "StyleRow",
    "is_anchor_design",
    "lc_rates",
    "style_control_report",
]


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
    low, high, p_best = rg.rank_low, rg.rank_high, rg.p_best
    if low is None or high is None or p_best is None:   # rank_fit draws (Laplace) or has draws (NUTS)
        raise ValueError("the controlled fit's ranking has no rank intervals")
    out = []
    for pos, s in enumerate(rg.order):
        i = systems.index(s)
        out.append(StyleRow(s, raw_order.index(i) + 1, float(raw_fit.mean[i]), float(rlo[i]), float(rhi[i]),
                            pos + 1, float(sf.fit.mean[i]), float(clo[i]), float(chi[i]),
                            int(low[pos]), int(high[pos]), float(p_best[pos])))
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
    from planner.model.style_control import controlled_fit, style_judgment_arrays
    from planner.services.style_data import read_style_inputs

    sf = None
    inp = read_style_inputs(study)
    if control:
        sf = controlled_fit(inp, engine=engine, seed=seed, draws=draws, tune=tune, chains=chains,
                            progressbar=progressbar, cluster=cluster)
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
