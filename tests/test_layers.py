"""Forbidden imports (issue 12 guard rails), checked on the source with ``ast``.

* nothing under ``planner/`` imports typer, rich or the CLI package (``cli``);
* readers never import writers: ``planner/formats/readers*.py`` and the other
  file readers (prompts, normalized judgments) do not import
  ``planner.formats.writers``; nor does ``formats/judge.py`` (a reader of judge output),
  which takes the request templates from ``formats/templates.py`` like the writer.

Imports inside functions count too (a lazy import is still a dependency).
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PLANNER = ROOT / "planner"
FORBIDDEN_IN_LIBRARY = ("typer", "rich", "cli")
WRITERS = "planner.formats.writers"


def _imports(path: Path, root: Path = ROOT) -> list[tuple[int, str]]:
    """``(line, module)`` of every import in a file, relative imports resolved against its package."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    package = ".".join(path.relative_to(root).with_suffix("").parts[:-1])
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out += [(node.lineno, a.name) for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join(p for p in [*parts, base] if p)
            out.append((node.lineno, base))
            out += [(node.lineno, f"{base}.{a.name}") for a in node.names]
    return out


def _offending(path: Path, banned) -> list[str]:
    return [f"{path.relative_to(ROOT)}:{line}: imports {mod}" for line, mod in _imports(path)
            if any(mod == b or mod.startswith(b + ".") for b in banned)]


def test_the_checker_sees_lazy_and_relative_imports(tmp_path):
    f = tmp_path / "planner" / "_layers_probe.py"
    f.parent.mkdir()
    f.write_text("def g():\n    import rich.console\n    from .formats import writers\n", encoding="utf-8")
    got = _imports(f, tmp_path)
    assert (2, "rich.console") in got and (3, "planner.formats.writers") in got


def test_library_never_imports_typer_rich_or_cli():
    bad = [msg for f in sorted(PLANNER.rglob("*.py")) for msg in _offending(f, FORBIDDEN_IN_LIBRARY)]
    assert not bad, "\n".join(bad)


READERS = sorted(PLANNER.glob("formats/readers*.py")) + [PLANNER / "formats" / "prompts.py",
                                                         PLANNER / "formats" / "normalized.py"]


@pytest.mark.parametrize("path", READERS, ids=lambda p: p.name)
def test_readers_never_import_writers(path):
    assert path.exists()
    assert not _offending(path, (WRITERS,))


@pytest.mark.parametrize("name", ["judge.py", "templates.py"])
def test_judge_reader_does_not_import_writers(name):
    assert not _offending(PLANNER / "formats" / name, (WRITERS,))


def test_plain_pytest_runs_this_tree():
    """``pythonpath = ["."]`` in pyproject: the checkout's code wins over any installed copy."""
    import planner

    assert Path(planner.__file__).resolve().parents[1] == ROOT
