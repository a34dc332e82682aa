"""Compressed inputs: ``.json.gz`` and ``.jsonl.gz`` read exactly as the uncompressed files.

The content is real: the upstream records committed in ``tests/data/upstream`` (alpaca_eval annotations,
a JSON array; arena-hard-auto and MT-bench judgments, JSON Lines; sources and commits in its README) and
the real Label Studio 1.23.2 export in ``tests/data/label_studio``. Neither tatsu-lab/alpaca_eval
(@ cd543a149df89434d8a54582c0151c0b945c3d20, 596 commits) nor lmarena/arena-hard-auto
(@ 196f6b826783b3da7310e361a805fa36f0be83f3, 182 commits) holds a ``.gz`` file anywhere in its git
history (``git log --all --diff-filter=A -- '*.gz'`` is empty), so the files are compressed here, with
``gzip.compress(..., mtime=0)`` (byte-for-byte reproducible), as a user compresses a results file.
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from planner.errors import DataError
from planner.formats import jsonsafe
from planner.formats.readers import detect_format
from planner.store.study import BatchItem, Study, ingest, init_study

DATA = Path(__file__).resolve().parent / "data"
UPSTREAM = {"alpaca_eval/ein70b_gpt4_turbo_fn.json": "alpaca-eval",
            "alpaca_eval/nullmodel_weighted_gpt4_turbo.json": "alpaca-eval",
            "arena_hard/gpt-3.5-turbo-0125.jsonl": "arena-hard",
            "mt_bench/gpt-4_pair.jsonl": "mt-bench"}


def gz(src: Path, dst: Path) -> Path:
    dst.write_bytes(gzip.compress(src.read_bytes(), mtime=0))
    return dst


def read_all(path: Path, **kw):
    r = detect_format(path)
    return r.name, list(r.read(path, **kw))


@pytest.mark.parametrize("rel, fmt", list(UPSTREAM.items()))
def test_upstream_files_read_the_same_compressed(tmp_path, rel, fmt):
    src = DATA / "upstream" / rel
    packed = gz(src, tmp_path / (src.name + ".gz"))
    name, plain = read_all(src, baseline="gpt-4-0314")
    name_gz, packed_rows = read_all(packed, baseline="gpt-4-0314")
    assert name == name_gz == fmt
    assert [p for _, _, p in packed_rows] == [None] * len(packed_rows)
    # the same records, line numbers included; only the file name in the labels differs
    strip = [(ln, {k: v for k, v in r.items() if k != "where"}) for ln, r, _ in plain]
    assert [(ln, {k: v for k, v in r.items() if k != "where"}) for ln, r, _ in packed_rows] == strip


def test_label_studio_export_compressed(tmp_path):
    src = DATA / "label_studio" / "round2.json"
    name, plain = read_all(src)
    name_gz, packed = read_all(gz(src, tmp_path / "round2.json.gz"))
    assert name == name_gz == "label-studio"
    assert [r for _, r, _ in packed if r is not None] == [
        {**r, "where": r["where"].replace("round2.json:", "round2.json.gz:")} for _, r, _ in plain if r is not None]


def _study(tmp_path: Path) -> Path:
    key = json.loads((DATA / "label_studio" / "key.json").read_text(encoding="utf-8"))
    systems = sorted({k[s] for k in key.values() for s in ("left", "right")})
    prompts = tmp_path / "prompts.jsonl"
    prompts.write_text("".join(json.dumps({"id": p, "text": p}) + "\n" for p in sorted({k["prompt"]
                                                                                       for k in key.values()})))
    init_study(tmp_path / "s", systems=systems, prompts_file=prompts)
    with Study.open(tmp_path / "s") as s:
        s.record_batch({}, [BatchItem(i, k["prompt"], k["left"], k["right"], annotator=k["annotator"])
                            for i, k in sorted(key.items())])
    return tmp_path / "s"


def test_ingest_a_compressed_export_then_the_plain_one_is_already_stored(tmp_path):
    study = _study(tmp_path)
    first = ingest(study, [gz(DATA / "label_studio" / "round2.json", tmp_path / "round2.json.gz")]).files[0]
    assert (first.format, first.rows) == ("label-studio", 11)
    again = ingest(study, [DATA / "label_studio" / "round2.min.json"]).files[0]
    assert (again.rows, again.already) == (0, 11)


def test_a_truncated_gzip_is_refused_in_one_line_and_stores_nothing(tmp_path):
    study = _study(tmp_path)
    raw = gzip.compress((DATA / "label_studio" / "round2.json").read_bytes(), mtime=0)
    bad = tmp_path / "cut.json.gz"
    bad.write_bytes(raw[: len(raw) * 2 // 3])
    with pytest.raises(DataError) as e:
        ingest(study, [bad])
    text = " ".join([str(e.value), *e.value.problems])
    assert "cut.json.gz" in text and "gzip data is truncated or damaged" in text and "\n" not in text
    with Study.open(study) as s:
        assert list(s.judgments()) == []


def test_a_jsonl_gz_that_ends_mid_stream_names_its_line(tmp_path):
    """A streamed file keeps the rows before the damage out too: the whole file is refused."""
    src = DATA / "upstream" / "arena_hard" / "gpt-3.5-turbo-0125.jsonl"
    body = src.read_bytes() * 200                       # long enough that the cut falls after line 1
    raw = gzip.compress(body, mtime=0)
    bad = tmp_path / "cut.jsonl.gz"
    bad.write_bytes(raw[: len(raw) // 2])
    _, rows = read_all(bad, baseline="gpt-4-0314")
    problems = [p for _, _, p in rows if p]
    assert len(problems) == 1 and "gzip data is truncated or damaged" in problems[0]
    assert sum(r is not None for _, r, _ in rows) > 0  # rows before the cut were read; ingest refuses the file


def test_a_gzip_bomb_is_not_inflated_whole(tmp_path, monkeypatch):
    """A JSON array is read whole; its inflated text is capped (MAX_INFLATED_BYTES, 4 GiB; 1 kB here)."""
    monkeypatch.setattr(jsonsafe, "MAX_INFLATED_BYTES", 1000)
    bomb = tmp_path / "big.json.gz"
    bomb.write_bytes(gzip.compress(b"[" + b" " * 10_000_000 + b"]", mtime=0))   # 10 MB of spaces, ~10 kB packed
    out = list(detect_format(bomb, "alpaca-eval").read(bomb))
    assert len(out) == 1 and "to read whole" in out[0][2]
