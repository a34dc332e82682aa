"""planner/stats/ and planner/gate/ stay readable and light: small modules, short functions, no import cycle,
no scipy.stats.

Checked on the source with ``ast`` (every import, lazy ones included) and, for
the heavy imports, in fresh subprocesses that look at ``sys.modules``.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
FILES = sorted((ROOT / "planner" / "stats").glob("*.py")) + sorted((ROOT / "planner" / "gate").glob("*.py"))
MAX_MODULE_LINES = 500     # a module a reader can hold in mind (docs/architecture.md rule 7)
MAX_FUNCTION_LINES = 80    # and "functions under ~80"


def _name(path: Path) -> str:
    rel = path.relative_to(ROOT).with_suffix("")
    parts = rel.parts[:-1] if rel.name == "__init__" else rel.parts
    return ".".join(parts)


def _imports(path: Path) -> set[str]:
    out = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            out |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module:
            out |= {node.module} | {f"{node.module}.{a.name}" for a in node.names}
    return out


def test_files_are_found():
    names = {_name(f) for f in FILES}
    assert {"planner.stats.power", "planner.stats.sequential", "planner.stats.significance",
            "planner.stats.multiplicity", "planner.gate", "planner.gate.release"} <= names


@pytest.mark.parametrize("path", FILES, ids=_name)
def test_module_and_function_sizes(path):
    text = path.read_text(encoding="utf-8")
    assert len(text.splitlines()) <= MAX_MODULE_LINES
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            assert node.end_lineno - node.lineno + 1 <= MAX_FUNCTION_LINES, node.name


PACKAGES = ("planner.stats", "planner.gate")


def _cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One import cycle of ``graph`` (module -> modules it imports), or None (depth-first search)."""
    state: dict[str, int] = {}   # 1 on the stack, 2 done

    def visit(m: str, stack: list[str]) -> list[str] | None:
        if state.get(m) == 1:
            return stack[stack.index(m):] + [m]
        if state.get(m) == 2:
            return None
        state[m] = 1
        for d in sorted(graph.get(m, ())):
            found = visit(d, stack + [m])
            if found:
                return found
        state[m] = 2
        return None

    for m in sorted(graph):
        found = visit(m, [])
        if found:
            return found
    return None


def test_cycle_finder_finds_one():
    assert _cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert _cycle({"a": {"b"}, "b": set()}) is None


def test_no_import_cycle_between_submodules():
    # a package's __init__ re-exporting its submodules is not a cycle; submodule -> submodule would be
    mods = {_name(f): f for f in FILES if _name(f) not in PACKAGES}
    graph = {m: {i for i in _imports(f) if i in mods and i != m} for m, f in mods.items()}
    assert _cycle(graph) is None


def test_gate_and_size_modules_never_import_scipy_stats_or_optimize():
    mods = ", ".join(["planner.gate", "planner.workflows.decide", "planner.stats.power", "planner.stats.design",
                      "planner.stats.sequential", "planner.stats.significance", "planner.stats.pass_rate",
                      "planner.stats.multiplicity", "planner.formats.power_plot"])
    code = (f"import sys, {mods}; "
            "print(sorted(m for m in ('scipy.stats', 'scipy.optimize', 'matplotlib', 'pymc', 'arviz') "
            "if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT).stdout
    assert out.strip() == "[]"


def test_gate_is_core():
    # the gate is pure: it never reaches the store, the formats, the connectors or a workflow
    for f in (ROOT / "planner" / "gate").glob("*.py"):
        bad = {i for i in _imports(f) if i.startswith(("planner.store", "planner.formats", "planner.connectors",
                                                       "planner.workflows"))}
        assert not bad, f"{f.name}: {bad}"
