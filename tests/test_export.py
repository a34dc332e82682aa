"""`planner export`: the unblinded table agrees with the batch key and with status; files load in pandas."""

from __future__ import annotations

import csv
import json

import pytest
from typer.testing import CliRunner

from cli.main import app
from planner.errors import UsageError
from planner.store.study import BatchItem, Study, ingest, init_study, status
from planner.workflows.export import export_study

runner = CliRunner()
KEY = {"i1": ("m", "n"), "i2": ("n", "o"), "i3": ("o", "m"), "i4": ("m", "o")}
VERDICTS = {"i1": "left", "i2": "right", "i3": "tie", "i4": "right"}


@pytest.fixture
def st(tmp_path):
    p = tmp_path / "p.jsonl"
    p.write_text("".join(json.dumps({"id": f"p{k}", "text": f"t{k}", "stratum": "ab"[k % 2]}) + "\n"
                         for k in range(4)))
    init_study(tmp_path / "st", systems=["m", "n", "o"], prompts_file=p)
    with Study.open(tmp_path / "st") as s:
        s.record_batch({"seed": 0}, [BatchItem(i, f"p{k}", *KEY[i], annotator="ann")
                                     for k, i in enumerate(KEY)])
    v = tmp_path / "v.jsonl"
    v.write_text("".join(json.dumps({"item": i, "verdict": VERDICTS[i], "reason": "=HYPERLINK(1)"
                                     if i == "i1" else None}) + "\n" for i in KEY))
    ingest(tmp_path / "st", [v])
    return tmp_path / "st"


def test_judgments_follow_the_key_and_pairs_follow_status(st, tmp_path):
    res = export_study(st, tmp_path / "out", engine=None)
    assert res.judgments == 4 and res.engine is None
    with open(tmp_path / "out" / "judgments.csv", newline="", encoding="utf-8") as fh:
        rows = {r["item"]: r for r in csv.DictReader(fh)}
    for item, (left, right) in KEY.items():
        r = rows[item]
        assert (r["left"], r["right"], r["position_verdict"], r["batch"]) == (left, right, VERDICTS[item], "1")
        want = {"left": left, "right": right, "tie": ""}[VERDICTS[item]]
        assert r["winner"] == want
    assert rows["i1"]["reason"] == "'=HYPERLINK(1)"  # CSV injection neutralised
    with open(tmp_path / "out" / "pairs.csv", newline="", encoding="utf-8") as fh:
        pooled = {(r["x"], r["y"]): r for r in csv.DictReader(fh) if r["stratum"] == "all"}
    for p in status(st).pairs:
        r = pooled[(p.x, p.y)]
        assert (int(r["x_wins"]), int(r["y_wins"]), int(r["ties"])) == (p.x_wins, p.y_wins, p.ties)


def test_posterior_jsonl_parquet_and_determinism(st, tmp_path):
    export_study(st, tmp_path / "a", format="jsonl", seed=3)
    export_study(st, tmp_path / "b", format="jsonl", seed=3)
    for name in ("judgments.jsonl", "pairs.jsonl", "posterior.jsonl", "posterior.json"):
        assert (tmp_path / "a" / name).read_bytes() == (tmp_path / "b" / name).read_bytes()
    post = [json.loads(x) for x in (tmp_path / "a" / "posterior.jsonl").read_text().splitlines()]
    assert [p["system"] for p in post] == ["m", "n", "o"]
    assert abs(sum(p["prob_best"] for p in post) - 1) < 1e-9  # a probability over the systems
    assert all(p["lo95"] < p["mean"] < p["hi95"] for p in post)
    pd = pytest.importorskip("pandas")
    pytest.importorskip("pyarrow")
    export_study(st, tmp_path / "pq", format="parquet", engine=None)
    df = pd.read_parquet(tmp_path / "pq" / "judgments.parquet")
    assert list(df.columns) == list(Study.JUDGMENT_COLUMNS) and len(df) == 4


def test_refusals(st, tmp_path):
    export_study(st, tmp_path / "out", engine=None)
    with pytest.raises(UsageError, match="already exists"):
        export_study(st, tmp_path / "out", engine=None)
    export_study(st, tmp_path / "out", engine=None, force=True)
    (tmp_path / "file").write_text("x")
    with pytest.raises(UsageError, match="is a file"):
        export_study(st, tmp_path / "file")
    with pytest.raises(UsageError, match="format"):
        export_study(st, tmp_path / "o2", format="xlsx")
    r = runner.invoke(app, ["export", str(st), "--out", str(tmp_path / "cli"), "--engine", "none", "--json"])
    assert r.exit_code == 0, r.stderr
    assert json.loads(r.stdout)["judgments"] == 4
    r = runner.invoke(app, ["export", str(st), "--out", str(tmp_path / "cli2"), "--seed", "-1"])
    assert r.exit_code == 2 and "seed (-1)" in r.stderr
