"""planner.hybrid.ppi: PPI++ Bradley–Terry, cross-checked against ppi_py and replayed on Vicuna80."""

from __future__ import annotations

import json

import numpy as np
import pytest
from _example_data import vicuna_dir
from _lazy import lazy_import

from planner.errors import DataError, UsageError
from planner.hybrid.items import items_from_verdicts
from planner.hybrid.ppi import (
    compare_hybrid,
    design_matrix,
    human_only_bradley_terry,
    judge_only_bradley_terry,
    ppi_bradley_terry,
)
from planner.workflows.hybrid_report import hybrid_report

ppi_py = lazy_import("ppi_py")   # the test oracle (test extra: ppi-python), imported by its first use
pytestmark = [pytest.mark.filterwarnings("ignore::FutureWarning"),          # sklearn, inside ppi_py
              pytest.mark.filterwarnings("ignore:.*faster on contiguous")]  # numba, inside ppi_py
DATA = vicuna_dir()   # the real Vicuna-80 files: the package's one copy, as `planner example vicuna80` writes it
SYSTEMS = ("gpt-4", "gpt-3.5-turbo", "bard", "vicuna-13b", "guanaco-7b", "guanaco-13b", "guanaco-33b", "guanaco-65b")
Z90 = 1.6448536269514722


def _synthetic(seed=1, n=300, m=3000, agree=0.75):
    rng = np.random.default_rng(seed)
    th = np.array([0.0, 0.4, -0.3, 0.8])

    def draw(size):
        p = np.array([rng.choice(4, 2, replace=False) for _ in range(size)])
        y = (rng.random(size) < 1 / (1 + np.exp(th[p[:, 1]] - th[p[:, 0]]))).astype(float)
        yh = np.where(rng.random(size) < agree, y, 1 - y) * 0.8 + 0.1   # a soft, noisy judge
        return p, y, yh
    (pl, yl, yhl), (pu, _, yhu) = draw(n), draw(m)
    return list("abcd"), pl, yl, yhl, pu, yhu


def _reference_dropped(r):
    """θ_j − θ_0 and its standard error: ppi_py's coordinates (first column dropped)."""
    c = r.cov
    sd = np.sqrt([c[j, j] + c[0, 0] - 2 * c[0, j] for j in range(1, len(r.theta))])
    return r.theta[1:] - r.theta[0], sd


# Tolerance 1e-6: both solve the same convex problem to ~1e-12 (Newton here, L-BFGS-B with
# ftol 1e-15 there) and compute the same closed-form covariance; 1e-6 leaves room for L-BFGS-B.
def test_tuned_interval_matches_ppi_logistic_ci():
    names, pl, yl, yhl, pu, yhu = _synthetic()
    r = ppi_bradley_terry(names, pl, yl, yhl, pu, yhu, confidence_level=0.9)
    x, xu = design_matrix(pl, 4), design_matrix(pu, 4)
    lo, hi = ppi_py.ppi_logistic_ci(x, yl, yhl, xu, yhu, alpha=0.1)
    est, sd = _reference_dropped(r)
    np.testing.assert_allclose(est - Z90 * sd, lo, atol=1e-6)
    np.testing.assert_allclose(est + Z90 * sd, hi, atol=1e-6)
    assert 0 < r.lam < 1


@pytest.mark.parametrize("lam", [0.0, 0.37, 1.0])
def test_fixed_lambda_matches_ppi_py(lam):
    names, pl, yl, yhl, pu, yhu = _synthetic(seed=2)
    r = ppi_bradley_terry(names, pl, yl, yhl, pu, yhu, lam=lam)
    x, xu = design_matrix(pl, 4), design_matrix(pu, 4)
    pe = ppi_py.ppi_logistic_pointestimate(x, yl, yhl, xu, yhu, lam=lam)
    lo, hi = ppi_py.ppi_logistic_ci(x, yl, yhl, xu, yhu, alpha=0.1, lam=lam)
    est, sd = _reference_dropped(r)
    np.testing.assert_allclose(est, pe, atol=1e-6)
    np.testing.assert_allclose(Z90 * sd, (hi - lo) / 2, atol=1e-6)


def test_useless_judge_gets_no_weight_and_good_judge_narrows():
    names, pl, yl, yhl, pu, yhu = _synthetic(seed=3, agree=0.5)          # judge = coin flips
    useless = compare_hybrid(names, pl, yl, yhl, pu, yhu)
    assert useless.ppi.lam < 0.1
    assert useless.labels_gained < 0.1 * useless.ppi.n
    names, pl, yl, yhl, pu, yhu = _synthetic(seed=3, agree=0.95)
    good = compare_hybrid(names, pl, yl, yhl, pu, yhu)
    assert good.ppi.lam > 0.5
    assert np.all(good.ppi.hi - good.ppi.lo < good.human.hi - good.human.lo)
    assert good.effective_n > 2 * good.ppi.n


