"""decide under clustered verdicts, and the pooled row of a single stratum.

* The pooled row with one stratum is that stratum's estimate and interval (it was a Wilson interval
  at an effective sample size: 1-0-1 gave 0.198-0.973 beside the stratum's 0.257-0.953).
* A stratum's design effect enters the tests, the interval, the pooled row and "more comparisons":
  each checked against a hand computation of the same quantity; the workflow's design effect is
  the cluster-robust over the independent variance of the pair's scores, recomputed here from the
  stored judgments with statsmodels' cluster-robust OLS.
"""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from scipy import stats

from planner.counts import Counts
from planner.gate import decide_counts
from planner.stats.proportions import half_tie_interval, half_tie_score_z
from planner.store.study import Study, ingest, init_study
from planner.workflows.decide import decide

SYSTEMS = ("new", "old", "ref")


def _counts(strata: dict[str, tuple[int, int, int]]) -> Counts:
    recs = []
    for h, (w, l, t) in strata.items():
        recs += [("new", "old", "A", h)] * w + [("new", "old", "B", h)] * l + [("new", "old", "tie", h)] * t
    return Counts.from_records(SYSTEMS, recs, strata=tuple(strata))


def test_single_stratum_pooled_row_is_the_stratum_row():
    for tally in ((1, 0, 1), (30, 20, 10), (0, 6, 0)):
        d = decide_counts(_counts({"all": tally}), "new", "old")
        row, pooled = d.strata[0], d.pooled
        assert (pooled.win_rate, pooled.ci_low, pooled.ci_high) == (row.win_rate, row.ci_low, row.ci_high)
    # one stratum with data among several: the same
    d = decide_counts(_counts({"a": (12, 5, 3), "b": (0, 0, 0)}), "new", "old")
    assert (d.pooled.ci_low, d.pooled.ci_high) == (d.strata[0].ci_low, d.strata[0].ci_high)


def test_design_effect_enters_tests_interval_pooled_row_and_budget():
    c = _counts({"x": (60, 30, 10), "y": (40, 45, 15)})
    plain = decide_counts(c, "new", "old")
    wide = decide_counts(c, "new", "old", design_effects={"x": 2.0, "y": 0.7})   # 0.7 is applied as 1
    x0, x1 = plain.strata[0], wide.strata[0]
    y0, y1 = plain.strata[1], wide.strata[1]
    assert (x1.design_effect, y1.design_effect) == (2.0, 1.0)
    assert x1.z_pass == pytest.approx(half_tie_score_z(60, 30, 10, 0.45, 2.0), rel=1e-12)
    # by hand: z = (W + T/2 - N theta - 1/2) / sqrt(deff N V(theta)), V at the restricted MLE
    assert x1.z_pass == pytest.approx(x0.z_pass / math.sqrt(2.0), rel=1e-12)
    assert (x1.ci_low, x1.ci_high) == half_tie_interval(60, 30, 10, 0.95, 2.0)
    assert x1.ci_low < x0.ci_low and x1.ci_high > x0.ci_high
    assert (y1.z_pass, y1.ci_low) == (y0.z_pass, y0.ci_low)
    # pooled variance sum w^2 deff V / N: only x's term doubles; equal weights 1/2
    vx = (60 + 10 / 4) / 100 - 0.65 ** 2
    vy = (40 + 15 / 4) / 100 - 0.475 ** 2
    s = 0.5 * 0.65 + 0.5 * 0.475
    var = 0.25 * (2 * vx / 100 + vy / 100)
    n_eff = s * (1 - s) / var
    z = stats.norm.isf(0.025)
    centre = (s + z * z / (2 * n_eff)) / (1 + z * z / n_eff)
    half = z * math.sqrt(s * (1 - s) / n_eff + z * z / (4 * n_eff ** 2)) / (1 + z * z / n_eff)
    assert (wide.pooled.ci_low, wide.pooled.ci_high) == pytest.approx((centre - half, centre + half), rel=1e-12)
    # an undecided stratum needs deff times the judgments (rounded up)
    assert y1.verdict == y0.verdict == "undecided"
    c2 = _counts({"z": (11, 9, 0)})
    n1 = decide_counts(c2, "new", "old").strata[0].needed_total
    n2 = decide_counts(c2, "new", "old", design_effects={"z": 1.5}).strata[0].needed_total
    assert n2 == math.ceil(n1 * 1.5)


