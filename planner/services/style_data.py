"""The style-control reader: a study's judgments and response texts as :class:`planner.model.style_control.StyleInputs`.

Missing response texts: a judgment whose two responses are not both stored cannot be controlled; it
is left out and counted (``n_excluded``), so the report can say how many.
"""

from __future__ import annotations

import numpy as np

from planner.model.style_control import VERDICT_CODE, StyleInputs


def read_style_inputs(study) -> StyleInputs:
    """Collect the counted-kind, non-invalid pairwise judgments whose two responses are stored."""
    from planner.store.study import COUNTED_KINDS

    texts = {(r.prompt, r.system): r.text for r in study.responses()}
    sidx = {s: i for i, s in enumerate(study.systems)}
    rows, excluded = [], 0
    for j in study.judgments():
        if j.b is None or j.kind not in COUNTED_KINDS or j.verdict not in VERDICT_CODE:
            continue
        ta, tb = texts.get((j.prompt, j.a)), texts.get((j.prompt, j.b))
        if ta is None or tb is None:
            excluded += 1
            continue
        side = 1 if j.a_position == "left" else -1 if j.a_position == "right" else 0
        rows.append((j.prompt, sidx[j.a], sidx[j.b], side, VERDICT_CODE[j.verdict], ta, tb, j.annotator))
    diff = {p.id: p.difficulty for p in study.prompts() if p.difficulty is not None}
    cols = list(zip(*rows)) if rows else [()] * 8
    return StyleInputs(tuple(study.systems), tuple(cols[0]), np.array(cols[1], dtype=np.int64),
                       np.array(cols[2], dtype=np.int64), np.array(cols[3], dtype=np.int64),
                       np.array(cols[4], dtype=np.int64), tuple(cols[5]), tuple(cols[6]), excluded, diff,
                       tuple(cols[7]))
