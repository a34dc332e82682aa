"""next-batch: outputs checked first, crash recovery, --rewrite (byte-identical), --retry-failed."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from typer.testing import CliRunner

from cli.main import app
from planner.errors import DataError, UsageError
from planner.formats import staging
from planner.store.study import Study, init_study
from planner.workflows.next_batch import BatchSelection, Output, QualityControl, next_batch, options_from
from planner.workflows.reissue import retry_failed, rewrite_batch

ROOT = Path(__file__).resolve().parents[1]
SYSTEMS = ["alpha-model", "beta-model", "gamma-model", "delta-model"]
QC = {"attention": 0.1, "repeat": 0.1, "acceptability": 0.1}


def _make_study(tmp: Path) -> Path:
    prompts, responses = tmp / "prompts.jsonl", tmp / "responses.jsonl"
    with open(prompts, "w") as fh:
        fh.writelines(json.dumps({"id": f"p{i}", "text": f"Question {i}: explain topic {i}.",
                                 "stratum": ("easy", "hard")[i % 2]}) + "\n" for i in range(24))
    with open(responses, "w") as fh:
        for i in range(24):
            for k, s in enumerate(SYSTEMS):
                head = "## Heading\n\n**Sure!** " if k == 1 else ""
                fh.write(json.dumps({"prompt": f"p{i}", "system": s,
                                     "text": head + f"Answer {k} to {i}. " + "word " * (15 + 9 * k)}) + "\n")
    path = tmp / "study"
    init_study(path, prompts_file=prompts, responses_file=responses, seed=5)
    return path


@pytest.fixture
def study(tmp_path):
    return _make_study(tmp_path)


def _files(paths) -> dict[str, bytes]:
    return {Path(p).name: Path(p).read_bytes() for p in paths}


def _no_leftovers(directory: Path) -> None:
    left = [p.name for p in directory.iterdir() if p.name.startswith(".")]
    assert left == [], left


# ----------------------------------------------------------------- --rewrite
@pytest.mark.parametrize("fmt,extra", [
    ("jsonl", {"annotators": "ann1,ann2", "both_orders": True, "overlap": 0.1}),
    ("csv", {"normalize_style": "full", "max_words": 30, "truncate": True}),
    ("label-studio", {"annotators": 2, "overlap": 0.1}),
    ("argilla", {"normalize_style": "markdown"}),
    ("judge", {"judge_model": "gpt-5-mini", "redact_names": True}),
    ("judge", {"judge_model": "judge-x", "temperature": 0.3}),
])
def test_rewrite_gives_byte_identical_files(study, tmp_path, fmt, extra):
    out = tmp_path / "out" / "round"
    out.parent.mkdir()
    res = next_batch(study, **options_from(size=12, out=out, format=fmt, **QC, **extra))
    original = _files(res.files)
    assert res.manifest["rendering"]["format"] == fmt and len(res.manifest["files_sha256"]) == len(original)
    for p in res.files:
        os.unlink(p)
    again = rewrite_batch(study, res.batch_id)           # default: the original paths
    assert _files(again.files) == original
    elsewhere = rewrite_batch(study, res.batch_id, out=tmp_path / "copy")
    assert list(_files(elsewhere.files).values()) == list(original.values())
    assert not [n for n in again.notes if "differ" in n]
    with pytest.raises(UsageError, match="already exists"):
        rewrite_batch(study, res.batch_id)
    rewrite_batch(study, res.batch_id, force=True)
    with Study.open(study) as st:
        assert len(st.batches()) == 1        # rewriting records nothing
    _no_leftovers(out.parent)


def test_rewrite_with_a_custom_template(study, tmp_path):
    tpl = tmp_path / "t.txt"
    tpl.write_text("Q: {prompt}\nA: {left}\nB: {right}\nReasons: {reasons}\nSay [[A]], [[B]] or [[C]].")
    res = next_batch(study, BatchSelection(size=6),
                     qc=QualityControl(attention=0, repeat=0, overlap=0, acceptability=0),
                     output=Output(out=tmp_path / "j", format="judge", template=tpl, judge_model="m"))
    original = _files(res.files)
    tpl.write_text("changed {prompt} {left} {right}")   # the stored template wins
    assert list(_files(rewrite_batch(study, res.batch_id, out=tmp_path / "k").files).values()) == \
        list(original.values())


def test_rewrite_refuses_unknown_batches(study):
    with pytest.raises(UsageError, match="`rewrite`"):
        rewrite_batch(study, 3)
    with pytest.raises(UsageError, match="`rewrite`"):
        rewrite_batch(study, -1)


def test_cli_rewrite(study, tmp_path):
    res = next_batch(study, BatchSelection(size=5), output=Output(out=tmp_path / "b.jsonl"))
    data = Path(res.files[0]).read_bytes()
    r = CliRunner().invoke(app, ["next-batch", str(study), "--rewrite", "1", "--out", str(tmp_path / "c.jsonl")])
    assert r.exit_code == 0, r.stderr
    assert (tmp_path / "c.jsonl").read_bytes() == data
    r = CliRunner().invoke(app, ["next-batch", str(study), "--rewrite", "1", "--retry-failed"])
    assert r.exit_code == 2 and "cannot be combined" in r.stderr
    r = CliRunner().invoke(app, ["next-batch", str(study), "--rewrite", "9"])
    assert r.exit_code == 2 and "no such batch" in r.stderr and "Traceback" not in r.output


# ------------------------------------------------------ outputs checked first
@pytest.fixture
def no_fit(monkeypatch):
    import planner.model

    def boom(*a, **k):
        raise AssertionError("the model was fitted before the outputs were checked")

    monkeypatch.setattr(planner.model, "fit", boom)


def _untouched(study: Path) -> None:
    with Study.open(study) as st:
        assert st.batches() == []
    assert not any(p.name.startswith(staging.JOURNAL_PREFIX) for p in study.iterdir())


def test_directory_in_place_of_the_file_even_with_force(study, tmp_path, no_fit):
    (tmp_path / "b.jsonl").mkdir()
    for force in (False, True):
        with pytest.raises(UsageError, match=r"`out`: .*b\.jsonl.* is a directory"):
            next_batch(study, BatchSelection(size=5), output=Output(out=tmp_path / "b.jsonl", force=force))
    # an annotator's file name taken by a directory
    (tmp_path / "r.a2.csv").mkdir()
    with pytest.raises(UsageError, match=r"r\.a2\.csv.* is a directory"):
        next_batch(study, BatchSelection(size=5), qc=QualityControl(annotators=2),
                   output=Output(out=tmp_path / "r.csv", format="csv", force=True))
    _untouched(study)


def test_missing_parent_and_file_as_parent(study, tmp_path, no_fit):
    with pytest.raises(UsageError, match=r"`out`: directory .* does not exist"):
        next_batch(study, BatchSelection(size=5), output=Output(out=tmp_path / "nope" / "b.jsonl"))
    (tmp_path / "f").write_text("x")
    with pytest.raises(UsageError, match=r"`out`: .* is not a directory"):
        next_batch(study, BatchSelection(size=5), output=Output(out=tmp_path / "f" / "b.jsonl"))
    _untouched(study)


def test_unwritable_directory(study, tmp_path, no_fit):
    if os.geteuid() == 0:
        target = Path("/sys/planner-batch.jsonl")   # root may write anywhere a mode allows; sysfs refuses
        if not Path("/sys").is_dir():
            pytest.skip("no /sys")
    else:
        ro = tmp_path / "ro"
        ro.mkdir()
        ro.chmod(0o500)
        target = ro / "b.jsonl"
    with pytest.raises(UsageError, match="`out`: cannot write in directory"):
        next_batch(study, BatchSelection(size=5), output=Output(out=target))
    _untouched(study)


def test_existing_annotator_file_is_refused_before_the_fit(study, tmp_path, no_fit):
    (tmp_path / "b.a1.jsonl").write_text("keep")
    with pytest.raises(UsageError, match="already exists"):
        next_batch(study, BatchSelection(size=5), qc=QualityControl(annotators=2), output=Output(out=tmp_path / "b"))
    assert (tmp_path / "b.a1.jsonl").read_text() == "keep"
    _untouched(study)


def test_template_and_pool_that_are_directories(study, tmp_path, no_fit):
    with pytest.raises(UsageError, match=r"`template`: .* is a directory"):
        next_batch(study, BatchSelection(size=5),
                   output=Output(out=tmp_path / "b", format="judge", judge_model="m", template=tmp_path))
    with pytest.raises(UsageError, match=r"`attention_pool`: .* is a directory"):
        next_batch(study, BatchSelection(size=5), qc=QualityControl(attention_pool=tmp_path),
                   output=Output(out=tmp_path / "b"))
    _untouched(study)


# ------------------------------------------------------------ crash recovery
def _fail_replace_after(monkeypatch, n_ok: int):
    real = os.replace
    calls = {"n": 0}

    def flaky(src, dst):
        calls["n"] += 1
        if calls["n"] > n_ok:
            raise OSError(28, "No space left on device")
        return real(src, dst)

    monkeypatch.setattr(staging.os, "replace", flaky)
    return real


@pytest.mark.parametrize("lose_temps", [False, True])
def test_failure_after_the_commit_is_completed_by_the_next_run(study, tmp_path, monkeypatch, lose_temps):
    out = tmp_path / "r"
    real = _fail_replace_after(monkeypatch, 1)
    with pytest.raises(DataError, match="batch 1 was recorded but its files could not be put in place"):
        next_batch(study, **options_from(size=8, out=out, format="label-studio", annotators=2, **QC))
    monkeypatch.setattr(staging.os, "replace", real)
    with Study.open(study) as st:
        (info,) = st.batches()
    expected = dict(zip(info.manifest["files"], info.manifest["files_sha256"]))
    placed = [f for f in expected if Path(f).exists()]
    assert 1 <= len(placed) < len(expected)                   # the state a kill leaves: some files, not all
    journals = staging.journals(study)
    assert len(journals) == 1
    if lose_temps:
        for p in tmp_path.glob(".r*planner.tmp"):
            p.unlink()
    res = next_batch(study, BatchSelection(size=4), output=Output(out=tmp_path / "next"))
    assert any(n.startswith("completed batch 1's files") for n in res.notes), res.notes
    for f, digest in expected.items():
        assert staging.sha256(Path(f).read_bytes()) == digest
    assert staging.journals(study) == []
    _no_leftovers(tmp_path)
    with Study.open(study) as st:
        assert [b.id for b in st.batches()] == [1, 2]


def _run_killed(study: Path, out: Path, when: str) -> int:
    """Run next-batch in a child that SIGKILLs itself just before or just after recording the batch."""
    code = textwrap.dedent(f"""
        import os, signal, sys
        sys.path.insert(0, {str(ROOT)!r})
        from planner.store.study import Study
        from planner.workflows.next_batch import Output, QualityControl, BatchSelection, next_batch
        real = Study.record_batch
        def record(self, manifest, items):
            if {when!r} == "before":
                os.kill(os.getpid(), signal.SIGKILL)
            bid = real(self, manifest, items)
            os.kill(os.getpid(), signal.SIGKILL)
        Study.record_batch = record
        next_batch({str(study)!r}, BatchSelection(size=8), qc=QualityControl(annotators="x,y"),
                   output=Output(out={str(out)!r}, format="csv"))
    """)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run([sys.executable, "-c", code], check=False, env=env, timeout=300).returncode


def test_kill_9_just_after_the_commit_then_rerun(study, tmp_path):
    rc = _run_killed(study, tmp_path / "k", "after")
    assert rc == -signal.SIGKILL
    with Study.open(study) as st:
        (info,) = st.batches()
    assert not any(Path(f).exists() for f in info.manifest["files"])   # recorded, no file in place yet
    assert len(list(tmp_path.glob(".k*planner.tmp"))) == len(info.manifest["files"])
    res = next_batch(study, BatchSelection(size=4), output=Output(out=tmp_path / "later"))
    assert any("completed batch 1" in n for n in res.notes)
    for f, digest in zip(info.manifest["files"], info.manifest["files_sha256"]):
        assert staging.sha256(Path(f).read_bytes()) == digest
    _no_leftovers(tmp_path)
    assert staging.journals(study) == []


def test_kill_9_before_the_commit_is_rolled_back(study, tmp_path):
    assert _run_killed(study, tmp_path / "k", "before") == -signal.SIGKILL
    assert list(tmp_path.glob(".k*planner.tmp"))       # temporaries left by the kill
    with Study.open(study) as st:
        assert st.batches() == []
    res = next_batch(study, BatchSelection(size=4), output=Output(out=tmp_path / "later"))
    assert any(n.startswith("rolled back an interrupted run") for n in res.notes)
    _no_leftovers(tmp_path)
    assert not list(tmp_path.glob("k*"))
    assert res.batch_id == 1


def test_a_live_run_is_left_alone(study, tmp_path):
    # a journal whose owner still holds the lock is not touched by another run
    staged = staging.stage([(tmp_path / "x.jsonl", b"{}\n")], journal_dir=study, token="live")
    try:
        res = next_batch(study, BatchSelection(size=4), output=Output(out=tmp_path / "other"))
        assert not any("interrupted" in n for n in res.notes)
        assert Path(staged.entries[0]["tmp"]).exists() and staged.journal.exists()
    finally:
        staged.abort()


# ------------------------------------------------------------- --retry-failed
def test_retry_failed_writes_the_same_items_without_fitting(study, tmp_path, monkeypatch):
    res = next_batch(study, BatchSelection(size=10),
                     qc=QualityControl(attention=0.1, repeat=0, overlap=0, acceptability=0),
                     output=Output(out=tmp_path / "j", format="judge", judge_model="gpt-5"))
    lines = {json.loads(x)["custom_id"]: x for x in Path(res.files[0]).read_text().splitlines()}
    with Study.open(study) as st:
        items = st.items(1)
    failed_ids = [items[1].item_id, items[4].item_id, items[7].item_id]

    def unanswered(self, batch=None):
        return [it for it in self.items(batch) if it.item_id in failed_ids]

    monkeypatch.setattr(Study, "unanswered_items", unanswered, raising=False)
    import planner.model

    monkeypatch.setattr(planner.model, "fit", lambda *a, **k: (_ for _ in ()).throw(AssertionError("fitted")))
    retry = retry_failed(study, out=tmp_path / "retry")
    (path,) = retry.files
    got = Path(path).read_text().splitlines()
    assert got == [lines[i] for i in failed_ids]            # same ids, positions, texts: the very same lines
    assert retry.batch_id is None and retry.manifest["retry_failed"]["items"] == 3
    with Study.open(study) as st:
        assert len(st.batches()) == 1
    # default output under STUDY/batches (created when missing)
    default = retry_failed(study)
    assert [Path(f).name for f in default.files] == ["retry-batch-1.jsonl"]
    assert Path(default.files[0]).parent == study / "batches"
    # CLI
    r = CliRunner().invoke(app, ["next-batch", str(study), "--retry-failed", "--out", str(tmp_path / "r2"),
                                 "--json"])
    assert r.exit_code == 0, r.stderr
    assert json.loads(r.stdout)["manifest"]["retry_failed"]["item_ids"] == failed_ids


def test_retry_failed_with_nothing_to_retry(study, tmp_path, monkeypatch):
    next_batch(study, BatchSelection(size=4), output=Output(out=tmp_path / "j"))
    monkeypatch.setattr(Study, "unanswered_items", lambda self, batch=None: [], raising=False)
    res = retry_failed(study, out=tmp_path / "r")
    assert res.files == () and any("nothing written" in n for n in res.notes)
    assert not (tmp_path / "r.jsonl").exists()


def test_retry_failed_without_store_support_is_a_usage_error(study, tmp_path, monkeypatch):
    next_batch(study, BatchSelection(size=4), output=Output(out=tmp_path / "j"))
    if hasattr(Study, "unanswered_items"):
        monkeypatch.delattr(Study, "unanswered_items")
    with pytest.raises(UsageError, match="`retry_failed`"):
        retry_failed(study, out=tmp_path / "r")


def test_retry_failed_against_the_store_after_ingesting_transport_failures(study, tmp_path, monkeypatch):
    # end to end with the store's own Study.unanswered_items (CONTRACT.md): failures recorded by ingest
    readers = pytest.importorskip("planner.formats.readers")
    if not hasattr(Study, "unanswered_items") or not hasattr(readers, "register"):
        pytest.skip("the store does not track transport failures in this build")
    from planner.store.study import ingest

    def read(path, **_):
        for n, line in enumerate(Path(path).read_text().splitlines(), start=1):
            obj = json.loads(line)
            yield n, {"item": obj["custom_id"], "unanswered": obj["error"], "id": f"judge:{obj['custom_id']}",
                      "annotator": None}, None

    reader = readers.Reader("test-failures", read, lambda sniff: False, "transport failures (test)")
    monkeypatch.setitem(readers.READERS, "test-failures", reader)
    res = next_batch(study, BatchSelection(size=8),
                     qc=QualityControl(attention=0, repeat=0, overlap=0, acceptability=0),
                     output=Output(out=tmp_path / "j", format="judge", judge_model="gpt-5"))
    lines = {json.loads(x)["custom_id"]: x for x in Path(res.files[0]).read_text().splitlines()}
    failed = [it.item_id for it in res.items][2:5]
    errors = tmp_path / "errors.jsonl"
    errors.write_text("".join(json.dumps({"custom_id": i, "error": "HTTP 500"}) + "\n" for i in failed))
    ingest(study, [errors], format="test-failures")
    retry = retry_failed(study, out=tmp_path / "retry")
    assert Path(retry.files[0]).read_text().splitlines() == [lines[i] for i in failed]
    # one retried request answered: the next retry leaves it out
    answer = tmp_path / "answer.jsonl"
    answer.write_text(json.dumps({"item": failed[0], "verdict": "left", "reason": "correctness"}) + "\n")
    ingest(study, [answer])
    again = retry_failed(study, out=tmp_path / "retry2")
    assert Path(again.files[0]).read_text().splitlines() == [lines[i] for i in failed[1:]]
    with Study.open(study) as st:
        assert len(st.batches()) == 1
