"""Running a simulation's (strategy, repetition) tasks without throwing work away.

* Every finished run is appended, as one JSON line, to the results file
  (``--out``) and flushed at once, so a failure elsewhere or Ctrl-C keeps what
  finished.
* ``--resume`` reads that file back and runs only what is missing. Each line
  carries a fingerprint of everything that determines a run's result except the
  number of repetitions (scenario, strategies in order, budget, batch, seed,
  engine, judge, the truth and the replay pool), so a file from a different
  simulation is refused instead of mixed in. A run's random numbers depend only
  on (seed, strategy index, repetition), so a resumed simulation gives exactly
  the result of an uninterrupted one.
* A run that raises is recorded as failed (the message is kept) and the others
  go on; failed runs are not saved, so ``--resume`` retries them.

The results file's lines are written and read by :mod:`planner.formats.simulate_runs`.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
from dataclasses import asdict
from pathlib import Path

import numpy as np

from planner.errors import UsageError, quote
from planner.formats.simulate_runs import read_results, trace_line
from planner.formats.staging import write_failure
from planner.simulation.loop import safe_run  # safe_run: one run, an error kept as a failed run
from planner.stats.blas import one_blas_thread

__all__ = ["fingerprint", "open_results", "run_tasks"]


def _strategy_key(s) -> dict:
    """A strategy's fields; the robustness options only when set (older runs keep their fingerprint)."""
    return {k: v for k, v in asdict(s).items() if k not in ("explore", "thompson") or v not in (None, False)}


def fingerprint(spec) -> str:
    """A short hash of everything but ``reps`` that determines the runs of ``spec``."""
    h = hashlib.sha256()
    head = {"scenario": spec.scenario, "strategies": [_strategy_key(s) for s in spec.strategies],
            "n_systems": spec.n_systems, "spread": spec.spread, "arena_gamma": spec.arena_gamma,
            "judge": asdict(spec.judge), "budget": spec.budget, "batch": spec.batch, "seed": spec.seed,
            "engine": spec.engine, "anchor": spec.anchor,
            "verdicts": "common"}   # per-pair verdict streams shared by the strategies
    h.update(json.dumps(head, sort_keys=True).encode())
    if spec.truth is not None:
        h.update("\x00".join(spec.truth.systems).encode())
        h.update(np.ascontiguousarray(spec.truth.strengths, dtype=float).tobytes())
    if spec.replay is not None:
        for a in (spec.replay.left, spec.replay.right, spec.replay.outcome):
            h.update(np.ascontiguousarray(a, dtype=np.int64).tobytes())
    if spec.margin_elo:     # only the resolved metric reads it; runs from before it existed keep their print
        h.update(f"margin={spec.margin_elo!r}".encode())
    if spec.source is not None:     # --from-study: the study's posterior and design
        h.update("\x00".join(spec.source.start.systems).encode())
        for a in (spec.source.params.mean, spec.source.params.cov, spec.source.layout.design.prompts):
            if a is not None:
                h.update(np.ascontiguousarray(a, dtype=float).tobytes())
    return h.hexdigest()[:16]


def open_results(path: Path | None, resume: bool, spec) -> tuple[dict, str]:
    """Check ``--out``/``--resume`` and return the runs already finished and the fingerprint."""
    fp = fingerprint(spec)
    if path is None:
        if resume:
            raise UsageError("`resume` needs `out` FILE (the results file to continue)", parameters=('resume', 'out'))
        return {}, fp
    path = Path(path)
    if resume:
        if not path.exists():
            raise UsageError(f"`resume`: {quote(str(path))} does not exist; run without `resume` to start it",
                             parameters=('resume',))
        return read_results(path, fp, spec), fp
    if path.exists() and path.stat().st_size > 0:
        raise UsageError(f"`out` ({quote(str(path))}) already holds results; pass `resume` to continue it "
                         "or choose another file", parameters=('out', 'resume'))
    return {}, fp


def run_tasks(spec, tasks: list[tuple[int, int]], done: dict, *, workers: int, out: Path | None, fp: str,
              progress=None) -> dict:
    """Run the ``tasks`` (strategy index, rep) not in ``done``; save each finished run at once.

    Returns ``done`` completed with the new runs (failed runs included, not saved).
    A KeyboardInterrupt stops the workers and propagates; what finished is on disk.
    """
    todo = [t for t in tasks if t not in done]
    total, count = len(tasks), len(tasks) - len(todo)
    sink = open(out, "a", encoding="utf-8") if out is not None else None  # noqa: SIM115 (closed in the finally below)

    def finish(key, trace):
        nonlocal count
        done[key] = trace
        if sink is not None and not trace.error:
            try:
                sink.write(trace_line(fp, key[0], trace))
                sink.flush()
            except OSError as exc:   # a full disk: the runs saved so far stay, `resume` continues from them
                raise write_failure("out", out, exc, then="the runs finished before it are saved in it "
                                    "(resuming continues from them)") from None
        count += 1
        if progress:
            progress(count, total)

    try:
        if progress and count:
            progress(count, total)
        if workers == 1 or len(todo) <= 1:
            with one_blas_thread():
                for key in todo:
                    finish(key, safe_run((spec, *key)))
        else:
            _run_parallel(spec, todo, workers, finish)
    finally:
        if sink is not None:
            with contextlib.suppress(OSError):   # a failed write was reported; closing flushes nothing new
                sink.close()
    return done


def _keyed_run(args):
    spec, key = args
    with one_blas_thread():   # in each worker process: the one BLAS policy (planner.stats.blas)
        return key, safe_run((spec, *key))


def _run_parallel(spec, todo, workers, finish):
    """Runs in ``workers`` processes; on Ctrl-C (or any error here) the workers are
    terminated at once (``Pool.__exit__``), not left to finish their queue."""
    import multiprocessing as mp
    import os

    ctx = mp.get_context("fork") if hasattr(os, "fork") else mp.get_context()
    with ctx.Pool(processes=workers) as pool:
        for key, trace in pool.imap_unordered(_keyed_run, [(spec, key) for key in todo]):
            finish(key, trace)
