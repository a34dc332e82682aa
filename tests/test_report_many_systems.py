"""A report over more than 26 systems: no letters (and a note saying why), rank intervals and `tied` kept,
in the JSON, the terminal table, Markdown and HTML alike (letters run out at 26)."""

from __future__ import annotations

import json
from itertools import pairwise

import numpy as np
import pytest
from typer.testing import CliRunner

from cli.main import app
from planner.diagnostics import LETTERS_MAX_SYSTEMS
from planner.formats.html import render_html
from planner.formats.markdown import render_markdown
from planner.model.bt import outcome_probs
from planner.store.study import ingest, init_study
from planner.workflows.report import build_report

M = 30


@pytest.fixture(scope="module")
def many(tmp_path_factory):
    root = tmp_path_factory.mktemp("many")
    rng = np.random.default_rng(30)
    names = [f"m{i:02d}" for i in range(M)]
    beta = np.linspace(1.5, -1.5, M)
    rows = []
    for k in range(6000):
        a, b = rng.choice(M, size=2, replace=False)
        pa, pb, pt = outcome_probs(beta[a] - beta[b], 0.3)
        v = ["A", "B", "tie"][int(rng.choice(3, p=[pa, pb, pt]))]
        rows.append({"id": f"j{k}", "prompt": f"p{k % 20}", "a": names[a], "b": names[b], "verdict": v})
    (root / "j.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    init_study(root / "st", systems=names)
    ingest(root / "st", [root / "j.jsonl"])
    return root / "st"


def test_letters_left_out_above_26_systems_everywhere(many):
    assert M > LETTERS_MAX_SYSTEMS
    r = build_report(many)
    assert not r.ranking.letters_shown and all(x.letters == "" for x in r.leaderboard)
    assert any("letters are left out above 26 systems (30 here)" in n for n in r.notes)
    assert all(1 <= x.rank_low <= x.rank_high <= M for x in r.leaderboard) and r.tied_with_leader
    doc = r.to_dict()
    assert doc["ranking"]["letters_shown"] is False and doc["ranking"]["method"] == "gaussian"
    md = render_markdown(r)
    assert "| letters |" not in md and "Letters are left out above 26 systems" in md
    html = render_html(r)
    assert ">letters</th>" not in html and ">rank</th>" in html and "Letters are left out above 26 systems" in html
    out = CliRunner().invoke(app, ["report", str(many)], env={"COLUMNS": "200"})
    assert out.exit_code == 0, out.output
    header = next(line for line in out.stdout.splitlines() if "system" in line and "rank" in line)
    assert "tied" in header and "letters" not in header
    assert "letters are left out above 26 systems" in out.stderr.replace("\n", " ")
    # the terminal's pairs table: each system with its ranking neighbour (29 of 435), and where the rest are
    flat = " ".join(out.stdout.split())
    assert f"{M - 1} of {M * (M - 1) // 2:,} pairs shown: each system with its neighbour in the ranking" in flat
    body = out.stdout.split("pairs (a = earlier")[1].split("pairs shown")[0]
    shown = {frozenset(c.strip() for c in ln.split("│")[1:3]) for ln in body.splitlines() if ln.startswith("│")}
    order = [x.system for x in r.leaderboard]
    assert shown == {frozenset(p) for p in pairwise(order)}
    assert len(doc["pairs"]["rows"]) == M * (M - 1) // 2          # every pair in the JSON
