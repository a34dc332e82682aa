"""`decide --style-control` and `next-batch --style-control` use the style-controlled posterior."""

from __future__ import annotations

import json

import _style_fixture as F
import pytest
from typer.testing import CliRunner

from cli.main import app
from planner.sentences import STYLE_DECIDE_NOTE
from planner.workflows.decide import decide
from planner.workflows.next_batch import BatchSelection, Output, next_batch


@pytest.fixture(scope="module")
def synth(tmp_path_factory):
    return F.style_study(tmp_path_factory.mktemp("style-decide") / "study", n=1500, coef=1.0, seed=2)


def test_decide_posterior_flips_with_style_control(synth):
    # truth: s0 is stronger than s3 (0.45 vs -0.45 logit) but writes far shorter answers
    raw = decide(synth, "s0", "s3", seed=1)
    ctl = decide(synth, "s0", "s3", seed=1, style_control=True)
    assert raw.pooled.posterior_mean < 0.5 < ctl.pooled.posterior_mean
    assert STYLE_DECIDE_NOTE in ctl.notes and STYLE_DECIDE_NOTE not in raw.notes
    # the frequentist columns are the raw counts either way
    assert (raw.pooled.wins, raw.pooled.losses, raw.pooled.ties) == (ctl.pooled.wins, ctl.pooled.losses,
                                                                     ctl.pooled.ties)


def test_decide_cli_option(synth):
    res = CliRunner().invoke(app, ["decide", str(synth), "--candidate", "s0", "--baseline", "s3",
                                   "--style-control", "--json"])
    assert res.exit_code in (0, 3, 4), res.output
    doc = json.loads(res.output[res.output.index("{"):])
    assert STYLE_DECIDE_NOTE in doc["notes"]


def test_next_batch_uses_controlled_strengths(synth):
    raw = next_batch(synth, BatchSelection(size=10, seed=4), output=Output(dry_run=True))
    ctl = next_batch(synth, BatchSelection(size=10, seed=4, style_control=True), output=Output(dry_run=True))
    m_raw = raw.manifest["model"]["strengths"]
    m_ctl = ctl.manifest["model"]["strengths"]
    assert m_raw["s3"]["mean"] > m_raw["s0"]["mean"]
    assert m_ctl["s0"]["mean"] > m_ctl["s3"]["mean"]
    assert any(n.startswith("style control:") for n in ctl.notes)
    res = CliRunner().invoke(app, ["next-batch", str(synth), "--size", "5", "--dry-run", "--style-control",
                                   "--json"])
    assert res.exit_code == 0, res.output
