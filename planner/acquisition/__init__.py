"""Choosing the next comparisons: expected posterior-uncertainty reduction.

The acquisition rules take the Gaussian posterior of the Bradley–Terry–Davidson
strengths (:class:`planner.model.bt.GaussianPosterior`), what has been judged and what
is pending (:class:`planner.counts.Counts`), and return the unordered system
pairs ``(i, j)`` with ``i < j`` for the next batch, in pick order. Positions
(left/right) are assigned later, balanced; so the information of one judgment
on a pair is averaged over the two positions.

Core identities (all in the sum-to-zero subspace of the strengths; ``Σ`` is the
posterior covariance, singular along the all-ones direction):

* one judgment on ``(i, j)`` adds ``I · d dᵀ`` to the precision, ``d = e_i − e_j``,
  where ``I`` is the posterior-predictive expected Fisher information
  ``E_δ[½ (I(δ + γ) + I(δ − γ))]``, ``δ ~ N(μ_i − μ_j, v_ij)``, averaged with
  Gauss–Hermite nodes (``planner.model.bt.information``);
* Sherman–Morrison: ``Σ' = Σ − f c cᵀ`` with ``c = Σ d``, ``v_ij = dᵀ Σ d``,
  ``f = I / (1 + I v_ij)``; hence for every pair ``(k, l)``
  ``Var'(β_k − β_l) = Var(β_k − β_l) − f (c_k − c_l)²``;
* preposterior (the mean moves when the judgment comes back): the posterior
  mean difference after the update is ``N(m, τ²)`` with
  ``τ² = Var − Var'``, and the expected posterior probability of misordering
  ``(k, l)`` is ``E[Φ(−|X| / s')] = 2 T(|m| / s, s' / τ)`` (Owen's T; derived
  in docs/methods.md "Choosing comparisons").

Reference for the arena rule: W.-L. Chiang et al. (2024), "Chatbot Arena: An
Open Platform for Evaluating LLMs by Human Preference", ICML, eq. 9.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np
from scipy.special import ndtr, owens_t

from planner.model import bt
from planner.counts import Counts
from planner.errors import DataError, UsageError

STRATEGIES = ("active", "round-robin", "random", "anchor", "swiss", "arena", "oracle")
OBJECTIVES = ("ranking", "entropy", "variance", "anchor", "top-k")

SETTLE_PROB = 0.95          # P(order) every decision must exceed to call it settled
RANKING_RISK = "bayes"      # pair_risk mode of the ranking/top-k objectives (bench: best of the three)
RISK_EPS = 1e-7             # pairs with P(misorder) below this are left out of the ranking sum
POOL_MIN = 256              # ranking objective: candidate pool size floor (see _active_gaussian)
LOOKAHEAD = (1, 4, 16)      # ranking: judgments per pair looked ahead (KG(*) rate, see _Ranking.gains)
LAZY_CHUNK = 8              # candidates re-evaluated at a time in the lazy greedy
TAIL_A = 5.0                # Owen's T: asymptotic tail formula used for a >= TAIL_A
ARENA_FLOOR = 1e-3          # arena weights floored at this fraction of the largest weight
BATCH_CAP = 0.1             # ranking: picks one pair may take in a batch (share of k) before yielding
CAP_MIN = 5                 # ... but never fewer than this many picks
CAP_YIELD = 0.25            # ... to any candidate worth at least this share of its score
SPARSE_REL = 1e-4            # ranking gains: pairs whose variance moves by less than this (relative) are skipped
DRAWS_POOL = 64             # draws path: candidates kept (by Gaussian gain) when there are more
EXPLORE = 0.0               # active: share of each batch given to the least-judged pairs (exploration floor)
THOMPSON = False            # active ranking/top-k: score gaps against one posterior draw of the strengths
_GH_Z, _GH_W = np.polynomial.hermite_e.hermegauss(7)
_GH_W = _GH_W / _GH_W.sum()


# ============================================================== result type
@dataclass(frozen=True)
class Selection:
    """The pairs chosen for the next batch and what they are expected to buy.

    Attributes
    ----------
    systems : tuple of str
        System names; pair indices index this tuple.
    pairs : list of (int, int)
        Unordered system pairs ``(i, j)``, ``i < j``, in pick order (a pair may
        repeat). Positions are assigned later.
    gains : ndarray (k,)
        Expected reduction of the objective from each pick, given the picks
        (and pending items) before it (fantasized, see module docstring).
    expected_reduction : float
        ``gains.sum()``: expected reduction of the objective from the batch.
    value_before, value_after : float
        Objective value with pending items fantasized, before the batch and
        expected after it (``value_after = value_before - expected_reduction``).
        Units: ``ranking``/``top-k`` expected number of misordered system
        pairs; ``entropy`` nats (½ log det of the covariance in the
        sum-to-zero subspace, up to a constant); ``variance`` logit²;
        ``anchor`` win-rate² (sum of variances).
    strategy, objective : str
    settled : bool
        Stopping advice: the decision the objective cares about is already
        made with probability > 0.95 (see ``reason``).
    reason : str
        One sentence explaining ``settled``.
    engine : str
        ``"gaussian"`` (rank-one updates) or ``"draws"`` (importance re-weighting).
    notes : tuple of str
        What the strategy could not do as asked (a batch the allowed pairs'
        capacity cannot fill; swiss out of neighbour pairs), one sentence each.
    """

    systems: tuple[str, ...]
    pairs: list
    gains: np.ndarray
    expected_reduction: float
    value_before: float
    value_after: float
    strategy: str
    objective: str
    settled: bool
    reason: str
    engine: str = "gaussian"
    notes: tuple = ()

    def pair_names(self) -> list[tuple[str, str]]:
        """The picks as ``(system_i, system_j)`` name tuples."""
        return [(self.systems[i], self.systems[j]) for i, j in self.pairs]

    def to_dict(self) -> dict:
        return {"strategy": self.strategy, "objective": self.objective, "engine": self.engine,
                "pairs": [list(p) for p in self.pair_names()],
                "gains": [float(g) for g in self.gains],
                "expected_reduction": float(self.expected_reduction),
                "value_before": float(self.value_before), "value_after": float(self.value_after),
                "settled": bool(self.settled), "reason": self.reason, "notes": list(self.notes)}


# ====================================================== small math helpers
def _basis(m: int) -> np.ndarray:
    """Orthonormal basis (M, M-1) of the sum-to-zero subspace."""
    q, _ = np.linalg.qr(np.eye(m)[:, :-1] - 1.0 / m)
    return q


def _project(cov: np.ndarray) -> np.ndarray:
    out = cov - cov.mean(axis=0, keepdims=True)
    out = out - out.mean(axis=1, keepdims=True)       # (I − 11ᵀ/M) Σ (I − 11ᵀ/M)
    return 0.5 * (out + out.T)


def expected_information(mdiff, vdiff, gamma: float = 0.0, nu: float = 0.0, *, both_positions=True):
    """Posterior-predictive expected Fisher information of one judgment.

    ``E_δ[I(δ)]`` with ``δ ~ N(mdiff ± gamma, vdiff)`` by 7-node Gauss–Hermite
    quadrature; with ``both_positions`` the average of the two positions
    (``+gamma``: system ``i`` shown left; ``-gamma``: right), as the batch
    assigns positions balanced. Units: logit⁻².
    """
    mdiff = np.asarray(mdiff, dtype=float)[..., None]
    sd = np.sqrt(np.clip(np.asarray(vdiff, dtype=float), 0.0, None))[..., None]
    x = mdiff + sd * _GH_Z
    if both_positions:
        info = 0.5 * (bt.information(x + gamma, nu) + bt.information(x - gamma, nu))
    else:
        info = bt.information(x + gamma, nu)
    return info @ _GH_W


def misorder_after(h, s2, s0_2):
    """Expected posterior P(misorder) of a pair after information arrives.

    ``h = |m| / s0`` (standardised current mean gap), ``s0_2`` the current
    variance of the difference, ``s2`` the variance after the (fantasized)
    update. The mean gap after the update is ``N(m, τ²)``, ``τ² = s0² − s²``,
    and ``E[Φ(−|X| / s)] = 2 T(h, s / τ)`` (Owen's T). For ``s/τ ≥ 5`` the
    asymptotic tail expansion of ``T`` (two terms, relative error < 0.2 %) is
    used because ``scipy.special.owens_t`` costs ~100 ns per value.
    """
    h = np.abs(np.asarray(h, dtype=float))
    s2 = np.asarray(s2, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        a = np.sqrt(np.maximum(s2, 0.0) / np.maximum(s0_2 - s2, 0.0))
        if a.shape != h.shape:
            h, a = np.broadcast_arrays(h, a)
        a = np.where(np.isnan(a), np.inf, a)
        small = a < TAIL_A
        n_small = np.count_nonzero(small)
        if n_small == a.size:
            return 2.0 * owens_t(h, a)
        out = np.empty(a.shape)
        if n_small:
            out[small] = 2.0 * owens_t(h[small], a[small])
            big = ~small
            hb, ab = h[big], a[big]
        else:
            hb, ab = h, a
        e = np.exp(-0.5 * hb * hb * ab * ab)
        ab_inf = np.isinf(ab)
        j2 = np.where(ab_inf, 0.0, e / ab - hb * np.sqrt(2 * np.pi) * ndtr(-hb * ab))
        j4 = np.where(ab_inf, 0.0, e / (3 * ab ** 3)) - hb * hb / 3.0 * j2
        res = ndtr(-hb) - np.exp(-0.5 * hb * hb) / np.pi * (j2 - j4)
    if not n_small:
        return res.reshape(a.shape)
    out[big] = res
    return out


def _logistic(x):
    return 0.5 * (1.0 + np.tanh(0.5 * np.asarray(x, dtype=float)))


# ============================================================ objective values
def _check_objective(objective, m, systems, top_k, anchor):
    if objective not in OBJECTIVES:
        raise UsageError(f"--objective ({objective!r}) must be one of " + ", ".join(OBJECTIVES))
    if objective == "top-k":
        if top_k is None or not (1 <= int(top_k) <= m - 1):
            raise UsageError(f"top-k K ({top_k}) must be an integer in [1, {m - 1}]")
    if objective == "anchor":
        _anchor_index(systems, anchor)


def _anchor_index(systems, anchor) -> int:
    if anchor is None:
        raise UsageError("--anchor is required for the anchor strategy/objective")
    if anchor not in systems:
        raise UsageError(f"--anchor ({anchor!r}) is not a system; systems: " + ", ".join(systems[:20]))
    return systems.index(anchor)


def _pair_weights(mean, objective, top_k):
    """Weights (M, M) over system pairs (k < l) of the misorder sum."""
    m = mean.size
    w = np.triu(np.ones((m, m)), 1)
    if objective == "top-k":
        order = np.argsort(-mean, kind="stable")
        top = np.zeros(m, bool)
        top[order[:top_k]] = True
        w = w * (top[:, None] != top[None, :])
    return w


def _diff_var(cov):
    d = np.diag(cov)
    return np.clip(d[:, None] + d[None, :] - 2.0 * cov, 0.0, None)


def objective_value(posterior: bt.GaussianPosterior, objective: str = "ranking", *,
                    top_k: int | None = None, anchor: str | None = None,
                    mean: np.ndarray | None = None) -> float:
    """Value of the uncertainty an objective measures, under a Gaussian posterior.

    Parameters
    ----------
    posterior : GaussianPosterior
    objective : {"ranking", "entropy", "variance", "anchor", "top-k"}
        ``ranking``: ``Σ_{k<l} Φ(−|μ_k − μ_l| / sd_kl)``, the expected number
        of system pairs the posterior-mean ranking has in the wrong order.
        ``top-k``: the same sum over pairs straddling the top-``top_k``
        boundary of the posterior-mean ranking. ``entropy``: ½ log det of the
        covariance in the sum-to-zero subspace (nats, Gaussian entropy up to a
        constant). ``variance``: trace of the covariance (logit²).
        ``anchor``: ``Σ_c (p_c (1 − p_c))² Var(β_c − β_anchor)``, the
        delta-method variance of each candidate's win rate
        ``p_c = σ(μ_c − μ_anchor)`` against the anchor, summed (win-rate²).
    top_k, anchor : needed by ``top-k`` / ``anchor``.
    mean : ndarray, optional
        Replace the posterior mean (used by ``oracle``: the true strengths).
    """
    systems = tuple(posterior.systems)
    m = len(systems)
    _check_objective(objective, m, systems, top_k, anchor)
    mu = np.asarray(posterior.mean if mean is None else mean, dtype=float)
    mu = mu - mu.mean()
    cov = _project(np.asarray(posterior.cov, dtype=float))
    return _value_gaussian(objective, mu, cov, top_k, systems.index(anchor) if anchor else None)


def _value_gaussian(objective, mu, cov, top_k, a_idx, risk_mode=None):
    risk_mode = RANKING_RISK if risk_mode is None else risk_mode
    if objective in ("ranking", "top-k"):
        w = _pair_weights(mu, objective, top_k)
        kr, lr = np.nonzero(w)
        v = _diff_var(cov)[kr, lr]
        r = pair_risk(np.abs(mu[kr] - mu[lr]), v, v, risk_mode)
        return float(np.where(v > 0, r, 0.0).sum())
    if objective == "entropy":
        q = _basis(mu.size)
        return float(0.5 * np.linalg.slogdet(q.T @ cov @ q)[1])
    if objective == "variance":
        return float(np.trace(cov))
    # anchor
    p = _logistic(mu - mu[a_idx])
    wv = (p * (1 - p)) ** 2
    return float((wv * _diff_var(cov)[:, a_idx]).sum())


# ================================================================ inputs
def _pair_counts(counts: Counts | None, m: int, *, all_fields: bool) -> np.ndarray:
    """Symmetric (M, M) judgments per unordered pair (usable, or every field)."""
    mat = np.zeros((m, m), dtype=np.int64)
    if counts is None or counts.n_cells == 0:
        return mat
    n = counts.usable + (counts.invalid if all_fields else 0)
    np.add.at(mat, (counts.a, counts.b), n)
    return mat + mat.T


def _check_counts(counts, systems, name):
    if counts is not None and tuple(counts.systems) != tuple(systems):
        raise DataError(f"{name} counts are over systems {list(counts.systems)[:5]}..., "
                        f"the posterior over {list(systems)[:5]}...; they must match")


def _candidates(m, allowed):
    if allowed is None:
        i, j = np.triu_indices(m, 1)
        return i.astype(np.int64), j.astype(np.int64)
    pairs = set()
    for p in allowed:
        i, j = int(p[0]), int(p[1])
        if i == j or not (0 <= i < m and 0 <= j < m):
            raise UsageError(f"allowed pair {p!r} is not a pair of distinct system indices in [0, {m - 1}]")
        pairs.add((min(i, j), max(i, j)))
    if not pairs:
        raise UsageError("allowed pairs: the set is empty")
    arr = np.array(sorted(pairs), dtype=np.int64)
    return arr[:, 0].copy(), arr[:, 1].copy()


# ====================================================== fantasized state
class _State:
    """Gaussian posterior under fantasized rank-one precision updates."""

    def __init__(self, mu, cov, gamma, nu):
        self.mu, self.gamma, self.nu = mu, gamma, nu
        self.cov = cov.copy()

    def info(self, ci, cj):
        d = np.diag(self.cov)
        v = d[ci] + d[cj] - 2.0 * self.cov[ci, cj]
        return expected_information(self.mu[ci] - self.mu[cj], v, self.gamma, self.nu)

    def apply(self, i, j, info):
        """Λ += info (e_i − e_j)(e_i − e_j)ᵀ; returns c = Σ d and f."""
        c = self.cov[:, i] - self.cov[:, j]
        f = info / (1.0 + info * (c[i] - c[j]))
        self.cov -= f * np.outer(c, c)
        return c, f

    def apply_counts(self, pending: Counts):
        """Fantasize every pending item (its cell's position known) at once."""
        n = (pending.usable + pending.invalid).astype(float)
        keep = n > 0
        a, b, n = pending.a[keep], pending.b[keep], n[keep]
        if a.size == 0:
            return
        d = np.diag(self.cov)
        v = d[a] + d[b] - 2.0 * self.cov[a, b]
        info = n * expected_information(self.mu[a] - self.mu[b], v, self.gamma, self.nu,
                                        both_positions=False)
        m = self.mu.size
        lap = np.zeros((m, m))
        np.add.at(lap, (a, a), info)
        np.add.at(lap, (b, b), info)
        np.add.at(lap, (a, b), -info)
        np.add.at(lap, (b, a), -info)
        q = _basis(m)
        sub = q.T @ self.cov @ q
        prec = np.linalg.inv(sub) + q.T @ lap @ q
        self.cov = _project(q @ np.linalg.inv(prec) @ q.T)


def _setup(posterior, objective, top_k, anchor, judged, pending, draws, allowed, true_mean, need_anchor=False):
    """Validate the inputs; build the context, the fantasized state and the candidates."""
    systems = tuple(posterior.systems)
    m = len(systems)
    if m < 2:
        raise UsageError(f"need at least two systems to compare (got {m})")
    _check_objective(objective, m, systems, top_k, anchor)
    _check_counts(judged, systems, "judged")
    _check_counts(pending, systems, "pending")
    mu = np.asarray(posterior.mean, dtype=float)
    cov = np.asarray(posterior.cov, dtype=float)
    if mu.shape != (m,) or cov.shape != (m, m) or not (np.all(np.isfinite(mu)) and np.all(np.isfinite(cov))):
        raise DataError(f"posterior mean/cov must be finite with shapes ({m},) and ({m}, {m})")
    est_mu = None
    if true_mean is not None:
        true_mean = np.asarray(true_mean, dtype=float)
        if true_mean.shape != (m,) or not np.all(np.isfinite(true_mean)):
            raise UsageError(f"true_mean must be finite with shape ({m},), got {true_mean.shape}")
        est_mu = mu - mu.mean()
        mu = true_mean
    if draws is not None:
        draws = np.asarray(draws, dtype=float)
        if draws.ndim != 2 or draws.shape[1] != m or draws.shape[0] < 2:
            raise DataError(f"draws must have shape (S, {m}) with S >= 2, got {draws.shape}")
    a_idx = _anchor_index(systems, anchor) if (need_anchor or objective == "anchor") else None
    mu = mu - mu.mean()
    cov = _project(cov)
    ci, cj = _candidates(m, allowed)
    counts = _pair_counts(judged, m, all_fields=False) + _pair_counts(pending, m, all_fields=True)
    ctx = _Context(mu, cov, float(posterior.gamma), float(posterior.nu), objective, top_k, a_idx,
                   RANKING_RISK, est_mu)
    state = _State(mu, cov, ctx.gamma, ctx.nu)
    if pending is not None and pending.n_cells:
        state.apply_counts(pending)
    return systems, ctx, state, ci, cj, counts, draws


@dataclass(frozen=True)
class CandidateGains:
    """Expected reduction of the objective from ONE more judgment, per candidate.

    Attributes
    ----------
    systems : tuple of str
    pairs : list of (int, int)
        Candidate pairs ``(i, j)``, ``i < j``, sorted by decreasing gain.
    gains : ndarray
        Expected reduction (units of the objective, see :class:`Selection`).
    engine : str
        ``"gaussian"`` or ``"draws"``.
    """

    systems: tuple[str, ...]
    pairs: list
    gains: np.ndarray
    engine: str


def candidate_gains(posterior: bt.GaussianPosterior, *, objective: str = "ranking",
                    top_k: int | None = None, anchor: str | None = None,
                    pending: Counts | None = None, draws: np.ndarray | None = None,
                    allowed=None, true_mean: np.ndarray | None = None) -> CandidateGains:
    """Score every candidate pair by the expected reduction from one judgment.

    The same quantities ``select_pairs`` maximises for its first pick: from the
    Gaussian closed forms, or, with ``draws`` (S, M), by importance
    re-weighting of the draws (every candidate scored). ``pending`` items are
    fantasized first; ``true_mean`` replaces the posterior mean (oracle).
    """
    _, ctx, state, ci, cj, _, draws = _setup(posterior, objective, top_k, anchor, None, pending,
                                             draws, allowed, true_mean)
    if draws is not None:
        rk = _Ranking(ctx, state) if objective in ("ranking", "top-k") else None
        sc = _DrawsScorer(ctx, draws, pending, None if rk is None else (rk.kr, rk.lr))
        g, engine = sc.gains(ci, cj), "draws"
    else:
        g, engine = _gaussian_gains(ctx, state, ci, cj), "gaussian"
    order = np.argsort(-g, kind="stable")
    return CandidateGains(tuple(posterior.systems), [(int(ci[t]), int(cj[t])) for t in order],
                          g[order], engine)


# ============================================================= public API
def select_pairs(posterior: bt.GaussianPosterior, k: int, *, strategy: str = "active",
                 objective: str = "ranking", top_k: int | None = None, anchor: str | None = None,
                 judged: Counts | None = None, pending: Counts | None = None,
                 rng: np.random.Generator, draws: np.ndarray | None = None,
                 allowed=None, true_mean: np.ndarray | None = None,
                 explore: float | None = None, thompson: bool | None = None,
                 capacity: dict | None = None) -> Selection:
    """Choose ``k`` system pairs for the next batch.

    Parameters
    ----------
    posterior : GaussianPosterior
        Current posterior of the strengths (logit scale, sum to zero).
    k : int
        Batch size (number of judgments to request), ``k >= 1``.
    strategy : {"active", "round-robin", "random", "anchor", "swiss", "arena", "oracle"}
        ``active``: greedy expected reduction of ``objective`` (each pick
        conditioned on fantasized rank-one updates of the picks before it and
        of pending items); with no judgments and nothing pending, a connected
        start design (:func:`connected_start`). ``round-robin``: least-judged
        pairs first (judged + pending + picks so far), ties broken by ``rng``.
        ``random``: uniform pairs, independently. ``anchor``: every system vs
        ``anchor``, least-judged first. ``swiss``: neighbours in the
        posterior-mean ranking, least-judged neighbour pair first. ``arena``:
        Chiang et al. (2024) eq. 9 sampling (see :func:`arena_weights`).
        ``oracle``: ``active`` with ``true_mean`` in place of the posterior
        mean (same covariance) — the design chosen with the true strengths
        known (simulator only).
    objective : {"ranking", "entropy", "variance", "anchor", "top-k"}
        What uncertainty to reduce (see :func:`objective_value`). Used to pick
        for ``active``/``oracle``; reported (gains) for every strategy.
    top_k : int, optional
        K for ``objective="top-k"``.
    anchor : str, optional
        Anchor system name for the ``anchor`` strategy/objective.
    judged, pending : Counts, optional
        What has been judged (only its per-pair counts are used: the posterior
        already contains it) and what is issued but not returned (fantasized
        as information before selection; every field of a pending cell counts
        as one issued item, its position known from the cell).
    rng : numpy.random.Generator
        All randomness (tie-breaks, random/arena sampling, start design).
    draws : ndarray (S, M), optional
        Posterior draws (e.g. NUTS). With ``draws`` the expected reductions of
        ``active``/``oracle`` are computed by importance re-weighting of the
        draws instead of the Gaussian closed forms.
    allowed : set of (int, int), optional
        Restrict candidates to these pairs (order inside a pair ignored).
    true_mean : ndarray (M,), optional
        True strengths, required by ``oracle``.
    explore : float in [0, 1), optional
        ``active`` only: ``round(explore · k)`` picks of the batch go to the
        least-judged pairs (judged + pending + picks so far) before the greedy
        fills the rest, conditioned on them — a floor of spread-out
        comparisons that guards against a wrong model locking the design in.
        Default :data:`EXPLORE`.
    thompson : bool, optional
        ``active`` with ``ranking``/``top-k``: the misorder risks are computed
        with the gaps of one draw ``β̃ ~ N(μ, Σ)`` (from ``rng``) in place of
        the posterior mean (Thompson-style randomization of the objective).
        Default :data:`THOMPSON`.
    capacity : dict {(i, j): int}, optional
        Most picks each pair may take in this batch (e.g. its unused
        prompts); pairs absent from it are unlimited. Strategies never exceed
        it: a batch the pairs cannot fill comes back shorter, and
        ``Selection.notes`` says so (likewise when swiss runs out of
        neighbour pairs and takes the least-judged other pairs).

    Returns
    -------
    Selection
    """
    if isinstance(k, bool) or int(k) != k or k < 1:
        raise UsageError(f"batch size ({k}) must be an integer >= 1")
    k = int(k)
    if strategy not in STRATEGIES:
        raise UsageError(f"--strategy ({strategy!r}) must be one of " + ", ".join(STRATEGIES))
    if not isinstance(rng, np.random.Generator):
        raise UsageError("rng must be a numpy.random.Generator (np.random.default_rng(seed))")
    if strategy == "oracle" and true_mean is None:
        raise UsageError("the oracle strategy needs true_mean (the true strengths)")
    systems, ctx, state, ci, cj, counts, draws = _setup(
        posterior, objective, top_k, anchor, judged, pending, draws, allowed,
        true_mean if strategy == "oracle" else None, need_anchor=strategy == "anchor")
    a_idx = ctx.a_idx
    engine = "gaussian"
    # a study with no judgments (judged given and empty) and nothing pending
    no_data = judged is not None and not counts.any()
    settled, reason = _settled(ctx, systems)
    notes: list[str] = []
    capv = _capacity(capacity, ci, cj)
    if capv is not None:
        keep = capv > 0
        ci, cj, capv = ci[keep], cj[keep], capv[keep]
        total = float(capv.sum())
        if total < k:
            notes.append(f"only {int(total)} of the {k} requested comparison(s) can be issued: the pairs that "
                         f"may be chosen have no more unused slots (prompts); the batch is shorter")
            k = int(total)
        if k == 0:
            return Selection(systems, [], np.zeros(0), 0.0, 0.0, 0.0, strategy, objective, settled, reason,
                             engine, tuple(notes))
    active = strategy in ("active", "oracle") and not no_data
    pre, pre_gains, before = [], [], None
    if active and strategy == "active":
        share = EXPLORE if explore is None else float(explore)
        if not 0.0 <= share < 1.0:
            raise UsageError(f"explore ({share}) must be in [0, 1)")
        n_e = int(round(share * k))
        if n_e:
            pre = _least_judged(ci, cj, counts, n_e, rng, capv)
            capv = _spend(capv, ci, cj, pre)
            pre_gains, before = _score_sequence(ctx, state, pre)
            k -= n_e
        if (THOMPSON if thompson is None else thompson) and objective in ("ranking", "top-k"):
            ctx = _thompson_context(ctx, rng)
    if active and k > 0:
        if draws is not None and strategy == "active":
            engine = "draws"
            pairs, gains, b0 = _active_draws(ctx, state, draws, ci, cj, k, pending, capv)
        else:
            pairs, gains, b0 = _active_gaussian(ctx, state, ci, cj, k, rng, capv)
        before = b0 if before is None else before
    elif active:
        pairs, gains = [], []
    else:
        pairs = _baseline(strategy, ctx, ci, cj, counts, k, rng, capv, allowed, a_idx, anchor, notes)
        gains, before = _score_sequence(ctx, state, pairs)
    pairs, gains = pre + list(pairs), list(pre_gains) + list(gains)
    gains = np.asarray(gains, dtype=float)
    total = float(gains.sum())
    return Selection(systems, [(int(i), int(j)) for i, j in pairs], gains, total, float(before),
                     float(before - total), strategy, objective, settled, reason, engine, tuple(notes))


def _capacity(capacity, ci, cj):
    """Per-candidate pick limit (inf where the mapping says nothing), or None without a mapping."""
    if capacity is None:
        return None
    capv = np.full(ci.size, np.inf)
    index = {(int(i), int(j)): t for t, (i, j) in enumerate(zip(ci, cj))}
    for p, n in capacity.items():
        t = index.get((min(int(p[0]), int(p[1])), max(int(p[0]), int(p[1]))))
        if t is not None:
            if n is None or n < 0:
                raise UsageError(f"capacity of pair {p!r} ({'missing' if n is None else n}) must be >= 0")
            capv[t] = float(n)
    return capv


def _spend(capv, ci, cj, pairs):
    """Capacity left after ``pairs`` were picked."""
    if capv is None or not pairs:
        return capv
    capv = capv.copy()
    index = {(int(i), int(j)): t for t, (i, j) in enumerate(zip(ci, cj))}
    for p in pairs:
        capv[index[(int(p[0]), int(p[1]))]] -= 1
    return capv


def _thompson_context(ctx, rng):
    """The context with one posterior draw of the strengths as the ranking's means."""
    w, v = np.linalg.eigh(ctx.cov0)
    draw = ctx.mu + v @ (np.sqrt(np.clip(w, 0.0, None)) * rng.standard_normal(w.size))
    return replace(ctx, mu=draw - draw.mean())


def _baseline(strategy, ctx, ci, cj, counts, k, rng, capv, allowed, a_idx, anchor, notes):
    """Pairs of the non-adaptive strategies and the start design (capacity honoured)."""
    m = ctx.mu.size
    if strategy in ("active", "oracle"):
        return connected_start(m, k, rng, allowed=None if allowed is None and capv is None else
                               set(zip(ci.tolist(), cj.tolist())), capacity=capv)
    if strategy == "round-robin":
        return _least_judged(ci, cj, counts, k, rng, capv)
    if strategy == "random":
        if capv is None:
            pick = rng.integers(0, ci.size, size=k)
            return [(int(ci[t]), int(cj[t])) for t in pick]
        left, pairs = capv.copy(), []
        for _ in range(k):
            t = int(rng.choice(np.flatnonzero(left > 0)))
            left[t] -= 1
            pairs.append((int(ci[t]), int(cj[t])))
        return pairs
    if strategy == "anchor":
        sel = (ci == a_idx) | (cj == a_idx)
        if not sel.any():
            raise UsageError(f"no allowed pair includes the anchor {anchor!r}")
        pairs = _least_judged(ci[sel], cj[sel], counts, k, rng, None if capv is None else capv[sel])
        if len(pairs) < k:
            notes.append(f"anchor: the pairs with the anchor {anchor} have only {len(pairs)} unused slot(s) "
                         f"(prompts) left; the batch is shorter")
        return pairs
    if strategy == "swiss":
        return _swiss(ctx.mu, ci, cj, counts, k, rng, capv, notes)
    return _arena(ctx, ci, cj, counts, k, rng, capv)


@dataclass
class _Context:
    mu: np.ndarray
    cov0: np.ndarray
    gamma: float
    nu: float
    objective: str
    top_k: int | None
    a_idx: int | None
    risk_mode: str = "bayes"
    est_mu: np.ndarray | None = None     # oracle: the posterior mean (ctx.mu is then the truth)


# ============================================================ Gaussian path
def pair_risk(absm, s0_2, s2, mode: str = "bayes", est=None):
    """Misorder probability of system pairs after (fantasized) information.

    ``absm = |μ_k − μ_l|``, ``s0_2`` the current posterior variance of
    ``β_k − β_l`` and ``s2`` the variance after the fantasized judgments.
    Modes (see docs/methods.md, "Choosing comparisons"):

    ``bayes`` (default of ``ranking``/``top-k``)
        Expected posterior probability of misordering (preposterior: the mean
        moves when the judgments come back): ``2 T(|m| / s0, s / τ)``,
        ``τ² = s0² − s²``. It is also the probability that the posterior-mean
        order after the update differs from the true order (``θ − X'`` is
        independent of the updated mean ``X'``), so summed over pairs it is the
        expected number of discordant pairs, ``(1 − E τ_Kendall) · P / 2``.
        Myopic for one judgment (one judgment rarely flips a decision): the
        greedy scores a candidate by its best rate over a few look-ahead
        sizes (``LOOKAHEAD``).
    ``truth``
        ``E_θ[Φ(−|θ| / s)]`` with the true gap ``θ ~ N(m, s0²)`` (the current
        posterior) and an estimate of sd ``s`` around it:
        ``2 T(|m| / sqrt(s0² + s²), s / s0)``. The expected probability that
        the ranking estimated after the batch orders the pair differently from
        the truth when the estimate's error is independent of the current
        mean (a heuristic: it ignores where the current estimate stands).
    ``fixed``
        ``Φ(−|m| / s)``, the mean held fixed. With the true gap as ``m`` this
        is the probability an estimate of sd ``s`` misorders the pair. Also
        myopic: for a near-tie (``|m| ≪ s``) it barely moves.
    ``oracle`` (strategy ``oracle``)
        ``absm`` is the signed TRUE gap ``θ`` and ``est`` the signed current
        posterior-mean gap ``x``. In the linear-Gaussian model the new data
        are ``z ~ N(θ, 1/λ)``, ``λ = 1/s² − 1/s0²``, and the updated mean
        ``X' = s² (x / s0² + λ z)`` has mean ``(s² x + τ² θ) / s0²`` and sd
        ``s τ / s0``; the risk is ``P(sign X' ≠ sign θ)``
        ``= Φ(−sign(θ) (s² x + τ² θ) / (s0 s τ))`` (at ``τ = 0``: 1 when the
        current order is wrong, else 0).
    """
    if mode == "oracle":
        theta, x = np.asarray(absm, dtype=float), np.asarray(est, dtype=float)
        sgn = np.where(theta >= 0, 1.0, -1.0)
        tau2 = np.clip(s0_2 - s2, 0.0, None)
        den = np.sqrt(np.clip(s0_2 * s2 * tau2, 0.0, None))
        num = sgn * (s2 * x + tau2 * theta)
        with np.errstate(divide="ignore", invalid="ignore"):
            r = ndtr(-num / den)
        now = np.where(sgn * x < 0, 1.0, np.where(x == 0, 0.5, 0.0))
        return np.where(den > 0, r, now)
    absm = np.abs(absm)
    s2 = np.maximum(s2, 1e-300)
    if mode == "fixed":
        return ndtr(-absm / np.sqrt(s2))
    if mode == "bayes":
        with np.errstate(divide="ignore", invalid="ignore"):
            return misorder_after(absm / np.sqrt(s0_2), s2, s0_2)
    return 2.0 * owens_t(absm / np.sqrt(s0_2 + s2), np.sqrt(s2 / np.clip(s0_2, 1e-300, None)))


class _Ranking:
    """Misorder-sum bookkeeping over the relevant system pairs."""

    def __init__(self, ctx: _Context, state: _State):
        mu = ctx.mu
        self.mode = "oracle" if ctx.est_mu is not None else ctx.risk_mode
        w = _pair_weights(mu, ctx.objective, ctx.top_k)
        v0 = _diff_var(ctx.cov0)
        gap = mu[:, None] - mu[None, :]
        kr, lr = np.nonzero((w > 0) & (v0 > 0))
        # the risk only falls as information arrives: a pair below RISK_EPS stays there
        if self.mode == "oracle":
            x = ctx.est_mu[:, None] - ctx.est_mu[None, :]
            keep = ((pair_risk(x[kr, lr], v0[kr, lr], v0[kr, lr] / 2, "bayes") > RISK_EPS)
                    | (x[kr, lr] * gap[kr, lr] <= 0))
            self.est = x[kr, lr][keep]
        else:
            keep = pair_risk(gap[kr, lr], v0[kr, lr], v0[kr, lr], self.mode) > RISK_EPS
            self.est = None
        kr, lr = kr[keep], lr[keep]
        self.kr, self.lr = kr, lr
        self.absm = gap[kr, lr]
        self.s0_2 = v0[kr, lr]
        vcur = _diff_var(state.cov)
        self.s2 = np.minimum(vcur[kr, lr], self.s0_2)
        self.r = self._risk(self.s2)
        self.s2_r = self.s2.copy()          # the variance each stored risk was evaluated at

    def _risk(self, s2, col=False):
        if col:
            est = None if self.est is None else self.est[:, None]
            return pair_risk(self.absm[:, None], self.s0_2[:, None], s2, self.mode, est)
        return pair_risk(self.absm, self.s0_2, s2, self.mode, self.est)

    def value(self):
        self._refresh(np.arange(self.r.size))
        return float(self.r.sum())

    def _stale(self, rows):
        """Those of ``rows`` whose variance fell by more than ``SPARSE_REL`` since their risk was stored."""
        s2 = self.s2[rows]
        return np.unique(rows[self.s2_r[rows] - s2 > SPARSE_REL * s2])

    def _refresh(self, rows):
        stale = self._stale(rows)
        if stale.size:
            est = None if self.est is None else self.est[stale]
            self.r[stale] = pair_risk(self.absm[stale], self.s0_2[stale], self.s2[stale], self.mode, est)
            self.s2_r[stale] = self.s2[stale]

    def gains(self, state: _State, ci, cj, info, lookahead=(1,), one=False):
        """Expected reduction of the misorder sum for candidates (ci, cj).

        With ``lookahead`` (L_1, L_2, ...) the score is the best reduction per
        judgment, ``max_L [R − R(after L judgments on the pair)] / L`` (the
        KG(*) remedy for myopia, Frazier & Powell 2010); ``(1,)`` is the plain
        one-judgment gain. With ``one`` also the one-judgment gain (``1`` must
        be among the look-aheads): ``(score, gain)``. Every look-ahead's risks
        go through one :func:`pair_risk` call (the per-call overhead of the
        special functions dominated at batch sizes of a few candidates).
        """
        if self.kr.size == 0:
            z = np.zeros(ci.size)
            return (z, z) if one else z
        c = state.cov[:, ci] - state.cov[:, cj]
        ar = np.arange(ci.size)
        v = c[ci, ar] - c[cj, ar]
        dc2 = c[self.kr] - c[self.lr]
        dc2 *= dc2
        rows_l, cols_l, after_s2, seg = [], [], [], [0]
        look = tuple(lookahead) + ((1,) if one and 1 not in lookahead else ())
        fs = [n * info / (1.0 + n * info * v) for n in look]
        # Only pairs whose difference variance moves by more than SPARSE_REL of itself are
        # re-evaluated (the others' risk change is below SPARSE_REL x its own scale): the
        # expensive Owen's T runs on the few pairs a candidate actually touches. f grows with
        # the look-ahead, so the largest one's set holds every other's: one dense pass.
        f_max = np.max(fs, axis=0)
        r_all, c_all = np.nonzero(dc2 * f_max > SPARSE_REL * self.s2[:, None])
        d_all, s2_all = dc2[r_all, c_all], self.s2[r_all]
        for f in fs:
            drop = f[c_all] * d_all
            keep = drop > SPARSE_REL * s2_all
            rows_l.append(r_all[keep])
            cols_l.append(c_all[keep])
            after_s2.append(s2_all[keep] - drop[keep])
            seg.append(seg[-1] + rows_l[-1].size)
        rows = np.concatenate(rows_l)
        # stored risks gone stale (see update) are refreshed in the same call
        stale = self._stale(rows)
        every = np.concatenate([rows, stale])
        est = None if self.est is None else self.est[every]
        risk = pair_risk(self.absm[every], self.s0_2[every], np.concatenate(after_s2 + [self.s2[stale]]),
                         self.mode, est)
        after = risk[:rows.size]
        if stale.size:
            self.r[stale] = risk[rows.size:]
            self.s2_r[stale] = self.s2[stale]
        red = self.r[rows] - after
        best = g1 = None
        for t, n in enumerate(look):
            lo, hi = seg[t], seg[t + 1]
            g = np.bincount(cols_l[t], weights=red[lo:hi], minlength=ci.size) / n
            if n in lookahead:
                best = g if best is None else np.maximum(best, g)
            if n == 1:
                g1 = g
        return (best, g1) if one else best

    def update(self, c, f):
        """A pick took ``f c cᵀ`` off the covariance: new variances; risks re-evaluated lazily.

        A pair's stored risk is re-evaluated (by :meth:`gains` or :meth:`value`,
        in their own ``pair_risk`` call) once its variance has fallen by more
        than ``SPARSE_REL`` of itself since its last evaluation (the rule
        :meth:`gains` uses for which pairs a candidate moves); until then it is
        at most that much stale.
        """
        dc = c[self.kr] - c[self.lr]
        self.s2 = self.s2 - f * dc * dc


class _ClosedForm:
    """Gains of the entropy / variance / anchor objectives for all candidates.

    ``entropy``: ``½ log(1 + I v_ij)``. ``variance``: ``f ‖Σ d‖²`` with
    ``‖Σ (e_i − e_j)‖² = G_ii + G_jj − 2 G_ij``, ``G = Σ²``. ``anchor``:
    ``f Σ_c w_c (c_c − c_anchor)²`` = ``f (G_ii + G_jj − 2 G_ij)`` with
    ``G = Dᵀ diag(w) D``, ``D = Σ − 1 Σ_anchor,·``, ``w_c = (p_c (1 − p_c))²``.
    ``G`` is formed once and then updated in O(M²) per pick.
    """

    def __init__(self, ctx: _Context, state: _State):
        self.objective = ctx.objective
        self.a = ctx.a_idx
        cov = state.cov
        if self.objective == "variance":
            self.g = cov @ cov
        elif self.objective == "anchor":
            p = _logistic(ctx.mu - ctx.mu[self.a])
            self.wv = (p * (1 - p)) ** 2
            self.dm = cov - cov[self.a][None, :]
            self.g = (self.dm * self.wv[:, None]).T @ self.dm

    def gains(self, state: _State, ci, cj, info):
        cov = state.cov
        d = np.diag(cov)
        v = d[ci] + d[cj] - 2.0 * cov[ci, cj]
        if self.objective == "entropy":
            return 0.5 * np.log1p(info * v)
        f = info / (1.0 + info * v)
        gd = np.diag(self.g)
        return f * (gd[ci] + gd[cj] - 2.0 * self.g[ci, cj])

    def update(self, state: _State, c, f):
        """Σ had ``f c cᵀ`` subtracted; bring ``G`` along (``state.cov`` is already updated)."""
        if self.objective == "variance":
            sc = state.cov @ c + f * (c @ c) * c          # Σ_old c
            self.g = self.g - f * (np.outer(sc, c) + np.outer(c, sc)) + f * f * (c @ c) * np.outer(c, c)
        elif self.objective == "anchor":
            u = c - c[self.a]
            z = self.dm.T @ (self.wv * u)
            self.g = self.g - f * (np.outer(c, z) + np.outer(z, c)) + f * f * (u @ (self.wv * u)) * np.outer(c, c)
            self.dm = self.dm - f * np.outer(u, c)


def _current_value(ctx, state, rk=None):
    if rk is not None:
        return rk.value()
    return _value_gaussian(ctx.objective, ctx.mu, state.cov, ctx.top_k, ctx.a_idx)


def _active_gaussian(ctx: _Context, state: _State, ci, cj, k, rng, capv=None):
    """Greedy batch on the Gaussian posterior with fantasized rank-one updates.

    Entropy/variance/anchor: every candidate re-scored at every pick (closed
    forms, O(C) + one M×M product). Ranking/top-k: a candidate pool of the
    ``max(POOL_MIN, 2k)`` pairs with the largest own-pair gain, then lazy
    greedy (Minoux 1978): stale gains are upper bounds when gains diminish,
    so only the top few are re-scored per pick. ``capv``: picks each
    candidate may take (a candidate at its limit is out of the batch).
    """
    perm = rng.permutation(ci.size)         # seeded tie-break between equal gains
    ci, cj = ci[perm], cj[perm]
    capv = np.full(ci.size, np.inf) if capv is None else capv[perm]
    info = state.info(ci, cj)               # expected information, fixed for the batch
    ranking = ctx.objective in ("ranking", "top-k")
    rk = _Ranking(ctx, state) if ranking else None
    before = _current_value(ctx, state, rk)
    pairs, gains = [], []
    if not ranking:
        cf = _ClosedForm(ctx, state)
        left = capv.copy()
        for _ in range(k):
            g = np.where(left > 0, cf.gains(state, ci, cj, info), -np.inf)
            t = int(np.argmax(g))
            left[t] -= 1
            pairs.append((int(ci[t]), int(cj[t])))
            gains.append(float(g[t]))
            cf.update(state, *state.apply(ci[t], cj[t], info[t]))
        return pairs, gains, before
    pool = _ranking_pool(ctx, state, ci, cj, info, max(POOL_MIN, 2 * k))
    if capv[pool].sum() < k:                # the pool cannot hold the batch: every candidate
        pool = np.arange(ci.size)
    pi, pj, pinfo, pcap = ci[pool], cj[pool], info[pool], capv[pool]
    one = np.zeros(pi.size)

    def score(t):
        st, one[t] = rk.gains(state, pi[t], pj[t], pinfo[t], LOOKAHEAD, one=True)
        return st
    stale = _chunked(score, pi.size)
    # batch diversity: a pair holding `cap` picks of this batch yields to any candidate
    # worth at least CAP_YIELD of its own (look-ahead) score; it keeps taking picks
    # when nothing else comes close (the objective says so)
    cap = _batch_cap(k)
    taken = np.zeros(pi.size, np.int64)
    for _ in range(k):
        dead = taken >= pcap
        stale[dead] = -np.inf
        blocked = (taken >= cap) & ~dead
        fresh = dead.copy()
        while not blocked.all():
            best = int(np.argmax(np.where(blocked, -np.inf, stale)))
            if fresh[best]:
                break
            masked = np.where(fresh | blocked, -np.inf, stale)
            top = np.argsort(-masked, kind="stable")[:LAZY_CHUNK]
            top = top[np.isfinite(masked[top])]
            stale[top] = score(top)
            fresh[top] = True
        if blocked.any():           # the best open candidate is fresh: compare it with the capped ones
            bi = np.flatnonzero(blocked)
            # stale scores are upper bounds (gains diminish): when the open candidate beats
            # CAP_YIELD x the largest of them it wins without re-scoring the capped ones
            open_ok = not blocked.all() and np.isfinite(stale[best])
            if not (open_ok and stale[best] >= CAP_YIELD * stale[bi].max()):
                stale[bi] = score(bi)
                best = _capped_argmax(np.where(dead, -np.inf, stale), taken, cap)
        pairs.append((int(pi[best]), int(pj[best])))
        gains.append(float(one[best]))      # fresh: re-scored at this pick
        taken[best] += 1
        c, f = state.apply(pi[best], pj[best], pinfo[best])
        rk.update(c, f)
    return pairs, gains, before


def _batch_cap(k):
    """Picks one pair may take in a batch of ``k`` before it yields (``BATCH_CAP``)."""
    return k if BATCH_CAP is None else max(CAP_MIN, int(np.ceil(BATCH_CAP * k)))


def _capped_argmax(score, taken, cap):
    """Best candidate under the batch cap: a pair holding ``cap`` picks yields to the best
    other candidate unless that one is worth less than ``CAP_YIELD`` of its score."""
    blocked = taken >= cap
    if not blocked.any():
        return int(np.argmax(score))
    t_open = int(np.argmax(np.where(blocked, -np.inf, score))) if not blocked.all() else -1
    t_cap = int(np.argmax(np.where(blocked, score, -np.inf)))
    return t_cap if t_open < 0 or score[t_open] < CAP_YIELD * score[t_cap] else t_open


def _chunked(fn, n, size=64):
    return np.concatenate([fn(np.arange(s, min(n, s + size))) for s in range(0, n, size)]) \
        if n else np.zeros(0)


def _ranking_pool(ctx: _Context, state, ci, cj, info, size):
    """Indices of the candidates with the largest own-pair misorder gain."""
    if ci.size <= size:
        return np.arange(ci.size)
    d = np.diag(state.cov)
    v = d[ci] + d[cj] - 2.0 * state.cov[ci, cj]
    mu = state.mu if ctx.est_mu is None else ctx.est_mu
    absm = np.abs(mu[ci] - mu[cj])
    s2_new = v - info * v * v / (1.0 + info * v)
    own = pair_risk(absm, v, v, ctx.risk_mode) - pair_risk(absm, v, s2_new, ctx.risk_mode)
    return np.sort(np.argsort(-own, kind="stable")[:size])


# ======================================================= fixed-pair scoring
def _score_sequence(ctx: _Context, state: _State, pairs):
    """Gains of a given sequence of picks under the objective (fantasized)."""
    ranking = ctx.objective in ("ranking", "top-k")
    rk = _Ranking(ctx, state) if ranking else None
    cf = None if ranking else _ClosedForm(ctx, state)
    before = _current_value(ctx, state, rk)
    gains = []
    for i, j in pairs:
        ci, cj = np.array([i]), np.array([j])
        info = state.info(ci, cj)
        if ranking:
            g = rk.gains(state, ci, cj, info)[0]
            c, f = state.apply(i, j, info[0])
            rk.update(c, f)
        else:
            g = cf.gains(state, ci, cj, info)[0]
            cf.update(state, *state.apply(i, j, info[0]))
        gains.append(float(g))
    return gains, before


# ============================================================ baselines
def _least_judged(ci, cj, counts, k, rng, capv=None):
    """Least-judged pairs first; ties broken by a seeded random priority.

    With ``capv`` (picks each candidate may still take) an exhausted pair is
    skipped; fewer than ``k`` pairs come back when every pair is exhausted.
    """
    size = ci.size
    if size == 0:
        return []
    key = counts[ci, cj].astype(np.int64) * size + rng.permutation(size)   # (count, priority)
    dead = np.iinfo(np.int64).max
    left = None if capv is None else capv.copy()
    if left is not None:
        key[left <= 0] = dead
    pairs = []
    for _ in range(k):
        t = int(np.argmin(key))
        if key[t] == dead:
            break
        pairs.append((int(ci[t]), int(cj[t])))
        key[t] += size
        if left is not None:
            left[t] -= 1
            if left[t] <= 0:
                key[t] = dead
    return pairs


def _swiss(mu, ci, cj, counts, k, rng, capv, notes: list[str]):
    """Neighbours in the posterior-mean ranking (ties in the mean broken by rng).

    When the neighbour pairs are not allowed or run out of capacity, the rest
    of the batch goes to the least-judged other pairs, with a note.
    """
    m = mu.size
    order = np.lexsort((rng.random(m), -mu))
    nb = {(min(a, b), max(a, b)) for a, b in zip(order[:-1], order[1:])}
    sel = np.array([(int(i), int(j)) in nb for i, j in zip(ci, cj)], dtype=bool)
    pairs = _least_judged(ci[sel], cj[sel], counts, k, rng, None if capv is None else capv[sel])
    if len(pairs) < k:
        rest = _least_judged(ci, cj, counts + _pair_counts_of(pairs, m), k - len(pairs), rng,
                             _spend(capv, ci, cj, pairs))
        what = "no pair of neighbours in the current ranking can be issued" if not pairs else \
            f"the neighbour pairs in the current ranking could take only {len(pairs)} of {k} comparison(s)"
        notes.append(f"swiss: {what}; took the least-judged pairs that can still be issued instead "
                     f"({len(rest)} comparison(s))")
        pairs += rest
    return pairs


def _pair_counts_of(pairs, m):
    mat = np.zeros((m, m), dtype=np.int64)
    for i, j in pairs:
        mat[i, j] += 1
        mat[j, i] += 1
    return mat


def arena_weights(posterior: bt.GaussianPosterior, ci, cj, n) -> np.ndarray:
    """Chatbot Arena eq. 9 sampling weights for pairs ``(ci, cj)``.

    ``w_a = sqrt(Σ_aa / n_a) − sqrt(Σ_aa / (n_a + 1))`` where ``n_a`` is
    the pair's judgment count (judged + pending + picked so far), floored at 1
    (the rule is undefined at 0), and ``Σ_aa``
    the variance of the pair's win-rate estimate ``p = σ(μ_i − μ_j)`` from the
    Gaussian posterior by the delta method, ``(p (1 − p))² Var(β_i − β_j)``.
    Weights are floored at ``ARENA_FLOOR`` × the largest weight (so no pair's
    probability is 0) and normalised to probabilities.

    Chiang et al. (2024), "Chatbot Arena", ICML, eq. 9.
    """
    mu = np.asarray(posterior.mean, dtype=float)
    cov = _project(np.asarray(posterior.cov, dtype=float))
    return _arena_probs(mu, cov, np.asarray(ci), np.asarray(cj), np.asarray(n, dtype=float))


def _arena_probs(mu, cov, ci, cj, n):
    p = _logistic(mu[ci] - mu[cj])
    d = np.diag(cov)
    sig = (p * (1 - p)) ** 2 * np.clip(d[ci] + d[cj] - 2 * cov[ci, cj], 0.0, None)
    n = np.maximum(n, 1.0)                  # eq. 9 is undefined at n = 0: floor the count at 1
    w = np.sqrt(sig / n) - np.sqrt(sig / (n + 1.0))
    w = np.maximum(w, ARENA_FLOOR * w.max()) if w.max() > 0 else np.ones_like(w)
    return w / w.sum()


def _arena(ctx, ci, cj, counts, k, rng, capv=None):
    n = counts[ci, cj].astype(float).copy()
    left = None if capv is None else capv.copy()
    pairs = []
    for _ in range(k):
        p = _arena_probs(ctx.mu, ctx.cov0, ci, cj, n)
        if left is not None:
            p = np.where(left > 0, p, 0.0)
            if p.sum() <= 0:
                break
            p = p / p.sum()
        t = int(rng.choice(ci.size, p=p))
        pairs.append((int(ci[t]), int(cj[t])))
        n[t] += 1
        if left is not None:
            left[t] -= 1
    return pairs


def connected_start(m: int, k: int, rng: np.random.Generator, *, allowed=None,
                    capacity=None) -> list[tuple[int, int]]:
    """A connected start design for a study with no judgments.

    A random cycle through all ``m`` systems (``m`` pairs; for ``m = 2`` the
    single pair), then round-robin fill (least-used pairs first, ties broken by
    ``rng``). With ``allowed`` pairs, a random spanning tree of the allowed
    graph (Kruskal on shuffled edges) replaces the cycle. When ``k`` is smaller
    than the cycle, the first ``k`` edges are a path (connected over the
    systems it touches). ``capacity`` (per allowed pair in sorted order, as
    :func:`select_pairs` builds it; every allowed pair at least 1) limits the
    fill. Deterministic given the ``rng`` state.
    """
    if allowed is None:
        order = rng.permutation(m)
        ring = [(int(order[t]), int(order[(t + 1) % m])) for t in range(m if m > 2 else 1)]
        ci, cj = _candidates(m, None)
    else:
        ci, cj = _candidates(m, allowed)
        parent = list(range(m))

        def root(x):
            while parent[x] != x:
                parent[x] = parent[parent[x]]
                x = parent[x]
            return x
        ring = []
        for t in rng.permutation(ci.size):
            a, b = root(int(ci[t])), root(int(cj[t]))
            if a != b:
                parent[a] = b
                ring.append((int(ci[t]), int(cj[t])))
    ring = [(min(a, b), max(a, b)) for a, b in ring]
    pairs = ring[:k]
    if len(pairs) < k:
        counts = np.zeros((m, m), dtype=np.int64)
        for a, b in pairs:
            counts[a, b] += 1
            counts[b, a] += 1
        pairs += _least_judged(ci, cj, counts, k - len(pairs), rng, _spend(capacity, ci, cj, pairs))
    return pairs


# ================================================================= draws path
def _draws_value(ctx, draws, wmat, rel=None):
    """Objective value for each row of weights ``wmat`` (n, S) over ``draws``."""
    obj = ctx.objective
    if obj in ("ranking", "top-k"):
        # P(misorder) from the re-weighted moments of β_k − β_l, Φ(−|mean| / sd):
        # the empirical min(P, 1 − P) of indicators would add O(S^-1/2) noise that the
        # min turns into a positive bias of every gain
        diffs = rel[3]
        mean = wmat @ diffs
        sd = np.sqrt(np.clip(wmat @ (diffs * diffs) - mean * mean, 1e-300, None))
        return ndtr(-np.abs(mean) / sd).sum(axis=1)
    if obj == "variance":
        mean = wmat @ draws
        return (wmat @ (draws * draws) - mean * mean).sum(axis=1)
    if obj == "anchor":
        x = _logistic(draws - draws[:, [ctx.a_idx]])
        mean = wmat @ x
        return (wmat @ (x * x) - mean * mean).sum(axis=1)
    q = _basis(draws.shape[1])
    z = draws @ q
    out = np.empty(wmat.shape[0])
    for r, w in enumerate(wmat):
        if not w.any():
            out[r] = 0.0
            continue
        zc = z - w @ z
        out[r] = 0.5 * np.linalg.slogdet((zc * w[:, None]).T @ zc)[1]
    return out


class _DrawsScorer:
    """Expected reductions by importance re-weighting of posterior draws.

    For a candidate, each position (balanced) and outcome ``o`` (A / B / tie)
    the draws are re-weighted by ``P(o | β_s)``; the expected objective after
    the judgment is ``Σ_o P(o) value(w_o)`` (``ranking``/``top-k`` in the
    ``truth`` mode: ``Σ_kl E_θ[Φ(−|θ_kl| / s'_kl)]`` with ``s'²`` the expected
    re-weighted variance). Earlier picks and pending items are fantasized as
    Gaussian pseudo-observations centred on the current weighted mean,
    ``w_s ∝ w_s exp(−½ I (β_si − β_sj − m_ij)²)`` — the draws analogue of the
    rank-one precision update. ``pairs`` (kr, lr) restricts the misorder sum
    (the Gaussian path's relevant pairs).
    """

    def __init__(self, ctx: _Context, draws, pending, pairs=None):
        self.ctx = ctx
        b = draws - draws.mean(axis=1, keepdims=True)
        self.b = b
        self.w = np.full(b.shape[0], 1.0 / b.shape[0])
        if pending is not None and pending.n_cells:
            n = (pending.usable + pending.invalid).astype(float)
            for a, bb, nn in zip(pending.a, pending.b, n):
                if nn > 0:
                    self.fantasize(a, bb, nn)
        self.rel = None
        if ctx.objective in ("ranking", "top-k"):
            if pairs is None:
                pairs = np.nonzero(_pair_weights(ctx.mu, ctx.objective, ctx.top_k) > 0)
            kr, lr = pairs
            self.rel = (kr, lr, None, b[:, kr] - b[:, lr])

    def current(self):
        if self.rel is not None and self.ctx.risk_mode == "truth":
            return _draws_truth_risk(self.w[None, None, :], np.ones((1, 1)), self.rel)[0]
        return float(_draws_value(self.ctx, self.b, self.w[None, :], self.rel)[0])

    def gains(self, ci, cj):
        """Expected reduction from one judgment, for each candidate (vectorised)."""
        cur = self.current()
        s = self.b.shape[0]
        chunk = max(1, 2_000_000 // (6 * s))
        out = []
        for lo in range(0, len(ci), chunk):
            rows, probs = _outcome_rows(self.ctx, self.b, self.w, ci[lo:lo + chunk], cj[lo:lo + chunk])
            if self.rel is not None and self.ctx.risk_mode == "truth":
                after = _draws_truth_risk(rows, probs, self.rel)
            else:
                c = rows.shape[0]
                vals = _draws_value(self.ctx, self.b, rows.reshape(c * 6, s), self.rel).reshape(c, 6)
                after = (probs * np.where(probs > 0, vals, 0.0)).sum(axis=1)   # no ties when ν = 0
            out.append(cur - after)
        return np.concatenate(out) if out else np.zeros(0)

    def fantasize(self, i, j, n=1.0):
        info = n * _draws_info(self.ctx, self.b, self.w, i, j)
        self.w = _pseudo_obs(self.b, self.w, i, j, info)


def _outcome_rows(ctx, b, w, ci, cj):
    """Re-weighted draws per candidate × (position, outcome): rows (C, 6, S), P (C, 6)."""
    d = b[:, ci] - b[:, cj]                      # (S, C)
    rows, probs = [], []
    for sign in (1.0, -1.0):                     # i shown left, then right
        for p_o in bt.outcome_probs(sign * d + ctx.gamma, ctx.nu):
            wo = w[:, None] * p_o
            tot = wo.sum(axis=0)
            rows.append((wo / np.where(tot > 0, tot, 1.0)).T)
            probs.append(0.5 * tot)
    return np.stack(rows, axis=1), np.stack(probs, axis=1)


def _active_draws(ctx: _Context, state: _State, draws, ci, cj, k, pending, capv=None):
    """Greedy batch scored on the draws, conditioned with Gaussian updates.

    Each candidate's one-judgment gain ``g_draws`` is computed once on the
    re-weighted draws (:class:`_DrawsScorer`; with more than ``DRAWS_POOL``
    candidates, the ``DRAWS_POOL`` with the largest Gaussian gains). Within
    the batch, the picks before are accounted for by the Gaussian rank-one
    updates: a candidate's score is ``g_draws · G_t / G_0``, with ``G_t`` its
    Gaussian score (with look-ahead for ranking) after the earlier picks and
    ``G_0`` before them. (Fantasizing on the draws themselves either leaves
    the mean in place while shrinking the variance — the gain of the same
    pair then grows — or, with sampled outcomes, lets the fantasized mean
    drift; both spoil the batch.)
    """
    ranking = ctx.objective in ("ranking", "top-k")
    rk = _Ranking(ctx, state) if ranking else None
    capv = np.full(ci.size, np.inf) if capv is None else capv
    if ci.size > DRAWS_POOL:
        g = _gaussian_gains(ctx, state, ci, cj)
        keep = np.sort(np.argsort(-g, kind="stable")[:DRAWS_POOL])
        if capv[keep].sum() >= k:
            ci, cj, capv = ci[keep], cj[keep], capv[keep]
    sc = _DrawsScorer(ctx, draws, pending, None if rk is None else (rk.kr, rk.lr))
    before = sc.current()
    g_draws = sc.gains(ci, cj)
    info = state.info(ci, cj)
    cf = None if ranking else _ClosedForm(ctx, state)

    def gauss(look):
        if ranking:
            return rk.gains(state, ci, cj, info, look)
        return cf.gains(state, ci, cj, info)
    g0, g0_one = gauss(LOOKAHEAD), gauss((1,))
    pairs, gains = [], []
    cap, taken = _batch_cap(k), np.zeros(ci.size, np.int64)
    for _ in range(k):
        with np.errstate(divide="ignore", invalid="ignore"):
            score = np.where(g0 > 0, g_draws * gauss(LOOKAHEAD) / g0, 0.0)
            one = np.where(g0_one > 0, g_draws * gauss((1,)) / g0_one, 0.0)
        score = np.where(taken >= capv, -np.inf, score)
        t = _capped_argmax(score, taken, cap) if ranking else int(np.argmax(score))
        taken[t] += 1
        pairs.append((int(ci[t]), int(cj[t])))
        gains.append(float(one[t]))
        c, f = state.apply(ci[t], cj[t], info[t])
        if ranking:
            rk.update(c, f)
        else:
            cf.update(state, c, f)
    return pairs, gains, before


def _draws_truth_risk(rows, probs, rel):
    """``truth`` risk on draws, per candidate: Σ_kl E_θ[Φ(−|θ_kl| / s'_kl)].

    ``rows`` (C, O, S) re-weighted draws with outcome probabilities ``probs``
    (C, O). ``θ`` runs over the batch-start draws (the truth as the posterior
    sees it); ``s'²`` is the expected posterior variance of ``β_k − β_l``
    after the judgment: ``Σ_o P(o) Var_{w_o}`` (law of total variance).
    """
    diffs = rel[3]
    mean = rows @ diffs                                  # (C, O, P)
    var = np.einsum("co,cop->cp", probs, rows @ (diffs * diffs) - mean * mean)
    sd = np.sqrt(np.clip(var, 1e-300, None))
    return np.array([ndtr(-np.abs(diffs) / sd_c).mean(axis=0).sum() for sd_c in sd])


def _draws_info(ctx, b, w, i, j):
    d = b[:, i] - b[:, j]
    return float(w @ (0.5 * (bt.information(d + ctx.gamma, ctx.nu) + bt.information(d - ctx.gamma, ctx.nu))))


def _pseudo_obs(b, w, i, j, info):
    d = b[:, i] - b[:, j]
    m = w @ d
    lw = np.log(np.maximum(w, 1e-300)) - 0.5 * info * (d - m) ** 2
    lw -= lw.max()
    w = np.exp(lw)
    return w / w.sum()


def _gaussian_gains(ctx, state, ci, cj):
    info = state.info(ci, cj)
    if ctx.objective in ("ranking", "top-k"):
        rk = _Ranking(ctx, state)
        return _chunked(lambda s: rk.gains(state, ci[s], cj[s], info[s]), ci.size)
    return _ClosedForm(ctx, state).gains(state, ci, cj, info)


# ================================================================ stopping
def _settled(ctx: _Context, systems) -> tuple[bool, str]:
    mu, cov = (ctx.mu if ctx.est_mu is None else ctx.est_mu), ctx.cov0
    s = np.sqrt(_diff_var(cov))
    with np.errstate(divide="ignore", invalid="ignore"):
        p_order = ndtr(np.abs(mu[:, None] - mu[None, :]) / s)
    p_order = np.where(s > 0, p_order, np.where(mu[:, None] == mu[None, :], 0.5, 1.0))
    if ctx.objective == "anchor":
        a = ctx.a_idx
        with np.errstate(divide="ignore", invalid="ignore"):
            p_beat = ndtr((mu - mu[a]) / s[:, a])
        others = [c for c in range(mu.size) if c != a]
        unsure = [c for c in others if 1 - SETTLE_PROB <= p_beat[c] <= SETTLE_PROB]
        if not unsure:
            return True, (f"every system beats or loses to the anchor {systems[a]} with probability "
                          f"> {SETTLE_PROB:g}: you can stop; more comparisons buy little")
        c = min(unsure, key=lambda c: abs(p_beat[c] - 0.5))
        return False, (f"{len(unsure)} system(s) not yet separated from the anchor; least settled: "
                       f"{systems[c]} beats {systems[a]} with probability {p_beat[c]:.2f}")
    order = np.argsort(-mu, kind="stable")
    if ctx.objective == "top-k":
        pairs = [(int(x), int(y)) for x in order[:ctx.top_k] for y in order[ctx.top_k:]]
        what = f"every top-{ctx.top_k} system is ahead of every other system"
    else:
        pairs = [(int(x), int(y)) for x, y in zip(order[:-1], order[1:])]
        what = "every adjacent pair in the posterior-mean ranking is ordered"
    probs = np.array([p_order[x, y] for x, y in pairs])
    worst = int(np.argmin(probs))
    x, y = pairs[worst]
    if probs[worst] > SETTLE_PROB:
        return True, (f"{what} with probability > {SETTLE_PROB:g} (least: {systems[x]} over "
                      f"{systems[y]}, {probs[worst]:.3f}): you can stop; more comparisons buy little")
    return False, (f"not settled: P({systems[x]} ahead of {systems[y]}) = {probs[worst]:.2f} "
                   f"<= {SETTLE_PROB:g}")
