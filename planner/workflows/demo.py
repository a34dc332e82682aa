"""A self-contained demonstration of the whole loop, on a fresh machine.

:func:`run_demo` builds a small synthetic study (prompts in strata, one
response per system and prompt, no user files), then runs a few annotation
rounds: ``next-batch`` writes a blinded batch, a simulated judge with known
system strengths (plus ties and a left-position bias, as real LLM judges have)
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
from planner.errors import UsageError, quote
from planner.model import bt
from planner.vocabulary import PAIRWISE_VERDICTS

STRATA = ("everyday", "factual", "coding", "creative")
_WORDS = ("the", "answer", "explains", "clearly", "because", "data", "result", "step", "first", "then",
          "finally", "example", "shows", "method", "careful", "simple", "useful", "detail", "reason", "plan")


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


def _text(rng: np.random.Generator, n_words: int) -> str:
    words = [_WORDS[int(i)] for i in rng.integers(0, len(_WORDS), n_words)]
    return " ".join(words).capitalize() + "."


def build_demo_files(directory: Path, n_systems: int, n_prompts: int, rng: np.random.Generator):
    """Write ``prompts.jsonl`` and ``responses.jsonl`` for a synthetic study."""
    systems = [f"model-{chr(ord('a') + i)}" for i in range(n_systems)]
    prompts = directory / "prompts.jsonl"
    responses = directory / "responses.jsonl"
    with open(prompts, "w", encoding="utf-8") as fh:
        for i in range(n_prompts):
            fh.write(json.dumps({"id": f"q{i + 1}", "text": f"Demo question {i + 1}: {_text(rng, 8)}",
                                 "stratum": STRATA[i % len(STRATA)],
                                 "weight": [4, 3, 2, 1][i % len(STRATA)]}) + "\n")
    with open(responses, "w", encoding="utf-8") as fh:
        for i in range(n_prompts):
            for s in systems:
                fh.write(json.dumps({"prompt": f"q{i + 1}", "system": s,
                                     "text": _text(rng, int(rng.integers(30, 120)))}) + "\n")
    return systems, prompts, responses


def answer_batch(study_path, result, verdict_of, *, annotator: str | None = None) -> list[dict]:
    """Position-verdict rows answering a written batch, as an attentive annotator would.

    ``result`` is the :class:`planner.workflows.next_batch.NextBatchResult`;
    ``verdict_of(key_item)`` gets the study's key of a pairwise item
    (:class:`planner.store.study.BatchItem`: prompt, left, right) and returns
    ``left``/``right``/``tie``/``invalid``. Attention items get their expected
    verdict. Used by the demo and by loop tests with real judgments.
    """
    from planner.store.study import Study

    with Study.open(study_path) as st:
        key = {it.item_id: it for it in st.items(result.batch_id)}
    rows = []
    for it in result.items:
        verdict = it.expected if it.kind == "attention" else verdict_of(key[it.item_id])
        row = {"item": it.item_id, "verdict": verdict}
        if annotator is not None:
            row["annotator"] = annotator
        rows.append(row)
    return rows


#: what a demo directory holds; --force replaces only a directory made of these
DEMO_ENTRIES = ("prompts.jsonl", "responses.jsonl", "study", "batch-*", "verdicts-*")


def check_demo_target(directory: Path, force: bool) -> None:
    """Refuse a file, an existing study, or (without ``--force``) any non-empty directory."""
    from fnmatch import fnmatch

    name = quote(str(directory))
    if directory.exists() and not directory.is_dir():
        raise UsageError(f"DIRECTORY ({name}) is an existing file; expected a new directory for the demo",
                         parameters=('directory',))
    from planner.store.db import CONFIG_NAME, DB_NAME

    if (directory / CONFIG_NAME).exists() or (directory / DB_NAME).exists():
        raise UsageError(f"DIRECTORY ({name}) holds a study; the demo never replaces a study",
                         parameters=('directory',))
    if directory.exists() and any(directory.iterdir()):
        if not force:
            raise UsageError(f"DIRECTORY ({name}) already exists and is not empty (use `force` to replace a demo)",
                             parameters=('force',))
        other = [p.name for p in directory.iterdir() if not any(fnmatch(p.name, g) for g in DEMO_ENTRIES)]
        if other:
            raise UsageError(f"DIRECTORY ({name}) holds {quote(other[0])}, which the demo did not write; "
                             "`force` replaces only a demo directory", parameters=('force',))
    limits.check_output_dir("DIRECTORY", directory)


def run_demo(directory, *, n_systems: int = 6, n_prompts: int = 40, rounds: int = 3, size: int = 40,
             seed: int = 0, force: bool = False, progress=None) -> DemoResult:
    """Build a synthetic study in ``directory`` and run ``rounds`` annotation rounds.

    ``progress(message)`` is called as the demo goes.
    """
    from planner.model import fit
    from planner.simulation import Judge, Truth
    from planner.stats.blas import one_blas_thread
    from planner.store.study import Study, ingest, init_study
    from planner.workflows.next_batch import BatchSelection, Output, QualityControl, next_batch

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
        res = next_batch(study, BatchSelection(size=size),
                         qc=QualityControl(attention=0.05, repeat=0.05, overlap=0.0, acceptability=0.0),
                         output=Output(out=directory / f"batch-{r + 1}.jsonl"))
        def verdict_of(k):
            out = judge.judge(truth, np.array([idx[k.left]]), np.array([idx[k.right]]), rng)[0]
            return ("left", "right", "tie")[int(out)]

        rows = answer_batch(study, res, verdict_of, annotator="simulated-judge")
        vfile = directory / f"verdicts-{r + 1}.jsonl"
        vfile.write_text("".join(json.dumps(x) + "\n" for x in rows), encoding="utf-8")
        ingest(study, [vfile])
        verdicts = {v: sum(1 for x in rows if x["verdict"] == v) for v in PAIRWISE_VERDICTS}
        done.append(DemoRound(res.issued, len(res.items), verdicts, res.files, res.manifest["expected_reduction"],
                              res.advice))
        if progress:
            progress(f"round {r + 1}: {len(res.items)} items issued and judged")
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
