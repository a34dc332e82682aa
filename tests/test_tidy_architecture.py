"""docs/architecture.md against the code: every module mapped once, and the core importing only the core.

The module map's table rows read ``| `planner/x.py` | layer | owns |``. Rule 1
of that page: a core module imports (anywhere in the file, lazily included;
``if TYPE_CHECKING:`` blocks excepted, they are annotations) only core modules.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "architecture.md"
LAYERS = {"core", "store", "formats", "connectors", "workflow"}
ROW = re.compile(r"^\| `(planner/[\w/]+\.py)` \| (\w+) \| (.+) \|$")


def _module_map() -> dict[str, str]:
    rows = [ROW.match(line) for line in DOC.read_text(encoding="utf-8").splitlines()]
    out: dict[str, str] = {}
    for m in filter(None, rows):
        assert m.group(1) not in out, f"{m.group(1)} listed twice"
        assert m.group(2) in LAYERS, f"{m.group(1)}: layer {m.group(2)!r} not one of {sorted(LAYERS)}"
        out[m.group(1)] = m.group(2)
    return out


def _module_name(rel: str) -> str:
    name = rel[:-3].replace("/", ".")
    return name[: -len(".__init__")] if name.endswith(".__init__") else name


def _package(rel: str) -> str:
    name = _module_name(rel)
    return name if rel.endswith("__init__.py") else name.rsplit(".", 1)[0]


def _runtime_imports(path: Path, package: str) -> set[str]:
    """Modules imported by a file outside ``if TYPE_CHECKING:``, relative imports resolved against ``package``."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    skip = {id(n) for node in ast.walk(tree) if isinstance(node, ast.If)
            and getattr(node.test, "id", getattr(node.test, "attr", None)) == "TYPE_CHECKING"
            for n in ast.walk(node)}
    out = set()
    for node in ast.walk(tree):
        if id(node) in skip:
            continue
        if isinstance(node, ast.Import):
            out |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")
                parts = parts[: len(parts) - node.level + 1]
                base = ".".join(p for p in [*parts, base] if p)
            out.add(base)
            out |= {f"{base}.{a.name}" for a in node.names}
    return out


def test_every_planner_module_is_mapped_once():
    mapped = set(_module_map())
    present = {str(p.relative_to(ROOT)) for p in (ROOT / "planner").rglob("*.py")}
    assert not present - mapped, f"add a line to {DOC.name} for: {sorted(present - mapped)}"
    assert not mapped - present, f"{DOC.name} lists modules that do not exist: {sorted(mapped - present)}"


def test_the_core_imports_only_the_core():
    layers = {_module_name(rel): layer for rel, layer in _module_map().items()}
    bad = []
    for rel, layer in _module_map().items():
        if layer != "core":
            continue
        for mod in _runtime_imports(ROOT / rel, _package(rel)):
            if mod in layers and layers[mod] != "core":
                bad.append(f"{rel} imports {mod} ({layers[mod]})")
    assert not bad, "\n".join(sorted(bad))


def test_the_checker_resolves_relative_lazy_and_type_checking_imports(tmp_path):
    probe = tmp_path / "probe.py"
    probe.write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from planner.store.study import Study\n"
                     "def g():\n    from . import writers\n    from ..model import fit\n")
    got = _runtime_imports(probe, _package("planner/formats/probe.py"))
    assert "planner.formats.writers" in got and "planner.model.fit" in got and "planner.model" in got
    assert not any(m.startswith("planner.store.study") for m in got)
