"""planner.stats.blas.one_blas_thread: BLAS on one thread inside the block, restored after, a no-op without
threadpoolctl (issue 14: the Arena-scale next-batch's fit and selection run inside it)."""

from __future__ import annotations

import sys
from contextlib import nullcontext

import numpy as np
import pytest

from planner.stats.blas import one_blas_thread


def _blas_threads(threadpoolctl) -> list[int]:
    return [i["num_threads"] for i in threadpoolctl.threadpool_info() if i["user_api"] == "blas"]


def test_one_thread_inside_restored_after():
    threadpoolctl = pytest.importorskip("threadpoolctl")
    np.ones(3) @ np.ones(3)   # NumPy's BLAS is loaded
    before = _blas_threads(threadpoolctl)
    assert before
    with one_blas_thread():
        assert set(_blas_threads(threadpoolctl)) == {1}
    assert _blas_threads(threadpoolctl) == before


def test_no_threadpoolctl_is_a_no_op(monkeypatch):
    monkeypatch.setitem(sys.modules, "threadpoolctl", None)   # import raises ImportError
    assert isinstance(one_blas_thread(), nullcontext)
