"""Fixture studies for the `decide` tests, built through the library.

``build_study`` writes a prompts file with strata (and optional weights), runs
``init_study``, generates a normalized-judgments JSONL with a seeded rng
(exact win/loss/tie counts per stratum, shuffled; random position and prompt
per judgment) and ingests it. Acceptability verdicts go through a recorded
batch of acceptability items and a position-verdict file, as in production.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from planner.store.study import BatchItem, Study, ingest, init_study

SYSTEMS = ("new", "old", "ref")


def _jsonl(path: Path, rows) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def build_study(root: Path, name: str, strata: dict[str, tuple[int, int, int]], *,
                weights: dict[str, float] | None = None, prompts_per_stratum: int = 8,
                acceptability: dict[str, tuple[int, int]] | None = None, seed: int = 0,
                candidate: str = "new", baseline: str = "old") -> Path:
    """A study where ``candidate`` has exactly (wins, losses, ties) against ``baseline`` per stratum.

    ``strata`` maps stratum -> (W, L, T); strata with (0, 0, 0) get prompts but
    no judgments. ``weights`` maps stratum -> weight given to each of its
    prompts. ``acceptability`` maps system -> (passed, failed) verdicts.
    """
    root = Path(root)
    rng = np.random.default_rng(seed)
    prompts = []
    for h in strata:
        for i in range(prompts_per_stratum):
            row = {"id": f"{h}-{i}", "text": f"{h} question {i}", "stratum": h}
            if weights is not None:
                row["weight"] = weights[h]
            prompts.append(row)
    pfile = _jsonl(root / f"{name}-prompts.jsonl", prompts)
    path = root / name
    init_study(path, systems=list(SYSTEMS), prompts_file=pfile, seed=seed)
    rows = []
    for h, (w, l, t) in strata.items():
        outcomes = np.array(["c"] * w + ["b"] * l + ["t"] * t)
        rng.shuffle(outcomes)
        for o in outcomes:
            cand_left = bool(rng.random() < 0.5)
            a, b = (candidate, baseline) if cand_left else (baseline, candidate)
            if o == "t":
                verdict = "tie"
            else:
                winner = candidate if o == "c" else baseline
                verdict = "A" if winner == a else "B"
            prompt = f"{h}-{int(rng.integers(prompts_per_stratum))}"
            rows.append({"id": f"j{len(rows)}", "prompt": prompt, "a": a, "b": b, "verdict": verdict})
    if rows:
        ingest(path, [_jsonl(root / f"{name}-judgments.jsonl", rows)])
    if acceptability:
        items, verdicts = [], []
        first = f"{next(iter(strata))}-0"
        for system, (passed, failed) in acceptability.items():
            for k, v in enumerate(["pass"] * passed + ["fail"] * failed):
                iid = f"acc-{system}-{k}"
                items.append(BatchItem(iid, first, system, None, kind="acceptability"))
                verdicts.append({"item": iid, "verdict": v, "annotator": "ann"})
        with Study.open(path) as st:
            st.record_batch({"seed": seed, "strategy": "test"}, items)
        ingest(path, [_jsonl(root / f"{name}-acceptability.jsonl", verdicts)])
    return path
