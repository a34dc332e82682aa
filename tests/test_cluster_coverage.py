"""Clustered verdicts: the report's intervals cover (bench/bench_cluster_coverage.py), NUTS widens like Laplace.

Coverage (slow): a realistic clustered design — ICC 0.3 inside each (prompt, pair), the marginal model exactly
Bradley–Terry–Davidson, both orders judged or three annotators, 200 studies each. bench/RESULTS.md
"Clustered verdicts" has the table: strength intervals 0.918 / 0.894 treating the judgments as
independent, 0.947 / 0.962 clustered; anchor win rates 0.957 / 0.921 and 0.974 / 0.967. The bound, >= 0.93,
is the nominal 0.95 less three binomial SEs (200 studies x 6 strengths: an SE of about 0.006 at 0.95).
"""

from __future__ import annotations

import numpy as np
import pytest
from _bench import load_bench


@pytest.fixture(scope="module")
def bench():
    return load_bench("bench_cluster_coverage")


def _coverage(bench, scenario: str, reps: int, icc: float = 0.3) -> dict:
    per, both = bench.SCENARIOS[scenario]
    rng = np.random.default_rng([26, list(bench.SCENARIOS).index(scenario)])
    acc: dict = {}
    for _ in range(reps):
        for k, v in bench.one_study(bench.simulate(rng, 40, per, both, icc)).items():
            acc.setdefault(k, []).append(v)
    return {k: float(np.mean(np.concatenate(v))) for k, v in acc.items()}


def test_simulated_icc_is_the_one_asked_for(bench):
    from planner.stats.clusters import verdict_icc

    rng = np.random.default_rng(1)
    est = [verdict_icc(bench.simulate(rng, 40, 3, False, 0.3)).icc for _ in range(5)]
    # 600 clusters of 3 per study: the ANOVA ICC's sd is about 0.03; five studies average within 0.03
    assert np.mean(est) == pytest.approx(0.3, abs=0.03)


def test_coverage_a_few_studies(bench):
    # 20 studies: clustered intervals at least as often right as the independent ones, and wider
    cov = _coverage(bench, "annotators", 20)
    assert cov["strength item"] >= cov["strength none"] and cov["deff"] > 1.2


@pytest.mark.slow
@pytest.mark.parametrize("scenario", ["orders", "annotators"])
def test_coverage_restored(bench, scenario):
    cov = _coverage(bench, scenario, 200)
    assert cov["strength item"] >= 0.93 and cov["anchor item"] >= 0.93
    assert cov["strength none"] < cov["strength item"]


@pytest.mark.slow
def test_nuts_widens_like_laplace(vicuna_data, tmp_path):
    from _report_fixture import vicuna_study

    from planner.model import fit
    from planner.stats.clusters import cluster_cells
    from planner.store.study import Study

    with Study.open(vicuna_study(vicuna_data, tmp_path)) as st:
        ja = st.judgment_arrays()
    counts, cells = ja.counts(), cluster_cells(ja, "item")
    lap = fit(counts, clusters=cells).sd / fit(counts).sd
    nuts = fit(counts, engine="nuts", clusters=cells, seed=1).sd / fit(counts, engine="nuts", seed=1).sd
    # measured: Laplace 1.04-1.25, NUTS within 0.02 of it; 0.05 allows the sampler's Monte Carlo error
    np.testing.assert_allclose(nuts, lap, atol=0.05)
    assert (lap > 1.0).all()
