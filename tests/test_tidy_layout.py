"""The layers are folders: a module's folder says its layer, and only the
store and the workflows open a study.

docs/architecture.md lists each module with its layer; here the folder must agree
with that row, and the calls that open a study's SQLite file (``Study.open``,
``init_study``, ``sqlite3.connect``) appear only under ``planner/store/``,
``planner/workflows/`` (the judge cache and ledger, ``store/ledger.py``, are tables in the
study's file). The core and the connectors never open a study (rule 4).
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FOLDER_LAYER = {"store": "store", "formats": "formats", "connectors": "connectors", "services": "service",
                "workflows": "workflow"}
OPENERS = {("Study", "open"), ("sqlite3", "connect"), (None, "init_study"), ("Study", "create")}
MAY_OPEN = ("planner/store/", "planner/workflows/")


def _rows() -> dict[str, str]:
    """The module map of docs/architecture.md (the architecture test's reader)."""
    from test_tidy_architecture import _module_map

    return _module_map()


def _expected_layer(rel: str) -> str:
    parts = rel.split("/")
    return FOLDER_LAYER.get(parts[1], "core") if len(parts) > 2 else "core"


def test_each_module_sits_in_its_layers_folder():
    wrong = [f"{rel}: mapped as {layer}, its folder says {_expected_layer(rel)}"
             for rel, layer in _rows().items() if layer != _expected_layer(rel)]
    assert not wrong, "\n".join(wrong)


def _opening_calls(path: Path) -> list[str]:
    out = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if not isinstance(node, ast.Call):
            continue
        f = node.func
        if isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name) and (f.value.id, f.attr) in OPENERS:
            out.append(f"{f.value.id}.{f.attr} (line {node.lineno})")
        elif isinstance(f, ast.Name) and (None, f.id) in OPENERS:
            out.append(f"{f.id} (line {node.lineno})")
    return out


def test_only_the_store_and_the_workflows_open_a_study():
    bad = []
    for path in sorted((ROOT / "planner").rglob("*.py")):
        rel = path.relative_to(ROOT).as_posix()
        if rel.startswith(MAY_OPEN):
            continue
        bad += [f"{rel}: {call}" for call in _opening_calls(path)]
    assert not bad, "only store/ and workflows/ open a study:\n" + "\n".join(bad)


def test_the_checker_sees_an_opening_call(tmp_path):
    probe = tmp_path / "probe.py"
    probe.write_text("import sqlite3\nfrom planner.store.study import Study\n"
                     "def f(p):\n    with Study.open(p) as s:\n        return sqlite3.connect(p)\n")
    assert [c.split(" ")[0] for c in _opening_calls(probe)] == ["Study.open", "sqlite3.connect"]


def test_every_package_is_installed():
    """pyproject lists packages explicitly: a new sub-package missing there works in a checkout and breaks a
    `pip install .` (the README's first command)."""
    import tomllib

    listed = set(tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["setuptools"]["packages"])
    present = {p.parent.relative_to(ROOT).as_posix().replace("/", ".") for p in (ROOT / "planner").rglob("__init__.py")}
    assert not present - listed, f"add to [tool.setuptools] packages: {sorted(present - listed)}"
