"""Package faces: ``planner.stats``, ``planner.formats``, ``planner.batch`` and ``planner.allocation`` re-export
every public name of their modules (explicit ``__all__``, like the other packages), each the very object of its
home module, and lazily: importing the package imports none of its modules (planner.reexport).

A module's public names are its ``__all__`` when it has one, else its top-level functions, classes and
assignments not starting with ``_`` — except a name that is also a module of the package
(``planner.stats.significance`` is the module once it is imported).
"""

from __future__ import annotations

import ast
import importlib
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
LAZY = ("stats", "formats", "batch", "allocation")


def _public(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(getattr(t, "id", None) == "__all__" for t in node.targets):
            return {e.value for e in node.value.elts}
    names = set()
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, ast.Assign):
            names |= {t.id for t in node.targets if isinstance(t, ast.Name)}
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names.add(node.target.id)
    return {n for n in names if not n.startswith("_")}


@pytest.mark.parametrize("package", LAZY)
def test_the_face_lists_every_public_name_once_from_its_home(package):
    pkg = importlib.import_module(f"planner.{package}")
    expected = {}
    for path in sorted((ROOT / "planner" / package).glob("*.py")):
        if not path.name.startswith("_"):
            expected.update({name: path.stem for name in _public(path)})
    modules = {p.stem for p in (ROOT / "planner" / package).glob("*.py")}
    expected = {name: module for name, module in expected.items() if name not in modules}
    assert sorted(pkg.__all__) == sorted(expected), "the face and the modules' public names differ"
    for name, module in expected.items():
        assert getattr(pkg, name) is getattr(importlib.import_module(f"planner.{package}.{module}"), name), name
    with pytest.raises(AttributeError):
        pkg.no_such_name  # noqa: B018


#: (a module, modules of its package it must not load): `status` reads clusters, never power;
#: the prompts reader never loads the plots, the HTML report or the writers; the batch vocabulary and the
#: integer apportionment load nothing else of their packages
ONE_MODULE = {"stats": ("clusters", {"power", "sequential", "significance"}),
              "formats": ("prompts", {"plots", "html", "writers", "markdown"}),
              "batch": ("items", {"assemble", "qc_items", "textnorm", "pair_prompts"}),
              "allocation": ("apportion", {"maths", "result", "learned"})}


@pytest.mark.parametrize("package", LAZY)
def test_importing_one_module_loads_only_what_it_needs(package):
    module, unwanted = ONE_MODULE[package]
    code = (f"import sys, planner.{package}.{module}\n"
            f"print(sorted(m.rsplit('.', 1)[1] for m in sys.modules if m.startswith('planner.{package}.')))")
    got = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=True).stdout
    loaded = set(ast.literal_eval(got))
    assert module in loaded and not loaded & unwanted, loaded


def test_a_name_listed_twice_or_named_like_a_module_is_refused():
    from planner.reexport import lazy_reexport

    with pytest.raises(ValueError, match="'x' listed under 'a' and 'b'"):
        lazy_reexport("planner.stats", {"a": ("x",), "b": ("x",)})
    with pytest.raises(ValueError, match="'b' is a module of the package"):
        lazy_reexport("planner.stats", {"a": ("b",), "b": ("y",)})
