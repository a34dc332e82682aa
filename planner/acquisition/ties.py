"""Near-ties of float scores, made exact so that every CPU takes the same decision.

Two candidates whose scores are equal in exact arithmetic (a symmetric design, two
pairs in the same position of the posterior) come out of floating point a few units
in the last place apart, and *which* one is larger depends on the order of the sums:
another SIMD path of NumPy or OpenBLAS, another CPU. Ranking on such floats would make
the same seed give another batch on another machine.

Every score a selection ranks or compares is therefore rounded to :data:`SIG_BITS`
significant bits first (about 7 decimal digits); candidates equal after rounding are
ordered by their seeded random priority (the rules permute the candidates with the
call's generator before ranking, and ``argmax``/stable sorts take the first of equal
values). The rounding uses only exact operations (``frexp``, a multiplication by a
power of two, round-half-even, ``ldexp``), so it gives the same bits everywhere; a
``log10``/``power`` rounding would not (NumPy's SIMD ``log10`` and ``power`` may differ
by an ulp between instruction sets). The step, ``2^-24 ≈ 6·10^-8`` relative, is far
above the floating-point noise of the scores (``~10^-13`` relative) and far below any
difference that matters to the objective. A score lying within that noise of a
rounding boundary can still round either way; the chance is about
``10^-13 / 6·10^-8`` per score.
"""

from __future__ import annotations

import numpy as np

SIG_BITS = 24


def rounded(x, bits: int = SIG_BITS) -> np.ndarray:
    """``x`` rounded to ``bits`` significant bits (0, ±inf and nan unchanged); exact arithmetic only."""
    x = np.asarray(x, dtype=float)
    mant, expo = np.frexp(x)                 # x = mant · 2^expo, 0.5 <= |mant| < 1
    out = np.ldexp(np.rint(np.ldexp(mant, bits)), expo - bits)
    return np.where(np.isfinite(x), out, x)