def test_position_bias_cancels_when_both_orders_pooled():
    # a judge that always picks the first-shown answer, asked in both orders: prediction 1/2 per item
    rows = [("p", "a", "b", "A", "j"), ("p", "b", "a", "A", "j"), ("p", "a", "b", "B", "h"),
            ("q", "b", "a", "tie", "h"), ("q", "a", "b", "invalid", "j")]
    it = items_from_verdicts(("a", "b"), rows, "j")
    assert it.pairs.tolist() == [[0, 1], [0, 1]]
    np.testing.assert_allclose(it.y, [0.0, 0.5])
    np.testing.assert_allclose(it.yhat, [0.5, 0.5])
    assert it.judge_missing == 1


def test_win_rates_and_rank_sets_are_consistent():
    names, pl, yl, yhl, pu, yhu = _synthetic(seed=4, n=2000)
    r = ppi_bradley_terry(names, pl, yl, yhl, pu, yhu)
    np.testing.assert_allclose(r.win + r.win.T, 1.0)
    assert np.all((r.win_lo <= r.win) & (r.win <= r.win_hi))
    np.testing.assert_allclose(r.theta.sum(), 0.0, atol=1e-12)
    assert np.all(r.rank_low <= r.rank_high)
    assert r.rank_low[3] == 1 and r.rank_high[2] == 4                    # d best, c worst (θ 0.8, −0.3)


def test_bad_inputs_are_usage_errors():
    names, pl, yl, yhl, pu, yhu = _synthetic()
    with pytest.raises(UsageError, match=r"scores in \[0, 1\]"):
        ppi_bradley_terry(names, pl, yl * 2, yhl, pu, yhu)
    with pytest.raises(UsageError, match=r"distinct and in 0..3"):
        ppi_bradley_terry(names, pl + 1, yl, yhl, pu, yhu)
    with pytest.raises(UsageError, match="`lam` must be"):
        ppi_bradley_terry(names, pl, yl, yhl, pu, yhu, lam=1.5)
    with pytest.raises(UsageError, match="confidence_level"):
        ppi_bradley_terry(names, pl, yl, yhl, pu, yhu, confidence_level=90)
    with pytest.raises(DataError, match="do not connect"):
        human_only_bradley_terry(names, [[0, 1]] * 5, [1, 0, 1, 0, 1])
    with pytest.raises(DataError, match="no finite solution"):                  # b loses everything
        human_only_bradley_terry(["a", "b", "c"], [[0, 1], [1, 2], [0, 2], [2, 0]], [1, 0, 1, 0.5])


# ---------------------------------------------------------------- Vicuna80 (shared data)

needs_data = pytest.mark.skipif(not (DATA / "judgments").is_dir(), reason=f"{DATA} absent")


def _vicuna_rows():
    rows = []
    for name in ("qlora_vicuna80_gpt4.jsonl", "qlora_vicuna80_human.jsonl"):
        with open(DATA / "judgments" / name, encoding="utf-8") as f:
            rows += [(r["prompt"], r["a"], r["b"], r["verdict"], r["judge"]) for r in map(json.loads, f)]
    return rows


@needs_data
def test_vicuna_cross_check_against_ppi_py_on_decisive_single_votes():
    # one human vote per item (the v0 vote), decisive only: binary Y, which ppi_py's sklearn start needs
    rows = []
    for name in ("qlora_vicuna80_gpt4.jsonl", "qlora_vicuna80_human.jsonl"):
        with open(DATA / "judgments" / name, encoding="utf-8") as f:
            rows += [(r["prompt"], r["a"], r["b"], r["verdict"], r["judge"]) for r in map(json.loads, f)
                     if r["judge"] == "gpt-4" or (r["id"].endswith(":v0") and r["verdict"] in ("A", "B"))]
    it = items_from_verdicts(SYSTEMS, rows, "gpt-4")
    rng = np.random.default_rng(7)
    lab = ~np.isnan(it.y) & (rng.random(len(it.y)) < 0.15)
    assert set(np.unique(it.y[lab])) == {0.0, 1.0} and 200 < lab.sum() < 400
    r = ppi_bradley_terry(SYSTEMS, it.pairs[lab], it.y[lab], it.yhat[lab], it.pairs[~lab], it.yhat[~lab])
    x, xu = design_matrix(it.pairs[lab], 8), design_matrix(it.pairs[~lab], 8)
    lo, hi = ppi_py.ppi_logistic_ci(x, it.y[lab], it.yhat[lab], xu, it.yhat[~lab], alpha=0.1)
    est, sd = _reference_dropped(r)
    np.testing.assert_allclose(est - Z90 * sd, lo, atol=1e-6)
    np.testing.assert_allclose(est + Z90 * sd, hi, atol=1e-6)
    print(f"vicuna cross-check: n={lab.sum()} N={(~lab).sum()} lam={r.lam:.4f} "
          f"max|diff| lo {np.max(np.abs(est - Z90 * sd - lo)):.1e} hi {np.max(np.abs(est + Z90 * sd - hi)):.1e}")


