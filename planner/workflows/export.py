"""`export`: the study's data for analysts — unblinded judgments, pair counts, posterior — as files.

The batch key (which system was shown left and right) otherwise lives only in
the SQLite store. ``export`` writes, into one directory:

* ``judgments.<ext>`` — one row per stored judgment, columns
  :data:`planner.store.study.Study.JUDGMENT_COLUMNS` (see docs/formats.md);
* ``pairs.<ext>`` — per unordered pair and stratum: ``x, y, stratum, x_wins,
  y_wins, ties, invalid, n, x_score`` (half-tie score; counted kinds only,
  both positions; stratum ``all`` pools every stratum);
* ``posterior.<ext>`` and ``posterior.json`` (unless ``engine=None``) — per
  system the posterior mean, sd and 95% interval of the strength (logit) and
  Elo, P(best); the JSON adds the position and tie parameters and diagnostics;
* ``draws.<ext>`` (NUTS only) — long format ``draw, system, strength``.

``<ext>`` is ``csv`` (UTF-8, header row, formula-leading cells neutralised with
a leading ``'``), ``jsonl`` or ``parquet`` (needs pyarrow: the ``parquet`` extra). Same study + seed →
byte-identical CSV/JSONL files.
"""

from __future__ import annotations

import contextlib
import json
from dataclasses import dataclass
from pathlib import Path

from planner.errors import PlannerError, UsageError, quote
from planner.formats.tables import ENCODERS

FORMATS = ("csv", "jsonl", "parquet")
PAIR_COLUMNS = ("x", "y", "stratum", "x_wins", "y_wins", "ties", "invalid", "n", "x_score")
POSTERIOR_COLUMNS = ("system", "mean", "sd", "lo95", "hi95", "elo", "elo_lo95", "elo_hi95", "prob_best")


@dataclass(frozen=True)
class ExportResult:
    """Files written and what they hold."""

    files: tuple[str, ...]
    judgments: int
    pairs: int
    engine: str | None

    def to_dict(self) -> dict:
        return {"files": list(self.files), "judgments": self.judgments, "pairs": self.pairs, "engine": self.engine}


def _pair_rows(study) -> list[tuple]:
    from planner.counts import half_tie_score

    rows = []
    pooled, per_stratum = study.counts(by_stratum=False), study.counts(by_stratum=True)
    tables = [("all", pooled.pair_tensor())]
    if len(per_stratum.strata) > 1:
        tables += list(zip(per_stratum.strata, per_stratum.pair_tensor(by_stratum=True)))
    names = pooled.systems
    for stratum, t in tables:  # t[x, y] = x's wins, y's wins, ties, invalid (the one pair tensor)
        for x in range(len(names)):
            for y in range(x + 1, len(names)):
                w, l, ties, inv = (int(v) for v in t[x, y])
                if w + l + ties + inv:
                    rows.append((names[x], names[y], stratum, w, l, ties, inv, w + l + ties + inv,
                                 half_tie_score(w, l, ties)))
    return rows


def _posterior(study, engine: str, seed: int, draws: int):
    from planner.model import bt, fit
    from planner.stats.blas import blas_policy

    with blas_policy(engine):
        f = fit(study.counts(by_stratum=False), engine=engine, seed=seed, draws=draws)
    lo, hi = f.interval(0.95)
    elo, elo_lo, elo_hi = bt.to_elo(f.mean), bt.to_elo(lo), bt.to_elo(hi)
    pb = f.prob_best()
    table = [(s, float(f.mean[k]), float(f.sd[k]), float(lo[k]), float(hi[k]), float(elo[k]), float(elo_lo[k]),
              float(elo_hi[k]), float(pb[k])) for k, s in enumerate(f.systems)]
    return f, table


def export_study(path, out, *, format: str = "csv", engine: str | None = "laplace", seed: int = 0,
                 draws: int = 1000, force: bool = False) -> ExportResult:
    """Write the study's judgments, pair counts and posterior into the directory ``out``.

    Parameters
    ----------
    path : path-like
        The study directory.
    out : path-like
        Output directory (created if missing; its parent must exist).
    format : {"csv", "jsonl", "parquet"}
    engine : {"laplace", "nuts"} or None
        Fit the Bradley–Terry–Davidson posterior for ``posterior.*`` (None: skip it).
    seed, draws : int
        Seed and number of posterior draws (``draws`` at most 100,000).
    force : bool
        Overwrite existing files.

    Raises
    ------
    UsageError
        Unknown format/engine, parquet without pyarrow, bad seed/draws, an
        output path that is not a writable directory, existing files without ``force``.
    """
    from planner.formats.staging import write_failure
    from planner.formats.writers import write_files
    from planner.limits import MAX_DRAWS, check_choice, check_int, check_output_dir, check_seed
    from planner.store.study import Study
    from planner.vocabulary import ENGINES

    check_choice("format", format, FORMATS)
    if engine is not None:   # None: no posterior file
        check_choice("engine", engine, ENGINES)
    if check_seed("seed", seed) is None:
        raise UsageError("`seed` must be given: the posterior draws are seeded", parameters=("seed",))
    check_int("draws", draws, 1, MAX_DRAWS)   # draws x systems are held in memory
    if format == "parquet":
        try:
            import pyarrow  # noqa: F401
        except ImportError:
            raise UsageError("`format` parquet needs pyarrow: pip install 'planner[parquet]' (or use csv or "
                             "jsonl)", parameters=('format',)) from None
    out = Path(out)
    if out.exists() and not out.is_dir():
        raise UsageError(f"`out` ({quote(str(out))}) is a file; expected a directory", parameters=('out',))
    if not out.parent.is_dir():
        raise UsageError(f"`out` ({quote(str(out))}): its parent directory does not exist", parameters=('out',))
    check_output_dir("out", out)   # before the fit: a directory files can be created in (not /proc, not read-only)
    enc = ENCODERS[format]
    with Study.open(path) as study:
        rows = list(study.judgment_table())
        pairs = _pair_rows(study)
        files = [(out / f"judgments.{format}", enc(Study.JUDGMENT_COLUMNS, rows)),
                 (out / f"pairs.{format}", enc(PAIR_COLUMNS, pairs))]
        if engine is not None and pairs:
            f, table = _posterior(study, engine, seed, draws)
            files.append((out / f"posterior.{format}", enc(POSTERIOR_COLUMNS, table)))
            from planner.jsonable import jsonable

            files.append((out / "posterior.json", (json.dumps(jsonable(f.to_dict()), indent=2,
                                                              ensure_ascii=False) + "\n").encode("utf-8")))
            if engine == "nuts":
                d = f.beta_draws
                files.append((out / f"draws.{format}", enc(("draw", "system", "strength"), (
                    (i, f.systems[k], float(d[i, k])) for i in range(d.shape[0]) for k in range(d.shape[1])))))
    created = not out.exists()
    try:
        out.mkdir(exist_ok=True)
    except OSError as exc:
        raise write_failure("out", out, exc) from None
    try:
        written = write_files(files, force=force)
    except PlannerError:
        if created:   # leave no empty directory behind a refused export
            with contextlib.suppress(OSError):
                out.rmdir()
        raise
    return ExportResult(tuple(str(p) for p in written), len(rows), len(pairs), engine if pairs else None)
