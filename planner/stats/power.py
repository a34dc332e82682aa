"""Power analysis for pairwise win-rate studies (``planner size`` / ``significance``).

Conventions
-----------
* ``effect`` ``d`` is an absolute win-rate difference from 50% among *decisive*
  judgments (0 < d < 0.5): ``d = 0.04`` means the better system wins 54% of the
  judgments that are not ties.
* A *comparison* is one judged (prompt, system pair); a *judgment* is one verdict.
  ``comparisons_*`` count what the test itself needs (decisive comparisons under
  ``ties='drop'``; all judged comparisons including ties under ``ties='half'``);
  ``judgments`` is what to collect after ties, invalid verdicts, both orders,
  clustering on prompts and the number of system pairs.
* The test is of H0: win rate = 0.5 (two-sided or ``greater``).

The design (what turns test units into judgments) is :class:`planner.stats.design.Design`;
group-sequential boundaries are in :mod:`planner.stats.sequential`, the observed
result's test in :mod:`planner.stats.significance`, pass-rate precision in
:mod:`planner.stats.pass_rate` and the plot in :mod:`planner.formats.power_plot`.
Formulas and references are in ``docs/methods.md`` (section "Power analysis").
Only numpy and scipy.special (through :mod:`planner.stats.distributions`) are imported.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace

import numpy as np

from planner import limits
from planner.errors import UsageError
from planner.stats.conventions import BOUNDARIES, z_alpha
from planner.stats.design import Design, check_effect
from planner.stats.distributions import binom, norm  # scipy.stats' values without importing scipy.stats
from planner.stats.sequential import SequentialDesign, sequential_design

TABLE_EFFECTS = (0.02, 0.03, 0.04, 0.05, 0.06, 0.08, 0.10, 0.15, 0.20)


# --------------------------------------------------------------------------- #
# Normal approximation
# --------------------------------------------------------------------------- #


def sigmas(d: float, design: Design) -> tuple[float, float, float]:
    """(sd under H0, sd under H1, shift of the mean) of one test unit's score.

    drop: the unit is a decisive judgment, score 1/0: sd0 = 1/2, sd1 = sqrt(p(1-p)),
    shift = d.  half: the unit is any judgment, score 1/0.5/0 with probabilities
    (1-t)p, t, (1-t)(1-p): mean 0.5 + (1-t)d, variance (1-t)/4 - (1-t)^2 d^2
    (derivation in docs/methods.md), so sd0 = sqrt((1-t)/4).
    """
    if design.ties == "half":
        t = design.tie_rate
        var1 = (1 - t) / 4 - (1 - t) ** 2 * d * d
        return math.sqrt((1 - t) / 4), math.sqrt(max(var1, 0.0)), (1 - t) * d
    return 0.5, math.sqrt((0.5 + d) * (0.5 - d)), d


def n_normal(d: float, design: Design) -> float:
    """Continuous normal-approximation sample size (test units, one pair).

    ``n = ((z_{1-a'} sd0 + z_{power} sd1) / shift)^2`` with ``a' = alpha_per_pair/2``
    (two-sided) or ``alpha_per_pair`` (greater); for drop this is
    ``((z 0.5 + z_b sqrt(p(1-p))) / d)^2`` (Chow, Shao & Wang 2008, §4.1).
    """
    sd0, sd1, shift = sigmas(d, design)
    za = z_alpha(design.alpha_per_pair, design.alternative)
    zb = float(norm.ppf(design.power))
    return ((za * sd0 + zb * sd1) / shift) ** 2


def power_normal(d: float, n: float | np.ndarray, design: Design) -> np.ndarray | float:
    """Normal-approximation power at ``n`` test units (both tails when two-sided)."""
    sd0, sd1, shift = sigmas(d, design)
    za = z_alpha(design.alpha_per_pair, design.alternative)
    n = np.asarray(n, dtype=float)
    root = np.sqrt(n)
    pw = norm.cdf((shift * root - za * sd0) / sd1)
    if design.alternative == "two-sided":
        pw = pw + norm.cdf((-shift * root - za * sd0) / sd1)
    return pw if pw.ndim else float(pw)


# --------------------------------------------------------------------------- #
# Exact binomial (sign) test
# --------------------------------------------------------------------------- #


def critical_wins(n: np.ndarray | int, alpha: float, alternative: str) -> np.ndarray:
    """Smallest number of wins ``k_u(n)`` at which the exact test at p0 = 1/2 rejects.

    Rejects when ``P(X >= k) <= alpha/2`` (two-sided; the two-sided p-value of
    :func:`scipy.stats.binomtest` at p0 = 1/2 is twice the smaller tail, and the
    lower region is ``X <= n - k_u``) or ``<= alpha`` (greater). ``k_u = n + 1``
    when no outcome rejects.
    """
    n = np.atleast_1d(np.asarray(n, dtype=np.int64))
    a = alpha / 2 if alternative == "two-sided" else alpha
    k = binom.ppf(1 - a, n, 0.5).astype(np.int64) + 1
    # Guard the discrete boundary against rounding in cdf/ppf: step k until sf(k-1) <= a.
    rel = 1 + 1e-10
    for _ in range(3):
        too_low = binom.sf(k - 1, n, 0.5) > a * rel
        k = np.where(too_low, k + 1, k)
        can_lower = (k > 0) & (binom.sf(k - 2, n, 0.5) <= a * rel)
        k = np.where(can_lower, k - 1, k)
    return np.minimum(k, n + 1)


def power_exact_decisive(d: float, n: np.ndarray | int, alpha: float, alternative: str) -> np.ndarray:
    """Exact power of the binomial (sign) test at ``n`` decisive comparisons, win rate ``0.5+d``."""
    n = np.atleast_1d(np.asarray(n, dtype=np.int64))
    k = critical_wins(n, alpha, alternative)
    p = 0.5 + d
    pw = binom.sf(k - 1, n, p)
    if alternative == "two-sided":
        # lower region X <= n - k_u, empty when k_u > n
        pw = pw + np.where(n - k >= 0, binom.cdf(n - k, n, p), 0.0)
    return pw


def power_exact(d: float, n: np.ndarray | int, design: Design) -> np.ndarray:
    """Exact power at ``n`` test units for the design's tie convention.

    drop: the sign test on ``n`` decisive comparisons.  half: ``n`` judged
    comparisons of which a Binomial(n, t) number are ties; conditional on the
    number of ties the exact test of the half-tie score against 1/2 is the sign
    test on the decisive ones (score - n/2 = (wins - losses)/2), so the power is
    the Binomial(n, t) mixture of sign-test powers.
    """
    n = np.atleast_1d(np.asarray(n, dtype=np.int64))
    if design.ties == "drop" or design.tie_rate == 0:
        return power_exact_decisive(d, n, design.alpha_per_pair, design.alternative)
    t = design.tie_rate
    nmax = int(n.max())
    table = power_exact_decisive(d, np.arange(nmax + 1), design.alpha_per_pair, design.alternative)
    # decisive count D ~ Binomial(N, 1-t); sum over mean +- 8 sd (the rest is < 1e-14)
    out = np.empty(n.shape, dtype=float)
    for start in range(0, n.size, 256):
        chunk = n[start:start + 256]
        half_width = int(8 * math.sqrt(int(chunk.max()) * t * (1 - t))) + 3
        offsets = np.arange(-half_width, half_width + 1)
        centre = np.round(chunk * (1 - t)).astype(np.int64)
        dec = centre[:, None] + offsets[None, :]
        valid = (dec >= 0) & (dec <= chunk[:, None])
        dec_c = np.clip(dec, 0, chunk[:, None])
        w = np.where(valid, binom.pmf(dec_c, chunk[:, None], 1 - t), 0.0)
        out[start:start + 256] = (w * table[dec_c]).sum(axis=1)
    return out


@dataclass(frozen=True)
class ExactSize:
    """Exact-test sample size for one pair, in test units.

    Attributes
    ----------
    n : int
        Headline: smallest n such that every n' >= n reaches the target power
        (exact power is saw-toothed in n, so this is the only n that cannot be
        undone by collecting a few more).
    n_first : int
        Plain smallest n whose exact power reaches the target (may be followed by
        larger n that fall short).
    power : float
        Exact power at ``n``.
    """

    n: int
    n_first: int
    power: float


def n_exact(d: float, design: Design, _lo: int | None = None) -> ExactSize:
    """Exact binomial sample size; see :class:`ExactSize` for the saw-tooth rule."""
    target = design.power
    guess = n_normal(d, design)
    lo = 1
    hi = int(math.ceil(1.6 * guess + 60))
    if _lo is None and design.ties == "half" and design.tie_rate > 0:
        # the tie-count mixture smooths the saw-tooth: a narrow window suffices; below
        # 0.85 n_normal the power is well under target (checked: else restart from 1)
        lo = max(1, int(0.85 * guess) - 20)
        hi = int(math.ceil(1.35 * guess + 60))
    while True:
        ns = np.arange(lo, hi + 1)
        pw = power_exact(d, ns, design)
        ok = pw >= target
        # the tail of the window must be solidly above target before we trust it
        if ok[-max(10, len(ns) // 5):].all():
            break
        hi = 2 * hi
        if hi > 4 * limits.MAX_EXACT_N:  # the normal guess was far off: stop before minutes of work
            raise UsageError(f"`effect` ({d:g}) needs more than {limits.MAX_EXACT_N:,} comparisons per pair "
                             "under the exact test; planner computes exact sizes up to that", parameters=('effect',))
    if not ok.any():  # pragma: no cover - guarded by the loop above
        raise UsageError("could not find an exact sample size", parameters=())
    bad = np.flatnonzero(~ok)
    if lo > 1 and ok[0]:  # window started too high to see the first n: search from 1
        return n_exact(d, design, _lo=1)
    first = int(ns[np.flatnonzero(ok)[0]])
    n = int(ns[bad[-1] + 1]) if bad.size else int(ns[0])
    return ExactSize(n=n, n_first=first, power=float(pw[n - lo]))


# --------------------------------------------------------------------------- #
# Results
# --------------------------------------------------------------------------- #


@dataclass(frozen=True)
class SizeResult:
    """Sample size for detecting ``effect`` (one row of the effect table).

    Attributes
    ----------
    effect, win_rate : float
        ``d`` and ``0.5 + d`` (among decisive judgments).
    alpha, power : float
        Family-wise level and target power; ``alpha_per_pair`` is the
        Bonferroni/Holm-first-step level each pair is sized at.
    alternative, ties : str
    tie_rate, invalid_rate : float
    comparisons_normal, comparisons_exact : int
        Test units per pair (decisive comparisons for ``drop``; judged
        comparisons including ties for ``half``), normal approximation and exact
        test (headline rule, see :class:`ExactSize`).
    comparisons_exact_first : int
        Plain smallest n whose exact power reaches the target.
    achieved_power_normal, achieved_power_exact : float
        Power at ``comparisons_normal`` (normal approx.) and exact power at
        ``comparisons_exact``; ``exact_power_at_normal_n`` is the exact power
        at the normal-approximation n.
    judgments_per_pair : int
        Judgments to collect for one pair (after ties, invalid, design effect,
        rounded up to an even number with both orders).
    comparisons_per_pair : int
        Comparisons shown per pair (= judgments_per_pair/2 with both orders).
    judgments : int
        Total judgments to collect over all pairs (headline, exact).
    judgments_normal : int
        The same from the normal-approximation n.
    pairs : int
    design_effect : float
    """

    effect: float
    win_rate: float
    alpha: float
    power: float
    alternative: str
    ties: str
    tie_rate: float
    invalid_rate: float
    both_orders: bool
    per_prompt: int
    icc: float
    systems: int
    design: str
    pairs: int
    alpha_per_pair: float
    design_effect: float
    comparisons_normal: int
    comparisons_exact: int
    comparisons_exact_first: int
    achieved_power_normal: float
    achieved_power_exact: float
    exact_power_at_normal_n: float
    judgments_per_pair: int
    comparisons_per_pair: int
    judgments: int
    judgments_normal: int
    mde: float | None = None
    mde_normal: float | None = None
    budget: int | None = None
    power_at: int | None = None
    power_at_normal: float | None = None
    power_at_exact: float | None = None
    sequential: SequentialDesign | None = None
    rows: tuple[SizeResult, ...] = field(default=())

    def to_dict(self) -> dict:
        from dataclasses import fields

        d = {f.name: getattr(self, f.name) for f in fields(self)}
        for key in ("mde", "mde_normal", "budget", "power_at", "power_at_normal", "power_at_exact",
                    "sequential"):
            if d[key] is None:
                del d[key]
        if not self.rows:
            del d["rows"]
        d["convention"] = convention_text(self)
        return d


def convention_text(r: SizeResult) -> str:
    """One phrase saying what the comparison counts assume."""
    if r.ties == "drop":
        return (f"ties dropped: counts are decisive comparisons; judgments include a "
                f"{r.tie_rate:.0%} tie rate")
    return (f"ties count half: counts are judged comparisons including a {r.tie_rate:.0%} tie rate "
            f"(half-tie score shift {(1 - r.tie_rate) * r.effect:.4f})")


def size(effect: float | None, design: Design = Design(), *, budget: int | None = None,  # noqa: B008 - frozen
         power_at: int | None = None, table: bool = False,
         looks: int = 1, boundary: str = "obrien-fleming") -> SizeResult:
    """Comparisons and judgments needed to detect ``effect`` (see module conventions).

    Parameters
    ----------
    effect : float or None
        Absolute win-rate difference from 0.5 among decisive judgments, (0, 0.5).
        ``None`` with ``budget``: size the study at the budget's exact MDE.
    design : Design
    budget : int, optional
        Total judgments available: also report the minimum detectable effect
        (``mde``, exact test under the headline saw-tooth-proof n rule, see
        :func:`mde_exact_headline`; ``mde_normal``, normal approximation).
    power_at : int, optional
        Total judgments: also report the power achieved for ``effect``.
    table : bool
        Also compute :data:`TABLE_EFFECTS` rows (``rows``).
    looks : int
        Number of equally spaced analyses (group-sequential, see
        :func:`sequential_design`); 1 = a single analysis.
    boundary : {'obrien-fleming', 'pocock'}

    Returns
    -------
    SizeResult
    """
    design = design.validated()
    limits.check_optional_int("budget", budget, 1, limits.MAX_JUDGMENTS)
    limits.check_optional_int("power_at", power_at, 1, limits.MAX_JUDGMENTS)
    limits.check_int("looks", looks, 1, limits.MAX_LOOKS)
    if effect is None:
        if budget is None:
            raise UsageError("give `effect`, `win_rate` or `budget` (or `pass_rate` with `precision`)",
                             parameters=('effect', 'win_rate', 'budget', 'pass_rate', 'precision'))
        effect = _mde(design, budget)["mde"]
    check_effect(effect)
    if looks < 1:
        raise UsageError(f"`looks` ({looks}) must be an integer >= 1", parameters=('looks',))
    limits.check_choice("boundary", boundary, BOUNDARIES)
    res = _size_row(effect, design)
    extra: dict = {}
    if budget is not None:
        extra.update(_mde(design, budget))
    if power_at is not None:
        if power_at < 1:
            raise UsageError(f"`power_at` ({power_at}) must be an integer >= 1", parameters=('power_at',))
        n_t = design.n_test_for_budget(power_at)
        extra.update(power_at=power_at,
                     power_at_normal=float(power_normal(effect, n_t, design)) if n_t else 0.0,
                     power_at_exact=float(power_exact(effect, n_t, design)[0]) if n_t else 0.0)
    if looks > 1:
        extra["sequential"] = sequential_design(looks, design.alpha_per_pair, design.power,
                                                boundary, design.alternative,
                                                n_fixed=res.judgments_per_pair)
    if table:
        extra["rows"] = tuple(_size_row(d, design) for d in TABLE_EFFECTS)
    return replace(res, **extra)


def _size_row(effect: float, design: Design) -> SizeResult:
    try:
        nn = n_normal(effect, design)
    except (OverflowError, ZeroDivisionError):  # an effect like 1e-300
        nn = math.inf
    limits.check_exact_n("effect", effect, nn)
    n_norm = int(math.ceil(nn - 1e-9))
    ex = n_exact(effect, design)
    per_pair, shown, total = design.judgments(ex.n)
    _, _, total_normal = design.judgments(n_norm)
    return SizeResult(
        effect=effect, win_rate=0.5 + effect, alpha=design.alpha, power=design.power,
        alternative=design.alternative, ties=design.ties, tie_rate=design.tie_rate,
        invalid_rate=design.invalid_rate, both_orders=design.both_orders,
        per_prompt=design.per_prompt, icc=design.icc, systems=design.systems,
        design=design.design, pairs=design.pairs, alpha_per_pair=design.alpha_per_pair,
        design_effect=design.design_effect,
        comparisons_normal=n_norm, comparisons_exact=ex.n, comparisons_exact_first=ex.n_first,
        achieved_power_normal=float(power_normal(effect, n_norm, design)),
        achieved_power_exact=ex.power,
        exact_power_at_normal_n=float(power_exact(effect, n_norm, design)[0]),
        judgments_per_pair=per_pair, comparisons_per_pair=shown, judgments=total,
        judgments_normal=total_normal,
    )


def mde_normal(n: float, design: Design) -> float:
    """Effect at which the continuous normal sample size equals ``n`` test units."""
    from planner.stats.optim import brentq  # scipy.optimize.brentq step for step, without its import

    lo, hi = 1e-9, 0.5 - 1e-9
    f = lambda d: n_normal(d, design) - n  # noqa: E731 - decreasing in d
    if f(hi) > 0:
        return math.nan
    return float(brentq(f, lo, hi, xtol=1e-12))


def mde_exact(n: int, design: Design) -> float:
    """Smallest effect whose exact power at ``n`` test units reaches the target.

    For fixed n the rejection region is fixed and the power increases with the
    win rate, so the root is unique.
    """
    from planner.stats.optim import brentq  # scipy.optimize.brentq step for step, without its import

    g = lambda d: float(power_exact(d, n, design)[0]) - design.power  # noqa: E731
    hi = 0.5 - 1e-12
    if g(hi) < 0:
        return math.nan
    return float(brentq(g, 1e-12, hi, xtol=1e-12))


def mde_exact_headline(n: int, design: Design) -> float:
    """Smallest effect whose headline exact size (:class:`ExactSize` ``.n``) is at most ``n``.

    The headline size is saw-tooth-proof (every larger n also reaches the
    power), so it can exceed the plain :func:`mde_exact` point: at 200
    comparisons the exact power reaches 0.8 at d = 0.1016, but that d needs 206
    under the headline rule because some n in 201..205 falls short. Reporting
    this effect keeps ``size --budget`` consistent with its own table. The
    headline size is non-increasing in d (power at each n increases with d),
    so bisection on ``[mde_exact(n), 0.5)`` finds it.
    """
    lo = mde_exact(n, design)
    if not math.isfinite(lo):
        return math.nan
    if n_exact(lo, design).n <= n:
        return lo
    hi = 0.5 - 1e-9
    if n_exact(hi, design).n > n:
        return math.nan
    while hi - lo > 1e-6:
        mid = 0.5 * (lo + hi)
        if n_exact(mid, design).n <= n:
            hi = mid
        else:
            lo = mid
    return float(hi)


def _mde(design: Design, budget: int) -> dict:
    if budget < 1:
        raise UsageError(f"`budget` ({budget}) must be an integer >= 1", parameters=('budget',))
    n_t = design.n_test_for_budget(budget)
    if n_t > limits.MAX_EXACT_N:
        raise UsageError(f"`budget` ({budget:,}) leaves {n_t:,} comparisons per pair; planner computes the exact "
                         f"minimum detectable effect up to {limits.MAX_EXACT_N:,} per pair", parameters=('budget',))
    mn = mde_normal(n_t, design) if n_t >= 1 else math.nan
    me = mde_exact_headline(n_t, design) if n_t >= 1 else math.nan
    if not (math.isfinite(me) and math.isfinite(mn)):
        raise UsageError(
            f"`budget` ({budget}) is too small to detect any effect < 0.5 at alpha {design.alpha:g} "
            f"with power {design.power:g}; it leaves {n_t} comparisons per pair", parameters=('budget',))
    return dict(budget=budget, mde=me, mde_normal=mn)
