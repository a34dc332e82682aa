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
