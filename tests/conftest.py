"""Shared fixtures. Tests that need ../shared/data skip cleanly when it is absent."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

os.environ.setdefault("MPLBACKEND", "Agg")

# the real Label Studio server fixture: imported once here so every live test module shares ONE server
from ls_server import label_studio  # noqa: E402,F401

ROOT = Path(__file__).resolve().parents[1]
SHARED_DATA = ROOT.parent / "shared" / "data"


@pytest.fixture
def shared_data() -> Path:
    """The real public judgment data in ../shared/data, or skip."""
    if not (SHARED_DATA / "README.md").exists():
        pytest.skip("../shared/data is not present (it is not part of a user's clone)")
    return SHARED_DATA
