"""Every dataclass holding numpy arrays compares by value (``Counts == Counts`` must
not raise the ambiguous-truth-value error of an array comparison).

A ``@dataclass`` keeps ``eq=True`` unless told otherwise, and its generated
``__eq__`` compares fields with ``==``; with an array field that is an array, and
``bool(array)`` raises. So a dataclass with a field annotated as an array must
be decorated with :func:`planner.equality.array_eq` (or say ``eq=False``). The
check reads the source (``ast``), so a new class is caught without an instance.
"""

from __future__ import annotations

import ast
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]


def _name(node) -> str:
    if isinstance(node, ast.Call):
        node = node.func
    return node.attr if isinstance(node, ast.Attribute) else getattr(node, "id", "")


def _offenders(source: str, rel: str) -> list[str]:
    out = []
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.ClassDef):
            continue
        decos = {_name(d): d for d in node.decorator_list}
        if "dataclass" not in decos or "array_eq" in decos:
            continue
        d = decos["dataclass"]
        if isinstance(d, ast.Call) and any(k.arg == "eq" and getattr(k.value, "value", True) is False
                                           for k in d.keywords):
            continue
        arrays = [s.target.id for s in node.body if isinstance(s, ast.AnnAssign)
                  and isinstance(s.target, ast.Name) and "ndarray" in ast.unparse(s.annotation)]
        if arrays:
            out.append(f"{rel}:{node.lineno} {node.name} ({', '.join(arrays)})")
    return out


def test_dataclasses_with_array_fields_compare_by_value():
    bad = []
    for path in sorted((ROOT / "planner").rglob("*.py")):
        bad += _offenders(path.read_text(encoding="utf-8"), path.relative_to(ROOT).as_posix())
    assert not bad, "decorate with planner.equality.array_eq:\n" + "\n".join(bad)


def test_the_checker_flags_a_plain_dataclass_and_passes_a_decorated_one():
    src = ("from dataclasses import dataclass\nimport numpy as np\n"
           "@dataclass(frozen=True)\nclass A:\n    x: np.ndarray\n"
           "@array_eq\n@dataclass(frozen=True)\nclass B:\n    x: np.ndarray\n"
           "@dataclass(frozen=True, eq=False)\nclass C:\n    x: np.ndarray\n")
    assert [o.split()[1] for o in _offenders(src, "probe.py")] == ["A"]


def test_a_selection_compares_equal_to_the_same_selection():
    from planner.acquisition import select_pairs
    from planner.model.bt import GaussianPosterior

    post = GaussianPosterior(systems=("a", "b", "c"), mean=np.array([0.3, 0.0, -0.3]), cov=np.eye(3) * 0.2)
    one = select_pairs(post, 4, rng=np.random.default_rng(3))
    two = select_pairs(post, 4, rng=np.random.default_rng(3))
    assert one == two                                   # before array_eq: ValueError (ambiguous truth value)
    other = select_pairs(post, 4, strategy="round-robin", rng=np.random.default_rng(3))
    assert (one == other) is (one.pairs == other.pairs and np.array_equal(one.gains, other.gains))
