"""bench/diagnose_replays.py against independent references (its figures are in bench/RESULTS.md).

* ICC(1): sums of squares from statsmodels' one-way ANOVA (balanced groups) and a
  hand calculation for unequal groups (Donner's n0);
* lack of fit: Bradley–Terry strengths from choix's maximum likelihood on the same
  decisive verdicts, and the Pearson χ² recomputed from them.
"""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]
PRD_GPT4 = ROOT / "bench" / "data" / "replays" / "prd_vicuna80_gpt4.jsonl"


@pytest.fixture(scope="module")
def diag():
    spec = importlib.util.spec_from_file_location("diagnose_replays", ROOT / "bench" / "diagnose_replays.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_icc_balanced_matches_statsmodels_anova(diag):
    import pandas as pd
    import statsmodels.api as sm
    from statsmodels.formula.api import ols

    g = np.random.default_rng(3)
    effects = g.normal(0, 0.6, 40)
    groups = [effects[i] + g.normal(0, 1.0, 3) for i in range(40)]
    df = pd.DataFrame({"y": np.concatenate(groups), "g": np.repeat(np.arange(40), 3).astype(str)})
    table = sm.stats.anova_lm(ols("y ~ C(g)", data=df).fit())
    msb = table.loc["C(g)", "sum_sq"] / table.loc["C(g)", "df"]
    msw = table.loc["Residual", "sum_sq"] / table.loc["Residual", "df"]
    assert diag.icc_oneway(groups) == pytest.approx((msb - msw) / (msb + 2 * msw), rel=1e-12)


def test_icc_unequal_groups_by_hand(diag):
    # groups [1, 2], [3, 5, 7], [4]: N = 6, k = 3, grand mean 22/6
    # SSB = 2 (1.5 - 11/3)^2 + 3 (5 - 11/3)^2 + (4 - 11/3)^2 = 9.3889 + 5.3333 + 0.1111 = 14.8333
    # SSW = 0.5 + 8 + 0 = 8.5; MSB = 14.8333 / 2 = 7.41667; MSW = 8.5 / 3 = 2.83333
    # n0 = (6 - (4 + 9 + 1) / 6) / 2 = 1.83333; ICC = (7.41667 - 2.83333) / (7.41667 + 0.83333 * 2.83333)
    #    = 4.58333 / 9.77778 = 0.46875
    groups = [np.array([1.0, 2.0]), np.array([3.0, 5.0, 7.0]), np.array([4.0])]
    msb, msw, n0 = 14.833333333333334 / 2, 8.5 / 3, (6 - 14 / 6) / 2
    assert diag.icc_oneway(groups) == pytest.approx((msb - msw) / (msb + (n0 - 1) * msw), rel=1e-12)
    assert diag.icc_oneway(groups) == pytest.approx(0.46875, abs=1e-5)


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
