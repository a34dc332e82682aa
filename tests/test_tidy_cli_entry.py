"""The CLI entry: --version/-V, -h on every command, and the `cli` folder installed as `planner_cli`.

A wheel maps the checkout's ``cli/`` folder to the package ``planner_cli``
(pyproject ``package-dir``), so an installed planner never claims the generic
top-level name ``cli``. That only works if the CLI modules import each other
relatively; these tests load the folder under the name ``planner_cli`` with
``cli`` made unimportable and run the console-script function. (Verified by
hand too: a fresh ``--system-site-packages`` venv, ``pip install --no-deps``
of the checkout, ``planner --version``, ``planner demo``; site-packages holds
``planner`` and ``planner_cli``, no ``cli``.)
"""

from __future__ import annotations

import ast
import json
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from cli.main import app

ROOT = Path(__file__).resolve().parents[1]
runner = CliRunner()


def test_version_long_and_short():
    from planner import __version__

    for flag in ("--version", "-V"):
        r = runner.invoke(app, [flag])
        assert r.exit_code == 0 and r.stdout == f"planner {__version__}\n"


COMMANDS = sorted(typer.main.get_command(app).commands)


def test_every_command_is_listed():
    assert {"size", "init", "next-batch", "report", "decide", "simulate", "demo", "push", "pull"} <= set(COMMANDS)


@pytest.mark.parametrize("command", ["", *COMMANDS])
def test_short_help_everywhere(command):
    args = [command, "-h"] if command else ["-h"]
    r = runner.invoke(app, args)
    assert r.exit_code == 0, r.stderr
    assert r.stdout.startswith("Usage:") and "-h, --help" in r.stdout
    assert r.stdout == runner.invoke(app, [*args[:-1], "--help"]).stdout


def _absolute_cli_imports(path: Path) -> list[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    bad = []
    for node in ast.walk(tree):
        names = [a.name for a in node.names] if isinstance(node, ast.Import) else []
        if isinstance(node, ast.ImportFrom) and node.level == 0:
            names = [node.module or ""]
        bad += [f"{path.name}:{node.lineno}: {n}" for n in names if n == "cli" or n.startswith("cli.")]
    return bad


def test_cli_modules_import_each_other_relatively():
    bad = [b for f in sorted((ROOT / "cli").glob("*.py")) for b in _absolute_cli_imports(f)]
    assert not bad, "use `from .module import ...` inside cli/ (installed as planner_cli):\n" + "\n".join(bad)


def test_the_checker_sees_absolute_imports(tmp_path):
    f = tmp_path / "m.py"
    f.write_text("def g():\n    from cli.common import call\n    import cli.app\n    from .app import app\n")
    assert _absolute_cli_imports(f) == ["m.py:2: cli.common", "m.py:3: cli.app"]


def test_pyproject_installs_cli_as_planner_cli():
    cfg = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    assert cfg["project"]["scripts"] == {"planner": "planner_cli.main:main"}
    st = cfg["tool"]["setuptools"]
    assert st["package-dir"] == {"planner_cli": "cli"}
    assert "planner_cli" in st["packages"] and "cli" not in st["packages"]


def test_the_folder_runs_as_planner_cli_without_a_cli_package(tmp_path):
    # what an installed wheel looks like: the cli folder importable only as planner_cli
    code = f"""
import importlib.util, sys
sys.modules["cli"] = None          # `import cli` now fails: nothing may rely on it
spec = importlib.util.spec_from_file_location("planner_cli", {str(ROOT / "cli" / "__init__.py")!r},
                                              submodule_search_locations=[{str(ROOT / "cli")!r}])
mod = importlib.util.module_from_spec(spec)
sys.modules["planner_cli"] = mod
spec.loader.exec_module(mod)
from planner_cli.main import main
sys.argv = ["planner", "size", "--effect", "0.04", "--json"]
main()
"""
    r = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True,
                       env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"})
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["win_rate"] == 0.54
