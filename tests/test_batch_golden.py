"""Golden bytes of seeded batches: a refactor of batch/next-batch must not move a byte.

The files under ``tests/data/golden/batch_*.json`` were written by this module
(``PLANNER_REGEN_GOLDEN=1``) on the tree *before* ``assemble_batch`` was decomposed, the manifest
became :class:`planner.batch.assemble.BatchManifest` and ``next_batch`` took option objects. They hold the
SHA-256 of every file written and the manifest the study stores (paths and the staging token,
which depend on the temporary directory and the clock, left out). Hashes, picks and counts compare
exactly; the manifest's floats to ``test_golden.REL_TOL`` relative (another CPU sums in another order).

With ``PLANNER_BATCH_HASHES=FILE`` the seeded batch files' hashes are also appended to FILE, one JSON
line per batch: ``.ci/run`` runs these tests on two SIMD paths and compares the two files byte for byte.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import _batch_fixture as bfx
import _report_fixture as fx
import numpy as np
from test_golden import _check  # the one golden comparison (tests/data/golden, PLANNER_REGEN_GOLDEN=1)

from planner.store.study import Study


def _stable(manifest: dict) -> dict:
    m = json.loads(json.dumps(manifest))
    m.pop("issue_token", None)
    m["files"] = [Path(f).name for f in m.get("files", [])]
    if "rendering" in m:
        m["rendering"]["out"] = Path(m["rendering"]["out"]).name
    return m


def _issue(study: Path, out: Path, **options):
    from planner.workflows.next_batch import next_batch, options_from

    return next_batch(study, **options_from(out=out, **options))


def _files_doc(res) -> dict:
    return {Path(f).name: hashlib.sha256(Path(f).read_bytes()).hexdigest() for f in res.files}


def test_vicuna80_seeded_batches_golden(vicuna_data, tmp_path):
    # every pair has judged every Vicuna80 prompt: reuse_prompts lets the pairs take one again
    study = fx.vicuna_study(vicuna_data, tmp_path)
    docs = {}
    for name, fmt, extra in (
            ("qc", "jsonl", dict(attention=0.1, repeat=0.1, overlap=0.1, acceptability=0.05, annotators=3,
                                 both_orders=True, normalize_style="full")),
            ("ls", "label-studio", dict(annotators="ann-x,ann-y", max_words=150, truncate=True,
                                        attention=0.08, repeat=0.05)),
            ("judge", "judge", dict(judge_model="gpt-4o-mini", redact_names=True, max_words=300,
                                    strategy="round-robin"))):
        res = _issue(study, tmp_path / f"batch-{name}", size=30, seed=7, format=fmt,
                     reuse_prompts=True, **extra)
        with Study.open(study) as st:
            stored = next(b.manifest for b in st.batches() if b.id == res.batch_id)
        assert _stable(stored) == _stable(res.manifest)
        docs[name] = {"files": _files_doc(res), "manifest": _stable(res.manifest)}
        _record_hashes(f"vicuna80 {name}", docs[name]["files"])
    _check("batch_vicuna80.json", docs)


def _record_hashes(name: str, files: dict) -> None:
    """Append ``{name: {file: sha256}}`` to ``$PLANNER_BATCH_HASHES`` when it is set (.ci/run compares runs)."""
    sink = os.environ.get("PLANNER_BATCH_HASHES")
    if sink:
        with open(sink, "a", encoding="utf-8") as f:
            f.write(json.dumps({name: files}, sort_keys=True) + "\n")


def test_assemble_batch_golden():
    from planner.batch.assemble import assemble_batch

    batch = assemble_batch(bfx.planned(3), prompt_text=bfx.prompts(), response_text=bfx.responses(),
                           rng=np.random.default_rng(42), attention=0.1, repeat=0.1, overlap=0.1,
                           acceptability=0.1, both_orders=True, annotators=["a1", "a2", "a3"],
                           max_words=60, truncate=True, normalize_style="full", previous_items=["it-x"])
    doc = batch.to_dict()
    doc["texts"] = [[it.prompt, it.left_text, it.right_text] for it in batch.items]
    skip = assemble_batch(bfx.planned(2), prompt_text=bfx.prompts(), response_text=bfx.responses(),
                          rng=np.random.default_rng(3), attention=0.15, acceptability=0.1, max_words=60,
                          attention_pool=["a broken reply", "off topic entirely here"])
    doc2 = skip.to_dict()
    doc2["texts"] = [[it.left_text, it.right_text] for it in skip.items]
    _check("batch_assemble.json", {"qc": doc, "skip_pool": doc2})
