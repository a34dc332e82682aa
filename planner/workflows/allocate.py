"""The ``planner allocate`` workflow: read the prompts (a file or a study), the pointwise scores and the
pilot judgments, allocate (:func:`planner.allocation.maths.allocate`), write the chosen prompts.

The maths lives in the core (:mod:`planner.allocation`, :mod:`planner.allocation.learned`,
:mod:`planner.allocation.apportion`); the files in the edge (:mod:`planner.formats.prompts`,
:mod:`planner.formats.pointwise`, :mod:`planner.formats.normalized`,
:mod:`planner.formats.prompts_writer`). This module is the only one of them that opens a study.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from planner.allocation.learned import pointwise_gaps, stratum_sd
from planner.allocation.maths import allocate, parse_target, problems_error, stratum_label
from planner.allocation.result import Allocation
from planner.errors import UsageError
from planner.formats.prompts_writer import check_out, write_prompts

__all__ = ["allocate_files", "read_pilot", "read_pointwise", "read_prompts"]


def read_prompts(path: str | os.PathLike, option: str = "prompts") -> list:
    """Read a prompts file with the one prompts reader (:func:`planner.formats.prompts.read_prompts`).

    Returns :class:`planner.formats.prompts.PromptRow` records. Bad rows and
    duplicate ids raise one :class:`DataError` naming ``file:line``.
    """
    from planner.formats.prompts import read_prompts as read_prompt_rows

    rows, problems = read_prompt_rows(path, option)
    if problems:
        raise problems_error(problems, "bad prompt rows")
    return rows



def read_pointwise(path: str | os.PathLike, known: set[str]) -> dict[str, float]:
    """Read ``{"prompt", "system", "score"}`` rows (JSONL or CSV) into per-prompt gaps."""
    from planner.formats.pointwise import read_pointwise as read_scores

    return pointwise_gaps(read_scores(path, known))


def read_pilot(path: str | os.PathLike, known: set[str]) -> list[dict]:
    """Read normalized judgments for Neyman's ``S_h``, with the reader ``ingest`` uses.

    Accepts exactly what ``planner ingest`` accepts
    (:func:`planner.formats.normalized.load_normalized`); judgments on prompts
    not in ``known`` are an error naming ``file:line``.
    """
    from planner.formats.normalized import load_normalized

    return [{"prompt": r["prompt"], "a": r["a"], "b": r["b"], "verdict": r["verdict"]}
            for r in load_normalized(path, "pilot", prompts=known)]



def allocate_files(*, budget: int, prompts: str | os.PathLike | None = None,
                   study: str | os.PathLike | None = None, pointwise: str | os.PathLike | None = None,
                   pilot: str | os.PathLike | None = None, contested_only: bool = False,
                   gap: float | None = None, target: str | None = None,
                   out: str | os.PathLike | None = None, force: bool = False,
                   seed: int | None = 0, **options: Any) -> Allocation:
    """The ``planner allocate`` command: read files, :func:`allocate`, write ``out``.

    Exactly one of ``prompts`` (a prompts file) or ``study`` (a study directory;
    Neyman then uses its judgments) is required. ``target`` is the
    ``"stratum=share,..."`` text. ``contested_only`` needs ``gap`` and
    ``pointwise``. Other keyword options go to :func:`allocate`. The output
    file is checked before any work and written atomically after.
    """
    from planner.limits import check_allocate_options

    check_allocate_options(budget=budget, seed=seed, min_per_stratum=options.get("min_per_stratum", 0), gap=gap)
    if (prompts is None) == (study is None):
        raise UsageError("give exactly one of `prompts` FILE or `study` STUDY", parameters=('prompts', 'study'))
    if contested_only and gap is None:
        raise UsageError("`contested_only` needs `gap` G (keep prompts whose pointwise scores differ by <= G)",
                         parameters=('contested_only', 'gap'))
    if gap is not None and not contested_only:
        raise UsageError("`gap` is used only with `contested_only`", parameters=('gap', 'contested_only'))
    if contested_only and pointwise is None:
        raise UsageError("`contested_only` needs `pointwise` FILE", parameters=('contested_only', 'pointwise'))
    method = options.get("method", "proportional")
    if pilot is not None and method != "neyman":
        raise UsageError(f"`pilot` is used only with `method` neyman (got `method` {method})",
                         parameters=('pilot', 'method'))
    if out is not None:
        check_out(out, force)
    judgments: list = []
    if study is not None:
        try:
            from planner.store.study import Study
        except ImportError:
            raise UsageError("`study` is not available yet in this version; use `prompts` FILE",
                             parameters=('study', 'prompts')) from None
        with Study.open(study) as st:
            rows = list(st.prompts())
            if method == "neyman" and pilot is None:
                judgments = [_as_dict(j) for j in st.judgments() if getattr(j, "b", None) is not None]
    else:
        rows = read_prompts(prompts)
    known = {p.id for p in rows}
    if pilot is not None:
        judgments = read_pilot(pilot, known)
    gaps = read_pointwise(pointwise, known) if pointwise is not None else None
    sd = None
    if method == "neyman":
        by = options.get("by") or "stratum"
        sd = stratum_sd(judgments, {p.id: stratum_label(p, by) for p in rows})
    result = allocate(rows, budget, target=None if target is None else parse_target(target),
                      pointwise=gaps, gap=gap if contested_only else None, sd=sd, seed=seed, **options)
    if out is not None:
        write_prompts(result, out, force=force)
        result = replace(result, out=str(out))
    return result


def _as_dict(j: Any) -> dict:
    if isinstance(j, Mapping):
        return dict(j)
    return {k: getattr(j, k, None) for k in ("prompt", "a", "b", "verdict")}
