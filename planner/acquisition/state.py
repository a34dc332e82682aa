"""The inputs of a selection, checked, and the Gaussian posterior under fantasized updates.

:class:`_Context` is the frozen batch-start view (means, covariance, objective,
options); :class:`_State` carries the covariance as picks and pending items are
fantasized (rank-one precision updates, Sherman–Morrison).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from planner.acquisition.objectives import _anchor_index, _basis, _check_objective, _project, expected_information
from planner.acquisition.options import SelectionOptions
from planner.counts import Counts
from planner.errors import DataError, UsageError, parameters_of, shown


@dataclass(frozen=True, eq=False)
class _Context:
    """The batch-start view every rule reads: strengths, covariance, objective, options."""

    mu: np.ndarray
    cov0: np.ndarray
    gamma: float
    nu: float
    objective: str
    top_k: int | None
    a_idx: int | None
    opts: SelectionOptions
    est_mu: np.ndarray | None = None     # oracle: the posterior mean (ctx.mu is then the truth)


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
        step = np.outer(c, c)
        step *= f                 # f * outer(c, c), the same floats, one M x M temporary fewer
        self.cov -= step
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
        raise DataError(f"{shown(name)} counts are over systems {list(counts.systems)[:5]}..., "
                        f"the posterior over {list(systems)[:5]}...; they must match", parameters=parameters_of(name))


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


def _capacity(capacity, ci, cj):
    """Per-candidate pick limit (inf where the mapping says nothing), or None without a mapping."""
    if capacity is None:
        return None
    capv = np.full(ci.size, np.inf)
    index = dict(zip(zip(ci.tolist(), cj.tolist()), range(ci.size)))   # Python ints without int() per pair
    for p, n in capacity.items():
        i, j = int(p[0]), int(p[1])
        t = index.get((i, j) if i <= j else (j, i))
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


def _setup(posterior, objective, top_k, anchor, judged, pending, draws, allowed, true_mean,
           opts: SelectionOptions, need_anchor=False):
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
                   opts, est_mu)
    state = _State(mu, cov, ctx.gamma, ctx.nu)
    if pending is not None and pending.n_cells:
        state.apply_counts(pending)
    return systems, ctx, state, ci, cj, counts, draws
