"""bench/diagnose_replays.py against independent references (its figures are in bench/RESULTS.md).

* ICC(1): the core's :func:`planner.stats.clusters.verdict_icc` (its own tests against
  statsmodels' one-way ANOVA and a hand calculation are in tests/test_clusters.py);
* lack of fit: Bradley–Terry strengths from choix's maximum likelihood on the same
  decisive verdicts, and the Pearson χ² recomputed from them.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from _bench import load_bench

ROOT = Path(__file__).resolve().parents[1]
PRD_GPT4 = ROOT / "bench" / "data" / "replays" / "prd_vicuna80_gpt4.jsonl"


@pytest.fixture(scope="module")
def diag():
    return load_bench("diagnose_replays")


def test_clustering_is_the_core_estimate(diag):
    """The bench reads the ICC from planner.stats.clusters.verdict_icc (tested in tests/test_clusters.py);
    0.390 is the PRD GPT-4 figure in bench/RESULTS.md, unchanged by the move."""
    rows = [json.loads(line) for line in PRD_GPT4.open(encoding="utf-8")]
    nbar, icc, deff = diag.clustering(rows)
    assert nbar == pytest.approx(2.0, abs=0.005) and icc == pytest.approx(0.390, abs=5e-4)
    assert deff == pytest.approx(1.39, abs=0.005)


def test_lack_of_fit_matches_choix_on_a_real_set(diag):
    import choix

    rows = [json.loads(line) for line in PRD_GPT4.open(encoding="utf-8")]
    m, pairs, stat, df, worst = diag.lack_of_fit(rows)
    systems = sorted({r["a"] for r in rows} | {r["b"] for r in rows})
    ix = {s: i for i, s in enumerate(systems)}
    data = [(ix[r["a"]], ix[r["b"]]) if r["verdict"] == "A" else (ix[r["b"]], ix[r["a"]])
            for r in rows if r["verdict"] in ("A", "B")]
    theta = choix.opt_pairwise(len(systems), data, alpha=0.0, method="BFGS")
    wins = np.zeros((m, m))
    for w, loser in data:
        wins[w, loser] += 1
    ref = 0.0
    for i in range(m):
        for j in range(i + 1, m):
            n = wins[i, j] + wins[j, i]
            p = 1.0 / (1.0 + np.exp(-(theta[i] - theta[j])))
            ref += (wins[i, j] - n * p) ** 2 / (n * p * (1 - p))
    assert (m, pairs, df) == (5, 10, 6)
    # both are numerical optima of the same likelihood: χ² agrees to the optimisers' tolerance
    assert stat == pytest.approx(ref, abs=0.02)
    assert stat == pytest.approx(1.3, abs=0.05)          # the figure in bench/RESULTS.md
    assert worst.startswith("bard–gpt-4")


def test_position_share_is_the_count_of_first_shown_wins(diag):
    rows = [{"verdict": v} for v in ["A"] * 30 + ["B"] * 10 + ["tie"] * 5]
    assert diag.position_row(rows).startswith("0.750 [")
