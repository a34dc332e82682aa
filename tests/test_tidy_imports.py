"""The import contracts of pyproject ``[tool.importlinter]`` hold (import-linter, the tool CI runs as
``lint-imports``): the layers of docs/architecture.md, the library never importing the command line,
readers never importing writers, and no import circle between the modules of a package but the
documented style-engine knot. Lazy imports inside functions count; ``if TYPE_CHECKING:`` imports do not.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


LINT = "import sys; from importlinter.cli import lint_imports_command; sys.exit(lint_imports_command())"


def _lint(cwd: Path, config: Path) -> subprocess.CompletedProcess:
    """``lint-imports --config CONFIG --no-cache`` in ``cwd`` (its packages on the path)."""
    return subprocess.run([sys.executable, "-c", LINT, "--config", str(config), "--no-cache"], cwd=cwd,
                          capture_output=True, text=True, env={"PYTHONPATH": str(cwd), "PATH": "/usr/bin:/bin"})


def test_the_import_contracts_are_kept():
    r = _lint(ROOT, ROOT / "pyproject.toml")
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-2000:]
    assert "0 broken" in r.stdout


def test_a_broken_contract_fails(tmp_path):
    """The same kinds of contract on a small package that breaks each: the run fails and names the imports."""
    pkg = tmp_path / "probe"
    (pkg / "core").mkdir(parents=True)
    (pkg / "store").mkdir()
    for f, src in {"__init__.py": "", "core/__init__.py": "", "store/__init__.py": "",
                   "core/a.py": "def f():\n    from probe.store import s\n",   # lazy, still a dependency
                   "core/b.py": "from probe.core import c\n", "core/c.py": "from probe.core import b\n",
                   "store/s.py": "from probe.core import a\n"}.items():
        (pkg / f).write_text(src)
    config = tmp_path / "contracts.toml"
    config.write_text(textwrap.dedent("""
        [tool.importlinter]
        root_packages = ["probe"]
        [[tool.importlinter.contracts]]
        name = "layers"
        type = "layers"
        containers = ["probe"]
        layers = ["store", "core"]
        [[tool.importlinter.contracts]]
        name = "circles"
        type = "acyclic_siblings"
        ancestors = ["probe"]
        """))
    r = _lint(tmp_path, config)
    assert r.returncode != 0 and "2 broken" in r.stdout, r.stdout + r.stderr
    assert "probe.core.a -> probe.store" in r.stdout
