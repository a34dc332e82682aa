"""What a forecast starts from: a pilot's data (or stated assumptions), the judge it implies, the source.

:class:`Pilot` is the pilot as arrays (the workflow reads it from a study;
:func:`pilot_from_records` builds it from judgment records). :func:`judge_settings`
says, for each feature of the simulated judge, its value and where it came
from — the pilot's posterior or counts by default, the user's figure when
given. :func:`forecast_source` turns them and the study's design into the
:class:`planner.simulation.forecast.ForecastSource` the simulator draws from.

Without a pilot (:func:`assumed_pilot`) the truth is stated: ``systems``
systems evenly spread over ``spread`` Elo (the simulator's ``linear``
scenario), the judge's tie rate, position shift, invalid rate and ICC as given;
the forecast then counts from zero and its interval holds the judging noise
only.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from planner.counts import Counts
from planner.equality import array_eq
from planner.errors import DataError
from planner.model import bt
from planner.simulation.forecast import ForecastSource, ParameterDraws, design_rho
from planner.simulation.study_pool import PilotVerdicts, PoolDesign, layout, pair_index

__all__ = ["Assumptions", "JudgeOverrides", "Pilot", "Setting", "assumed_params", "assumed_pilot", "forecast_source",
           "judge_settings", "pilot_from_records", "pilot_icc", "posterior_params"]

_CODE = {"A": 0, "B": 1, "tie": 2, "invalid": 3}


@array_eq
@dataclass(frozen=True)
class Pilot:
    """A pilot's data: ``counts`` (pooled; ``a`` shown first), one entry per verdict in ``verdicts``,
    ``prompts`` per pair (:func:`planner.simulation.study_pool.pair_index` order) the study can show it
    on in all, and ``icc`` the pilot's intraclass correlation estimate with its note (None: none)."""

    systems: tuple[str, ...]
    counts: Counts
    verdicts: PilotVerdicts
    prompts: np.ndarray
    icc: float | None = None
    icc_note: str = ""

    @property
    def judgments(self) -> int:
        return int(self.counts.usable.sum() + self.counts.invalid.sum())


def pilot_from_records(systems: tuple[str, ...], records: Sequence[Mapping], prompts: np.ndarray,
                       prompt_codes: Mapping[str, int]) -> Pilot:
    """A :class:`Pilot` from judgment records (``prompt``, ``a``, ``b``, ``verdict``, optional ``a_position``).

    ``a`` is shown first unless ``a_position`` is ``"right"``; ``prompt_codes`` numbers the prompts of the
    study's pool (a prompt outside it fills no slot of the pool); ``prompts`` per pair as in :class:`Pilot`.
    The ICC is the pilot's own (:func:`pilot_icc`).
    """
    six = {s: k for k, s in enumerate(systems)}
    m = len(systems)
    pair_of = {}
    for k, (i, j) in enumerate(zip(*pair_index(m))):
        pair_of[(int(i), int(j))] = k
    left, right, out, pair, prompt, i_left, code = ([] for _ in range(7))
    for r in records:
        a, b = six[r["a"]], six[r["b"]]
        v = _CODE[r["verdict"]]
        if r.get("a_position") == "right":
            a, b, v = b, a, {0: 1, 1: 0}.get(v, v)
        left.append(a)
        right.append(b)
        out.append(v)
        i, j = min(a, b), max(a, b)
        pair.append(pair_of[(i, j)])
        prompt.append(prompt_codes.get(r["prompt"], -1))
        i_left.append(a == i)
        won_left = {0: True, 1: False}.get(v)
        code.append(-1 if v == 3 else 1 if v == 2 else 2 if won_left == (a == i) else 0)
    counts = Counts.from_arrays(systems, left, right, out)
    arr = lambda x, t=np.int64: np.asarray(x, dtype=t)  # noqa: E731
    verdicts = PilotVerdicts(arr(pair), arr(prompt), arr(i_left, bool), arr(code))
    names: dict[str, int] = {}
    by_name = [names.setdefault(r["prompt"], len(names)) for r in records]
    icc, note = pilot_icc(systems, left, right, out, by_name)
    return Pilot(tuple(systems), counts, verdicts, arr(prompts), icc, note)


