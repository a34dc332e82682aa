"""Aggregated judgment counts: the seam between the study store and the model.

The model, the acquisition rules and the simulator never see the database or a
file: they take a :class:`Counts`, one row ("cell") per ordered system pair and
stratum. In a cell, system ``a`` is the one shown **first / on the left** and
``b`` the one shown second / on the right, so position is part of the cell key
(``(a, b)`` and ``(b, a)`` are different cells).

Per cell we keep ``a_wins``, ``b_wins``, ``ties`` and ``invalid``. Every judgment
counts in exactly one of the four; invalid judgments are kept (reported, never
folded into ties) and excluded from the likelihood by the model.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np

from planner.equality import array_eq
from planner.errors import DataError
from planner.vocabulary import OUTCOMES

DEFAULT_STRATUM = "all"


@array_eq
@dataclass(frozen=True)
class Counts:
    """Aggregated pairwise counts.

    Attributes
    ----------
    systems : tuple of str
        System names; cell indices ``a``/``b`` index this tuple.
    strata : tuple of str
        Stratum names; ``stratum`` indexes this tuple (``("all",)`` when the
        study has no strata).
    a, b, stratum : ndarray of int64, shape (n_cells,)
        ``a`` is the system shown first (left), ``b`` second (right).
    a_wins, b_wins, ties, invalid : ndarray of int64, shape (n_cells,)
        Judgment counts per cell.
    """

    systems: tuple[str, ...]
    strata: tuple[str, ...]
    a: np.ndarray
    b: np.ndarray
    stratum: np.ndarray
    a_wins: np.ndarray
    b_wins: np.ndarray
    ties: np.ndarray
    invalid: np.ndarray

    # ------------------------------------------------------------------ build
    @classmethod
    def empty(cls, systems: Sequence[str], strata: Sequence[str] = (DEFAULT_STRATUM,)) -> Counts:
        z = np.zeros(0, dtype=np.int64)
        return cls(tuple(systems), tuple(strata), z, z, z, z, z, z, z)

    @classmethod
    def from_arrays(cls, systems: Sequence[str], a, b, outcome, stratum=None,
                    strata: Sequence[str] = (DEFAULT_STRATUM,)) -> Counts:
        """Aggregate per-judgment integer arrays.

        ``outcome`` codes: 0 = a won, 1 = b won, 2 = tie, 3 = invalid.
        """
        a = np.asarray(a, dtype=np.int64)
        b = np.asarray(b, dtype=np.int64)
        outcome = np.asarray(outcome, dtype=np.int64)
        stratum = np.zeros_like(a) if stratum is None else np.asarray(stratum, dtype=np.int64)
        m, s = len(systems), len(strata)
        if a.size and (a.min() < 0 or b.min() < 0 or max(a.max(), b.max()) >= m):
            raise DataError("system index out of range in counts")
        if np.any(a == b):
            raise DataError("a judgment compares a system with itself")
        if outcome.size and (outcome.min() < 0 or outcome.max() > 3):
            raise DataError("outcome codes must be 0 (A), 1 (B), 2 (tie) or 3 (invalid)")
        if not a.shape == b.shape == outcome.shape == stratum.shape:
            raise DataError("counts arrays differ in length: "
                            f"a {a.size}, b {b.size}, outcome {outcome.size}, stratum {stratum.size}")
        if stratum.size and (stratum.min() < 0 or stratum.max() >= s):
            # an index past the strata would land in the next pair's cell: refuse it
            raise DataError(f"stratum index out of range in counts (strata: {s})")
        key = ((a * m + b) * s + stratum) * 4 + outcome
        table = np.bincount(key.ravel(), minlength=m * m * s * 4).astype(np.int64, copy=False).reshape(m * m * s, 4)
        return cls._from_table(systems, strata, table)

    @classmethod
    def from_records(cls, systems: Sequence[str], records: Iterable[tuple],
                     strata: Sequence[str] = (DEFAULT_STRATUM,)) -> Counts:
        """Aggregate ``(a, b, verdict[, stratum])`` records given by name.

        ``verdict`` is one of ``"A"``, ``"B"``, ``"tie"``, ``"invalid"``.
        """
        sidx = {n: i for i, n in enumerate(systems)}
        tidx = {n: i for i, n in enumerate(strata)}
        oidx = {o: i for i, o in enumerate(OUTCOMES)}
        a, b, o, st = [], [], [], []
        for rec in records:
            try:
                a.append(sidx[rec[0]])
                b.append(sidx[rec[1]])
                o.append(oidx[rec[2]])
                st.append(tidx[rec[3]] if len(rec) > 3 else 0)
            except KeyError as exc:
                raise DataError(f"unknown name {exc.args[0]!r} in counts record {rec!r}") from None
        return cls.from_arrays(systems, a, b, o, st, strata)

    # ------------------------------------------------------------ transform
    def __add__(self, other: Counts) -> Counts:
        if self.systems != other.systems or self.strata != other.strata:
            raise DataError("cannot add counts over different systems or strata")
        return self._reaggregate(self.strata, [self, other], pool=False)

    @staticmethod
    def _reaggregate(strata, parts, pool: bool) -> Counts:
        """Sum cells of several Counts over the same systems into one Counts."""
        systems = parts[0].systems
        m, s = len(systems), len(strata)
        table = np.zeros((m * m * s, 4), dtype=np.int64)
        for c in parts:
            st = np.zeros_like(c.stratum) if pool else c.stratum
            key = (c.a * m + c.b) * s + st
            for code, field in enumerate(("a_wins", "b_wins", "ties", "invalid")):
                np.add.at(table[:, code], key, getattr(c, field))
        return Counts._from_table(systems, strata, table)

    @staticmethod
    def _from_table(systems, strata, table: np.ndarray) -> Counts:
        """Counts from a dense ``(M*M*S, 4)`` table indexed by ``(a*M + b)*S + stratum``."""
        m, s = len(systems), len(strata)
        cells = np.flatnonzero(table.sum(axis=1))
        ab, st = np.divmod(cells, s)
        ca, cb = np.divmod(ab, m)
        t = table[cells]
        return Counts(tuple(systems), tuple(strata), ca, cb, st,
                      t[:, 0].copy(), t[:, 1].copy(), t[:, 2].copy(), t[:, 3].copy())

    def pooled(self) -> Counts:
        """The same counts with all strata merged into one (``"all"``)."""
        return self._reaggregate((DEFAULT_STRATUM,), [self], pool=True)

    # -------------------------------------------------------------- queries
    @property
    def n_cells(self) -> int:
        return int(self.a.size)

    @property
    def usable(self) -> np.ndarray:
        """Usable (non-invalid) judgments per cell."""
        return self.a_wins + self.b_wins + self.ties

    def totals(self) -> dict[str, int]:
        """Total A / B / tie / invalid over all cells."""
        return {"A": int(self.a_wins.sum()), "B": int(self.b_wins.sum()),
                "tie": int(self.ties.sum()), "invalid": int(self.invalid.sum())}

    def pair_tensor(self, by_stratum: bool = False) -> np.ndarray:
        """Oriented per-pair tallies over both positions: the one pair tensor.

        ``t[i, j] = (i's wins, j's wins, ties, invalid)`` of system ``i``
        against system ``j``, whichever was shown first, so ``t[j, i]`` is
        ``t[i, j]`` with the first two swapped; shape ``(M, M, 4)``, or
        ``(K, M, M, 4)`` per stratum with ``by_stratum``. int64.
        """
        m, k = len(self.systems), len(self.strata)
        f = np.stack([self.a_wins, self.b_wins, self.ties, self.invalid], axis=1)
        if by_stratum:
            t = np.zeros((k, m, m, 4), dtype=np.int64)
            np.add.at(t, (self.stratum, self.a, self.b), f)
            np.add.at(t, (self.stratum, self.b, self.a), f[:, [1, 0, 2, 3]])
        else:
            t = np.zeros((m, m, 4), dtype=np.int64)
            np.add.at(t, (self.a, self.b), f)
            np.add.at(t, (self.b, self.a), f[:, [1, 0, 2, 3]])
        return t

    def pair_matrix(self) -> np.ndarray:
        """Usable judgments per unordered pair, symmetric (M, M)."""
        m = len(self.systems)
        mat = np.zeros((m, m), dtype=np.int64)
        np.add.at(mat, (self.a, self.b), self.usable)
        return mat + mat.T


def half_tie_score(wins, losses, ties) -> float | None:
    """Half-tie score ``(wins + ties/2) / (wins + losses + ties)``.

    Invalid judgments are not an argument: they are never part of the score
    (report them next to it). Returns ``None`` — never an invented 0 — when
    there is no usable judgment (``wins + losses + ties == 0``). A score of 0.5
    means "even"; only ties also give 0.5.
    """
    w, l, t = float(wins), float(losses), float(ties)
    n = w + l + t
    if n <= 0:
        return None
    return (w + 0.5 * t) / n


def half_tie_scores(wins, losses, ties) -> list:
    """:func:`half_tie_score` elementwise over arrays (the same floats, ``None`` where nothing is usable),
    as nested lists of the arrays' shape: a 300 x 300 win matrix without 90,000 Python calls."""
    w, l, t = (np.asarray(x, dtype=float) for x in (wins, losses, ties))
    n = w + l + t
    with np.errstate(divide="ignore", invalid="ignore"):
        score = (w + 0.5 * t) / n
    out = score.astype(object)
    out[~(n > 0)] = None
    return out.tolist()
