"""The non-adaptive strategies and the connected start design.

``round-robin``, ``random``, ``anchor``, ``swiss`` and ``arena`` (Chiang et al.
2024, "Chatbot Arena: An Open Platform for Evaluating LLMs by Human
Preference", ICML, eq. 9), plus :func:`connected_start` for a study with no
judgments. Every rule honours the per-pair capacity (unused prompts).
"""

from __future__ import annotations

import itertools

import numpy as np

from planner.acquisition.objectives import logistic, project_sum_to_zero
from planner.acquisition.options import SelectionOptions
from planner.acquisition.state import candidate_pairs, spend
from planner.errors import UsageError
from planner.model import bt


def baseline_pairs(strategy, ctx, ci, cj, counts, k, rng, capv, allowed, anchor, notes):
    """Pairs of the non-adaptive strategies and the start design (capacity honoured)."""
    m = ctx.mu.size
    if strategy in ("active", "oracle"):
        return connected_start(m, k, rng, allowed=None if allowed is None and capv is None else
                               set(zip(ci.tolist(), cj.tolist())), capacity=capv)
    if strategy == "round-robin":
        return least_judged(ci, cj, counts, k, rng, capv)
    if strategy == "random":
        return _random(ci, cj, k, rng, capv)
    if strategy == "anchor":
        return _anchor(ci, cj, counts, k, rng, capv, ctx.a_idx, anchor, notes)
    if strategy == "swiss":
        return _swiss(ctx.mu, ci, cj, counts, k, rng, capv, notes)
    return _arena(ctx, ci, cj, counts, k, rng, capv)


def _random(ci, cj, k, rng, capv):
    """Uniform pairs, independently (a pair out of capacity is skipped)."""
    if capv is None:
        pick = rng.integers(0, ci.size, size=k)
        return [(int(ci[t]), int(cj[t])) for t in pick]
    left, pairs = capv.copy(), []
    for _ in range(k):
        t = int(rng.choice(np.flatnonzero(left > 0)))
        left[t] -= 1
        pairs.append((int(ci[t]), int(cj[t])))
    return pairs


def _anchor(ci, cj, counts, k, rng, capv, a_idx, anchor, notes):
    """Every system vs the anchor, least-judged first."""
    sel = (ci == a_idx) | (cj == a_idx)
    if not sel.any():
        raise UsageError(f"no allowed pair includes the anchor {anchor!r}", parameters=("anchor", "allowed"))
    pairs = least_judged(ci[sel], cj[sel], counts, k, rng, None if capv is None else capv[sel])
    if len(pairs) < k:
        notes.append(f"anchor: the pairs with the anchor {anchor} have only {len(pairs)} unused slot(s) "
                     f"(prompts) left; the batch is shorter")
    return pairs


def least_judged(ci, cj, counts, k, rng, capv=None):
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
    nb = {(min(a, b), max(a, b)) for a, b in itertools.pairwise(order)}
    sel = np.array([(int(i), int(j)) in nb for i, j in zip(ci, cj)], dtype=bool)
    pairs = least_judged(ci[sel], cj[sel], counts, k, rng, None if capv is None else capv[sel])
    if len(pairs) < k:
        rest = least_judged(ci, cj, counts + _pair_counts_of(pairs, m), k - len(pairs), rng,
                             spend(capv, ci, cj, pairs))
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


def arena_weights(posterior: bt.GaussianPosterior, ci, cj, n, *,
                  options: SelectionOptions | None = None) -> np.ndarray:
    """Chatbot Arena eq. 9 sampling weights for pairs ``(ci, cj)``.

    ``w_a = sqrt(Σ_aa / n_a) − sqrt(Σ_aa / (n_a + 1))`` where ``n_a`` is
    the pair's judgment count (judged + pending + picked so far), floored at 1
    (the rule is undefined at 0), and ``Σ_aa``
    the variance of the pair's win-rate estimate ``p = σ(μ_i − μ_j)`` from the
    Gaussian posterior by the delta method, ``(p (1 − p))² Var(β_i − β_j)``.
    Weights are floored at ``options.arena_floor`` × the largest weight (so no pair's
    probability is 0) and normalised to probabilities.

    Chiang et al. (2024), "Chatbot Arena", ICML, eq. 9.
    """
    mu = np.asarray(posterior.mean, dtype=float)
    cov = project_sum_to_zero(np.asarray(posterior.cov, dtype=float))
    floor = (SelectionOptions() if options is None else options).arena_floor
    return _arena_probs(mu, cov, np.asarray(ci), np.asarray(cj), np.asarray(n, dtype=float), floor)


def _arena_probs(mu, cov, ci, cj, n, floor):
    p = logistic(mu[ci] - mu[cj])
    d = np.diag(cov)
    sig = (p * (1 - p)) ** 2 * np.clip(d[ci] + d[cj] - 2 * cov[ci, cj], 0.0, None)
    n = np.maximum(n, 1.0)                  # eq. 9 is undefined at n = 0: floor the count at 1
    w = np.sqrt(sig / n) - np.sqrt(sig / (n + 1.0))
    w = np.maximum(w, floor * w.max()) if w.max() > 0 else np.ones_like(w)
    return w / w.sum()


def _arena(ctx, ci, cj, counts, k, rng, capv=None):
    n = counts[ci, cj].astype(float).copy()
    left = None if capv is None else capv.copy()
    pairs = []
    for _ in range(k):
        p = _arena_probs(ctx.mu, ctx.cov0, ci, cj, n, ctx.opts.arena_floor)
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
        ci, cj = candidate_pairs(m, None)
    else:
        ci, cj = candidate_pairs(m, allowed)
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
        pairs += least_judged(ci, cj, counts, k - len(pairs), rng, spend(capacity, ci, cj, pairs))
    return pairs
