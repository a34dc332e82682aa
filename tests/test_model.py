"""Tests of planner.model: the Bradley–Terry–Davidson posterior (Laplace and NUTS engines)."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from planner.counts import Counts
from planner.errors import UsageError
from planner.model import Fit, Prior, bt, fit


# ------------------------------------------------------------ helpers
def simulate(rng, beta, gamma, nu, n, strata=1, invalid=0.0, stratum_shift=None):
    """Judgments on random ordered pairs from bt.outcome_probs; returns Counts.

    ``stratum_shift`` (K, M) adds per-stratum strength deviations.
    """
    m = len(beta)
    a = rng.integers(0, m, n)
    b = (a + rng.integers(1, m, n)) % m  # uniform over b != a
    st = rng.integers(0, strata, n)
    eff = np.asarray(beta, float)[None, :] + (0 if stratum_shift is None else np.asarray(stratum_shift))
    eff = np.broadcast_to(eff, (strata, m))
    pa, pb, _ = bt.outcome_probs(eff[st, a] - eff[st, b] + gamma, nu)
    u = rng.random(n)
    out = np.where(u < pa, 0, np.where(u < pa + pb, 1, 2))
    out[rng.random(n) < invalid] = 3
    names = [f"sys{i}" for i in range(m)]
    return Counts.from_arrays(names, a, b, out, st, tuple(f"st{k}" for k in range(strata)))


def centred(beta):
    beta = np.asarray(beta, float)
    return beta - beta.mean()


def read_counts(path):
    """Counts from a normalized-judgments JSONL (a shown first unless a_position says right)."""
    recs = []
    with open(path, encoding="utf-8") as fh:
        for line in fh:
            r = json.loads(line)
            a, b, v = r["a"], r["b"], r["verdict"]
            if r.get("a_position") == "right":
                a, b, v = b, a, {"A": "B", "B": "A"}.get(v, v)
            recs.append((a, b, v))
    systems = sorted({r[0] for r in recs} | {r[1] for r in recs})
    return Counts.from_records(systems, recs)


# ------------------------------------------------------------ recovery
def test_recovery_of_beta_gamma_nu():
    # truth chosen by hand: strengths over 2 logits, a first-position shift of 0.4 logit
    # (the GPT-4 judges' 57-65% first-position win rates are gamma ~ 0.3-0.6), nu = 0.5
    # (about 20% ties at equal strength)
    beta = centred([-1.0, -0.6, -0.2, 0.2, 0.6, 1.0])
    gamma, nu = 0.4, 0.5
    counts = simulate(np.random.default_rng(11), beta, gamma, nu, 20_000, invalid=0.02)
    f = fit(counts)
    # 4 posterior sd: a miss has probability 6e-5 per parameter under a correct posterior
    assert np.all(np.abs(f.mean - beta) < 4 * f.sd)
    assert abs(f.gamma.mean - gamma) < 4 * f.gamma.sd
    assert abs(f.nu.mean - nu) < 4 * f.nu.sd
    assert f.gamma.lo < f.gamma.mean < f.gamma.hi
    assert f.n_invalid == counts.totals()["invalid"] and f.n_invalid > 0
    assert f.n_usable + f.n_invalid == 20_000
    assert abs(f.mean.sum()) < 1e-9  # sum-to-zero
    assert np.allclose(f.posterior.cov.sum(axis=1), 0, atol=1e-9)  # singular along the ones vector
    assert f.diagnostics.converged and not f.diagnostics.warnings


def test_interval_coverage_laplace():
    # 200 repeated small fits (5 systems, 400 judgments each); coverage of the 95% intervals
    # pooled over the 5 strengths and gamma. Binomial SE of one parameter's coverage over
    # 200 reps is sqrt(.95*.05/200) = 0.0154; [0.90, 0.99] is about -3.2/+2.6 SE even if the
    # 6 parameters in a rep were perfectly correlated (pooling only shrinks the SE).
    rng = np.random.default_rng(2024)
    beta = centred([-0.8, -0.3, 0.0, 0.3, 0.8])
    gamma, nu = 0.3, 0.4
    hit = tot = 0
    for _ in range(200):
        f = fit(simulate(rng, beta, gamma, nu, 400))
        lo, hi = f.interval(0.95)
        hit += int(np.sum((lo <= beta) & (beta <= hi))) + int(f.gamma.lo <= gamma <= f.gamma.hi)
        tot += len(beta) + 1
    coverage = hit / tot
    assert 0.90 <= coverage <= 0.99, coverage


def test_zero_judgments_returns_prior():
    prior = Prior()
    f = fit(Counts.empty(["a", "b", "c"]), prior=prior)
    # sigma at the mode of log(sigma) under HalfNormal(1.5): d/ds[-e^{2s}/(2*1.5^2) + s] = 0 -> sigma = 1.5
    assert f.sigma.mean == pytest.approx(1.5, rel=1e-3)
    # ZeroSumNormal(1.5) on 3 systems: var = 1.5^2 * (1 - 1/3) = 1.5
    assert np.allclose(np.diag(f.posterior.cov), 1.5, rtol=2e-3)
    assert np.allclose(f.mean, 0)
    assert (f.gamma.mean, f.gamma.sd) == pytest.approx((0.0, 1.0))
    # nu lognormal(-1, 1.5): mean exp(-1 + 1.5^2/2) = exp(0.125) = 1.1331
    assert f.nu.mean == pytest.approx(math.exp(0.125))
    assert f.n_usable == 0 and f.n_invalid == 0


def test_only_invalid_and_disconnected_data():
    # {a, b} and {c, d} never meet: the prior keeps the posterior proper; the gap between the
    # components is far less certain than the gap inside one
    recs = [("a", "b", "A")] * 30 + [("a", "b", "B")] * 15 + [("b", "a", "B")] * 30 + \
           [("b", "a", "A")] * 15 + [("c", "d", "tie")] * 20 + [("d", "c", "A")] * 20 + \
           [("c", "d", "B")] * 10 + [("a", "c", "invalid")] * 5
    f = fit(Counts.from_records(["a", "b", "c", "d"], recs))
    assert np.all(np.isfinite(f.mean)) and np.all(np.isfinite(f.posterior.cov))
    dsd = f.posterior.diff_sd()
    assert dsd[0, 2] > 3 * dsd[0, 1]
    assert f.mean[0] > f.mean[1]
    assert f.n_invalid == 5
    g = fit(Counts.from_records(["a", "b"], [("a", "b", "invalid")] * 7))
    assert g.n_usable == 0 and g.n_invalid == 7 and np.allclose(g.mean, 0)


def test_invalid_cells_do_not_change_the_fit():
    rng = np.random.default_rng(5)
    c = simulate(rng, centred([0.0, 0.5, 1.0]), 0.2, 0.3, 500)
    extra = Counts.from_arrays(c.systems, [0, 1, 2], [1, 2, 0], [3, 3, 3], strata=c.strata)
    f, g = fit(c), fit(c + extra)
    assert np.allclose(f.mean, g.mean) and np.allclose(f.posterior.cov, g.posterior.cov)
    assert g.n_invalid == f.n_invalid + 3


def test_deterministic_draws():
    c = simulate(np.random.default_rng(3), centred([0, 0.3, 0.9]), 0.1, 0.3, 300)
    f1, f2, f3 = fit(c, seed=7), fit(c, seed=7), fit(c, seed=8)
    assert np.array_equal(f1.beta_draws, f2.beta_draws)
    assert not np.array_equal(f1.beta_draws, f3.beta_draws)
    assert f1.beta_draws.shape == (1000, 3)
    # draws follow the Gaussian: their mean is within 4 Monte Carlo SE (sd/sqrt(1000)) of it
    assert np.all(np.abs(f1.beta_draws.mean(0) - f1.mean) < 4 * f1.sd / math.sqrt(1000))
    assert np.allclose(f1.prob_best().sum(), 1.0)


def test_cost_does_not_depend_on_judgment_count():
    # the same cells with 10x the counts: same number of cells, sd shrinks by ~sqrt(10)
    c = simulate(np.random.default_rng(9), centred([0, 0.4, 0.8, 1.2]), 0.2, 0.4, 2000)
    big = Counts(c.systems, c.strata, c.a, c.b, c.stratum, c.a_wins * 10, c.b_wins * 10,
                 c.ties * 10, c.invalid * 10)
    f, g = fit(c), fit(big)
    assert big.n_cells == c.n_cells
    # prior weight is negligible at 2000 judgments, so the ratio is sqrt(10) = 3.162 within 5%
    assert np.allclose(f.sd / g.sd, math.sqrt(10), rtol=0.05)


def test_usage_errors():
    c = Counts.empty(["a", "b"])
    with pytest.raises(UsageError, match="`engine`"):
        fit(c, engine="mcmc")
    with pytest.raises(UsageError, match="`draws`"):
        fit(c, draws=0)
    with pytest.raises(UsageError, match="sigma_scale"):
        fit(c, prior=Prior(sigma_scale=-1.0))
    with pytest.raises(UsageError, match="`by_stratum`"):
        fit(c, stratum_weights={"all": 1.0})
    with pytest.raises(UsageError, match="unknown strata"):
        fit(c, by_stratum=True, stratum_weights={"nope": 1.0})


# ------------------------------------------------------------ strata
def test_by_stratum_partial_pooling_and_weights():
    # two strata that disagree about systems 0 and 1 (shift +-0.6 logit), the rest shared
    beta = centred([0.0, 0.0, 0.5, 1.0])
    shift = np.array([[0.6, -0.6, 0, 0], [-0.6, 0.6, 0, 0]])
    c = simulate(np.random.default_rng(21), beta, 0.3, 0.4, 8000, strata=2, stratum_shift=shift)
    f = fit(c, by_stratum=True, stratum_weights={"st0": 3.0, "st1": 1.0})
    truth = centred(beta) + shift
    assert f.stratum_mean.shape == (2, 4) and f.stratum_draws.shape == (1000, 2, 4)
    # stratum strengths recovered within 4 sd (the pooling shrinks them a little toward each other)
    assert np.all(np.abs(f.stratum_mean - truth) < 4 * f.stratum_sd)
    assert f.stratum_mean[0, 0] > f.stratum_mean[0, 1] and f.stratum_mean[1, 1] > f.stratum_mean[1, 0]
    assert f.stratum_weights == {"st0": 0.75, "st1": 0.25}
    # population = 0.75 * stratum 0 + 0.25 * stratum 1, exactly (a linear map of the Gaussian)
    assert np.allclose(f.mean, 0.75 * f.stratum_mean[0] + 0.25 * f.stratum_mean[1])
    assert np.allclose(f.beta_draws, 0.75 * f.stratum_draws[:, 0] + 0.25 * f.stratum_draws[:, 1])
    assert f.tau.mean > 0.2  # the strata do disagree (true deviation sd ~0.42)
    pooled = fit(c)
    assert pooled.stratum_mean is None and pooled.strata == ("st0", "st1")


# ------------------------------------------------------------ cross-checks
def test_choix_rank_agreement():
    choix = pytest.importorskip("choix")
    from scipy.stats import spearmanr

    # 20 systems, no ties (nu = 0), no position effect, 3000 judgments
    rng = np.random.default_rng(77)
    m = 20
    beta = centred(rng.normal(0, 1.0, m))
    c = simulate(rng, beta, 0.0, 0.0, 3000)
    data = []
    for a, b, na, nb in zip(c.a, c.b, c.a_wins, c.b_wins):
        data += [(int(a), int(b))] * int(na) + [(int(b), int(a))] * int(nb)
    ml = choix.opt_pairwise(m, data)
    f = fit(c, prior=Prior(sigma_scale=10.0))  # flat-ish: sigma prior scale 10 logits
    rho = spearmanr(f.mean, ml).statistic
    assert rho >= 0.99, rho


def test_elo_mapping():
    # Elo expected score 1/(1 + 10^(-d/400)): d = 100 -> 1/(1 + 10^-0.25) = 0.6401;
    # d = 200 -> 1/(1 + 10^-0.5) = 0.7597
    assert bt.expected_score(1600, 1500) == pytest.approx(0.64, abs=0.005)
    assert bt.expected_score(1700, 1500) == pytest.approx(0.76, abs=0.005)
    # the same through the model's scale: beta = 100/173.72 = 0.5756 logit -> logistic 0.6401
    beta = 100 / bt.ELO_SCALE
    pa, _, _ = bt.outcome_probs(beta, 0.0)
    assert pa == pytest.approx(bt.expected_score(1600, 1500), rel=1e-12)
    assert bt.to_elo(beta) == pytest.approx(1600)
    # K = 32, 1500 beats 1600: E = 1/(1 + 10^(100/400)) = 0.35994; 1500 + 32*(1 - 0.35994)
    # = 1500 + 20.48 = 1520.48 -> 1520.5
    assert bt.elo_update(1500, 1600, 1.0, k=32) == pytest.approx(1520.5, abs=0.05)


# ------------------------------------------------------------ real data
def test_vicuna_gpt4_gpt4_first_and_position_bias(vicuna_data):
    c = read_counts(vicuna_data / "judgments" / "qlora_vicuna80_gpt4.jsonl")
    # README: 4,480 rows, invalid 13
    assert c.totals() == {"A": 2512, "B": 1355, "tie": 600, "invalid": 13}
    f = fit(c)
    top = int(np.argmax(f.mean))
    assert f.systems[top] == "gpt-4"
    lo, hi = f.interval()
    others = np.delete(np.arange(len(f.systems)), top)
    assert lo[top] > hi[others].max()  # clearly first: intervals do not overlap
    assert f.prob_best()[top] > 0.99
    assert f.gamma.lo > 0  # credibly positive first-position shift
    # README: 65.0% of decisive verdicts go to position A. Net of strengths that is about
    # logit(0.65) = 0.62; every pair is judged in both orders, so gamma ~ that: allow +-0.25
    assert abs(f.gamma.mean - math.log(0.65 / 0.35)) < 0.25
    # tie rate 600/4467 = 13.4%; nu at equal strength gives ties nu/(2+nu) -> nu ~ 0.31; the
    # fitted nu is larger because the strength gaps lower the tie share: allow [0.25, 0.6]
    assert 0.25 < f.nu.mean < 0.6
    # README reference ranking (BT, ties as half wins, Elo, mean 0)
    ref = {"gpt-4": 366, "guanaco-65b": 20, "guanaco-33b": -11, "vicuna-13b": -28,
           "gpt-3.5-turbo": -36, "guanaco-13b": -87, "bard": -101, "guanaco-7b": -124}
    from scipy.stats import spearmanr

    elo = dict(zip(f.systems, bt.to_elo(f.mean) - bt.ELO_BASE))
    names = list(ref)
    # below gpt-4 adjacent gaps are under 40 Elo points: ask for a close, not identical, order
    assert spearmanr([ref[n] for n in names], [elo[n] for n in names]).statistic >= 0.9
    # scale: counting a tie as half a win pulls win rates toward 50%, so the reference Elo gaps
    # are smaller than Davidson's (decisive odds only); expect the spread to be 1.0-1.6x
    ratio = np.std([elo[n] for n in names]) / np.std([ref[n] for n in names])
    assert 1.0 <= ratio <= 1.6, ratio


def test_fit_to_netcdf_laplace(tmp_path):
    pytest.importorskip("arviz")
    c = simulate(np.random.default_rng(1), centred([0, 0.5]), 0.0, 0.3, 100)
    f = fit(c, draws=50)
    out = f.to_netcdf(tmp_path / "post.nc")
    assert (tmp_path / "post.nc").stat().st_size > 0 and out.endswith("post.nc")
    assert isinstance(f.to_netcdf(), bytes)
    assert "beta_draws" not in repr(f) and "idata" not in repr(f)
    d = f.to_dict()
    assert set(d) >= {"mean", "sd", "lo", "hi", "elo", "gamma", "nu", "diagnostics"}
    assert isinstance(f, Fit)


# ------------------------------------------------------------ NUTS
def _nuts_fixture():
    # 5 systems over 1.1 logits, gamma 0.3, nu 0.4, 1500 judgments: enough data that the prior
    # matters little, so the Laplace Gaussian should match the NUTS posterior
    return simulate(np.random.default_rng(31), centred([-0.6, -0.2, 0.1, 0.3, 0.4]), 0.3, 0.4, 1500)


def test_laplace_agrees_with_nuts(capfd):
    pytest.importorskip("pymc")
    c = _nuts_fixture()
    n = fit(c, engine="nuts", draws=500, tune=500, chains=2, seed=1)
    lap = fit(c, engine="laplace")
    # issue: means within 0.05 logit, SDs within 15%. Monte Carlo error with ESS ~1000 is
    # sd/sqrt(1000) ~ 0.002 on a mean and ~2% on an sd, far inside both tolerances
    assert np.max(np.abs(n.mean - lap.mean)) < 0.05
    assert np.all(np.abs(n.sd / lap.sd - 1) < 0.15)
    assert abs(n.gamma.mean - lap.gamma.mean) < 0.05 and abs(n.gamma.sd / lap.gamma.sd - 1) < 0.15
    assert abs(n.nu.mean - lap.nu.mean) < 0.05
    d = n.diagnostics
    assert d.max_r_hat < 1.01 and d.min_ess_bulk > 200 and d.divergences == 0 and not d.warnings
    assert n.beta_draws.shape == (1000, 5) and np.allclose(n.beta_draws.sum(axis=1), 0, atol=1e-9)
    assert n.idata is not None and "idata" not in repr(n)
    blob = n.to_netcdf()
    assert isinstance(blob, bytes) and len(blob) > 1000
    assert capfd.readouterr().out == ""  # nothing on stdout (progress would go to stderr)


def test_nuts_diagnostics_warn_on_too_short_runs():
    pytest.importorskip("pymc")
    from planner.model.nuts import diagnose

    # 1 chain of 20 draws: r-hat cannot be checked and ESS is far below 100 per chain
    c = _nuts_fixture()
    n = fit(c, engine="nuts", draws=20, tune=20, chains=1, seed=2)
    text = " ".join(n.diagnostics.warnings)
    assert "one chain" in text and "effective sample size" in text
    assert not n.diagnostics.converged
    assert diagnose(n.idata, ["gamma"], 1).warnings


@pytest.mark.slow
def test_vicuna_nuts(vicuna_data):
    c = read_counts(vicuna_data / "judgments" / "qlora_vicuna80_gpt4.jsonl")
    n = fit(c, engine="nuts", seed=3)
    lap = fit(c)
    assert n.systems[int(np.argmax(n.mean))] == "gpt-4" and n.prob_best()[n.systems.index("gpt-4")] > 0.99
    assert n.gamma.lo > 0
    assert not n.diagnostics.warnings
    # same tolerances as the fixture test (0.05 logit, 15% sd)
    assert np.max(np.abs(n.mean - lap.mean)) < 0.05
    assert np.all(np.abs(n.sd / lap.sd - 1) < 0.15)


def _strata_fixture(n=9000, seed=21):
    # 4 systems, 3 strata; strata 0 and 1 swap systems 0 and 1 by +-0.6 logit, stratum 2 agrees
    beta = centred([0.0, 0.0, 0.5, 1.0])
    shift = np.array([[0.6, -0.6, 0, 0], [-0.6, 0.6, 0, 0], [0, 0, 0, 0]])
    return simulate(np.random.default_rng(seed), beta, 0.3, 0.4, n, strata=3, stratum_shift=shift)


def _cells(c, keep):
    """The cells of ``c`` where ``keep`` is True."""
    return Counts(c.systems, c.strata, *(getattr(c, f)[keep] for f in
                                         ("a", "b", "stratum", "a_wins", "b_wins", "ties", "invalid")))


def _assert_by_stratum_nuts_matches_laplace(seed):
    c = _strata_fixture()
    n = fit(c, engine="nuts", by_stratum=True, seed=seed)
    lap = fit(c, by_stratum=True)
    # stratum strengths: Laplace fixes tau at its mode, NUTS integrates it; with 3 strata tau is
    # poorly determined, so allow 0.1 logit (2x the pooled tolerance) and 25% on the sd
    assert np.max(np.abs(n.stratum_mean - lap.stratum_mean)) < 0.1
    assert np.all(np.abs(n.stratum_sd / lap.stratum_sd - 1) < 0.25)
    assert np.max(np.abs(n.mean - lap.mean)) < 0.05
    _assert_by_stratum_sampler_sound(n.diagnostics)


def _assert_by_stratum_sampler_sound(d):
    """Diagnostics of a by-stratum NUTS fit: a rare divergence or an r-hat just over 1.01 is chance,
    a broken parameterisation is not.

    NUTS chains are not bit-reproducible across CPUs (another SIMD path changes the last digits of
    the gradient, and the trajectory diverges from there), so "no warning on seed 4" held on the
    machine that chose the seed and failed on an AMD EPYC (3 divergences; seed 5: r-hat 1.011).
    Measured there, this fixture at target_accept 0.9, seeds 0-9: 5 of 10 fits warn, with 1-4
    divergent transitions of 2,000 and r-hat up to 1.018, min bulk ESS 400, min tail ESS 222; at 0.95
    the rate is no better (3 of 9). Before the per-stratum parameterisation (session 5) the same
    fixture gave 3-22 divergences. The bounds sit between the two: at most 5 divergences, r-hat < 1.03,
    bulk and tail ESS >= 150 (75 per chain; Vehtari et al.'s 100 per chain is the warning threshold).
    """
    assert d.divergences <= 5, d.warnings
    assert d.max_r_hat < 1.03 and d.min_ess_bulk >= 150 and d.min_ess_tail >= 150, d.warnings


@pytest.mark.slow
def test_by_stratum_nuts_matches_laplace():
    _assert_by_stratum_nuts_matches_laplace(seed=4)


@pytest.mark.slow
def test_by_stratum_nuts_matches_laplace_second_seed():
    _assert_by_stratum_nuts_matches_laplace(seed=5)


@pytest.mark.slow
def test_vicuna_by_category_nuts(vicuna_data):
    with open(vicuna_data / "vicuna80" / "prompts.jsonl", encoding="utf-8") as fh:
        category = {p["id"]: p["stratum"] for p in map(json.loads, fh)}
    with open(vicuna_data / "judgments" / "qlora_vicuna80_gpt4.jsonl", encoding="utf-8") as fh:
        recs = [(r["a"], r["b"], r["verdict"], category[r["prompt"]]) for r in map(json.loads, fh)]
    systems = sorted({r[0] for r in recs} | {r[1] for r in recs})
    c = Counts.from_records(systems, recs, tuple(dict.fromkeys(category.values())))
    from planner.model.nuts import choose_centred_by_stratum

    # 9 categories; counterfactual, math (3 prompts) and writing too thin to centre (bench/README.md)
    assert choose_centred_by_stratum(c, Prior()) == (True, (True,) * 5 + (False, True, False, False))
    n = fit(c, engine="nuts", by_stratum=True, seed=4)
    # before session 5: r-hat 1.015 (seed 4) and 1.014 (seed 5), a warning shown to users
    _assert_by_stratum_sampler_sound(n.diagnostics)
    assert n.systems[int(np.argmax(n.mean))] == "gpt-4"


def test_by_stratum_parameterisation_choice():
    pytest.importorskip("pymc")
    from planner.model.nuts import choose_centred_by_stratum

    # 3,000 judgments per stratum: every stratum strength's Laplace sd ~0.05 < tau-hat/2 ~0.22 ->
    # strata centred; beta's data are the 3 stratum strengths, tau-hat/sqrt(3) ~0.25 is not below
    # sigma-hat/4 ~0.13 -> beta non-centred
    assert choose_centred_by_stratum(_strata_fixture(), Prior()) == (False, (True, True, True))
    # 60 judgments per stratum: sd ~0.3 > tau-hat/2 ~0.29 -> every stratum stays non-centred
    assert choose_centred_by_stratum(_strata_fixture(180, 22), Prior()) == (False, (False, False, False))
    # per stratum: strata 0 and 2 from the rich fixture (~3,000 each), stratum 1 from the thin one (~60)
    rich, thin = _strata_fixture(), _strata_fixture(180, 22)
    mixed = _cells(rich, rich.stratum != 1) + _cells(thin, thin.stratum == 1)
    assert choose_centred_by_stratum(mixed, Prior())[1] == (True, False, True)
    # one stratum or no data: nothing to centre
    assert choose_centred_by_stratum(Counts.empty(["a", "b", "c"]), Prior()) == (False, (False,))


def test_centred_strata_are_the_same_model():
    pytest.importorskip("pymc")
    import pytensor.tensor as pt
    from pymc.distributions.transforms import ZeroSumTransform

    from planner.model.nuts import build_model

    # strata 0 and 2 centred, 1 not, against all non-centred at the same beta_stratum: the densities
    # differ only by the Jacobian of z -> beta + tau * z, |d beta_stratum / d z| = tau^(M-1) per
    # centred stratum, so log p_centred - log p_noncentred = -2 * (4 - 1) * log(tau), to rounding
    c = _strata_fixture(900)
    mc = build_model(c, c.strata, True, Prior(), centred=False, stratum_centred=(True, False, True))
    mn = build_model(c, c.strata, True, Prior(), centred=False, stratum_centred=())
    rng = np.random.default_rng(0)
    pn = {k: rng.normal(size=np.shape(v)) for k, v in mn.initial_point().items()}
    strengths = mn.compile_fn(mn.replace_rvs_by_values([mn["beta_stratum"]]), inputs=mn.value_vars,
                              on_unused_input="ignore")
    bs = strengths(pn)[0]
    pc = {k: pn[k] for k in ("sigma_log__", "beta_raw_zerosum__", "gamma", "log_nu", "tau_log__")}
    pc["z_zerosum__"] = pn["z_zerosum__"][[1]]
    pc["beta_stratum_c_zerosum__"] = ZeroSumTransform([-1]).forward(pt.as_tensor(bs[[0, 2]])).eval()
    strengths_c = mc.compile_fn(mc.replace_rvs_by_values([mc["beta_stratum"]]), inputs=mc.value_vars,
                                on_unused_input="ignore")
    assert np.allclose(strengths_c(pc)[0], bs, atol=1e-12)  # strata back in their own order
    jac = -2 * 3 * pn["tau_log__"]
    assert mc.compile_logp()(pc) - mn.compile_logp()(pn) == pytest.approx(jac, abs=1e-9)


def test_nuts_parameterisation_choice():
    pytest.importorskip("pymc")
    from planner.model.nuts import choose_centred

    # fixture: 1500 judgments on 5 systems, posterior sd ~0.07 << sigma/2 ~0.25 -> centred;
    # no data: posterior sd = prior sd > sigma/2 -> non-centred (no funnel)
    assert choose_centred(_nuts_fixture(), Prior()) is True
    assert choose_centred(Counts.empty(["a", "b", "c"]), Prior()) is False


@pytest.mark.slow
def test_nuts_without_data_samples_the_prior():
    n = fit(Counts.empty(["a", "b", "c"]), engine="nuts", draws=1000, tune=1000, seed=5)
    assert not n.diagnostics.warnings, n.diagnostics.warnings
    # prior: gamma ~ N(0, 1); sd of beta_i = sqrt(E[sigma^2] (1 - 1/3)) = sqrt(2.25 * 2/3) = 1.22;
    # 0.15 covers Monte Carlo error at ESS ~500 of a heavy-tailed (scale-mixture) marginal
    assert abs(n.gamma.mean) < 0.15 and abs(n.gamma.sd - 1) < 0.15
    assert np.all(np.abs(n.sd - math.sqrt(1.5)) < 0.25)


def test_model_package_layout():
    """The model package: types / laplace / dispatch submodules, re-exported by the package; nuts is loaded only
    for the NUTS engine and imports neither the package's dispatcher nor its ``__init__`` names."""
    import ast
    import subprocess
    import sys
    from pathlib import Path

    from planner import model
    from planner.model import dispatch, laplace, types

    assert model.fit is dispatch.fit and model.Fit is types.Fit and model.Prior is types.Prior   # the package's face
    assert model.gaussian_at_mode is laplace.gaussian_at_mode
    assert set(model.__all__) <= set(dir(model))
    src = Path(model.__file__).with_name("nuts.py").read_text(encoding="utf-8")
    froms = [n for n in ast.walk(ast.parse(src)) if isinstance(n, ast.ImportFrom)]
    assert not [n for n in froms if n.module == "planner.model.dispatch"]         # no model <-> nuts cycle
    assert {a.name for n in froms if n.module == "planner.model" for a in n.names} == {"bt"}   # a submodule only
    code = ("import sys\nfrom planner.counts import Counts\nfrom planner.model import fit\n"
            "fit(Counts.from_records(('x', 'y'), [('x', 'y', 'A'), ('y', 'x', 'tie')]))\n"
            "print(*(m in sys.modules for m in ('planner.model.nuts', 'pymc', 'arviz')))")
    root = Path(model.__file__).resolve().parents[2]     # this checkout, not an installed copy
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=root)
    assert out.stdout.split() == ["False", "False", "False"]


def test_gaussian_posterior_compares_by_value():
    """A frozen dataclass holding arrays: ``==`` compares values instead of raising."""
    def post(mean):
        return bt.GaussianPosterior(("x", "y"), np.array(mean), np.eye(2), gamma=0.1, nu=0.3)

    assert post([0.5, -0.5]) == post([0.5, -0.5])
    assert post([0.5, -0.5]) != post([0.4, -0.4])
    assert post([0.5, -0.5]) != bt.GaussianPosterior(("x", "y"), np.array([0.5, -0.5]), np.eye(2), gamma=0.2, nu=0.3)
    with pytest.raises(TypeError, match="unhashable"):
        hash(post([0.0, 0.0]))
