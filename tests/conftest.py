"""Shared fixtures. The real Vicuna-80 files ship inside the package (planner/data/vicuna80, written
out by `planner example vicuna80 DIR`); tests that need the large replay sets of ../shared/data skip
cleanly when it is absent."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

os.environ.setdefault("MPLBACKEND", "Agg")

# the real Label Studio server fixture: imported once here so every live test module shares ONE server
from ls_server import label_studio  # noqa: F401

ROOT = Path(__file__).resolve().parents[1]
# the large replay sets (OpenAssistant GPT-4, 40k rows): only in the project's ../shared/data
SHARED_DATA = ROOT.parent / "shared" / "data"


@pytest.fixture
def vicuna_data() -> Path:
    """The real Vicuna-80 data (vicuna80/, judgments/): the package's copy, written once per process."""
    from _example_data import vicuna_dir

    return vicuna_dir()


@pytest.fixture
def shared_data() -> Path:
    """The large real replay data in ../shared/data (not part of a user's clone), or skip."""
    if not (SHARED_DATA / "README.md").exists():
        pytest.skip("../shared/data is not present (it is not part of a user's clone)")
    return SHARED_DATA


@pytest.fixture
def srv():
    """A fresh loopback OpenAI-compatible server (tests/fake_openai_server.py) for the judge tests."""
    from fake_openai_server import FakeOpenAI

    with FakeOpenAI() as s:
        yield s


@pytest.fixture(autouse=True)
def _forget_secrets():
    """Each test starts with no registered key (the redaction registry is process-wide)."""
    yield
    from planner.connectors.guard import forget

    forget()
