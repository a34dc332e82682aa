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

Formulas and references are in ``docs/methods.md`` (section "Power analysis").
Only numpy and scipy.special (through :mod:`planner.stats.distributions`) are imported
at module level; ``scipy.stats`` only inside :func:`significance` (binomtest) and
matplotlib inside :func:`plot_power`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace

import numpy as np

from planner import limits
from planner.stats.distributions import binom, norm  # scipy.stats' values without importing scipy.stats (issue 13)
from planner.errors import UsageError, check_range
from planner.stats.proportions import wilson_half_width, wilson_interval

ALTERNATIVES = ("two-sided", "greater")
TIE_CONVENTIONS = ("drop", "half")
DESIGNS = ("anchor", "round-robin")
BOUNDARIES = ("obrien-fleming", "pocock")
TABLE_EFFECTS = (0.02, 0.03, 0.04, 0.05, 0.06, 0.08, 0.10, 0.15, 0.20)


# --------------------------------------------------------------------------- #
# Design: everything between "decisive comparisons the test needs" and
# "judgments to collect".
# --------------------------------------------------------------------------- #


@dataclass(frozen=True)
class Design:
    """How judgments are collected; turns test sample sizes into judgments.

    Parameters
    ----------
    alpha : float
        Family-wise significance level (two-sided total when ``alternative`` is
        two-sided), in (0, 1).
    power : float
        Target power per comparison, in (0, 1).
    alternative : {'two-sided', 'greater'}
    tie_rate : float
        Share of judgments that are ties, in [0, 1).
    ties : {'drop', 'half'}
        ``drop``: ties are discarded and the test runs on decisive judgments;
        ``half``: a tie scores 0.5 (half-tie score).
    invalid_rate : float
        Share of unusable judgments (judge failures), in [0, 1); inflates by
        ``1/(1-R)``.
    both_orders : bool
        Each comparison judged twice, positions swapped (judgments assumed
        independent; use ``per_prompt``/``icc`` if they are not).
    per_prompt : int
        ``K`` judgments share a prompt (K >= 1).
    icc : float
        Intra-prompt correlation ``rho`` in [0, 1]; design effect ``1+(K-1)rho``.
    systems : int
        Number of systems ``M >= 2``.
    design : {'anchor', 'round-robin'}
        ``anchor``: M-1 candidates each against one anchor; ``round-robin``:
        all M(M-1)/2 pairs.
    """

    alpha: float = 0.05
    power: float = 0.8
    alternative: str = "two-sided"
    tie_rate: float = 0.0
    ties: str = "drop"
    invalid_rate: float = 0.0
    both_orders: bool = False
    per_prompt: int = 1
    icc: float = 0.0
    systems: int = 2
    design: str = "anchor"

    def validated(self) -> "Design":
        check_range("--alpha", self.alpha, 0, 1)
        check_range("--power", self.power, 0, 1)
        _choice("--alternative", self.alternative, ALTERNATIVES)
        _choice("--ties", self.ties, TIE_CONVENTIONS)
        _choice("--design", self.design, DESIGNS)
        check_range("--tie-rate", self.tie_rate, 0, 1, low_open=False)
        check_range("--invalid-rate", self.invalid_rate, 0, 1, low_open=False)
        limits.check_int("--per-prompt", self.per_prompt, 1, limits.MAX_PER_PROMPT)
        check_range("--icc", self.icc, 0, 1, low_open=False, high_open=False)
        limits.check_int("--systems", self.systems, 2, limits.MAX_SYSTEMS)
        if self.alpha_per_pair < limits.MIN_ALPHA_PER_PAIR:
            raise UsageError(f"--alpha ({self.alpha:g}) gives {self.alpha_per_pair:.3g} per pair, below "
                             f"{limits.MIN_ALPHA_PER_PAIR:g}, where the exact test's tail cannot be "
                             "computed in double precision")
        return self

    @property
    def pairs(self) -> int:
        """Number of pairwise comparisons (hypotheses) in the family."""
        m = self.systems
        return m - 1 if self.design == "anchor" else m * (m - 1) // 2

    @property
    def alpha_per_pair(self) -> float:
        """Bonferroni level ``alpha/m``: the level of Holm's first (strictest) step.

        Sizing every comparison at ``alpha/m`` guarantees the per-comparison power
        under Holm–Bonferroni (Holm 1979), which is never less powerful than
        Bonferroni.
        """
        return self.alpha / self.pairs

    @property
    def design_effect(self) -> float:
        """Kish design effect ``1 + (K-1) rho``."""
        return 1.0 + (self.per_prompt - 1) * self.icc

    @property
    def judgments_per_test_unit(self) -> float:
        """Judgments to collect per comparison the test needs (one pair)."""
        f = 1.0 / (1.0 - self.invalid_rate) * self.design_effect
        if self.ties == "drop":
            f /= 1.0 - self.tie_rate
        return f

    def judgments(self, n_test: int) -> tuple[int, int, int]:
        """(judgments per pair, comparisons shown per pair, total judgments)."""
        per_pair = math.ceil(n_test * self.judgments_per_test_unit - 1e-9)
        if self.both_orders:
            per_pair += per_pair % 2
            shown = per_pair // 2
        else:
            shown = per_pair
        return per_pair, shown, per_pair * self.pairs

    def n_test_for_budget(self, budget: float) -> int:
        """Comparisons available to one pair's test out of ``budget`` judgments."""
        return int(math.floor(budget / self.pairs / self.judgments_per_test_unit + 1e-9))


