"""`report --style-control` / `--lc-anchor` on studies (synthetic truth; Vicuna80: `planner example vicuna80`)."""

from __future__ import annotations

import json
import math
import time

import _style_fixture as F
import pytest
from typer.testing import CliRunner

from planner.formats.markdown import render_markdown
from planner.workflows.report import build_report


@pytest.fixture(scope="module")
def synth(tmp_path_factory):
    return F.style_study(tmp_path_factory.mktemp("style") / "study", n=1500, coef=1.0, seed=2)


def test_report_side_by_side_recovers_the_true_order(synth):
    r = build_report(synth, style_control=True)
    sc = r.style_control
    by = {x.system: x for x in sc.rows}
    # raw: the long-winded worst system outranks the best; controlled: the true order
    assert by["s3"].raw_rank < by["s0"].raw_rank
    assert [x.system for x in sc.rows] == ["s0", "s1", "s2", "s3"]
    # the raw columns are the report's own leaderboard numbers
    lead = {x.system: x for x in r.leaderboard}
    assert all(by[s].raw_mean == pytest.approx(lead[s].mean) for s in by)
    length = sc.coefficients[0]
    assert length.feature == "length" and length.lo < 1.0 < length.hi
    assert length.odds_ratio == pytest.approx(math.exp(length.mean))
    # the sentence is made of the table's numbers
    assert sc.sentence.startswith("longer answers are favoured")
    assert f"by {length.odds_ratio:.2f} ({length.odds_lo:.2f}–{length.odds_hi:.2f})" in sc.sentence
    ratio = (1 + length.scale) / (1 - length.scale)
    assert f"{ratio:.1f}x as long" in sc.sentence
    assert f"rank of {sc.reordered} of 4 systems" in sc.sentence
    assert "leader (s3 raw, s0 controlled)" in sc.sentence or by["s0"].raw_rank == 1
    assert sc.n_excluded == 0 and sc.n_used == r.model.n_usable


def test_json_and_markdown_carry_style_control(synth):
    r = build_report(synth, style_control=True)
    d = json.loads(json.dumps(r.to_dict()))
    sc = d["style_control"]
    assert [x["system"] for x in sc["rows"]] == ["s0", "s1", "s2", "s3"]
    assert {c["feature"] for c in sc["coefficients"]} == {"length", "headers", "lists", "bold"}
    assert sc["sentence"] == r.style_control.sentence
    md = render_markdown(r)
    assert "## Style control" in md and r.style_control.sentence in md
    assert build_report(synth).style_control is None
    assert "style_control" not in build_report(synth).to_dict()    # the key only when asked for


def test_same_seed_same_numbers(synth):
    one = build_report(synth, style_control=True, seed=3).to_dict()["style_control"]
    two = build_report(synth, style_control=True, seed=3).to_dict()["style_control"]
    assert json.dumps(one, sort_keys=True) == json.dumps(two, sort_keys=True)


def test_missing_responses_are_left_out_and_counted(tmp_path):
    path = F.style_study(tmp_path / "miss", n=600, seed=5, missing=20)
    r = build_report(path, style_control=True)
    sc = r.style_control
    assert sc.n_excluded > 0
    assert sc.n_used + sc.n_excluded == r.model.n_usable
    assert any(f"{sc.n_excluded:,} judgment(s) without both response texts" in n for n in r.notes)


def test_no_response_texts_is_a_one_line_data_error(tmp_path):
    from cli.main import app

    path = F.style_study(tmp_path / "bare", n=200, seed=6, responses=False)
    res = CliRunner().invoke(app, ["report", str(path), "--style-control"])
    assert res.exit_code == 1
    err = res.output.strip()
    assert "none of the 200 usable judgments has both responses" in err and "Traceback" not in err
    assert len(err.splitlines()) == 1


def test_anchor_design_gets_lc_win_rates(tmp_path):
    path = F.style_study(tmp_path / "anchor", n=900, seed=7, anchor="s1")
    r = build_report(path, style_control=True)
    sc = r.style_control
    assert sc.lc_anchor == "s1"
    got = {x.system: x for x in sc.lc}
    assert set(got) == {"s0", "s2", "s3"}
    # s3 writes the longest answers and is truly weakest: its LC win rate is below its raw one; s0 the reverse
    assert got["s3"].lc_win_rate < got["s3"].win_rate
    assert got["s0"].lc_win_rate > got["s0"].win_rate
    assert "Length-controlled win rate against s1" in render_markdown(r)


def test_lc_anchor_option_alone_and_bad_name(synth):
    from cli.main import app

    r = build_report(synth, lc_anchor="s0")
    assert r.style_control.rows == () and len(r.style_control.lc) == 3
    assert any("judgments against s0 only" in n for n in r.notes)
    res = CliRunner().invoke(app, ["report", str(synth), "--lc-anchor", "nope"])
    assert res.exit_code == 2 and "--lc-anchor (nope) must be one of the systems" in res.output


def test_cli_json_has_style_control_key(synth):
    from cli.main import app

    res = CliRunner().invoke(app, ["report", str(synth), "--style-control", "--json"])
    assert res.exit_code == 0, res.output
    start = res.output.index("{")
    doc = json.loads(res.output[start:])
    assert doc["style_control"]["rows"][0]["system"] == "s0"


def test_vicuna80_gpt4_length_preference(tmp_path, vicuna_data):
    import _report_fixture

    from planner.model.style_control import controlled_fit
    from planner.services.style_data import read_style_inputs
    from planner.store.study import Study

    path = _report_fixture.vicuna_study(vicuna_data, tmp_path)
    with Study.open(path) as st:
        controlled_fit(read_style_inputs(st))   # warm: imports and the text scan
        t0 = time.perf_counter()
        inp = read_style_inputs(st)
        sf = controlled_fit(inp)
        elapsed = time.perf_counter() - t0
    # 4,467 usable GPT-4 judgments (13 invalid of 4,480), all with both responses
    assert inp.a.size == 4467 and inp.n_excluded == 0
    c = dict(zip(sf.features, sf.coef))
    assert c["length"].lo > 0.5                  # measured +1.11 [1.00, 1.22]: longer answers favoured
    assert elapsed < 3.0                         # well under a second on a quiet machine; shared CI cores
    assert sf.fit.systems[int(sf.fit.mean.argmax())] == "gpt-4"
