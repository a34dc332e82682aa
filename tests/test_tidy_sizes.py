"""Readable units: modules of at most 500 lines, functions of at most 80 lines of code, in the library
(``planner/``) and the command line (``cli/``).

Measured on the source with ``ast``. A function's length is its lines without its
docstring (a long, careful docstring is not what makes a function hard to read); a
command's option declarations count (one option per line, docs/architecture.md).
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MAX_MODULE_LINES = 500
MAX_FUNCTION_LINES = 80


def _code_lines(node) -> int:
    body = node.body
    doc = 0
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) \
            and isinstance(body[0].value.value, str):
        doc = body[0].end_lineno - body[0].lineno + 1
    return node.end_lineno - node.lineno + 1 - doc


def _long_functions(source: str, rel: str) -> list[str]:
    return [f"{rel}:{n.lineno} {n.name} ({_code_lines(n)} lines)" for n in ast.walk(ast.parse(source))
            if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and _code_lines(n) > MAX_FUNCTION_LINES]


def _files():
    return sorted((ROOT / "planner").rglob("*.py")) + sorted((ROOT / "cli").glob("*.py"))


def test_modules_stay_within_500_lines():
    big = [f"{p.relative_to(ROOT)} ({n} lines)" for p in _files()
           if (n := len(p.read_text(encoding="utf-8").splitlines())) > MAX_MODULE_LINES]
    assert not big, "split these modules:\n" + "\n".join(big)


def test_functions_stay_under_80_lines_of_code():
    long = [f for p in _files() for f in _long_functions(p.read_text(encoding="utf-8"), str(p.relative_to(ROOT)))]
    assert not long, "split these functions:\n" + "\n".join(long)


def test_the_measure_leaves_the_docstring_out():
    body = "\n".join(f"    x{i} = {i}" for i in range(81))
    src = f'def f():\n    """Doc\n\n    more.\n    """\n{body}\n\ndef g():\n    """Doc."""\n    return 1\n'
    assert _long_functions(src, "p.py") == ["p.py:1 f (82 lines)"]
