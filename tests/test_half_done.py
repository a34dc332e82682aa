"""No half-done operations: an option is used or refused up front, and what is written is whole.

`report --surrogate --plot` writes its plot (the Bayesian report's options are refused before any
work unless --html builds that report too);
every caption and label of the report's figures lies inside the figure; `export --format parquet`
without pyarrow names the extra and writes nothing. (`demo --live-judge` without the openai
package: tests/test_judge_server.py.)
"""

from __future__ import annotations

import random
import sys

import _report_fixture as fx
import matplotlib
import pytest
from typer.testing import CliRunner

from cli.main import app
from planner.formats.plots import RC, hybrid_figure, strength_figure, win_rate_figure

runner = CliRunner()


@pytest.fixture(scope="module")
def hybrid_study(tmp_path_factory):
    """Vicuna-80: every GPT-4 verdict and 700 random crowd votes (seeded), as the guide's hybrid chapter does."""
    from _example_data import vicuna_dir

    d, root = vicuna_dir(), tmp_path_factory.mktemp("hybrid")
    lines = (d / "judgments/qlora_vicuna80_human.jsonl").read_text(encoding="utf-8").splitlines()
    random.Random(0).shuffle(lines)
    (root / "h.jsonl").write_text("\n".join(lines[:700]) + "\n", encoding="utf-8")
    st = root / "st"
    assert runner.invoke(app, ["init", str(st), "--prompts", str(d / "vicuna80/prompts.jsonl"),
                               "--responses", str(d / "vicuna80/responses.jsonl")]).exit_code == 0
    assert runner.invoke(app, ["ingest", str(st), str(d / "judgments/qlora_vicuna80_gpt4.jsonl"),
                               str(root / "h.jsonl")]).exit_code == 0
    return st


def test_surrogate_plot_is_written(hybrid_study, tmp_path):
    r = runner.invoke(app, ["report", str(hybrid_study), "--surrogate", "gpt-4", "--plot", str(tmp_path / "fig")])
    assert r.exit_code == 0, r.output
    assert sorted(p.name for p in (tmp_path / "fig").iterdir()) == ["ppi_strengths.png", "ppi_strengths.svg"]
    said = "".join(r.stderr.split())                          # rich wraps long paths; compare without blanks
    assert f"wrote{tmp_path / 'fig' / 'ppi_strengths.png'},{tmp_path / 'fig' / 'ppi_strengths.svg'}" in said
    assert (tmp_path / "fig" / "ppi_strengths.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


@pytest.mark.parametrize("extra", [["--markdown", "r.md"], ["--by-stratum"], ["--engine", "nuts"], ["--style-control"],
                                   ["--lc-anchor", "gpt-4"], ["--save-posterior"]])
def test_surrogate_refuses_what_it_would_ignore_before_any_work(tmp_path, extra):
    # the study does not even exist: the refusal comes first, and nothing is written
    r = runner.invoke(app, ["report", str(tmp_path / "nope"), "--surrogate", "gpt-4", *extra])
    assert r.exit_code == 2
    assert r.stderr.startswith(f"error: {extra[0]}") and "does not apply with --surrogate" in r.stderr
    assert r.stderr.count("\n") == 1 and list(tmp_path.iterdir()) == []


def test_with_html_the_raw_report_takes_its_options_and_both_plots_are_written(hybrid_study, tmp_path):
    r = runner.invoke(app, ["report", str(hybrid_study), "--surrogate", "gpt-4", "--html", str(tmp_path / "r.html"),
                            "--markdown", str(tmp_path / "r.md"), "--plot", str(tmp_path / "fig")])
    assert r.exit_code == 0, r.output
    assert (tmp_path / "r.html").is_file() and (tmp_path / "r.md").is_file()
    assert sorted(p.name for p in (tmp_path / "fig").iterdir()) == [
        "ppi_strengths.png", "ppi_strengths.svg", "strengths.png", "strengths.svg", "win_rates.png", "win_rates.svg"]


def _outside(fig) -> list[str]:
    """How far what is drawn (tick labels, axis labels, titles, legends: the figure's tight box, which
    matplotlib computes from the drawn artists only) reaches past each edge of the figure, in inches."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    canvas = FigureCanvasAgg(fig)                              # the PNG's renderer
    canvas.draw()
    tight, box = fig.get_tightbbox(canvas.get_renderer()), fig.bbox_inches
    over = {"left": box.x0 - tight.x0, "right": tight.x1 - box.x1, "bottom": box.y0 - tight.y0,
            "top": tight.y1 - box.y1}
    # 0.01 in (1.2 px at the PNG's 120 dpi): rounding of the renderer's extents
    return [f"{edge} by {v:.2f} in" for edge, v in over.items() if v > 0.01]


def test_every_caption_and_label_fits_in_the_figure(vicuna_data, tmp_path, hybrid_study):
    from planner.workflows.hybrid_report import hybrid_report
    from planner.workflows.report import build_report

    report = build_report(fx.vicuna_study(vicuna_data, tmp_path), engine="laplace")
    with matplotlib.rc_context(RC):
        for fig in (strength_figure(report), win_rate_figure(report),
                    hybrid_figure(hybrid_report(hybrid_study, surrogate="gpt-4"))):
            assert _outside(fig) == []


def test_the_old_caption_ran_off_the_right_edge():
    """The check above can fail: the caption's second line as it was, at the figure's width, does."""
    from matplotlib.figure import Figure

    with matplotlib.rc_context(RC):
        fig = Figure(figsize=(6.4, 4.8))
        ax = fig.subplots()
        ax.set_yticks([0], ["guanaco-33b [c] rank 3–4"])
        ax.set_xlabel("strength, Elo scale (1500 + 173.7 β); bars = 95% credible interval\n"
                      "blue = not credibly below the leader; [letters]: shared letter = not separated")
        fig.tight_layout()
        assert _outside(fig)


def test_parquet_without_pyarrow_names_the_extra_and_writes_nothing(tmp_path, monkeypatch, vicuna_data):
    st = fx.vicuna_study(vicuna_data, tmp_path)
    monkeypatch.setitem(sys.modules, "pyarrow", None)         # as if pyarrow were not installed
    r = runner.invoke(app, ["export", str(st), "--out", str(tmp_path / "x"), "--format", "parquet"])
    assert r.exit_code == 2 and r.stderr == ("error: --format parquet needs pyarrow: pip install 'planner[parquet]' "
                                             "(or use csv or jsonl)\n")
    assert not (tmp_path / "x").exists()


def test_the_parquet_extra_is_declared():
    import tomllib
    from pathlib import Path

    conf = tomllib.loads((Path(__file__).resolve().parents[1] / "pyproject.toml").read_text(encoding="utf-8"))
    extras = conf["project"]["optional-dependencies"]
    assert any(d.startswith("pyarrow") for d in extras["parquet"]) and any(d.startswith("pyarrow")
                                                                            for d in extras["test"])
