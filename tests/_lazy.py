"""Test oracles imported when a test first uses them, not when pytest collects the module.

``ppi_py`` (with scikit-learn, numba, statsmodels and pandas behind it) costs seconds to import;
imported at module level it is paid by every ``pytest --collect-only`` and every ``-k`` run that
selects none of its tests. ``lazy_import(name)`` returns a stand-in whose first attribute access
imports the module (``pytest.importorskip``: a missing oracle skips the test that needs it).
"""

from __future__ import annotations

import importlib


class _Lazy:
    def __init__(self, name: str):
        self._name, self._module = name, None

    def __getattr__(self, attr):
        if attr.startswith("_"):     # pytest's collection probes (__test__, _pytestfixturefunction, ...)
            raise AttributeError(attr)
        if self._module is None:
            import pytest

            self._module = pytest.importorskip(self._name)
        return getattr(self._module, attr)


def lazy_import(name: str):
    """A module stand-in, imported on first attribute access (see the module docstring)."""
    return _Lazy(name)


def attribute(module: str, name: str):
    """A function of ``module``, imported when first called."""
    def call(*args, **kwargs):
        return getattr(importlib.import_module(module), name)(*args, **kwargs)
    call.__name__ = name
    return call
