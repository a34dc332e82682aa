"""Every plain sentence agrees with the numbers in its own table."""

from __future__ import annotations

import json
import re

import pytest
from scipy import stats
from typer.testing import CliRunner

from cli.main import app
from planner.stats import power as pw
from planner.stats.significance import significance

runner = CliRunner()


def _run(*args):
    r = runner.invoke(app, list(args))
    assert r.exit_code == 0, r.stderr
    return r


def _flat(text):
    return " ".join(text.split())


@pytest.mark.parametrize("wins,losses", [(60, 40), (54, 46), (61, 39), (70, 30), (59, 41), (40, 60)])
def test_significance_sentence_matches_the_table(wins, losses):
    r = significance(wins, losses)
    text = r.conclusion
    # the decision is the exact binomial test (scipy, independently): p < 0.05 <=> "distinguishably"
    p = stats.binomtest(wins, wins + losses, 0.5).pvalue
    assert r.significant == (p < 0.05)
    assert ("not distinguishable" in text) == (p >= 0.05)
    # the interval quoted first is the exact one that goes with the test, and agrees with the decision
    lo, hi = (float(x) / 100 for x in re.search(r"Clopper–Pearson\) 95% interval \[([\d.]+)%, ([\d.]+)%\]",
                                                text).groups())
    cp = stats.binomtest(wins, wins + losses).proportion_ci(0.95, method="exact")
    assert (lo, hi) == pytest.approx((cp.low, cp.high), abs=0.0005)        # printed to 0.1%
    assert (lo <= 0.5 <= hi) == (not r.significant)
    # if the Wald interval in the table disagrees with the test, the sentence says so
    wald_excludes = not (r.wald.low <= 0.5 <= r.wald.high)
    assert ("the test above decides" in text) == (wald_excludes != r.significant)


def test_significance_60_40_explains_wald():
    # the disagreement this guards: 60-40 Wald [50.4%, 69.6%] excludes 50%, exact p = 0.0569 does not reject
    out = _flat(_run("significance", "--wins", "60", "--losses", "40").stdout)
    assert "[50.4%, 69.6%]" in out and "p = 0.0569" in out and "not distinguishable from 50%" in out
    assert "The Wald interval [50.4%, 69.6%] excludes 50%: it is a normal approximation" in out
    assert "[49.7%, 69.7%]" in out                    # Clopper-Pearson, scipy binomtest exact


def test_size_budget_mde_consistent_with_the_headline_n():
    # the disagreement this guards: --budget 200 said d = 0.102 is detectable, and the table said that d needs 206
    r = pw.size(None, budget=200)
    assert r.comparisons_exact <= 200                 # the table's headline n at the reported MDE
    # the headline n at a slightly smaller effect exceeds 200 (so the MDE is the smallest such d)
    assert pw.n_exact(r.mde - 1e-4, pw.Design()).n > 200
    # and at the plain (saw-tooth) point it is 206: the old figure
    plain = pw.mde_exact(200, pw.Design())
    assert plain == pytest.approx(0.1016, abs=1e-4) and pw.n_exact(plain, pw.Design()).n == 206
    out = _flat(_run("size", "--budget", "200").stdout)
    d = float(re.search(r"you can detect about d = ([\d.]+)", out).group(1))
    n = int(re.search(r"you need ([\d,]+) decisive", out).group(1).replace(",", ""))
    assert n <= 200 and d == pytest.approx(r.mde, abs=0.0005)


def test_size_systems_sentence_names_the_per_pair_alpha():
    out = _flat(_run("size", "--systems", "8", "--effect", "0.1").stdout)
    doc = json.loads(_run("size", "--systems", "8", "--effect", "0.1", "--json").stdout)
    # 7 anchor pairs: each sized at 0.05 / 7 = 0.007143
    assert "α = 0.007143 per pair" in out and "family-wise α = 0.05" in out
    assert doc["alpha_per_pair"] == pytest.approx(0.05 / 7)
    assert f"you need {doc['comparisons_exact']:,} decisive comparisons per pair" in out
    # a single pair keeps the plain form
    assert "with 80% power at α = 0.05 you need" in _flat(_run("size", "--effect", "0.04").stdout)
