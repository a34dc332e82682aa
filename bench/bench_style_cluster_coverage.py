"""Coverage of the style-controlled intervals when verdicts on the same (prompt, pair) are correlated.

bench_cluster_coverage.py's simulation (its systems, ``simulate`` and ICC mechanism: every verdict's
marginal exactly Bradley–Terry–Davidson, two verdicts of one (prompt, pair) sharing their uniform with
probability ``icc``) with a style term added to every logit: each system answers each prompt with a
number of words drawn once (log-normal around a per-system mean, the better systems shorter, as in
tests/_style_fixture.py), and the first-shown response's logit gains ``COEF * x`` with ``x`` Arena's
normalised length difference ``(w_a - w_b)/(w_a + w_b + 1)`` divided by its root mean square over the
study's judgments — exactly the covariate the style-controlled fit builds, so its length coefficient
estimates ``COEF`` and its strengths the true centred ``BETA``.

Per study: the style-controlled fit (:func:`planner.model.style.fit_style`, defaults) treating the
judgments as independent (``--cluster none``) and clustered by (prompt, pair) (the default); its 95%
intervals of the six strengths and of the length coefficient against the truth. Scenarios as in
bench_cluster_coverage.py: ``orders`` (both presentation orders, ICC 0.3), ``annotators`` (three
verdicts in random orders, ICC 0.3), ``independent`` (both orders, ICC 0).

    python bench/bench_style_cluster_coverage.py [--reps 200] [--icc 0.3] [--prompts 40]
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))
import bench_cluster_coverage as base  # noqa: E402

from planner.model.style import FEATURES, StyleDesign, fit_style  # noqa: E402
from planner.stats.clusters import JudgmentArrays, cluster_ids  # noqa: E402

MEAN_WORDS = np.geomspace(80.0, 400.0, base.M)   # the better systems (lower index) write shorter answers
WORDS_SD = 0.4                                   # log-normal spread of one answer's length
COEF = 0.6                                       # logit per rms unit of the normalised length difference
SCENARIOS = base.SCENARIOS


def words(rng, n_prompts: int) -> np.ndarray:
    """``(n_prompts, M)`` word counts of every system's answer to every prompt."""
    return np.maximum(1.0, np.round(rng.lognormal(np.log(MEAN_WORDS), WORDS_SD, (n_prompts, base.M))))


def length_covariate(w: np.ndarray) -> np.ndarray:
    """``(n_prompts, M, M)``: the normalised length difference of ``a`` over ``b``, divided by its rms over
    every (prompt, ordered pair) — the rms over the judgments when each pair is judged alike on each prompt
    (both orders, or any orders: the covariate flips sign with the order)."""
    raw = (w[:, :, None] - w[:, None, :]) / (w[:, :, None] + w[:, None, :] + 1.0)
    off = ~np.eye(base.M, dtype=bool)
    return raw / np.sqrt(np.mean(raw[:, off] ** 2))


def simulate(rng, n_prompts: int, per_cluster: int, both_orders: bool, icc: float):
    """``(JudgmentArrays, words)``: one study with the style term in every logit."""
    w = words(rng, n_prompts)
    x = length_covariate(w)
    ja = base.simulate(rng, n_prompts, per_cluster, both_orders, icc, offset=lambda q, a, b: COEF * x[q, a, b])
    return ja, w


def design(ja: JudgmentArrays, w: np.ndarray, cluster: str) -> StyleDesign:
    """The style design of the study (``left`` shown first), clustered by ``cluster`` unless ``none``."""
    feats = np.zeros((ja.n, len(FEATURES)))
    fa, fb = feats.copy(), feats.copy()
    fa[:, 0], fb[:, 0] = w[ja.prompt, ja.left], w[ja.prompt, ja.right]
    ids = None if cluster == "none" else cluster_ids(ja, cluster)
    return StyleDesign.build(ja.systems, ja.left, ja.right, np.ones(ja.n), ja.outcome, fa, fb,
                             cluster=ids, cluster_by=cluster)


def one_study(ja: JudgmentArrays, w: np.ndarray) -> dict:
    """Covered-or-not of every strength and of the length coefficient, independent and clustered."""
    truth = base.BETA - base.BETA.mean()
    out = {}
    for method in ("none", "item"):
        sf = fit_style(design(ja, w, method))
        lo, hi = sf.fit.interval(0.95)
        out[f"strength {method}"] = (lo <= truth) & (truth <= hi)
        c = sf.coef[0]
        out[f"length {method}"] = np.array([c.lo <= COEF <= c.hi])
        if method == "item":
            out["deff"] = np.array([sf.fit.clustering.design_effect])
    return out


def coverage(scenario: str, reps: int, icc: float, n_prompts: int = 40, seed: int = 26) -> dict:
    """Mean coverage per quantity over ``reps`` seeded studies of ``scenario``."""
    per, both = SCENARIOS[scenario]
    rng = np.random.default_rng([seed, 1, list(SCENARIOS).index(scenario)])
    acc: dict = {}
    for _ in range(reps):
        for k, v in one_study(*simulate(rng, n_prompts, per, both, icc)).items():
            acc.setdefault(k, []).append(v)
    return {k: float(np.mean(np.concatenate(v))) for k, v in acc.items()}


def main() -> None:
    a = base.parse_args()
    print(f"{base.M} systems, every pair on each of {a.prompts} prompts, BTD beta {base.BETA[0]:+.1f}.."
          f"{base.BETA[-1]:+.1f}, nu {base.NU}, gamma {base.GAMMA}, length coefficient {COEF} per rms unit; "
          f"{a.reps} studies per scenario; 95% intervals of the style-controlled fit")
    print("| scenario | ICC | verdicts per cluster | strength coverage (independent / clustered) "
          "| length-coefficient coverage (independent / clustered) | mean design effect |")
    print("|---|---|---|---|---|---|")
    for name in SCENARIOS:
        icc = 0.0 if name == "independent" else a.icc
        t0 = time.perf_counter()
        cov = coverage(name, a.reps, icc, a.prompts, a.seed)
        print(f"| {name} | {icc:g} | {SCENARIOS[name][0]} | {cov['strength none']:.3f} / {cov['strength item']:.3f} "
              f"| {cov['length none']:.3f} / {cov['length item']:.3f} | {cov['deff']:.2f} |", flush=True)
        print(f"  ({time.perf_counter() - t0:.0f} s)", file=sys.stderr)


if __name__ == "__main__":
    main()