def _choice(name: str, value: str, allowed: tuple[str, ...]) -> str:
    if value not in allowed:
        raise UsageError(f"{name} ({limits.quote(value)}) must be one of {', '.join(allowed)}")
    return value


def _check_effect(d: float) -> float:
    return check_range("--effect", d, 0, 0.5)


def effect_from_win_rate(p: float) -> float:
    """Effect ``d = p - 0.5`` for a win rate ``p`` in (0.5, 1)."""
    check_range("--win-rate", p, 0.5, 1)
    return p - 0.5


# --------------------------------------------------------------------------- #
# Normal approximation
# --------------------------------------------------------------------------- #


def _z_alpha(alpha: float, alternative: str) -> float:
    return float(norm.isf(alpha / 2 if alternative == "two-sided" else alpha))


def _sigmas(d: float, design: Design) -> tuple[float, float, float]:
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
    sd0, sd1, shift = _sigmas(d, design)
    za = _z_alpha(design.alpha_per_pair, design.alternative)
    zb = float(norm.ppf(design.power))
    return ((za * sd0 + zb * sd1) / shift) ** 2


def power_normal(d: float, n: float | np.ndarray, design: Design) -> np.ndarray | float:
    """Normal-approximation power at ``n`` test units (both tails when two-sided)."""
    sd0, sd1, shift = _sigmas(d, design)
    za = _z_alpha(design.alpha_per_pair, design.alternative)
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
            raise UsageError(f"--effect ({d:g}) needs more than {limits.MAX_EXACT_N:,} comparisons per pair "
                             "under the exact test; planner computes exact sizes up to that")
    if not ok.any():  # pragma: no cover - guarded by the loop above
        raise UsageError("could not find an exact sample size")
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
    sequential: "SequentialDesign | None" = None
    rows: tuple["SizeResult", ...] = field(default=())

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


def convention_text(r: "SizeResult") -> str:
    """One phrase saying what the comparison counts assume."""
    if r.ties == "drop":
        return (f"ties dropped: counts are decisive comparisons; judgments include a "
                f"{r.tie_rate:.0%} tie rate")
    return (f"ties count half: counts are judged comparisons including a {r.tie_rate:.0%} tie rate "
            f"(half-tie score shift {(1 - r.tie_rate) * r.effect:.4f})")