def _clustered_study(tmp_path, copies: int):
    """new vs old on 60 prompts; each prompt's verdict repeated ``copies`` times (both orders, several
    annotators), so verdicts on one prompt agree completely."""
    g = np.random.default_rng(4)
    prompts = [{"id": f"p{i}", "text": f"question {i}"} for i in range(60)]
    pf = tmp_path / "prompts.jsonl"
    pf.write_text("".join(json.dumps(p) + "\n" for p in prompts), encoding="utf-8")
    init_study(tmp_path / "st", systems=list(SYSTEMS), prompts_file=pf)
    rows = []
    for i in range(60):
        winner = g.choice(["new", "old", "tie"], p=[0.55, 0.35, 0.10])
        for k in range(copies):
            a, b = ("new", "old") if k % 2 == 0 else ("old", "new")
            verdict = "tie" if winner == "tie" else ("A" if winner == a else "B")
            rows.append({"id": f"j{i}-{k}", "prompt": f"p{i}", "a": a, "b": b, "verdict": verdict,
                         "annotator": f"ann{k}"})
    jf = tmp_path / "judgments.jsonl"
    jf.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    ingest(tmp_path / "st", [jf])
    return tmp_path / "st", rows


def test_workflow_design_effect_is_the_cluster_robust_variance_ratio(tmp_path):
    import statsmodels.api as sm

    path, rows = _clustered_study(tmp_path, copies=4)
    d = decide(path, "new", "old", cluster="item")
    flat = decide(path, "new", "old", cluster="none")
    score = np.array([{"A": 1.0, "B": 0.0, "tie": 0.5}[r["verdict"]] if r["a"] == "new"
                      else {"A": 0.0, "B": 1.0, "tie": 0.5}[r["verdict"]] for r in rows])
    groups = np.array([int(r["prompt"][1:]) for r in rows])
    x = np.ones((score.size, 1))
    robust = sm.OLS(score, x).fit(cov_type="cluster", cov_kwds={"groups": groups}).bse[0] ** 2
    plain = sm.OLS(score, x).fit().bse[0] ** 2
    row = d.strata[0]
    # four identical verdicts per prompt: the design effect is near 4 (exactly the variance ratio)
    assert row.design_effect == pytest.approx(robust / plain, rel=1e-9) and 3.5 < row.design_effect < 4.5
    assert flat.strata[0].design_effect == 1.0
    assert row.ci_high - row.ci_low > 1.8 * (flat.strata[0].ci_high - flat.strata[0].ci_low)
    assert any(n.startswith("clustered by item: verdicts on the same prompt agree beyond chance") for n in d.notes)
    assert any(n == "judgments treated as independent (--cluster none)" for n in flat.notes)
    # the posterior columns come from the cluster-robust fit: wider too
    assert row.posterior_high - row.posterior_low > flat.strata[0].posterior_high - flat.strata[0].posterior_low
    # by annotator: the four annotators each judge every prompt, so clusters cut across prompts
    ann = decide(path, "new", "old", cluster="annotator")
    assert ann.strata[0].design_effect < row.design_effect


def test_report_and_decide_refuse_an_unknown_clustering(tmp_path):
    from planner.errors import UsageError
    from planner.workflows.report import build_report

    path, _ = _clustered_study(tmp_path, copies=2)
    for run in (lambda: decide(path, "new", "old", cluster="pair"), lambda: build_report(path, cluster="pair")):
        with pytest.raises(UsageError, match="`cluster` \\('pair'\\) must be one of item, prompt, annotator, none"):
            run()
    with Study.open(path) as st:
        assert st.judgment_arrays().n == 120          # nothing was changed


def test_cli_names_the_cluster_flag_and_an_empty_study_still_decides(tmp_path):
    from typer.testing import CliRunner

    from cli.main import app

    path, _ = _clustered_study(tmp_path, copies=2)
    runner = CliRunner()
    for args in (["report", str(path)], ["decide", str(path), "--candidate", "new", "--baseline", "old"]):
        r = runner.invoke(app, [*args, "--cluster", "pair"])
        assert r.exit_code == 2 and "--cluster ('pair') must be one of item, prompt, annotator, none" in r.stderr
        assert "Traceback" not in r.output
    init_study(tmp_path / "empty", systems=list(SYSTEMS))
    d = decide(tmp_path / "empty", "new", "old")
    assert d.verdict == "undecided" and all(s.design_effect == 1.0 for s in d.strata)
