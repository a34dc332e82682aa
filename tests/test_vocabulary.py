"""planner/vocabulary.py is the one home of the tool's words: every module that lists them agrees.

Modules that import the tuple from the vocabulary agree by construction (``is``); the
ones that still spell a copy must hold the same words, so a copy cannot drift unseen.
"""

from __future__ import annotations

from planner import vocabulary as v

WORDS = {name: value for name, value in vars(v).items() if name.isupper() and isinstance(value, tuple)}


def _copies(source: str) -> list[tuple[int, str]]:
    """``(line, vocabulary name)`` of every tuple or list literal that spells one of the vocabulary's tuples."""
    import ast

    out = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, (ast.Tuple, ast.List)) and node.elts and all(
                isinstance(e, ast.Constant) and isinstance(e.value, str) for e in node.elts):
            words = tuple(e.value for e in node.elts)
            out += [(node.lineno, name) for name, value in WORDS.items() if words == value]
    return out


#: modules another branch is rewriting this session, which still spell a copy (the engines): moved when they land
NOT_YET = {"planner/workflows/simulate.py"}


def test_imported_not_copied():
    """No module under planner/ spells one of the vocabulary's tuples again: it imports it from the one home."""
    from pathlib import Path

    import planner

    root = Path(planner.__file__).parent
    copies = [f"{rel}:{line}: {name}" for path in sorted(root.rglob("*.py"))
              if path.name != "vocabulary.py" and (rel := path.relative_to(root.parent).as_posix()) not in NOT_YET
              for line, name in _copies(path.read_text(encoding="utf-8"))]
    assert not copies, "import these from planner.vocabulary:\n" + "\n".join(copies)


def test_the_copy_finder_sees_a_copy():
    assert _copies('KINDS = ("regular", "overlap", "swap", "external")\nX = ["laplace", "nuts"]\n') == [
        (1, "COUNTED_KINDS"), (2, "ENGINES")]


def test_remaining_copies_hold_the_same_words():
    from planner import batch
    from planner.store import study

    assert study.ITEM_KINDS == v.ITEM_KINDS and study.JUDGMENT_KINDS == v.JUDGMENT_KINDS
    assert study.COUNTED_KINDS == v.COUNTED_KINDS and study.PENDING_KINDS == v.PENDING_KINDS
    assert set(batch.KINDS) == set(v.ITEM_KINDS)      # batch lists them in its own order


def test_the_words_fit_together():
    assert set(v.PAIRWISE_VERDICTS) | set(v.ACCEPTABILITY_VERDICTS) == set(v.POSITION_VERDICTS)
    assert set(v.QC_KINDS) < set(v.ITEM_KINDS)
    assert set(v.COUNTED_KINDS) <= set(v.JUDGMENT_KINDS) and set(v.PENDING_KINDS) <= set(v.COUNTED_KINDS)
    assert not set(v.COUNTED_KINDS) & {"attention", "repeat", "acceptability"}   # QC is not evidence
    assert len(v.OUTCOMES) == 4 and v.OUTCOMES[-1] == "invalid"


OLD_LEVEL_NAMES = ("confidence", "level")   # the interval's level is `confidence_level` everywhere


def _parameters(source: str):
    """(function name, line, parameter) of every function, method and lambda defined in ``source``."""
    import ast

    for node in ast.walk(ast.parse(source)):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            a = node.args
            for arg in (*a.posonlyargs, *a.args, a.vararg, *a.kwonlyargs, a.kwarg):
                if arg is not None:
                    yield getattr(node, "name", "<lambda>"), node.lineno, arg.arg


def test_one_name_for_the_confidence_level():
    """No function or method under planner/ takes the interval's level as ``confidence`` or ``level``.

    Result fields and JSON keys (``Decision.confidence``, ``PassRateSize.confidence``,
    ``SignificanceResult.confidence``) are output schema and keep their names; only
    parameters are checked. Private helpers are held to the rule too.
    """
    from pathlib import Path

    import planner

    root = Path(planner.__file__).parent
    seen, bad = set(), []
    for path in sorted(root.rglob("*.py")):
        for name, line, param in _parameters(path.read_text(encoding="utf-8")):
            seen.add((name, param))
            if param in OLD_LEVEL_NAMES:
                bad.append(f"{path.relative_to(root.parent)}:{line}: {name}({param}=...)")
    assert not bad, "name the interval's level `confidence_level`:\n" + "\n".join(bad)
    # the walk sees the signatures it guards (not vacuous)
    assert {("decide_counts", "confidence_level"), ("interval", "confidence_level"),
            ("significance", "confidence_level"), ("rho_interval", "confidence_level")} <= seen


def test_the_walk_finds_the_old_names():
    src = "def f(x, confidence=0.9): ...\nclass C:\n    def interval(self, level=0.95): ...\ng = lambda level: level\n"
    assert [(n, p) for n, _, p in _parameters(src) if p in OLD_LEVEL_NAMES] == [
        ("f", "confidence"), ("interval", "level"), ("<lambda>", "level")]
