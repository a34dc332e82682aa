"""The tree pytest runs: the checkout's code, never an installed copy.

The forbidden imports this file once checked by hand (the library importing typer, rich
or the command line; readers importing writers) are import-linter contracts now
(pyproject ``[tool.importlinter]``, run by tests/test_tidy_imports.py).
"""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_plain_pytest_runs_this_tree():
    """``pythonpath = ["."]`` in pyproject: the checkout's code wins over any installed copy."""
    import planner

    assert Path(planner.__file__).resolve().parents[1] == ROOT
