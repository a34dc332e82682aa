"""The demo's loop through the live judge path: a simulated judge behind a local OpenAI-compatible server.

:func:`run_demo_live` builds the same synthetic study as ``planner demo``
(:func:`planner.services.demo_study.build_demo_files`), starts the local judge of
``planner judge-server`` (:class:`planner.connectors.judge_server.JudgeServer`, on 127.0.0.1, a
free port) with the demo's true strengths as its hidden ones, and runs ``planner run``'s rounds
(:func:`planner.services.judge_loop.run_rounds`, on the study opened once) against it: plan → issue
→ judge (real HTTP through the ``openai`` SDK, cache, ledger) → ingest → refit, until settled or the
budget.

The judge knows which system wrote each answer (the demo's texts) and answers
``[[A]]``/``[[B]]``/``[[C]]`` with Bradley–Terry–Davidson probabilities, with ties and a
left-position bias like real LLM judges (the rule of :mod:`planner.connectors.judge_server`). The
``openai`` package is checked for before anything is written.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from planner.services.batch_round import RunResult


@dataclass(frozen=True)
class LiveDemoResult:
    """The study, the loop's result (:class:`planner.services.batch_round.RunResult`), HTTP calls served,
    and the truth."""

    path: str
    systems: tuple[str, ...]
    true_elo: tuple[float, ...]
    run: RunResult
    http_calls: int


def run_demo_live(directory, *, n_systems: int = 6, n_prompts: int = 40, budget: int = 300, batch_size: int = 30,
                  seed: int = 0, force: bool = False, progress=None) -> LiveDemoResult:
    """Build the demo study in ``directory`` and run the active loop through a local judge server."""
    import importlib.util

    from planner import limits
    from planner.connectors.judge_server import JudgeRule, JudgeServer, rule_answer
    from planner.errors import UsageError
    from planner.services.batch_round import RunOptions, hold_run
    from planner.services.demo_study import build_demo_files, check_demo_target
    from planner.services.judge_loop import run_rounds
    from planner.services.judging import JudgeOptions
    from planner.store.study import Study, init_study

    limits.check_int("systems", n_systems, 2, 26)
    limits.check_int("prompts", n_prompts, 4, limits.MAX_DEMO_PROMPTS)
    limits.check_seed("seed", seed)
    directory = Path(directory)
    check_demo_target(directory, force)  # the demo's own rule: never a study, --force only on a demo directory
    if importlib.util.find_spec("openai") is None:   # before anything is written: no half-made demo
        from planner.connectors.openai_judge import INSTALL_HINT

        raise UsageError(f"the live-judge demo needs the openai package: {INSTALL_HINT}", parameters=())
    if directory.exists() and any(directory.iterdir()):
        import shutil

        shutil.rmtree(directory)
    directory.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(seed)
    systems, prompts, responses = build_demo_files(directory, n_systems, n_prompts, rng)
    elo = np.linspace(150, -150, n_systems)
    system_of = {}
    for ln in responses.read_text(encoding="utf-8").splitlines():
        r = json.loads(ln)
        system_of[r["text"]] = r["system"]
    study = directory / "study"
    init_study(study, prompts_file=prompts, responses_file=responses, anchor=systems[0], seed=seed)
    rule = JudgeRule(tuple(systems), tuple(float(x) for x in elo), tie_rate=0.15, position=0.3, seed=seed)
    with JudgeServer(rule_answer(rule, system_of.get)) as srv, hold_run(study), Study.open(study) as st:
        res = run_rounds(st, JudgeOptions(model="simulated-judge", base_url=srv.base_url, concurrency=4, seed=seed),
                         RunOptions(budget=budget, batch_size=batch_size), progress=progress)
        calls = srv.calls
    return LiveDemoResult(str(study), tuple(systems), tuple(float(x) for x in elo), res, calls)
