"""What ``allocate`` learns from data before it allocates: pointwise score gaps and Neyman's ``S_h``.

Pure: records in, numbers out (:func:`pointwise_gaps` for the contested-only
design, :func:`stratum_sd` for ``method="neyman"``); :mod:`planner.allocation`
takes both as inputs.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from typing import Any

import numpy as np

_VERDICT_SCORE = {"A": 1.0, "B": 0.0, "tie": 0.5}  # half-tie score of system `a`; invalid excluded

def pointwise_gaps(records: Iterable[Mapping[str, Any]]) -> dict[str, float]:
    """Per-prompt pointwise score gap: ``max(score) - min(score)`` over systems.

    A small gap means the systems' pointwise scores are close — the comparison is
    *contested* and a pairwise judgment is informative; a large gap is already
    decided by the pointwise scores. Prompts scored for fewer than two systems
    get no gap. Records: ``{"prompt", "system", "score"}``.
    """
    scores: dict[str, list[float]] = {}
    for r in records:
        scores.setdefault(str(r["prompt"]), []).append(float(r["score"]))
    return {p: max(v) - min(v) for p, v in scores.items() if len(v) >= 2}


def stratum_sd(judgments: Iterable[Mapping[str, Any]], stratum_of: Mapping[str, str]) -> dict[str, float]:
    """``S_h``: SD of the half-tie score within each stratum, pooled over system pairs.

    Each usable judgment (verdict A, B or tie; invalid excluded) gives the
    half-tie score ``y`` of the pair's alphabetically first system (1 win, 0.5
    tie, 0 loss). Within stratum ``h``, with ``m`` the pairs and ``J`` the
    judgments, ``S_h^2 = sum_pairs sum_j (y_j - ybar_pair)^2 / (J - m)`` — the
    pooled within-pair variance, so the SD does not depend on which system of
    a pair is called first. Strata with ``J - m < 1`` get no value.

    Parameters
    ----------
    judgments : records with ``prompt``, ``a``, ``b``, ``verdict``.
    stratum_of : mapping prompt id -> stratum; judgments on other prompts are skipped.
    """
    groups: dict[str, dict[tuple[str, str], list[float]]] = {}
    for j in judgments:
        h = stratum_of.get(str(j["prompt"]))
        y = _VERDICT_SCORE.get(str(j["verdict"]))
        if h is None or y is None:
            continue
        a, b = str(j["a"]), str(j["b"])
        if b < a:
            a, b, y = b, a, 1.0 - y
        groups.setdefault(h, {}).setdefault((a, b), []).append(y)
    out = {}
    for h, pairs in groups.items():
        ss = sum(float(((np.array(v) - np.mean(v)) ** 2).sum()) for v in pairs.values())
        df = sum(len(v) for v in pairs.values()) - len(pairs)
        if df >= 1:
            out[h] = math.sqrt(ss / df)
    return out
