"""next-batch never filters by length silently: --size honoured; one note naming the prompts."""

from __future__ import annotations

import json

import _report_fixture as fx
import pytest

from planner.batch.textnorm import count_words
from planner.services.batch_plan import word_limit as _word_limit
from planner.workflows.next_batch import (
    LEGACY_DEFAULT_MAX_WORDS,
    BatchSelection,
    Output,
    QualityControl,
    TextOptions,
    next_batch,
)


def test_word_limit_default_is_off():
    assert _word_limit(None, {}) is None
    assert _word_limit(None, {"max_words": LEGACY_DEFAULT_MAX_WORDS}) is None   # init's old silent default
    assert _word_limit(None, {"max_words": 250}) == 250                        # chosen at init: honoured
    assert _word_limit(300, {"max_words": 250}) == 300


@pytest.fixture
def v80(vicuna_data, tmp_path_factory):
    return fx.vicuna_study(vicuna_data, tmp_path_factory.getbasetemp() / "honest_nb")


def test_vicuna_long_answers(vicuna_data):
    # 22 of 640 Vicuna80 answers exceed 400 words, 12 of them gpt-4's (count_words = the
    # batch writer's own word count)
    rows = [json.loads(x) for x in (vicuna_data / "vicuna80" / "responses.jsonl").read_text().splitlines() if x]
    text_key = next(k for k in ("response", "text", "output") if k in rows[0])
    long = [r for r in rows if count_words(r[text_key]) > 400]
    assert len(rows) == 640 and len(long) == 22
    assert sum(r["system"] == "gpt-4" for r in long) == 12


def test_vicuna_default_keeps_long_answers_and_size_is_honoured(v80):
    # every pair has judged every prompt in the full study: --reuse-prompts lets pairs take one again.
    # default: no limit (the study config holds init's 400, treated as the old silent default)
    res = next_batch(v80, BatchSelection(size=40, seed=5, engine="laplace", reuse_prompts=True),
                     qc=QualityControl(attention=0, repeat=0, overlap=0), output=Output(dry_run=True))
    assert len([it for it in res.items if it.kind == "regular"]) == 40
    assert not any(n.startswith("--max-words") for n in res.notes)
    # explicit --max-words 400: still 40 comparisons (other prompts chosen), one note naming the prompts
    res = next_batch(v80, BatchSelection(size=40, seed=5, engine="laplace", reuse_prompts=True),
                     qc=QualityControl(attention=0, repeat=0, overlap=0), output=Output(dry_run=True),
                     text=TextOptions(max_words=400))
    assert len([it for it in res.items if it.kind == "regular"]) == 40
    notes = [n for n in res.notes if n.startswith("--max-words 400:")]
    assert len(notes) == 1 and "22 response(s)" in notes[0] and "gpt-4" in notes[0]
    assert not res.manifest["batch_manifest"]["skipped"]["n"]
