"""NUTS by-stratum fits: divergences, r-hat, ESS and wall time per parameterisation of the deviations.

Cases (one NUTS fit at a time, 2 chains x (1000 tune + 1000 draws), the defaults of ``fit``):

* ``rich``: the fixture of ``tests/test_model.py::test_by_stratum_nuts_matches_laplace`` (4 systems,
  3 strata, 9,000 judgments, strata shifting systems 0 and 1 by +-0.6 logit; data seed 21);
* ``thin``: the same truth with 3 strata x 60 judgments (data seed 22);
* ``vicuna``: the QLoRA Vicuna80 GPT-4 verdicts (8 systems, 4,480 judgments) by the prompts'
  9 categories (needs ../shared/data or PLANNER_DATA).

For each case and sampler seed it fits the model as the engine did before session 5 (``before``:
beta by :func:`planner.model.nuts.choose_centred` on the pooled counts, every stratum non-centred)
and with the by-stratum rule (``after``: :func:`planner.model.nuts.choose_centred_by_stratum`), and
prints one row per fit; ``form`` is ``b<beta>/s<stratum 1..K>`` with c = centred, n = non-centred. Usage::

    nice -n 10 python bench/bench_nuts_strata.py [--cases rich,thin,vicuna] [--seeds 4,5,6,7]
        [--variants before,after]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
import warnings
from pathlib import Path

import numpy as np

from planner.counts import Counts
from planner.model import Prior, bt
from planner.model.nuts import build_model, choose_centred, choose_centred_by_stratum, diagnose, sample_model

BETA = np.array([0.0, 0.0, 0.5, 1.0]) - 0.375            # centred: sum 0
SHIFT = np.array([[0.6, -0.6, 0, 0], [-0.6, 0.6, 0, 0], [0, 0, 0, 0]])
VAR_NAMES = ["beta", "gamma", "log_nu", "sigma", "tau", "beta_stratum"]


def shifted_strata(rng: np.random.Generator, n: int, gamma: float = 0.3, nu: float = 0.4) -> Counts:
    """``n`` judgments, uniformly random ordered pairs and strata, strengths ``BETA + SHIFT[k]``."""
    m, k = BETA.size, SHIFT.shape[0]
    a = rng.integers(0, m, n)
    b = (a + rng.integers(1, m, n)) % m
    st = rng.integers(0, k, n)
    eff = BETA[None, :] + SHIFT
    pa, pb, _ = bt.outcome_probs(eff[st, a] - eff[st, b] + gamma, nu)
    u = rng.random(n)
    out = np.where(u < pa, 0, np.where(u < pa + pb, 1, 2))
    return Counts.from_arrays([f"sys{i}" for i in range(m)], a, b, out, st, tuple(f"st{j}" for j in range(k)))


def vicuna_counts() -> Counts | None:
    """GPT-4 verdicts on Vicuna80 with the prompt category as stratum, or None without the data."""
    root = Path(os.environ.get("PLANNER_DATA", Path(__file__).resolve().parents[2] / "shared" / "data"))
    if not (root / "vicuna80" / "prompts.jsonl").exists():
        return None
    with open(root / "vicuna80" / "prompts.jsonl", encoding="utf-8") as fh:
        stratum = {p["id"]: p["stratum"] for p in map(json.loads, fh)}
    with open(root / "judgments" / "qlora_vicuna80_gpt4.jsonl", encoding="utf-8") as fh:
        recs = [(r["a"], r["b"], r["verdict"], stratum[r["prompt"]]) for r in map(json.loads, fh)]
    systems = sorted({r[0] for r in recs} | {r[1] for r in recs})
    return Counts.from_records(systems, recs, tuple(dict.fromkeys(stratum.values())))


def forms(counts: Counts, variant: str) -> tuple[bool, tuple[bool, ...]]:
    """(beta centred?, per-stratum centred?) of ``variant``: ``before`` = the engine before session 5."""
    if variant == "before":
        return choose_centred(counts, Prior()), ()
    return choose_centred_by_stratum(counts, Prior())


def run(counts: Counts, seed: int, centred: bool, stratum_centred: tuple[bool, ...]) -> dict:
    """One default-sized NUTS fit; its diagnostics and wall seconds."""
    model = build_model(counts, tuple(counts.strata), True, Prior(), centred=centred,
                        stratum_centred=stratum_centred)
    t0 = time.perf_counter()
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".*could not link to a BLAS.*")
        idata = sample_model(model, seed, 1000, 1000, 2, None, False)
    wall = time.perf_counter() - t0
    d = diagnose(idata, VAR_NAMES, 2)
    return {"div": d.divergences, "rhat": d.max_r_hat, "ess_bulk": d.min_ess_bulk,
            "ess_tail": d.min_ess_tail, "wall": wall, "warnings": len(d.warnings)}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cases", default="rich,thin,vicuna")
    ap.add_argument("--seeds", default="4,5,6,7")
    ap.add_argument("--variants", default="before,after")
    args = ap.parse_args(argv)
    makers = {"rich": lambda: shifted_strata(np.random.default_rng(21), 9000),
              "thin": lambda: shifted_strata(np.random.default_rng(22), 180),
              "vicuna": vicuna_counts}
    print("case    seed variant form            div  r-hat  ess_bulk ess_tail  wall_s warnings")
    for case in args.cases.split(","):
        counts = makers[case]()
        if counts is None:
            print(f"{case:7s} skipped: no shared data")
            continue
        for seed in map(int, args.seeds.split(",")):
            for variant in args.variants.split(","):
                bc, sc = forms(counts, variant)
                r = run(counts, seed, bc, sc)
                form = "b" + "cn"[not bc] + "/s" + "".join("cn"[not f] for f in sc + (False,) * (len(counts.strata) - len(sc)))
                print(f"{case:7s} {seed:4d} {variant:7s} {form:14s} {r['div']:5d} {r['rhat']:6.3f} "
                      f"{r['ess_bulk']:8.0f} {r['ess_tail']:8.0f} {r['wall']:7.1f} {r['warnings']:8d}",
                      flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
