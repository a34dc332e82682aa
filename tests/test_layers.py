"""The tree pytest runs: the checkout's code, never an installed copy.

The forbidden imports this file once checked by hand (the library importing typer, rich
or the command line; readers importing writers) are import-linter contracts now
(pyproject ``[tool.importlinter]``, run by tests/test_tidy_imports.py).
"""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_plain_pytest_runs_this_tree():
    """``pythonpath = ["."]`` in pyproject: the checkout's code wins over any installed copy."""
    import planner

    assert Path(planner.__file__).resolve().parents[1] == ROOT


def _manifest_reads(source: str) -> list[int]:
    """Lines that read a batch manifest: ``.manifest`` (the stored dict) or a name ``manifest`` subscripted."""
    import ast

    return sorted({n.lineno for n in ast.walk(ast.parse(source))
                   if (isinstance(n, ast.Attribute) and n.attr == "manifest")
                   or (isinstance(n, ast.Subscript) and isinstance(n.value, ast.Name) and n.value.id == "manifest")})


def test_the_cli_reads_no_manifest_keys():
    """The CLI renders the typed results the workflows return (``NextBatchResult.summary``), not the
    manifest dict the study stores (``--json`` prints it whole, unread)."""
    reads = [f"{p.relative_to(ROOT)}:{line}" for p in sorted((ROOT / "cli").glob("*.py"))
             for line in _manifest_reads(p.read_text(encoding="utf-8"))]
    assert not reads, "render a typed result instead:\n" + "\n".join(reads)


def test_the_manifest_check_sees_a_read():
    assert _manifest_reads('w = result.manifest["model"]\nx = manifest["seed"]\ny = result.summary.seed\n') == [1, 2]


def test_the_batch_summary_is_the_manifest_typed():
    from planner.services.batch_options import BatchSummary

    manifest = {"seed": 7, "strategy": "active", "objective": "ranking", "objective_before": 2.5,
                "objective_after": 1.25, "model": {"warnings": ["w"]}, "forecast": {"sentence": "about 40 more"},
                "batch_manifest": {"n_items": 3, "n_comparisons": 2, "kinds": {"regular": 2, "attention": 1},
                                   "per_pair": [{"systems": ["a", "b"], "n": 2}], "per_stratum": {"all": 2}}}
    s = BatchSummary.of(manifest)
    assert (s.n_items, s.n_comparisons, s.seed, s.strategy, s.objective) == (3, 2, 7, "active", "ranking")
    assert s.per_pair == ((("a", "b"), 2),) and s.kinds == (("regular", 2), ("attention", 1))
    assert s.per_stratum == (("all", 2),) and s.model_warnings == ("w",) and s.forecast == "about 40 more"
    assert s.for_humans is None and (s.objective_before, s.objective_after) == (2.5, 1.25)
    humans = BatchSummary.of({**manifest, "for_humans": {"chosen": [["p", "a", "b"]], "expected_labels": 1.0,
                                                          "surrogate": "judge"}})
    assert humans.for_humans is not None and humans.for_humans.chosen == 1 and humans.for_humans.surrogate == "judge"


def _private_reaches(source: str) -> list[str]:
    """``from planner.x import _name`` (another module's private name) and ``other._con``/``._sys_id``
    (a study's private handles read through anything but ``self``)."""
    import ast

    found = []
    for n in ast.walk(ast.parse(source)):
        if isinstance(n, ast.ImportFrom) and (n.level or (n.module or "").split(".")[0] in ("planner", "cli")):
            found += [f"{n.lineno}: {a.name}" for a in n.names
                      if a.name.startswith("_") and not a.name.startswith("__")]
        if (isinstance(n, ast.Attribute) and n.attr in ("_con", "_sys_id")
                and not (isinstance(n.value, ast.Name) and n.value.id == "self")):
            found.append(f"{n.lineno}: .{n.attr}")
    return found


def test_no_module_reaches_into_another():
    """A name another module needs is public in its home; the study's connection and system ids are read
    through ``Study.connection`` and ``Study.system_ids``."""
    files = [p for folder in ("planner", "cli") for p in sorted((ROOT / folder).rglob("*.py"))]
    reaches = [f"{p.relative_to(ROOT)}:{hit}" for p in files for hit in _private_reaches(p.read_text(encoding="utf-8"))]
    assert not reaches, "import a public name instead:\n" + "\n".join(reaches)


def test_the_private_check_sees_a_reach():
    src = ("from planner.acquisition.state import _setup, setup\nfrom . import _x\nfrom typer import _click\n"
           "con = study._con\nself._con.execute('')\n")
    assert _private_reaches(src) == ["1: _setup", "2: _x", "4: ._con"]