def size(effect: float | None, design: Design = Design(), *, budget: int | None = None,
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
    limits.check_optional_int("--budget", budget, 1, limits.MAX_JUDGMENTS)
    limits.check_optional_int("--power-at", power_at, 1, limits.MAX_JUDGMENTS)
    limits.check_int("--looks", looks, 1, limits.MAX_LOOKS)
    if effect is None:
        if budget is None:
            raise UsageError("give --effect, --win-rate or --budget (or --pass-rate with --precision)")
        effect = _mde(design, budget)["mde"]
    _check_effect(effect)
    if looks < 1:
        raise UsageError(f"--looks ({looks}) must be an integer >= 1")
    _choice("--boundary", boundary, BOUNDARIES)
    res = _size_row(effect, design)
    extra: dict = {}
    if budget is not None:
        extra.update(_mde(design, budget))
    if power_at is not None:
        if power_at < 1:
            raise UsageError(f"--power-at ({power_at}) must be an integer >= 1")
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
    limits.check_exact_n("--effect", effect, nn)
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
        raise UsageError(f"--budget ({budget}) must be an integer >= 1")
    n_t = design.n_test_for_budget(budget)
    if n_t > limits.MAX_EXACT_N:
        raise UsageError(f"--budget ({budget:,}) leaves {n_t:,} comparisons per pair; planner computes the exact "
                         f"minimum detectable effect up to {limits.MAX_EXACT_N:,} per pair")
    mn = mde_normal(n_t, design) if n_t >= 1 else math.nan
    me = mde_exact_headline(n_t, design) if n_t >= 1 else math.nan
    if not (math.isfinite(me) and math.isfinite(mn)):
        raise UsageError(
            f"--budget ({budget}) is too small to detect any effect < 0.5 at alpha {design.alpha:g} "
            f"with power {design.power:g}; it leaves {n_t} comparisons per pair")
    return dict(budget=budget, mde=me, mde_normal=mn)


# --------------------------------------------------------------------------- #
# Group-sequential boundaries (classical Pocock / O'Brien–Fleming shapes)
# --------------------------------------------------------------------------- #


@dataclass(frozen=True)
class SequentialDesign:
    """Group-sequential test with ``looks`` equally spaced analyses.

    Classical constant-shape boundaries (not alpha-spending approximations):
    Pocock (1977) ``c_k = C_P``; O'Brien & Fleming (1979) ``c_k = C_B sqrt(K/k)``,
    with the constant solved numerically so the overall type I error is
    ``alpha`` (Jennison & Turnbull 2000, Tables 2.1 and 2.3).

    Attributes
    ----------
    looks : int
    boundary : str
    alpha : float
        Overall level of the sequential test (per pair).
    alternative : str
    constant : float
        ``C_P`` or ``C_B``.
    z_boundaries : tuple of float
        Critical |z| at looks 1..K.
    nominal_alpha : tuple of float
        Nominal p-value thresholds at each look (two-sided when two-sided).
    alpha_spent : tuple of float
        Cumulative type I error spent by look k.
    inflation : float
        Maximum sample size over the fixed-sample size for the same power
        (``R_P`` / ``R_B`` in Jennison & Turnbull Tables 2.2 and 2.4).
    n_fixed, n_max, n_per_look : int or None
        Judgments per pair: single analysis, maximum over K looks, per look.
    """

    looks: int
    boundary: str
    alpha: float
    power: float
    alternative: str
    constant: float
    z_boundaries: tuple[float, ...]
    nominal_alpha: tuple[float, ...]
    alpha_spent: tuple[float, ...]
    inflation: float
    n_fixed: int | None = None
    n_max: int | None = None
    n_per_look: int | None = None


def _shape(looks: int, boundary: str) -> np.ndarray:
    k = np.arange(1, looks + 1)
    return np.ones(looks) if boundary == "pocock" else np.sqrt(looks / k)


def _simpson(lo: float, hi: float, grid: int) -> tuple[np.ndarray, np.ndarray]:
    x = np.linspace(lo, hi, grid)
    w = np.ones(grid)
    w[1:-1:2] = 4
    w[2:-1:2] = 2
    return x, w * (x[1] - x[0]) / 3


def crossing_probabilities(z: np.ndarray, drift: float, two_sided: bool,
                           grid: int = 301) -> tuple[np.ndarray, np.ndarray]:
    """Probabilities of first crossing the upper and the lower boundary at each look.

    Equally spaced information. Recursive numerical integration (Armitage,
    McPherson & Rowe 1969; Jennison & Turnbull 2000, ch. 19) of the score
    process ``S_k = Z_k sqrt(k)``, whose increments are independent N(drift, 1),
    on a Simpson grid over the continuation region ``(-b_k, b_k)`` (two-sided)
    or ``(-inf, b_k)`` (one-sided; truncated 12 sd below the mean).

    Returns
    -------
    upper, lower : ndarray
        ``lower`` is all zeros when ``two_sided`` is false.
    """
    K = len(z)
    b = np.asarray(z, dtype=float) * np.sqrt(np.arange(1, K + 1))
    upper = np.zeros(K)
    lower = np.zeros(K)
    x = np.array([0.0])
    wf = np.array([1.0])  # weights x density of S_{k-1} on the grid (a point mass at 0 for k=1)
    for k in range(K):
        upper[k] = float(np.dot(wf, norm.sf(b[k] - x - drift)))
        if two_sided:
            lower[k] = float(np.dot(wf, norm.cdf(-b[k] - x - drift)))
        if k == K - 1:
            break
        lo = -b[k] if two_sided else max(-b[k], drift * (k + 1) - 12 * math.sqrt(k + 1))
        xn, wn = _simpson(lo, b[k], grid)
        f = norm.pdf(xn[:, None] - x[None, :] - drift) @ wf
        x, wf = xn, wn * f
    return upper, lower


def sequential_design(looks: int, alpha: float = 0.05, power: float = 0.8,
                      boundary: str = "obrien-fleming", alternative: str = "two-sided",
                      n_fixed: int | None = None) -> SequentialDesign:
    """Boundaries and sample-size inflation of a K-look group-sequential test.

    The constant solves ``P_0(cross at some look) = alpha`` (two-sided: either
    boundary); the inflation ``R`` solves ``P_theta(cross upper) = power`` with the
    fixed-sample drift ``theta = z_{1-a} + z_{power}`` scaled by ``sqrt(R)``.
    """
    from planner.stats.optim import brentq  # scipy.optimize.brentq step for step, without its import

    limits.check_int("--looks", looks, 1, limits.MAX_LOOKS)
    _choice("--boundary", boundary, BOUNDARIES)
    check_range("--alpha", alpha, 0, 1)
    check_range("--power", power, 0, 1)
    two = alternative == "two-sided"
    shape = _shape(looks, boundary)
    def type1(c: float) -> float:
        up, dn = crossing_probabilities(c * shape, 0.0, two)
        return up.sum() + dn.sum() - alpha

    c = brentq(type1, 0.5, 10, xtol=1e-10)
    z = c * shape
    # power: only the upper boundary counts as the right decision
    theta_fixed = _z_alpha(alpha, alternative) + float(norm.ppf(power))

    def upper_power(R: float) -> float:
        drift = theta_fixed * math.sqrt(R / looks)  # per-look mean increment of S_k
        return crossing_probabilities(z, drift, two)[0].sum() - power

    R = brentq(upper_power, 0.5, 5.0, xtol=1e-10) if looks > 1 else 1.0
    nominal = tuple(float(2 * norm.sf(v) if two else norm.sf(v)) for v in z)
    up0, dn0 = crossing_probabilities(z, 0.0, two)
    spent = tuple(float(v) for v in np.cumsum(up0 + dn0))
    n_max = n_look = None
    if n_fixed is not None:
        n_max = int(math.ceil(R * n_fixed - 1e-9))
        n_look = int(math.ceil(n_max / looks))
        n_max = n_look * looks
    return SequentialDesign(looks=looks, boundary=boundary, alpha=alpha, power=power,
                            alternative=alternative, constant=float(c),
                            z_boundaries=tuple(float(v) for v in z), nominal_alpha=nominal,
                            alpha_spent=spent, inflation=float(R), n_fixed=n_fixed,
                            n_max=n_max, n_per_look=n_look)


# --------------------------------------------------------------------------- #
# Plot
# --------------------------------------------------------------------------- #


def plot_power(result: SizeResult, design: Design, path: str) -> str:
    """Write power against comparisons per pair (normal and exact) to ``path``.

    The target power and the chosen (exact, headline) n are marked. ``path``
    must end in ``.png`` or ``.svg``. matplotlib is imported here, with the Agg
    backend, so nothing else pays for it.
    """
    import os

    ext = os.path.splitext(path)[1].lower()
    if ext not in (".png", ".svg"):
        raise UsageError(f"--plot ({path!r}) must end in .png or .svg")
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    n_hi = int(max(result.comparisons_exact, result.comparisons_normal) * 1.5) + 10
    ns = np.arange(1, n_hi + 1)
    fig, ax = plt.subplots(figsize=(7, 4.2))
    ax.plot(ns, power_exact(result.effect, ns, design), lw=0.8, label="exact binomial test")
    ax.plot(ns, power_normal(result.effect, ns, design), lw=1.2, ls="--", label="normal approximation")
    ax.axhline(result.power, color="grey", lw=0.8, ls=":", label=f"target power {result.power:g}")
    ax.axvline(result.comparisons_exact, color="C3", lw=1,
               label=f"chosen n = {result.comparisons_exact:,}")
    unit = "decisive comparisons" if result.ties == "drop" else "judged comparisons (ties count half)"
    ax.set_xlabel(f"{unit} per pair")
    ax.set_ylabel("power")
    ax.set_ylim(0, 1)
    ax.set_title(f"win rate {result.win_rate:.1%} vs 50%, alpha {result.alpha_per_pair:g} "
                 f"({result.alternative})")
    ax.legend(loc="lower right", fontsize=8)
    fig.tight_layout()
    try:
        fig.savefig(path)
    except OSError as exc:
        raise UsageError(f"--plot ({path!r}) cannot be written: {exc.strerror}") from None
    finally:
        plt.close(fig)
    return path


# --------------------------------------------------------------------------- #
# Pass-rate precision (absolute acceptability items)
# --------------------------------------------------------------------------- #


@dataclass(frozen=True)
class PassRateSize:
    """Acceptability items needed for a pass-rate interval of half-width ``precision``.

    Attributes
    ----------
    pass_rate : float
        Expected pass rate P.
    precision : float
        Target half-width H of the ``confidence`` interval (absolute, 0.05 = ±5 points).
    items_wilson : int
        Headline: smallest n whose Wilson (1927) interval at p̂ = P has half-width <= H.
    items_normal : int
        Wald/normal: ``ceil(z^2 P(1-P) / H^2)``.
    items : int
        ``items_wilson`` inflated by ``1/(1-invalid_rate)``.
    half_width_wilson : float
        Wilson half-width at ``items_wilson``.
    """

    pass_rate: float
    precision: float
    confidence: float
    invalid_rate: float
    items_wilson: int
    items_normal: int
    items: int
    half_width_wilson: float
    method: str = "wilson"


def pass_rate_size(pass_rate: float, precision: float, confidence: float = 0.95,
                   invalid_rate: float = 0.0) -> PassRateSize:
    """Items needed to estimate a pass rate to ±``precision``; see :class:`PassRateSize`."""
    check_range("--pass-rate", pass_rate, 0, 1, low_open=False, high_open=False)
    check_range("--precision", precision, 0, 0.5)
    check_range("--confidence", confidence, 0, 1)
    check_range("--invalid-rate", invalid_rate, 0, 1, low_open=False)
    z = float(norm.isf((1 - confidence) / 2))
    n_norm = max(1, int(math.ceil(z * z * pass_rate * (1 - pass_rate) / precision ** 2 - 1e-9)))
    lo, hi = 1, max(4, 4 * n_norm + 100)
    while wilson_half_width(pass_rate, hi, confidence) > precision:
        hi *= 2
    while lo < hi:  # smallest n with half-width <= H (monotone, see wilson_half_width)
        mid = (lo + hi) // 2
        if wilson_half_width(pass_rate, mid, confidence) <= precision:
            hi = mid
        else:
            lo = mid + 1
    items = int(math.ceil(lo / (1 - invalid_rate) - 1e-9))
    return PassRateSize(pass_rate=pass_rate, precision=precision, confidence=confidence,
                        invalid_rate=invalid_rate, items_wilson=lo, items_normal=n_norm, items=items,
                        half_width_wilson=float(wilson_half_width(pass_rate, lo, confidence)))


# --------------------------------------------------------------------------- #
# Significance of an observed result
# --------------------------------------------------------------------------- #


@dataclass(frozen=True)
class Interval:
    low: float | None
    high: float | None


@dataclass(frozen=True)
class SignificanceResult:
    """Is an observed win rate distinguishable from 50%?

    Attributes
    ----------
    wins, losses, ties : int
    ties_convention : {'drop', 'half'}
    win_rate : float or None
        ``wins/(wins+losses)`` (drop) or the half-tie score
        ``(wins + ties/2)/(wins+losses+ties)`` (half); ``None`` with no usable judgment.
    n : int
        Judgments the estimate uses (decisive for drop; all for half).
    pvalue : float
        Exact binomial (sign) test of H0: win rate = 1/2 on the decisive
        judgments (:func:`scipy.stats.binomtest`); under ``half`` this is the
        exact conditional test given the number of ties.
    wald, wilson, clopper_pearson : Interval
        ``confidence`` intervals. Under ``half`` only Wald (with the empirical
        variance of the 1/0.5/0 score) applies to the score; Wilson and
        Clopper–Pearson are for the decisive win rate and are reported as
        ``decisive_*``.
    significant : bool
        ``pvalue < alpha`` (single look) or ``|z| >= boundary`` (sequential).
    look, looks, boundary, z, z_boundary, nominal_alpha :
        Group-sequential check (``looks > 1``): the score statistic
        ``z = (wins - losses)/sqrt(wins + losses)`` against the boundary at ``look``.
    """

    wins: int
    losses: int
    ties: int
    ties_convention: str
    alternative: str
    confidence: float
    alpha: float
    n: int
    win_rate: float | None
    pvalue: float | None
    wald: Interval
    wilson: Interval
    clopper_pearson: Interval
    significant: bool
    conclusion: str
    z: float | None = None
    look: int | None = None
    looks: int | None = None
    boundary: str | None = None
    z_boundary: float | None = None
    nominal_alpha: float | None = None


def check_look(look: int | None, looks: int) -> int:
    """Validate ``--look k --looks K`` (1 <= k <= K); ``look`` defaults to the final look ``K``."""
    limits.check_int("--looks", looks, 1, limits.MAX_LOOKS)
    if look is None:
        return int(looks)
    if not limits._is_int(look) or not 1 <= look <= looks:
        raise UsageError(f"--look ({limits.quote(look)}) must be in [1, {looks}] (--looks)")
    return int(look)


def significance(wins: int, losses: int, ties: int = 0, *, ties_convention: str = "drop",
                 confidence: float = 0.95, alternative: str = "two-sided",
                 look: int | None = None, looks: int = 1,
                 boundary: str = "obrien-fleming") -> SignificanceResult:
    """Exact binomial test and Wald, Wilson, Clopper–Pearson intervals for a win rate.

    Parameters
    ----------
    wins, losses, ties : int
        Judgments won by the candidate, lost, tied (>= 0).
    ties_convention : {'drop', 'half'}
    confidence : float
        Interval level; the test level is ``alpha = 1 - confidence``.
    alternative : {'two-sided', 'greater'}
    look, looks, boundary :
        Group-sequential analysis: this is analysis ``look`` of ``looks`` equally
        spaced ones; the test uses the matching Pocock / O'Brien–Fleming boundary
        (:func:`sequential_design`) instead of ``pvalue < alpha``.
    """
    for name, v in (("--wins", wins), ("--losses", losses), ("--ties", ties)):
        limits.check_int(name, v, 0, limits.MAX_COUNT)
    _choice("--ties-convention", ties_convention, TIE_CONVENTIONS)
    _choice("--alternative", alternative, ALTERNATIVES)
    check_range("--confidence", confidence, 0, 1)
    _choice("--boundary", boundary, BOUNDARIES)
    look = check_look(look, looks)
    from scipy import stats  # binomtest: only `significance` pays for importing scipy.stats

    alpha = 1 - confidence
    n_dec = wins + losses
    n = n_dec + ties if ties_convention == "half" else n_dec
    z_crit = float(norm.isf(alpha / 2))
    none = Interval(None, None)
    wald = wilson = cp = none
    rate = pvalue = z = None
    if n_dec > 0:
        bt = stats.binomtest(wins, n_dec, 0.5, alternative=alternative)
        pvalue = float(bt.pvalue)
        z = (wins - losses) / math.sqrt(n_dec)
    if n > 0:
        if ties_convention == "drop":
            rate = wins / n
            se = math.sqrt(rate * (1 - rate) / n)
            ci_level = confidence
            c = stats.binomtest(wins, n, 0.5).proportion_ci(confidence_level=ci_level, method="exact")
            wilson, cp = Interval(*wilson_interval(wins, n, ci_level)), Interval(float(c.low), float(c.high))
        else:
            rate = (wins + ties / 2) / n
            second = (wins + ties / 4) / n  # mean of the squared 1/0.5/0 score
            se = math.sqrt(max(second - rate * rate, 0.0) / n)
        wald = Interval(max(0.0, rate - z_crit * se), min(1.0, rate + z_crit * se))
    seq = None
    if looks > 1:
        seq = sequential_design(looks, alpha, 0.8, boundary, alternative)
        zb = seq.z_boundaries[look - 1]
        if z is None:
            significant = False
        elif alternative == "two-sided":
            significant = abs(z) >= zb
        else:
            significant = z >= zb
    else:
        significant = pvalue is not None and pvalue < alpha
    res = SignificanceResult(
        wins=wins, losses=losses, ties=ties, ties_convention=ties_convention,
        alternative=alternative, confidence=confidence, alpha=alpha, n=n, win_rate=rate,
        pvalue=pvalue, wald=wald, wilson=wilson, clopper_pearson=cp, significant=significant,
        conclusion="", z=z,
        look=look if looks > 1 else None, looks=looks if looks > 1 else None,
        boundary=boundary if looks > 1 else None,
        z_boundary=seq.z_boundaries[look - 1] if seq else None,
        nominal_alpha=seq.nominal_alpha[look - 1] if seq else None)
    return replace(res, conclusion=_conclusion(res))


def _conclusion(r: SignificanceResult) -> str:
    """One sentence whose decision and quoted interval agree with the table.

    The exact binomial (sign) test on the decisive judgments decides (or the
    group-sequential boundary with looks). With ``ties='drop'`` the sentence
    quotes the Clopper–Pearson interval, the exact interval that goes with
    that test; the Wald interval is an approximation, and when it disagrees
    with the test (60–40: Wald [50.4%, 69.6%] excludes 50%, p = 0.057) the
    sentence says so and why instead of contradicting the table.
    """
    if r.win_rate is None:
        return "No usable judgment: there is no win rate to test."
    what = "win rate" if r.ties_convention == "drop" else "half-tie score"
    lvl = f"{r.confidence:.0%}"
    if r.ties_convention == "drop" and r.clopper_pearson.low is not None:
        iv = f"exact (Clopper–Pearson) {lvl} interval [{r.clopper_pearson.low:.1%}, {r.clopper_pearson.high:.1%}]"
    else:
        iv = f"Wald {lvl} interval [{r.wald.low:.1%}, {r.wald.high:.1%}]"
    head = f"Observed {what} {r.win_rate:.1%} over {r.n:,} judgments ({iv})"
    if r.looks:
        test = (f"at look {r.look} of {r.looks} the {r.boundary} boundary is |z| >= {r.z_boundary:.3f} "
                f"(nominal p < {r.nominal_alpha:.4f}); z = {r.z:.3f}" if r.z is not None
                else "no decisive judgment to test")
    else:
        test = (f"the exact binomial test on the {r.wins + r.losses:,} decisive judgments decides: p = {r.pvalue:.3g}"
                if r.pvalue is not None else "no decisive judgment")
    if r.significant:
        direction = "better" if (r.z or 0) > 0 else "worse"
        out = f"{head}; {test}: the candidate is distinguishably {direction} than 50%."
    else:
        out = f"{head}; {test}: not distinguishable from 50%."
    wald_excludes = r.wald.low is not None and not (r.wald.low <= 0.5 <= r.wald.high)
    if r.pvalue is not None and wald_excludes != r.significant:
        quoted = "above" if iv.startswith("Wald") else f"[{r.wald.low:.1%}, {r.wald.high:.1%}]"
        out += (f" The Wald interval {quoted} "
                + ("excludes" if wald_excludes else "includes")
                + " 50%: it is a normal approximation"
                + (" that is too narrow at this n" if wald_excludes else "")
                + (", not adjusted for the sequential looks" if r.looks else "")
                + "; the test above decides.")
    return out
