"""Common random numbers for the simulator's judges: the n-th judgment of a pair is the same for every strategy.

Strategies are compared on the same repetitions, so the difference between two
strategies' curves should come from which pairs they chose, not from the luck
of the verdicts they happened to draw. With independent verdict streams per
strategy, two strategies that choose the same design (active's first batch on
a flat prior is round-robin's: every pair once or twice) already differed at
the first checkpoint (mean credible-τ 0.52 against 0.61 over the 20
repetitions of the Vicuna80 GPT-4 replay in bench/RESULTS.md, session 2) —
noise that the "paired" bootstrap over repetitions cannot remove.

Here every unordered pair ``(i, j)``, ``i < j``, owns a stream of uniforms that
depends only on (seed, repetition, i, j): the n-th time any strategy judges the
pair it uses row n of that stream (its position, its verdict; and, in the
``prompts`` scenario, its uniformly drawn prompt). In replay mode each pair's
pool is shuffled by a generator that depends only on (seed, repetition), so the
n-th judgment a strategy draws for a pair is the same real verdict for every
strategy. A strategy's own random choices (tie-breaks, Thompson draws,
exploration) keep their per-strategy generator.

This is the standard variance reduction for comparing simulated policies
(common random numbers; e.g. Law, *Simulation Modeling and Analysis*, 5th ed.,
§11.2): the comparison stays unbiased and its variance drops by twice the
covariance the shared draws induce.
"""

from __future__ import annotations

import numpy as np

__all__ = ["COLUMNS", "ColumnRng", "PairStreams"]

COLUMNS = 5     # per judgment: position, the judge's three uniforms, a uniform prompt
_BLOCK = 64     # rows drawn at a time per pair


class PairStreams:
    """Per-pair uniform streams for one repetition (see the module docstring)."""

    def __init__(self, seq: np.random.SeedSequence):
        self._entropy, self._key = seq.entropy, tuple(seq.spawn_key)
        self._gen: dict[tuple[int, int], np.random.Generator] = {}
        self._rows: dict[tuple[int, int], np.ndarray] = {}
        self._used: dict[tuple[int, int], int] = {}

    def _pair_rows(self, p: tuple[int, int], need: int) -> np.ndarray:
        rows = self._rows.get(p)
        if rows is None:
            gen = self._gen[p] = np.random.default_rng(
                np.random.SeedSequence(self._entropy, spawn_key=self._key + p))
            rows = gen.random((_BLOCK, COLUMNS))
        while rows.shape[0] < need:
            rows = np.vstack([rows, self._gen[p].random((_BLOCK, COLUMNS))])
        self._rows[p] = rows
        return rows

    def next(self, pairs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """For picks ``pairs`` (K, 2): the pairs ordered ``(low, high)`` and each pick's next row (K, COLUMNS)."""
        pairs = np.asarray(pairs, dtype=np.int64).reshape(-1, 2)
        ordered = np.sort(pairs, axis=1)
        out = np.empty((len(ordered), COLUMNS))
        for t, (i, j) in enumerate(ordered.tolist()):
            p = (i, j)
            n = self._used.get(p, 0)
            out[t] = self._pair_rows(p, n + 1)[n]
            self._used[p] = n + 1
        return ordered, out


class ColumnRng:
    """Stands in for a Generator whose ``random(n)`` calls return given columns in turn.

    Lets :class:`planner.simulation.judge.Judge` (which draws ``rng.random(n)``
    once per uniform it needs, in a fixed order) take the per-pair rows of
    :class:`PairStreams` unchanged.
    """

    def __init__(self, columns: np.ndarray):
        self._cols = np.asarray(columns, dtype=float)
        self._next = 0

    def random(self, size=None):
        if size is None or self._next >= self._cols.shape[1] or int(size) != self._cols.shape[0]:
            raise ValueError("ColumnRng: more uniforms asked for than the stream rows hold")
        col = self._cols[:, self._next]
        self._next += 1
        return col.copy()
