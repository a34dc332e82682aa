"""Dense linear algebra on one BLAS thread: the one BLAS policy of every command that fits.

The Arena-scale commands (300 systems, 1,000,000 judgments) factorise a 302 x 302
Hessian ~40 times and take long dot products over ~45,000 cells. NumPy and SciPy
each load their own OpenBLAS, each with one thread per core; on a busy 2-core
machine a threaded factorisation waits for its second thread to be scheduled, so
the Laplace fit took 3.3 s of CPU with two threads and 0.8 s with one
(bench/README.md, "next-batch at Arena scale, the rest"), and 7.7 s against
0.5 s of wall time on an idle machine (bench/bench_report_arena.py --blas).
One thread also makes the floats independent of the machine's core count
(a threaded Cholesky or long dot product adds in a different order: the fit
moved by ~6e-12 between one and two threads).

The policy (:func:`blas_policy`): a command's Laplace fit and the dense algebra
around it (selection, rank draws, the diagnostics) run on one thread; a NUTS
fit keeps BLAS's own threads (its chains run in worker processes, which this
process's limit does not reach). ``report``, ``decide``, ``next-batch``,
``export``, ``run``, ``demo``, ``simulate`` and the hybrid report apply it.

``threadpoolctl`` (a dependency) sets the limit; without it this is a no-op and
BLAS keeps its default threads.
"""

from __future__ import annotations

from contextlib import AbstractContextManager, nullcontext


def one_blas_thread() -> AbstractContextManager:
    """A context in which NumPy's and SciPy's BLAS run on one thread (restored on exit).

    ``threadpoolctl`` limits only the libraries loaded when the context is entered, and
    SciPy's OpenBLAS is loaded by ``scipy.linalg``: it is imported first, so a fit that
    imports it later inside the block still runs on one thread.
    """
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:   # optional: keep BLAS's own threads
        return nullcontext()
    import scipy.linalg  # noqa: F401  (loads SciPy's own OpenBLAS, so the limit reaches it)

    return threadpool_limits(1, user_api="blas")


def blas_policy(engine: str = "laplace") -> AbstractContextManager:
    """The BLAS threads of a command fitting with ``engine``: one thread unless ``engine == "nuts"``."""
    return nullcontext() if engine == "nuts" else one_blas_thread()


__all__ = ["blas_policy", "one_blas_thread"]
