"""Dense linear algebra on one BLAS thread.

The Arena-scale ``next-batch`` (300 systems, 1,000,000 judgments) factorises a
302 x 302 Hessian ~40 times and takes long dot products over ~45,000 cells.
NumPy and SciPy each load their own OpenBLAS, each with one thread per core;
on a busy 2-core machine a threaded factorisation waits for its second thread
to be scheduled, so the Laplace fit took 3.3 s of CPU with two threads and
0.8 s with one (bench/README.md, "next-batch at Arena scale, the rest").
One thread also makes the floats independent of the machine's core count
(a threaded Cholesky or long dot product adds in a different order: the fit
moved by ~6e-12 between one and two threads).

``threadpoolctl`` is used when it is installed (it ships with scikit-learn);
without it this is a no-op and BLAS keeps its default threads.
"""

from __future__ import annotations

from contextlib import nullcontext
from typing import ContextManager


def one_blas_thread() -> ContextManager:
    """A context in which NumPy's and SciPy's BLAS run on one thread (restored on exit)."""
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:   # optional: keep BLAS's own threads
        return nullcontext()
    return threadpool_limits(1, user_api="blas")
