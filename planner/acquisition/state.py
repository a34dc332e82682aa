"""The inputs of a selection, checked, and the Gaussian posterior under fantasized updates.

:class:`SelectionContext` is the frozen batch-start view (means, covariance, objective,
options); :class:`SelectionState` carries the covariance as picks and pending items are
fantasized (rank-one precision updates, Sherman–Morrison).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from planner.acquisition.objectives import (
    anchor_index,
    check_objective,
    expected_information,
    project_sum_to_zero,
    sum_to_zero_basis,
)
from planner.acquisition.options import SelectionOptions
from planner.acquisition.positions import ordered_counts
from planner.counts import Counts
from planner.errors import DataError, UsageError, parameters_of, shown


@dataclass(frozen=True, eq=False)
class SelectionContext:
    """The batch-start view every rule reads: strengths, covariance, objective, options.

    ``cov0`` is the strengths' covariance (M, M); ``joint0`` the joint covariance of
    ``(β, γ)`` (M + 1, M + 1), γ the position effect, last.
    """

    mu: np.ndarray
    cov0: np.ndarray
    gamma: float
    nu: float
    objective: str
    top_k: int | None
    a_idx: int | None
    opts: SelectionOptions
    est_mu: np.ndarray | None = None     # oracle: the posterior mean (ctx.mu is then the truth)
    joint0: np.ndarray | None = None


class SelectionState:
    """The joint Gaussian of ``(β, γ)`` under fantasized rank-one precision updates.

    A judgment of ``(i, j)`` shown with ``i`` left (``s = +1``) or right (``s = −1``) has
    design vector ``x = e_i − e_j + s e_γ``: it adds ``I x xᵀ`` to the precision, and
    Sherman–Morrison gives ``Σ' = Σ − f c cᵀ``, ``c = Σ x``, ``f = I / (1 + I xᵀ Σ x)``.
    The strengths' block of ``Σ'`` then carries what the verdict cannot tell apart from
    the position effect.
    """

    def __init__(self, mu, cov, gamma, nu):
        self.mu, self.gamma, self.nu = mu, gamma, nu
        self.cov = cov.copy()
        self.g = mu.size                     # index of γ in the joint
        self._step = None

    def var(self, ci, cj, s):
        """``xᵀ Σ x`` for the design vectors of (ci, cj) in orders ``s``."""
        cov, g = self.cov, self.g
        d = np.diag(cov)
        return d[ci] + d[cj] - 2.0 * cov[ci, cj] + s * s * d[g] + 2.0 * s * (cov[ci, g] - cov[cj, g])

    def info(self, ci, cj, s):
        """Expected information of one judgment of (ci, cj) in order ``s``, ``δ ~ N(xᵀ(μ, γ̂), xᵀ Σ x)``."""
        return expected_information(self.mu[ci] - self.mu[cj] + s * self.gamma, self.var(ci, cj, s), 0.0,
                                    self.nu, both_positions=False)

    def direction(self, ci, cj, s):
        """``c = Σ x`` for each candidate, columns (M + 1, C)."""
        c = self.cov[:, ci] - self.cov[:, cj]
        c += self.cov[:, [self.g]] * s
        return c

    def apply(self, i, j, s, info):
        """Λ += info x xᵀ with x = e_i − e_j + s e_γ; returns c = Σ x and f."""
        c = self.cov[:, i] - self.cov[:, j] + s * self.cov[:, self.g]
        f = info / (1.0 + info * (c[i] - c[j] + s * c[self.g]))
        if self._step is None:
            self._step = np.empty_like(self.cov)
        np.multiply.outer(f * c, c, out=self._step)      # two passes over the (M+1)² matrix, no allocation
        self.cov -= self._step
        return c, f

    def apply_counts(self, pending: Counts):
        """Fantasize every pending item (its cell's position known: ``a`` left) at once."""
        n = (pending.usable + pending.invalid).astype(float)
        keep = n > 0
        a, b, n = pending.a[keep], pending.b[keep], n[keep]
        if a.size == 0:
            return
        info = n * self.info(a, b, np.ones(a.size))
        m, g = self.mu.size, self.g
        lap = np.zeros((m + 1, m + 1))
        for r, sr in ((a, 1.0), (b, -1.0), (np.full(a.size, g), 1.0)):
            for c, sc in ((a, 1.0), (b, -1.0), (np.full(a.size, g), 1.0)):
                np.add.at(lap, (r, c), sr * sc * info)
        q = _joint_basis(m, self.cov[g, g] > 0)
        sub = q.T @ self.cov @ q
        prec = np.linalg.inv(sub) + q.T @ lap @ q
        self.cov = _project_joint(q @ np.linalg.inv(prec) @ q.T, m)


@dataclass(frozen=True, eq=False)
class Pick:
    """The next pick of each candidate: its order ``s`` (+1: ``ci`` left), its expected
    information ``info``, whether the pair can still be shown both ways (``free``) and the
    mean information of its two orders (``bal``)."""

    s: np.ndarray
    info: np.ndarray
    free: np.ndarray
    bal: np.ndarray

    def subset(self, idx) -> Pick:
        return Pick(self.s[idx], self.info[idx], self.free[idx], self.bal[idx])

    @classmethod
    def of(cls, state: SelectionState, ci, cj, orders, share=None) -> Pick:
        """From the candidates' :class:`~planner.acquisition.positions.Orders` (information now)."""
        one = np.ones(ci.size)
        return cls.choose(state.info(ci, cj, one), state.info(ci, cj, -one), orders, share)

    @classmethod
    def choose(cls, fwd, bwd, orders, share=None, idx=None) -> Pick:
        """From the information of each order (``fwd``: ``ci`` left) and the orders' state."""
        s = orders.signs(idx)
        sl = slice(None) if idx is None else idx
        fwd, bwd = fwd[sl], bwd[sl]
        scale = 1.0 if share is None else share.now(idx)
        return cls(s, np.where(s > 0, fwd, bwd) * scale, orders.free(idx), 0.5 * (fwd + bwd) * scale)


def _joint_basis(m: int, with_gamma: bool) -> np.ndarray:
    """Orthonormal basis of the joint's support: sum-to-zero strengths (and γ when it is uncertain)."""
    q = np.zeros((m + 1, m - 1 + int(with_gamma)))
    q[:m, :m - 1] = sum_to_zero_basis(m)
    if with_gamma:
        q[m, m - 1] = 1.0
    return q


def _project_joint(cov: np.ndarray, m: int) -> np.ndarray:
    """The joint with its strengths' block projected to sum to zero (rows and columns), symmetrised."""
    out = cov.copy()
    out[:m] -= out[:m].mean(axis=0, keepdims=True)
    out[:, :m] -= out[:, :m].mean(axis=1, keepdims=True)
    return 0.5 * (out + out.T)


def _joint(posterior, cov: np.ndarray) -> np.ndarray:
    """The joint covariance of (β, γ) from a posterior (γ known when it carries no variance)."""
    m = cov.shape[0]
    joint = np.zeros((m + 1, m + 1))
    joint[:m, :m] = cov
    g_var = float(getattr(posterior, "gamma_var", 0.0) or 0.0)
    g_cov = getattr(posterior, "gamma_cov", None)
    if not (np.isfinite(g_var) and g_var >= 0.0):
        raise DataError(f"posterior gamma_var ({g_var}) must be a finite number >= 0")
    if g_var > 0.0:
        joint[m, m] = g_var
        if g_cov is not None:
            g_cov = np.asarray(g_cov, dtype=float)
            if g_cov.shape != (m,) or not np.all(np.isfinite(g_cov)):
                raise DataError(f"posterior gamma_cov must be finite with shape ({m},), got {g_cov.shape}")
            g_cov = g_cov - g_cov.mean()
            # Cauchy–Schwarz: a covariance no Gaussian has would make the updates meaningless
            if np.any(g_cov * g_cov > np.diag(cov) * g_var * (1 + 1e-9) + 1e-300):
                raise DataError("posterior gamma_cov exceeds what the variances allow (|cov| > sd x sd)")
            joint[:m, m] = joint[m, :m] = g_cov
    return joint


def _check_counts(counts, systems, name):
    if counts is not None and tuple(counts.systems) != tuple(systems):
        raise DataError(f"{shown(name)} counts are over systems {list(counts.systems)[:5]}..., "
                        f"the posterior over {list(systems)[:5]}...; they must match", parameters=parameters_of(name))


def _pairs_array(pairs, what: str, parameter: str) -> np.ndarray:
    """``pairs`` (an iterable of 2-sequences of integers) as an (n, 2) int64 array (array operations
    instead of a Python loop over tens of thousands of pairs)."""
    try:
        arr = np.array(list(pairs), dtype=float).reshape(-1, 2)
    except (TypeError, ValueError):
        raise UsageError(f"{what}: every pair must be two system indices", parameters=(parameter,)) from None
    if not np.all(arr == np.round(arr)):
        raise UsageError(f"{what}: every pair must be two integer system indices", parameters=(parameter,))
    return arr.astype(np.int64)


def candidate_pairs(m, allowed):
    if allowed is None:
        i, j = np.triu_indices(m, 1)
        return i.astype(np.int64), j.astype(np.int64)
    given = list(allowed)
    arr = _pairs_array(given, "allowed pairs", "allowed")
    bad = (arr[:, 0] == arr[:, 1]) | (arr.min(axis=1) < 0) | (arr.max(axis=1) >= m)
    if bad.any():
        p = given[int(np.argmax(bad))]
        raise UsageError(f"allowed pair {p!r} is not a pair of distinct system indices in [0, {m - 1}]",
                         parameters=("allowed",))
    if not arr.size:
        raise UsageError("allowed pairs: the set is empty", parameters=("allowed",))
    keys = np.unique(arr.min(axis=1) * m + arr.max(axis=1))
    return keys // m, keys % m


def pair_capacity(capacity, ci, cj):
    """Per-candidate pick limit (inf where the mapping says nothing), or None without a mapping.

    A pair may be named in either order; a pair that is not a candidate is ignored; named twice,
    the later entry counts. A missing or negative limit of a candidate is an error.
    """
    if capacity is None:
        return None
    capv = np.full(ci.size, np.inf)
    if not capacity:
        return capv
    names = list(capacity)
    vals = list(capacity.values())
    arr = _pairs_array(names, "capacity", "capacity")
    lo, hi = arr.min(axis=1), arr.max(axis=1)
    m = int(max(ci.max(initial=0), cj.max(initial=0))) + 1
    cand = ci * m + cj                                     # sorted (candidates come sorted)
    key = np.where((lo >= 0) & (hi < m), lo * m + hi, -1)
    pos = np.minimum(np.searchsorted(cand, key), cand.size - 1)
    hit = (key >= 0) & (cand[pos] == key)
    nums = np.array([np.nan if v is None else v for v in vals], dtype=float)
    wrong = hit & ~(nums >= 0)
    if wrong.any():
        t = int(np.argmax(wrong))
        n = vals[t]
        raise UsageError(f"capacity of pair {names[t]!r} ({'missing' if n is None else n}) must be >= 0",
                         parameters=("capacity",))
    rev = np.flatnonzero(hit)[::-1]                        # the later entry counts
    _, first = np.unique(pos[rev], return_index=True)
    take = rev[first]
    capv[pos[take]] = nums[take]
    return capv


def spend(capv, ci, cj, pairs):
    """Capacity left after ``pairs`` were picked."""
    if capv is None or not pairs:
        return capv
    capv = capv.copy()
    index = {(int(i), int(j)): t for t, (i, j) in enumerate(zip(ci, cj))}
    for p in pairs:
        capv[index[(int(p[0]), int(p[1]))]] -= 1
    return capv


@dataclass(frozen=True, eq=False)
class _Setup:
    """A checked call: the context, the fantasized state, the candidates and what was judged."""

    systems: tuple
    ctx: SelectionContext
    state: SelectionState
    ci: np.ndarray
    cj: np.ndarray
    counts: np.ndarray          # judged + pending per unordered pair, symmetric (M, M)
    ordered: np.ndarray         # judged + pending per presentation order (M, M): [left, right]
    draws: np.ndarray | None


def setup(posterior, objective, top_k, anchor, judged, pending, draws, allowed, true_mean,
           opts: SelectionOptions, need_anchor=False) -> _Setup:
    """Validate the inputs; build the context, the fantasized state and the candidates."""
    systems = tuple(posterior.systems)
    m = len(systems)
    if m < 2:
        raise UsageError(f"need at least two systems to compare (got {m})", parameters=("posterior",))
    check_objective(objective, m, systems, top_k, anchor)
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
            raise UsageError(f"true_mean must be finite with shape ({m},), got {true_mean.shape}",
                             parameters=("true_mean",))
        est_mu = mu - mu.mean()
        mu = true_mean
    if draws is not None:
        draws = np.asarray(draws, dtype=float)
        if draws.ndim != 2 or draws.shape[1] != m or draws.shape[0] < 2:
            raise DataError(f"draws must have shape (S, {m}) with S >= 2, got {draws.shape}")
    a_idx = anchor_index(systems, anchor) if (need_anchor or objective == "anchor") else None
    mu = mu - mu.mean()
    cov = project_sum_to_zero(cov)
    ci, cj = candidate_pairs(m, allowed)
    ordered = ordered_counts(judged, m, all_fields=False) + ordered_counts(pending, m, all_fields=True)
    joint = _joint(posterior, cov)
    ctx = SelectionContext(mu, cov, float(posterior.gamma), float(posterior.nu), objective, top_k, a_idx,
                   opts, est_mu, joint)
    state = SelectionState(mu, joint, ctx.gamma, ctx.nu)
    if pending is not None and pending.n_cells:
        state.apply_counts(pending)
    return _Setup(systems, ctx, state, ci, cj, ordered + ordered.T, ordered, draws)
