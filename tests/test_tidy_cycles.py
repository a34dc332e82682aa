"""No import circles between planner's modules (issue 12), lazy imports included.

Every ``import`` and ``from ... import`` in a module's source counts, inside functions
too (a lazy import is still a dependency); imports under ``if TYPE_CHECKING:`` do
not. The one known knot is listed: the style model dispatches to its two engines
lazily and they import its design and result types (docs/architecture.md).
"""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
KNOWN = [{"planner.model.style", "planner.model.style_laplace", "planner.model.style_nuts"}]


def _graph() -> dict[str, set[str]]:
    """module -> the planner modules it imports (the architecture test's reader of imports)."""
    from test_tidy_architecture import _module_name, _package, _runtime_imports

    files = {_module_name(p.relative_to(ROOT).as_posix()): p for p in (ROOT / "planner").rglob("*.py")}
    graph = {}
    for name, p in files.items():
        deps = _runtime_imports(p, _package(p.relative_to(ROOT).as_posix()))
        # a submodule importing a sibling runs its own package's __init__ (which re-exports the submodules):
        # that edge is how packages work, not a circle in the design
        graph[name] = {d for d in deps if d in files and d != name and not name.startswith(d + ".")}
    return graph


def _cycles(graph: dict[str, set[str]]) -> list[set[str]]:
    """Strongly connected components with more than one module (Tarjan, iterative)."""
    index, low, on, stack, out, counter = {}, {}, set(), [], [], [0]
    for root in graph:
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = counter[0]
        counter[0] += 1
        stack.append(root)
        on.add(root)
        while work:
            v, it = work[-1]
            w = next(it, None)
            if w is not None:
                if w not in index:
                    index[w] = low[w] = counter[0]
                    counter[0] += 1
                    stack.append(w)
                    on.add(w)
                    work.append((w, iter(sorted(graph[w]))))
                elif w in on:
                    low[v] = min(low[v], index[w])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                comp = set()
                while True:
                    w = stack.pop()
                    on.discard(w)
                    comp.add(w)
                    if w == v:
                        break
                if len(comp) > 1:
                    out.append(comp)
    return out


def test_no_import_circles_but_the_known_knot():
    found = _cycles(_graph())
    new = [sorted(c) for c in found if c not in KNOWN]
    assert not new, f"import circles: {new}"


def test_the_checker_finds_a_circle():
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [{"a", "b", "c"}]
    assert _cycles({"a": {"b"}, "b": set()}) == []
