"""The real Vicuna-80 files for the tests: the package's one copy (``planner/data/vicuna80``), written
once per test process into a temporary directory by the code behind ``planner example vicuna80 DIR``
(layout: ``vicuna80/prompts.jsonl``, ``vicuna80/responses.jsonl``, ``judgments/qlora_vicuna80_*.jsonl``;
provenance in its README.md, conversion in its CONVERSION.md — the "../shared/data/README.md" the
tests quote)."""

from __future__ import annotations

import atexit
import shutil
import tempfile
from functools import cache
from pathlib import Path


@cache
def vicuna_dir() -> Path:
    """The directory holding the example's files (written on first use; removed when the process exits)."""
    from planner.workflows.example import write_example

    root = Path(tempfile.mkdtemp(prefix="planner-vicuna80-"))
    atexit.register(shutil.rmtree, root, True)
    write_example("vicuna80", root)
    return root
