"""Golden outputs pinned before the one-home refactor (issue 12): the numbers must not move.

The files under ``tests/data/golden/`` were written by this module (``PLANNER_REGEN_GOLDEN=1``)
on the tree *before* Wilson/Newcombe, the pair tensor, length bias and reason shares were
given one home; the refactor must reproduce them exactly (JSON floats round-trip exactly,
so the comparison is ``==``, no tolerance). Regenerate only for a deliberate change of
numbers, and say which in the commit.

Deliberate changes so far: ``intervals.json`` was regenerated once when the three Wilson
implementations became one (``planner.stats.proportions``): ``significance``'s Wilson bounds
(formerly scipy's ``proportion_ci`` arithmetic) and ``power.wilson_half_width`` at levels
other than 0.95 (formerly ``z = norm.isf((1-c)/2)``, now ``norm.ppf(0.5 + c/2)`` as the
report/decide intervals) moved by at most 2e-16 absolute (a few units in the last place);
the report and decide goldens did not move at all, and ``pass_rate_size``'s item counts are
unchanged on a 112-case grid.

Issue 13 (regenerated deliberately): the report goldens lose ``groups``/``group`` (chained
rank groups) and gain ``tied_with_leader``, ``p_leader_better`` and ``judges``; the position
and length-bias p-values moved by ~2.5e-13 relative (``scipy.special.bdtr`` doubling instead
of ``scipy.stats.binomtest``, identical in exact arithmetic); in ``decide_counts`` the
intervals, z and p values are the trinomial score procedures (ties' sampling error included)
and a note names the model behind the posterior columns. Every other number is unchanged.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import pytest

import _report_fixture as fx
from planner.workflows.report import build_report

GOLDEN = Path(__file__).parent / "data" / "golden"
REGEN = os.environ.get("PLANNER_REGEN_GOLDEN") == "1"


def _check(name: str, doc) -> None:
    path = GOLDEN / name
    text = json.dumps(doc, sort_keys=True, indent=1) + "\n"
    if REGEN:
        path.write_text(text, encoding="utf-8")
    assert path.exists(), f"golden file {path} missing; run with PLANNER_REGEN_GOLDEN=1 once"
    assert json.loads(text) == json.loads(path.read_text(encoding="utf-8"))


def _report_doc(root: Path, **kw) -> dict:
    doc = build_report(root, save_posterior=False, **kw).to_dict()
    doc.pop("study")               # the temporary path
    return doc


@pytest.fixture(scope="module")
def synth(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("golden") / "s"
    return fx.synthetic_study(root, n=300, n_prompts=40, weights=True,
                              acceptable={"sys-a": 30, "sys-b": 10})


def test_report_by_stratum_golden(synth):
    _check("report_synth_by_stratum.json", _report_doc(synth, by_stratum=True))


def test_report_pooled_golden(synth):
    _check("report_synth_pooled.json", _report_doc(synth, by_stratum=False, seed=3))


def test_report_no_weights_golden(tmp_path):
    root = fx.synthetic_study(tmp_path / "u", n=200, n_prompts=24, seed=5, reasons=True)
    _check("report_synth_unweighted.json", _report_doc(root, by_stratum=True))


def test_interval_goldens():
    """Wilson bounds, Wilson half-widths, Newcombe differences and significance() intervals."""
    from planner import diagnostics
    from planner.stats import proportions
    from planner.stats.significance import significance

    grid = [(0, 1), (0, 10), (1, 10), (5, 10), (10, 10), (37, 80), (484, 967), (3, 1000)]
    doc: dict = {}
    for conf in (0.9, 0.95, 0.99):
        for k, n in grid:
            doc[f"wilson {k}/{n} @{conf}"] = list(diagnostics.wilson_interval(k, n, conf))
            doc[f"half-width {k}/{n} @{conf}"] = float(proportions.wilson_half_width(k / n, n, conf))
            sig = significance(k, n - k, confidence_level=conf)
            doc[f"significance {k}/{n} @{conf}"] = [sig.wilson.low, sig.wilson.high]
    doc["half-widths vector"] = [float(x) for x in proportions.wilson_half_width(0.3, np.arange(1, 40), 0.95)]
    doc["fractional"] = list(diagnostics.wilson_interval(12.5, 30, 0.95))
    for a, n1, b, n2 in [(56, 70, 48, 80), (9, 10, 3, 10), (0, 5, 5, 5), (30, 60, 30, 60)]:
        doc[f"newcombe {a}/{n1}-{b}/{n2}"] = list(proportions.newcombe_difference(a, n1, b, n2, 0.95))
    _check("intervals.json", doc)


def test_decide_counts_golden():
    """The release gate's figures on fixed counts with explicit stratum weights."""
    from _decide_fixture import SYSTEMS
    from planner.counts import Counts
    from planner.gate import decide_counts
    from planner.jsonable import jsonable

    recs = []
    for h, (w, l, t) in {"chat": (300, 200, 0), "coding": (60, 40, 20), "math": (7, 9, 3)}.items():
        recs += [("new", "old", "A", h)] * (w // 2) + [("old", "new", "B", h)] * (w - w // 2)
        recs += [("old", "new", "A", h)] * (l // 2) + [("new", "old", "B", h)] * (l - l // 2)
        recs += [("new", "old", "tie", h)] * (t // 2) + [("old", "new", "tie", h)] * (t - t // 2)
    recs += [("old", "ref", "A", "chat")] * 5 + [("new", "old", "invalid", "coding")] * 3
    c = Counts.from_records(SYSTEMS, recs, strata=("chat", "coding", "math"))
    d = decide_counts(c, "new", "old", stratum_weights={"chat": 3.0, "coding": 1.0, "math": 0.5})
    doc = json.loads(json.dumps(jsonable(d)))
    _check("decide_counts.json", doc)
