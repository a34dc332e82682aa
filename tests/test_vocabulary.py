"""planner/vocabulary.py is the one home of the tool's words (issue 12): every module that lists them agrees.

Modules that import the tuple from the vocabulary agree by construction (``is``); the
ones that still spell a copy must hold the same words, so a copy cannot drift unseen.
"""

from __future__ import annotations

from planner import vocabulary as v


def test_imported_not_copied():
    from planner import counts
    from planner.formats import _base, judge, writers


    assert counts.OUTCOMES is v.OUTCOMES
    from planner import model

    assert model.ENGINES is v.ENGINES
    assert writers.PAIRWISE_VERDICTS is v.PAIRWISE_VERDICTS
    assert writers.ACCEPTABILITY_VERDICTS is v.ACCEPTABILITY_VERDICTS
    assert _base.POSITION_VERDICTS is v.POSITION_VERDICTS
    assert judge.VERDICTS is v.POSITION_VERDICTS
    import planner.acquisition as acq
    from planner import items
    from planner.gate import results
    from planner.workflows import report

    assert results.ENGINES is v.ENGINES and report.ENGINES is v.ENGINES
    assert acq.STRATEGIES is v.STRATEGIES and acq.OBJECTIVES is v.OBJECTIVES
    assert items.QC_KINDS is v.QC_KINDS


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
