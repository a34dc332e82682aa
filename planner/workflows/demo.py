"""A self-contained demonstration of the whole loop, on a fresh machine.

:func:`run_demo` builds a small synthetic study (prompts in strata, one
response per system and prompt, no user files), then runs a few annotation
rounds: each plans and writes a blinded batch on the open study
(:func:`planner.services.batch_plan.plan_batch`, :func:`planner.services.batch_issue.issue_batch`),
a simulated judge with known system strengths (plus ties and a left-position bias, as real LLM judges have)
answers it in the position-verdict format annotators return, and ``ingest``
takes the verdicts back. It ends with the fitted ranking next to the truth.

Everything is seeded: the same arguments give the same study and files.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from planner import limits
from planner.model import bt
from planner.services.demo_study import build_demo_files, check_demo_target
from planner.vocabulary import PAIRWISE_VERDICTS


@dataclass(frozen=True)
class DemoRound:
    batch: int
    items: int
    verdicts: dict
    files: tuple[str, ...]
    expected_reduction: float
    advice: str


@dataclass(frozen=True)
class DemoResult:
    """The demo's study, its rounds and the final ranking against the truth."""

    path: str
    systems: tuple[str, ...]
    true_elo: tuple[float, ...]
    rounds: tuple[DemoRound, ...]
    fitted_elo: tuple[float, ...]
    fitted_lo: tuple[float, ...]
    fitted_hi: tuple[float, ...]
    kendall_tau: float
    gamma: float
    judgments: int


def _round(study, out: Path, vfile: Path, size: int, verdict_of) -> DemoRound:
    """One round on the open study: plan, issue to ``out``, answer (simulated), then ingest ``vfile``."""
    from planner.services.batch_issue import issue_batch
    from planner.services.batch_options import BatchSelection, Output, QualityControl
    from planner.services.batch_plan import PlanOptions, plan_batch
    from planner.services.demo_study import answer_rows
    from planner.store.study import Study, ingest

    with Study.open(study) as st:
        plan = plan_batch(st, PlanOptions(BatchSelection(size=size), QualityControl(attention=0.05, repeat=0.05,
                                                                                     overlap=0.0, acceptability=0.0)))
        issued = issue_batch(st, plan, Output(out=out))
        rows = answer_rows(st, issued.batch_id, plan.items, verdict_of, annotator="simulated-judge")
    vfile.write_text("".join(json.dumps(x) + "\n" for x in rows), encoding="utf-8")
    ingest(study, [vfile])
    verdicts = {v: sum(1 for x in rows if x["verdict"] == v) for v in PAIRWISE_VERDICTS}
    return DemoRound(issued.batch_id, len(plan.items), verdicts, issued.files, plan.selection.expected_reduction,
                     plan.advice)


def run_demo(directory, *, n_systems: int = 6, n_prompts: int = 40, rounds: int = 3, size: int = 40,
             seed: int = 0, force: bool = False, progress=None) -> DemoResult:
    """Build a synthetic study in ``directory`` and run ``rounds`` annotation rounds.

    ``progress(message)`` is called as the demo goes.
    """
    from planner.model import fit
    from planner.simulation import Judge, Truth
    from planner.stats.blas import one_blas_thread
    from planner.store.study import Study, init_study

    limits.check_int("systems", n_systems, 2, 26)
    limits.check_int("prompts", n_prompts, 4, limits.MAX_DEMO_PROMPTS)
    limits.check_int("rounds", rounds, 1, limits.MAX_DEMO_ROUNDS)
    limits.check_int("size", size, 1, limits.MAX_DEMO_SIZE)
    limits.check_seed("seed", seed)
    directory = Path(directory)
    check_demo_target(directory, force)
    if directory.exists() and any(directory.iterdir()):
        import shutil

        shutil.rmtree(directory)
    directory.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(seed)
    systems, prompts, responses = build_demo_files(directory, n_systems, n_prompts, rng)
    elo = np.linspace(150, -150, n_systems)  # evenly spread over 300 Elo points
    truth = Truth(tuple(systems), elo / bt.ELO_SCALE)
    judge = Judge(tie_rate=0.15, position=0.3)  # ties and a left-position bias, like LLM judges
    study = directory / "study"
    init_study(study, prompts_file=prompts, responses_file=responses, anchor=systems[0], seed=seed)
    idx = {s: i for i, s in enumerate(systems)}
    done = []
    for r in range(rounds):
        def verdict_of(k):
            out = judge.judge(truth, np.array([idx[k.left]]), np.array([idx[k.right]]), rng)[0]
            return ("left", "right", "tie")[int(out)]

        done.append(_round(study, directory / f"batch-{r + 1}.jsonl", directory / f"verdicts-{r + 1}.jsonl", size,
                           verdict_of))
        if progress:
            progress(f"round {r + 1}: {done[-1].items} items issued and judged")
    with Study.open(study) as st:
        counts = st.counts()
        n = len(list(st.judgments()))
    with one_blas_thread():   # the one BLAS policy (planner.stats.blas)
        f = fit(counts, seed=seed)
    from scipy.stats import kendalltau

    lo, hi = f.interval()
    tau = float(kendalltau(f.mean, truth.strengths).statistic)
    return DemoResult(str(study), tuple(systems), tuple(float(x) for x in elo),
                      tuple(done), tuple(float(x) for x in bt.to_elo(f.mean) - bt.ELO_BASE),
                      tuple(float(x) for x in bt.to_elo(lo) - bt.ELO_BASE),
                      tuple(float(x) for x in bt.to_elo(hi) - bt.ELO_BASE), tau, float(f.gamma.mean), n)
