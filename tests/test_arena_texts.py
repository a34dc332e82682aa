"""Study.response_texts (read on demand, planner/store/texts.py) against the dict next-batch built before.

``_assemble`` used to pass ``{(r.prompt, r.system): r.text for r in study.responses()}``
(every text read) to ``assemble_batch``; now it passes ``study.response_texts()``.
That mapping must hold the same keys in the same order (the attention items'
off-topic texts are drawn from the keys) and the same texts, and the batch built
from it must be identical, QC items included. The study is tests/_batch_fixture.py's
(one response left out, so a missing key is exercised). ``Study.response_keys`` is
read once while the database is unchanged; it must be read again after a write on
this connection or a commit on another.
"""

from __future__ import annotations

import json

import _batch_fixture as fx
import numpy as np
import pytest

from planner.batch.assemble import assemble_batch
from planner.store.study import Study, init_study


@pytest.fixture
def study(tmp_path):
    (tmp_path / "prompts.jsonl").write_text("".join(
        json.dumps({"id": pid, "text": text, "stratum": fx.stratum(pid)}) + "\n"
        for pid, text in fx.prompts().items()), encoding="utf-8")
    (tmp_path / "responses.jsonl").write_text("".join(
        json.dumps({"prompt": pid, "system": s, "text": t}) + "\n"
        for (pid, s), t in fx.responses().items() if (pid, s) != ("p03", "delta-2")), encoding="utf-8")
    init_study(tmp_path / "st", systems=list(fx.SYSTEMS), prompts_file=tmp_path / "prompts.jsonl",
               responses_file=tmp_path / "responses.jsonl")
    with Study.open(tmp_path / "st") as st:
        yield st


def _old(st: Study) -> dict:
    return {(r.prompt, r.system): r.text for r in st.responses()}


def test_same_keys_order_and_texts(study):
    old, new = _old(study), study.response_texts()
    assert new[("p05", "gamma")] == old[("p05", "gamma")]   # a lookup before the keys are listed
    assert list(new) == list(old) and len(new) == len(old) == 24 * 6 - 1
    assert dict(new) == old
    assert new.get(("p03", "delta-2")) is None and ("p03", "delta-2") not in new   # no such response
    assert new.get(("p03", "nobody")) is None and new.get("p03") is None            # unknown system, bad key
    with pytest.raises(KeyError):
        new[("nowhere", "gamma")]


@pytest.mark.parametrize("options", [dict(attention=0.2, repeat=0.1, overlap=0.0),
                                     dict(attention=0.25, acceptability=0.1, max_words=60),
                                     dict(attention=0.2, max_words=40, truncate=True, normalize_style="markdown")])
def test_the_batch_is_identical(study, options):
    planned = fx.planned(repeat_pairs=2) + [("p03", "delta-2", "zeta", fx.stratum("p03"))]   # one is skipped
    ptext = {p.id: p.text for p in study.prompts()}
    lazy = study.response_texts()
    want = assemble_batch(planned, prompt_text=ptext, response_text=_old(study), rng=np.random.default_rng(5),
                          **options)
    got = assemble_batch(planned, prompt_text=ptext, response_text=lazy, rng=np.random.default_rng(5), **options)
    assert got.items == want.items and got.skipped == want.skipped and got.manifest == want.manifest
    assert any(it.kind == "attention" for it in got.items) and got.skipped
    assert len(lazy._texts) < len(_old(study))   # not every text was read


def _fresh(st: Study) -> list:
    """The keys as read before the memo (the query, every time)."""
    n = dict(st.connection.execute("SELECT id, name FROM systems"))
    return [(r[0], n[r[1]]) for r in st.connection.execute(
        "SELECT r.prompt, r.system FROM responses r JOIN prompts p ON p.id = r.prompt ORDER BY p.ord, r.system")]


def test_response_keys_read_again_after_a_change(study):
    import sqlite3

    from planner.store.db import db_path, write

    first = study.response_keys()
    assert first == _fresh(study) and study.response_keys() == first
    first.append(("mutated", "by the caller"))          # a copy: the memo is not touched
    assert study.response_keys() == _fresh(study)
    sid = study.connection.execute("SELECT id FROM systems WHERE name = 'delta-2'").fetchone()[0]
    with write(study.connection) as con:                       # this connection writes
        con.execute("INSERT INTO responses (prompt, system, text, length) VALUES ('p03', ?, 'x', 1)", (sid,))
    assert ("p03", "delta-2") in study.response_keys() and study.response_keys() == _fresh(study)
    other = sqlite3.connect(db_path(study.path), isolation_level=None)   # another connection commits
    other.execute("DELETE FROM responses WHERE prompt = 'p00'")
    other.close()
    got = study.response_keys()
    assert got == _fresh(study) and not any(p == "p00" for p, _ in got)
