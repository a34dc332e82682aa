"""Consistency of the majority tournament: Kendall–Babington Smith circular triads."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from planner.counts import Counts
from planner.errors import DataError, UsageError


# ---------------------------------------------------------- circular triads
@dataclass(frozen=True)
class CircularTriads:
    """Kendall–Babington Smith circular triads of the majority tournament.

    ``d``: number of circular triads (expected value when some pair's majority
    is tied, see below); ``d_max``: ``(m³ - m)/24`` for odd m, ``(m³ - 4m)/24``
    for even m; ``zeta = 1 - d/d_max`` (Kendall's coefficient of consistency;
    1 = transitive). ``scores``: per system, majority wins (a tied pair gives
    each side 0.5). ``zeta`` is ``None`` when ``m < 3`` or any pair is
    unobserved (``n_unobserved_pairs``); ``d`` then counts only triads whose
    three pairs are observed. ``examples``: up to ``max_examples`` circular
    triads ``(x, y, z)`` meaning x beat y, y beat z, z beat x (decided pairs
    only), in system order.
    """

    systems: tuple[str, ...]
    m: int
    d: float
    d_max: float
    zeta: float | None
    scores: tuple[float, ...]
    n_tied_pairs: int
    n_unobserved_pairs: int
    examples: tuple[tuple[str, str, str], ...]


def circular_triads(data: Counts | np.ndarray, systems: Sequence[str] | None = None,
                    max_examples: int = 10) -> CircularTriads:
    """Circular triads ``d`` and Kendall's coefficient of consistency ``zeta``.

    Parameters
    ----------
    data : Counts or ndarray (M, M)
        A win matrix ``W[i, j]`` = wins of i over j (count ties as you wish,
        e.g. half each), or Counts, from which ``W[i, j]`` = i's wins over j
        plus half the ties, pooled over positions and strata.
    systems : sequence of str, optional
        Names for a matrix input (default ``"0"``, ``"1"``, …).

    Notes
    -----
    Pair (i, j) is decided for i when ``W[i, j] > W[j, i]``; a pair with
    ``W[i, j] == W[j, i] > 0`` is a *tied majority* and is broken by a fair
    coin **in expectation**: a triad containing tied pairs contributes its
    probability of being circular (0, 1/4 or 1/2), so ``d`` may be a multiple
    of 1/4. Without tied pairs ``d`` equals
    ``m(m-1)(2m-1)/12 - ½ Σ s_i²`` (Kendall & Babington Smith 1940,
    Biometrika 31:324–345). Pairs with no usable judgment are unobserved.
    """
    if isinstance(data, Counts):
        names = data.systems
        t = data.pair_tensor()
        w = t[:, :, 0] + 0.5 * t[:, :, 2]
        observed = (t[:, :, :3].sum(axis=2)) > 0
    else:
        w = np.asarray(data, dtype=float)
        if w.ndim != 2 or w.shape[0] != w.shape[1]:
            raise UsageError(f"win matrix shape ({w.shape}) must be square (M, M)", parameters=('data',))
        names = tuple(systems) if systems is not None else tuple(str(i) for i in range(w.shape[0]))
        if len(names) != w.shape[0]:
            raise UsageError(f"`systems` ({len(names)} names) must match the win matrix size ({w.shape[0]})",
                             parameters=('systems',))
        if np.any(w < 0):
            raise DataError("win matrix entries must be >= 0")
        observed = (w + w.T) > 0
    m = len(names)
    # e[i, j] = P(i beats j in the majority tournament): 1, 0 or 0.5 (tied majority)
    e = np.where(w > w.T, 1.0, np.where(w < w.T, 0.0, 0.5))
    np.fill_diagonal(e, 0.0)
    np.fill_diagonal(observed, True)
    scores = tuple(float(x) for x in e.sum(axis=1))
    iu = np.triu_indices(m, 1)
    n_unobserved = int((~observed[iu]).sum())
    n_tied = int(((e[iu] == 0.5) & observed[iu]).sum())
    d = _expected_circular(np.where(observed, e, 0.0))
    examples = _first_circular(e, observed, names, max_examples) if d > 0 else ()
    d_max = (m ** 3 - m) / 24.0 if m % 2 else (m ** 3 - 4 * m) / 24.0
    zeta = None if (m < 3 or n_unobserved) else 1.0 - d / d_max
    return CircularTriads(tuple(names), m, d, d_max, zeta, scores, n_tied, n_unobserved, examples)


def _expected_circular(a: np.ndarray) -> float:
    """``Σ_{i<j<k}`` P(triad circular) over triads whose three pairs are observed, as ``trace(A³) / 3``.

    ``a[i, j] = e[i, j]`` on observed pairs and 0 elsewhere (diagonal 0). Each observed triad appears
    six times in ``trace(A³) = Σ_ijk a_ij a_jk a_ki``: its three rotations give
    ``e_ij e_jk e_ki`` and its three reflections ``e_ik e_kj e_ji = (1 - e_ij)(1 - e_jk)(1 - e_ki)``
    (``e_ji = 1 - e_ij`` on an observed pair), together three times its probability of being circular,
    ``e_ij e_jk e_ki + (1 - e_ij)(1 - e_jk)(1 - e_ki)``; a triad with an unobserved pair contributes 0. Every
    entry is 0, ½ or 1, so every partial sum is a multiple of 1/8 and exact in floating point: the
    same ``d`` as the triad-by-triad sum, in any summation order.
    """
    return float(np.einsum("ij,ji->", a @ a, a)) / 3.0


def _first_circular(e: np.ndarray, observed: np.ndarray, names, limit: int) -> tuple:
    """Up to ``limit`` circular triads with three decided pairs, in ``itertools.combinations`` order, as
    ``(x, y, z)``: x beat y, y beat z, z beat x."""
    wins = observed & (e == 1.0)
    losses = observed & (e == 0.0)
    out: list[tuple[str, str, str]] = []
    m = e.shape[0]
    for i in range(m - 2):
        if len(out) >= limit:
            break
        rest = slice(i + 1, m)
        # triad (i, j, k), i < j < k: i->j->k->i or i<-j<-k<-i, every pair decided
        cyc = ((wins[i, rest][:, None] & wins[rest, rest] & losses[i, rest][None, :])
               | (losses[i, rest][:, None] & losses[rest, rest] & wins[i, rest][None, :]))
        js, ks = np.nonzero(np.triu(cyc, 1))
        for j, k in zip(js[:limit - len(out)] + i + 1, ks[:limit - len(out)] + i + 1):
            x, y, z = (i, j, k) if e[i, j] == 1.0 else (i, k, j)
            out.append((names[x], names[y], names[z]))
    return tuple(out)


def circular_triads_from_scores(scores: Sequence[float]) -> float:
    """``d = m(m-1)(2m-1)/12 - ½ Σ s_i²`` for a complete tournament (Kendall & Babington Smith 1940)."""
    s = np.asarray(scores, dtype=float)
    m = s.size
    return m * (m - 1) * (2 * m - 1) / 12.0 - 0.5 * float((s * s).sum())
