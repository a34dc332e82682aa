"""Synthetic judgments with a known length effect, for the style-control tests.

Truth: Davidson's model with strengths ``BETA`` (sum to zero), a left-position
shift ``POSITION``, tie parameter ``NU`` and a length coefficient ``coef`` on the
Arena covariate ``(w_a - w_b) / (w_a + w_b + 1)`` divided by ``LENGTH_RMS`` (the
covariate's root mean square, computed once from a large draw of this design, so
the fitted coefficient, which is in per-rms units of the sample, estimates ``coef``
up to the sampling noise of the rms: about 1% at n = 3000). The truly better systems write
*shorter* answers, so a judge that likes length ranks them too low.
"""

from __future__ import annotations

import numpy as np

from planner.model.bt import outcome_probs

SYSTEMS = ("s0", "s1", "s2", "s3")
BETA = np.array([0.45, 0.15, -0.15, -0.45])      # truth: s0 > s1 > s2 > s3
MEAN_WORDS = np.array([60.0, 120.0, 240.0, 480.0])  # the better, the shorter
POSITION = 0.2
NU = 0.3


def _words(rng, systems_idx):
    return np.maximum(1, np.round(rng.lognormal(np.log(MEAN_WORDS[systems_idx]), 0.3)))


def length_rms(seed: int = 12345, n: int = 200_000) -> float:
    rng = np.random.default_rng(seed)
    a = rng.integers(0, 4, n)
    b = (a + rng.integers(1, 4, n)) % 4
    wa, wb = _words(rng, a), _words(rng, b)
    x = (wa - wb) / (wa + wb + 1)
    return float(np.sqrt(np.mean(x * x)))


LENGTH_RMS = length_rms()


def synthetic(n: int, coef: float, seed: int):
    """``(a, b, position, outcome, feat_a, feat_b)`` for :meth:`planner.model.style.StyleDesign.build`.

    ``a`` is shown left; features are ``[words, 0, 0, 0]`` (no markdown).
    """
    rng = np.random.default_rng(seed)
    a = rng.integers(0, 4, n)
    b = (a + rng.integers(1, 4, n)) % 4
    wa, wb = _words(rng, a), _words(rng, b)
    x = (wa - wb) / (wa + wb + 1) / LENGTH_RMS
    pa, pb, _ = outcome_probs(BETA[a] - BETA[b] + POSITION + coef * x, NU)
    u = rng.random(n)
    outcome = np.where(u < pa, 0, np.where(u < pa + pb, 1, 2))
    fa = np.zeros((n, 4))
    fb = np.zeros((n, 4))
    fa[:, 0], fb[:, 0] = wa, wb
    return a, b, np.ones(n), outcome, fa, fb


def raw_counts(a, b, outcome):
    """The same judgments as planner Counts (a shown left), for the raw model."""
    from planner.counts import Counts

    return Counts.from_arrays(SYSTEMS, a, b, outcome)


def style_study(root, *, n: int = 1500, coef: float = 1.0, seed: int = 0, n_prompts: int = 60,
                anchor: str | None = None, missing: int = 0, responses: bool = True):
    """A study whose judgments follow the truth above, built through init + ingest.

    Every system answers every prompt with ``"word " * w`` (``w`` drawn per prompt and system);
    with ``anchor`` every judgment compares a system with the anchor (an anchor design); the
    first ``missing`` responses of ``s3`` are left out of the responses file.
    """
    import json
    from pathlib import Path

    from planner.store.study import ingest, init_study

    root = Path(root)
    rng = np.random.default_rng(seed)
    words = _words(rng, np.tile(np.arange(4), (n_prompts, 1)))       # (prompts, systems)
    prompts = [{"id": f"p{i}", "text": f"question {i}"} for i in range(n_prompts)]
    resp = [{"prompt": f"p{i}", "system": s, "text": "word " * int(words[i, k])}
            for i in range(n_prompts) for k, s in enumerate(SYSTEMS)
            if not (s == "s3" and i < missing)]
    k_anchor = None if anchor is None else SYSTEMS.index(anchor)
    rows = []
    for j in range(n):
        if k_anchor is None:
            a = int(rng.integers(0, 4))
            b = (a + int(rng.integers(1, 4))) % 4
        else:
            other = int((k_anchor + rng.integers(1, 4)) % 4)
            a, b = (other, k_anchor) if rng.random() < 0.5 else (k_anchor, other)
        i = int(rng.integers(0, n_prompts))
        wa, wb = words[i, a], words[i, b]
        x = (wa - wb) / (wa + wb + 1) / LENGTH_RMS
        pa, pb, _ = outcome_probs(BETA[a] - BETA[b] + POSITION + coef * x, NU)
        u = rng.random()
        v = "A" if u < pa else "B" if u < pa + pb else "tie"
        rows.append({"id": f"j{j}", "prompt": f"p{i}", "a": SYSTEMS[a], "b": SYSTEMS[b], "verdict": v,
                     "a_position": "left"})
    files = {}
    for name, data in (("prompts", prompts), ("responses", resp), ("judgments", rows)):
        files[name] = root.parent / f"{root.name}-{name}.jsonl"
        files[name].write_text("".join(json.dumps(r) + "\n" for r in data), encoding="utf-8")
    init_study(root, systems=list(SYSTEMS), anchor=anchor, prompts_file=files["prompts"],
               responses_file=files["responses"] if responses else None)
    ingest(root, [files["judgments"]])
    return root