def pilot_icc(systems, left, right, outcome, prompt) -> tuple[float | None, str]:
    """The pilot's intraclass correlation of verdicts on one (prompt, pair) and how it was read:
    :func:`planner.stats.clusters.verdict_icc` (scores centred within (pair, shown order), one-way
    ANOVA over the clusters), the figure ``size --icc`` takes."""
    from planner.stats.clusters import JudgmentArrays, verdict_icc

    est = verdict_icc(JudgmentArrays.build(systems, left, right, outcome, prompt=prompt))
    if est.icc is None:
        return None, ("not estimable from the pilot (no (prompt, pair) holds two usable verdicts); 0 unless "
                      "--icc is given")
    return float(est.icc), (f"pilot: {est.n_scores:,} verdicts in {est.n_clusters:,} (prompt, pair) clusters "
                            "(one-way ANOVA)" + ("; negative, simulated as 0" if est.icc < 0 else ""))


@dataclass(frozen=True)
class Assumptions:
    """A study stated instead of piloted: ``systems`` evenly over ``spread`` Elo, ``prompts`` per pair."""

    systems: int
    spread: float
    prompts: int


def assumed_pilot(a: Assumptions) -> Pilot:
    """An empty pilot over ``a.systems`` synthetic systems (sys01, sys02, …) with ``a.prompts`` per pair."""
    from planner.simulation.truth import synthetic_names

    names = synthetic_names(a.systems)
    n_pairs = a.systems * (a.systems - 1) // 2
    return Pilot(names, Counts.empty(names), PilotVerdicts.empty(), np.full(n_pairs, a.prompts, dtype=np.int64))


@dataclass(frozen=True)
class JudgeOverrides:
    """The user's figures for the simulated judge (None: from the pilot; without a pilot: 0)."""

    tie_rate: float | None = None       # P(tie) between equal systems
    position: float | None = None       # left-position logit shift
    invalid_rate: float | None = None
    icc: float | None = None


@dataclass(frozen=True)
class Setting:
    """One feature of the simulated judge: its value as shown, the value used, and where it came from."""

    name: str
    shown: str
    source: str
    value: float | None = None      # the number used (tie rate, γ, invalid rate, ICC), None for the strengths


def posterior_params(pilot: Pilot, engine: str = "laplace", seed: int = 0) -> ParameterDraws:
    """The joint posterior of ``(beta, gamma, log_nu)`` on the pilot: the Laplace Gaussian, or NUTS draws."""
    if engine == "laplace":
        from planner.model.laplace import joint_laplace

        mean, cov = joint_laplace(pilot.counts)
        return ParameterDraws(mean, cov)
    from planner.model import fit

    f = fit(pilot.counts, engine="nuts", seed=seed)
    post = f.idata.posterior
    g = np.asarray(post["gamma"]).reshape(-1)
    ln = np.asarray(post["log_nu"]).reshape(-1)
    draws = np.column_stack([f.beta_draws, g, ln])
    return ParameterDraws(draws.mean(axis=0), None, draws)


def judge_settings(pilot: Pilot, params: ParameterDraws, over: JudgeOverrides,
                   assumed: bool = False) -> tuple[Setting, ...]:
    """Each feature of the simulated judge with the value used and its source (see the module docstring)."""
    m = len(pilot.systems)
    n = pilot.judgments
    cov, draws = params.cov, params.draws

    def sd(k: int) -> float:  # fixed parameters (neither a covariance nor draws) have none
        if cov is not None:
            return math.sqrt(cov[k, k])
        return float(draws[:, k].std()) if draws is not None else 0.0

    rows = []
    if assumed:
        rows.append(Setting("strengths", f"{m} systems evenly over the spread", "stated (--systems, --spread)"))
    else:
        how = "Laplace Gaussian" if params.draws is None else f"{params.draws.shape[0]:,} NUTS draws"
        rows.append(Setting("strengths", f"{m} systems", f"pilot posterior ({how}, {n:,} judgments), drawn "
                                                          "per repetition jointly with γ and ν"))
    if over.tie_rate is not None or assumed:
        t = over.tie_rate or 0.0
        rows.append(Setting("tie rate", f"{t:.1%} between equal systems", "given (--tie-rate)" if over.tie_rate
                            is not None else "stated (default 0)", t))
    else:
        nu = math.exp(params.mean[m + 1])
        rows.append(Setting("tie rate", f"{nu / (2 + nu):.1%} between equal systems (ν = {nu:.2f}, log ν ± "
                            f"{sd(m + 1):.2f})", "pilot posterior, drawn per repetition", nu / (2 + nu)))
    if over.position is not None or assumed:
        g = over.position or 0.0
        rows.append(Setting("position", f"γ = {g:+.2f} logit (first shown wins {_first(g):.0%})",
                            "given (--position)" if over.position is not None else "stated (default 0)", g))
    else:
        g = float(params.mean[m])
        rows.append(Setting("position", f"γ = {g:+.2f} ± {sd(m):.2f} logit (first shown wins {_first(g):.0%} "
                            "between equal systems)", "pilot posterior, drawn per repetition", g))
    rows.append(_invalid_setting(pilot, over, assumed))
    rows.append(_icc_setting(pilot, over, assumed))
    return tuple(rows)


