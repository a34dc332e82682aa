"""planner.stats.blas.one_blas_thread: BLAS on one thread inside the block, restored after, a no-op without
threadpoolctl (the Arena-scale next-batch's fit and selection run inside it: many BLAS threads on small
matrices cost more than they save); and the one policy (``blas_policy``) in every command that fits."""

from __future__ import annotations

import subprocess
import sys
from contextlib import nullcontext
from pathlib import Path

import numpy as np
import pytest

from planner.stats.blas import one_blas_thread


def _blas_threads(threadpoolctl) -> list[int]:
    return [i["num_threads"] for i in threadpoolctl.threadpool_info() if i["user_api"] == "blas"]


def test_one_thread_inside_restored_after():
    threadpoolctl = pytest.importorskip("threadpoolctl")
    import scipy.linalg  # noqa: F401  (SciPy's own OpenBLAS, which one_blas_thread loads anyway)

    np.ones(3) @ np.ones(3)   # NumPy's BLAS is loaded
    before = _blas_threads(threadpoolctl)
    assert before
    with one_blas_thread():
        assert set(_blas_threads(threadpoolctl)) == {1}
    assert _blas_threads(threadpoolctl) == before


def test_scipys_blas_is_limited_even_when_loaded_inside_the_block():
    # threadpoolctl limits only libraries already loaded; SciPy's OpenBLAS comes with scipy.linalg, which a
    # fit imports inside the block: one_blas_thread loads it first (a fresh process, nothing loaded yet)
    pytest.importorskip("threadpoolctl")
    code = ("import numpy, threadpoolctl\n"
            "from planner.stats.blas import one_blas_thread\n"
            "with one_blas_thread():\n"
            "    import scipy.linalg\n"
            "    print(sorted(i['num_threads'] for i in threadpoolctl.threadpool_info() if i['user_api'] == 'blas'))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         cwd=Path(__file__).resolve().parents[1]).stdout
    assert out.strip() == "[1, 1]"   # NumPy's and SciPy's OpenBLAS


def test_no_threadpoolctl_is_a_no_op(monkeypatch):
    monkeypatch.setitem(sys.modules, "threadpoolctl", None)   # import raises ImportError
    assert isinstance(one_blas_thread(), nullcontext)


# ------------------------------------------------------------------ one policy for every command that fits
def _spy_fit(monkeypatch, threadpoolctl) -> list:
    """Record the BLAS threads of every library loaded while a Laplace fit runs (wraps fit_laplace)."""
    from planner.model import dispatch

    seen: list = []
    real = dispatch.fit_laplace

    def spy(*args, **kwargs):
        seen.append(sorted({i["num_threads"] for i in threadpoolctl.threadpool_info() if i["user_api"] == "blas"}))
        return real(*args, **kwargs)

    monkeypatch.setattr(dispatch, "fit_laplace", spy)
    return seen


def test_every_command_that_fits_runs_on_one_blas_thread(tmp_path, monkeypatch):
    # report, decide, export and next-batch: each Laplace fit sees every
    # loaded BLAS (NumPy's and SciPy's OpenBLAS) limited to one thread; the limit is lifted afterwards
    threadpoolctl = pytest.importorskip("threadpoolctl")
    import _report_fixture as fx

    from planner.workflows.decide import decide
    from planner.workflows.export import export_study
    from planner.workflows.next_batch import BatchSelection, Output, next_batch
    from planner.workflows.report import build_report

    study = fx.synthetic_study(tmp_path / "s", n=300)
    import scipy.linalg  # noqa: F401  (both BLAS libraries loaded, so "before" lists them with their threads)

    before = _blas_threads(threadpoolctl)
    seen = _spy_fit(monkeypatch, threadpoolctl)
    build_report(study)
    decide(study, "sys-a", "sys-b")
    export_study(study, tmp_path / "out")
    next_batch(study, selection=BatchSelection(size=4), output=Output(dry_run=True))
    assert seen == [[1]] * 4
    assert _blas_threads(threadpoolctl) == before
