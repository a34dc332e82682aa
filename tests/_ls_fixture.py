"""A small study with one Label Studio batch (or another format) for the push/pull tests without a real server."""

from __future__ import annotations

import json
from pathlib import Path

SYSTEMS = ("alpha", "beta", "gamma", "delta")


def ls_study(tmp: Path, *, fmt: str = "label-studio", annotators=("alice", "bob"), acceptability: float = 0.2,
             size: int = 8, prompts: int = 10):
    """``(study, batch result)``: ``prompts`` prompts answered by four systems, one batch of ``size`` planned
    comparisons for ``annotators`` written as ``fmt`` next to the study."""
    from planner.store.study import init_study
    from planner.workflows.next_batch import BatchSelection, Output, QualityControl, next_batch

    pfile, rfile = tmp / "prompts.jsonl", tmp / "responses.jsonl"
    pfile.write_text("".join(json.dumps({"id": f"p{i}", "text": f"Question {i}?"}) + "\n" for i in range(prompts)))
    rfile.write_text("".join(json.dumps({"prompt": f"p{i}", "system": s, "text": f"Answer {s} {i}."}) + "\n"
                             for i in range(prompts) for s in SYSTEMS))
    study = tmp / "study"
    init_study(study, prompts_file=pfile, responses_file=rfile, seed=3)
    res = next_batch(study, BatchSelection(size=size, seed=1),
                     qc=QualityControl(annotators=list(annotators) or None, attention=0.0, repeat=0.0, overlap=0.0,
                                       acceptability=acceptability),
                     output=Output(format=fmt, out=tmp / ("b1" + (".json" if fmt != "csv" else ".csv"))))
    return study, res