def _first(gamma: float) -> float:
    """Share of decisive verdicts won by the first-shown of two equal systems."""
    return 1.0 / (1.0 + math.exp(-gamma))


def _invalid_setting(pilot: Pilot, over: JudgeOverrides, assumed: bool) -> Setting:
    if over.invalid_rate is not None or assumed:
        r = over.invalid_rate or 0.0
        return Setting("invalid", f"{r:.1%}", "given (--invalid-rate)" if over.invalid_rate is not None
                       else "stated (default 0)", r)
    bad, n = int(pilot.counts.invalid.sum()), pilot.judgments
    return Setting("invalid", f"{bad:,} of {n:,} ({bad / n:.1%})" if n else "none",
                   "pilot, drawn per repetition from Beta(k + ½, n − k + ½)", bad / n if n else 0.0)


def _icc_setting(pilot: Pilot, over: JudgeOverrides, assumed: bool) -> Setting:
    if over.icc is not None:
        return Setting("ICC", f"{over.icc:.3f}", "given (--icc)", over.icc)
    if assumed or pilot.icc is None:
        return Setting("ICC", "0", pilot.icc_note or "stated (default 0)", 0.0)
    return Setting("ICC", f"{pilot.icc:.3f}", pilot.icc_note or "pilot estimate", pilot.icc)


def _icc_used(pilot: Pilot, over: JudgeOverrides) -> float:
    icc = over.icc if over.icc is not None else (pilot.icc or 0.0)
    return max(float(icc), 0.0)


def forecast_source(pilot: Pilot, params: ParameterDraws, over: JudgeOverrides, design: PoolDesign,
                    budget: int) -> ForecastSource:
    """The :class:`ForecastSource` of ``pilot`` under ``design``, at most ``budget`` more comparisons."""
    if design.prompts.size != len(pilot.systems) * (len(pilot.systems) - 1) // 2:
        raise DataError("the design's prompts per pair do not match the pilot's systems")
    m = len(pilot.systems)
    nu = (2 * over.tie_rate / (1 - over.tie_rate) if over.tie_rate is not None else None)
    gamma = over.position
    mean = params.mean
    rho = design_rho(_icc_used(pilot, over), mean[:m], mean[m] if gamma is None else gamma,
                     math.exp(mean[m + 1]) if nu is None else nu, design)
    invalid: float | tuple[int, int]
    if over.invalid_rate is not None or pilot.judgments == 0:
        invalid = float(over.invalid_rate or 0.0)
    else:
        invalid = (int(pilot.counts.invalid.sum()), int(pilot.counts.usable.sum()))
    return ForecastSource(params, layout(design, pilot.verdicts), pilot.verdicts, pilot.counts, int(budget),
                          rho, invalid, nu, gamma)


def assumed_params(a: Assumptions, over: JudgeOverrides) -> ParameterDraws:
    """Fixed parameters of a stated study: the ``linear`` strengths, γ and log ν from the overrides."""
    elo = np.linspace(a.spread / 2, -a.spread / 2, a.systems)
    t = over.tie_rate or 0.0
    log_nu = math.log(2 * t / (1 - t)) if t > 0 else -50.0   # ν = e^-50: no ties
    return ParameterDraws(np.concatenate([elo / bt.ELO_SCALE, [over.position or 0.0, log_nu]]))
