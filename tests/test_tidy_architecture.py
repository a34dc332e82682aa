"""docs/architecture.md against the code: every module under planner/ is mapped once, with a known layer.

The module map's table rows read ``| `planner/x.py` | layer | owns |``
(tests/test_tidy_layout.py holds each row's layer against its folder). What a
layer may import is the import-linter contract of pyproject ``[tool.importlinter]``
(tests/test_tidy_imports.py).
"""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "architecture.md"
LAYERS = {"core", "store", "formats", "connectors", "service", "workflow"}
ROW = re.compile(r"^\| `(planner/[\w/]+\.py)` \| (\w+) \| (.+) \|$")


def _module_map() -> dict[str, str]:
    rows = [ROW.match(line) for line in DOC.read_text(encoding="utf-8").splitlines()]
    out: dict[str, str] = {}
    for m in filter(None, rows):
        assert m.group(1) not in out, f"{m.group(1)} listed twice"
        assert m.group(2) in LAYERS, f"{m.group(1)}: layer {m.group(2)!r} not one of {sorted(LAYERS)}"
        out[m.group(1)] = m.group(2)
    return out


def test_every_planner_module_is_mapped_once():
    mapped = set(_module_map())
    present = {str(p.relative_to(ROOT)) for p in (ROOT / "planner").rglob("*.py")}
    assert not present - mapped, f"add a line to {DOC.name} for: {sorted(present - mapped)}"
    assert not mapped - present, f"{DOC.name} lists modules that do not exist: {sorted(mapped - present)}"
