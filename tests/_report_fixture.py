"""Studies for the report tests, built through the library (init + ingest).

* :func:`synthetic_study`: a small study from known strengths, written as
  prompts/responses/normalized-judgment files and ingested;
* :func:`vicuna_study`: the package's Vicuna-80 prompts + responses with the
  GPT-4 judgments ingested (built once per test module via a cache).
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from planner.model.bt import outcome_probs
from planner.store.study import ingest, init_study

SYNTH_SYSTEMS = ("sys-a", "sys-b", "sys-c", "sys-d")
SYNTH_BETA = np.array([0.8, 0.2, -0.3, -0.7])   # true strengths (logit), sum to zero
SYNTH_GAMMA = 0.4                               # true left-position shift (logit)
SYNTH_NU = 0.5                                  # true Davidson tie parameter


def _write_jsonl(path: Path, rows) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def synthetic_study(root: Path, *, n: int = 600, seed: int = 1, anchor: str | None = None,
                    acceptable: dict[str, int] | None = None, reasons: bool = True, n_prompts: int = 100,
                    weights: bool = False) -> Path:
    """A study with four systems, ``n_prompts`` prompts in two strata and ``n`` judgments.

    Judgments follow Davidson's model with SYNTH_BETA, SYNTH_GAMMA and SYNTH_NU
    (``planner.model.bt.outcome_probs``); every 50th judgment is invalid. With
    ``reasons``, decisive judgments carry a reason except every 4th.
    ``acceptable[system] = k`` labels the first k prompts' responses of that
    system acceptable and the rest not.
    """
    rng = np.random.default_rng(seed)
    root.mkdir(parents=True, exist_ok=True)
    prompts = [{"id": f"p{i}", "text": f"question {i}", "stratum": "easy" if i % 4 else "hard"}
               for i in range(n_prompts)]
    if weights:
        for p in prompts:
            p["weight"] = 3.0 if p["stratum"] == "hard" else 1.0
    responses = []
    for i in range(n_prompts):
        for k, s in enumerate(SYNTH_SYSTEMS):
            r = {"prompt": f"p{i}", "system": s, "text": "word " * (20 + 10 * k + i % 7)}
            if acceptable is not None and s in acceptable:
                r["acceptable"] = i < acceptable[s]
            responses.append(r)
    rows = []
    m = len(SYNTH_SYSTEMS)
    for j in range(n):
        a = int(rng.integers(0, m))
        b = (a + int(rng.integers(1, m))) % m
        pa, pb, pt = outcome_probs(SYNTH_BETA[a] - SYNTH_BETA[b] + SYNTH_GAMMA, SYNTH_NU)
        v = ["A", "B", "tie"][int(rng.choice(3, p=[pa, pb, pt]))]
        if j % 50 == 49:
            v = "invalid"
        rec = {"id": f"s{j}", "prompt": f"p{int(rng.integers(0, n_prompts))}", "a": SYNTH_SYSTEMS[a],
               "b": SYNTH_SYSTEMS[b], "verdict": v}
        if reasons and v in ("A", "B") and j % 4:
            rec["reason"] = "accuracy" if j % 3 else "format"
        rows.append(rec)
    pf = _write_jsonl(root.parent / f"{root.name}-prompts.jsonl", prompts)
    rf = _write_jsonl(root.parent / f"{root.name}-responses.jsonl", responses)
    jf = _write_jsonl(root.parent / f"{root.name}-judgments.jsonl", rows)
    init_study(root, anchor=anchor, prompts_file=pf, responses_file=rf)
    ingest(root, [jf])
    return root


_VICUNA: dict[str, Path] = {}


def vicuna_study(vicuna_data: Path, tmp_root: Path) -> Path:
    """Vicuna80 prompts + responses, GPT-4 judgments ingested; built once per ``tmp_root``."""
    key = str(tmp_root)
    if key not in _VICUNA:
        path = tmp_root / "vicuna80-gpt4"
        init_study(path, prompts_file=vicuna_data / "vicuna80" / "prompts.jsonl",
                   responses_file=vicuna_data / "vicuna80" / "responses.jsonl")
        ingest(path, [vicuna_data / "judgments" / "qlora_vicuna80_gpt4.jsonl"])
        _VICUNA[key] = path
    return _VICUNA[key]