@needs_data
def test_vicuna_full_human_fit_reproduces_reference_ranking_and_judge_differs():
    it = items_from_verdicts(SYSTEMS, _vicuna_rows(), "gpt-4")
    human = human_only_bradley_terry(SYSTEMS, it.pairs, it.y)
    judge = judge_only_bradley_terry(SYSTEMS, it.pairs, it.yhat)
    elo = 400 / np.log(10) * human.theta
    # ../shared/data/README.md "Reference ranking": BT on all rows, ties half, Elo mean 0
    ref = [139, -63, -71, -7, 2, -19, 8, 11]
    np.testing.assert_allclose(elo, ref, atol=1.0)
    # the judge's own preference is not the human one: gpt-4 at 366 Elo vs 139, intervals apart
    assert judge.lo[0] > human.hi[0]


@needs_data
def test_vicuna_replay_fast_few_subsamples():
    from bench.bench_hybrid import replay
    it = items_from_verdicts(SYSTEMS, _vicuna_rows(), "gpt-4")
    r = replay(it, 0.10, 25, np.random.default_rng(0))
    assert r["cov_s_ppi"] >= 0.8 and r["cov_w_ppi"] >= 0.8
    assert r["width_s"] < 1.0 and r["width_w"] < 1.0


@needs_data
@pytest.mark.slow
@pytest.mark.parametrize("fraction", [0.05, 0.10, 0.25])
def test_vicuna_replay_coverage_200(fraction):
    from bench.bench_hybrid import replay
    it = items_from_verdicts(SYSTEMS, _vicuna_rows(), "gpt-4")
    r = replay(it, fraction, 200, np.random.default_rng(11))
    assert r["cov_s_ppi"] >= 0.88 and r["cov_w_ppi"] >= 0.88
    assert r["width_s"] < 1.0 and r["width_w"] < 1.0
    assert r["rank_ppi"] >= 0.9


@pytest.fixture(scope="module")
def vicuna10(tmp_path_factory):
    """A study with all GPT-4 verdicts and the human votes of a random 10% of the items."""
    if not (DATA / "judgments").is_dir():
        pytest.skip(f"{DATA} absent")
    from planner.store.study import ingest, init_study
    tmp = tmp_path_factory.mktemp("hybrid")
    sub = tmp / "human10.jsonl"
    rng = np.random.default_rng(3)
    keep = {(f"vicuna80-q{q}", p) for q in range(1, 81) for p in range(28) if rng.random() < 0.1}
    pair_ids: dict = {}
    with open(DATA / "judgments" / "qlora_vicuna80_human.jsonl", encoding="utf-8") as f, open(sub, "w") as g:
        for line in f:
            r = json.loads(line)
            p = pair_ids.setdefault(frozenset((r["a"], r["b"])), len(pair_ids))
            if (r["prompt"], p) in keep:
                g.write(line)
    study = tmp / "s"
    init_study(study, prompts_file=DATA / "vicuna80" / "prompts.jsonl",
               responses_file=DATA / "vicuna80" / "responses.jsonl")
    ingest(study, [DATA / "judgments" / "qlora_vicuna80_gpt4.jsonl", sub])
    return study, len(keep)


def test_hybrid_report_on_a_study(vicuna10):
    study, n_keep = vicuna10
    rep = hybrid_report(study, surrogate="gpt-4")
    assert rep.n_labelled == n_keep and rep.n_unlabelled == 2240 - n_keep
    assert rep.surrogate_verdicts == 4480 and rep.target_votes == 3 * n_keep
    c = rep.comparison
    assert 0 <= c.ppi.lam <= 1 and c.ppi.n == rep.n_labelled
    assert np.trace(c.ppi.cov) <= np.trace(c.human.cov)
    with pytest.raises(UsageError, match="no judgments by 'gpt-5'"):
        hybrid_report(study, surrogate="gpt-5")
    with pytest.raises(UsageError, match="`target`"):
        hybrid_report(study, surrogate="gpt-4", target="robots")


def test_cli_report_surrogate(vicuna10):
    from typer.testing import CliRunner

    from cli.main import app
    study, n_keep = vicuna10
    runner = CliRunner()
    r = runner.invoke(app, ["report", str(study), "--surrogate", "gpt-4", "--json"])
    assert r.exit_code == 0, r.output
    doc = json.loads(r.stdout)
    assert doc["n_labelled"] == n_keep and len(doc["comparison"]["ppi"]["theta"]) == 8
    assert doc["comparison"]["ppi"]["method"] == "ppi++" and doc["comparison"]["judge"]["method"] == "judge only"
    r = runner.invoke(app, ["report", str(study), "--surrogate", "gpt-4"])
    assert r.exit_code == 0 and "PPI++" in r.stdout and "rank set" in r.stdout
    r = runner.invoke(app, ["report", str(study), "--surrogate", "nobody"])
    assert r.exit_code == 2 and "Traceback" not in r.output     # like --lc-anchor nobody: a usage error
    assert r.stderr.strip().splitlines()[-1].startswith("error: --surrogate: no judgments by 'nobody'")
    r = runner.invoke(app, ["report", str(study), "--surrogate", "gpt-4", "--target", "robots"])
    assert r.exit_code == 2 and "--target" in r.stderr
