"""Wrong advice and silent acceptances: an option that cannot be honoured is a one-line usage error (exit 2).

* ``next-batch --max-words 0`` / ``-3`` were accepted and then reported as "no comparison can be issued";
* ``report --surrogate nobody`` exited 1 where ``--lc-anchor nobody`` exits 2: a name the study does not
  hold, given as an option, is a usage error either way;
* ``report --surrogate JUDGE`` ignored ``--draws 0`` (and every option of the Bayesian report);
* ``next-batch --rewrite N`` wrote a voided batch again;
* ``simulate --from-study`` on a study without decisive judgments printed raw numpy/scipy warnings
  (``ConstantInputWarning``) and a table of undefined metrics.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from cli.main import app
from planner.store.study import DB_NAME, Study, init_study

runner = CliRunner()


@pytest.fixture(scope="module")
def demo(tmp_path_factory) -> Path:
    """``planner demo``: 6 systems, 3 rounds judged by the simulated judge (annotator simulated-judge)."""
    root = tmp_path_factory.mktemp("demo") / "d"
    r = runner.invoke(app, ["demo", str(root)])
    assert r.exit_code == 0, r.output
    return root


def _digest(study: Path) -> str:
    return hashlib.sha256((study / DB_NAME).read_bytes()).hexdigest()


def _error(r, code: int) -> str:
    assert r.exit_code == code, r.output
    assert "Traceback" not in r.output and "Warning" not in r.output, r.output
    lines = [ln for ln in r.stderr.splitlines() if ln.startswith("error:")]
    assert len(lines) == 1, r.stderr
    return lines[0]


@pytest.mark.parametrize("words", ["0", "-3"])
def test_max_words_below_one_is_a_usage_error(demo, tmp_path, words):
    study = demo / "study"
    before = _digest(study)
    line = _error(runner.invoke(app, ["next-batch", str(study), "--size", "4", f"--max-words={words}",
                                      "--out", str(tmp_path / "b")]), 2)
    assert f"--max-words ({words}) must be an integer >= 1" in line
    assert _digest(study) == before and not list(tmp_path.iterdir())


def test_unknown_names_given_as_options_agree_on_exit_2(demo):
    study = str(demo / "study")
    lc = _error(runner.invoke(app, ["report", study, "--style-control", "--lc-anchor", "nobody"]), 2)
    sur = _error(runner.invoke(app, ["report", study, "--surrogate", "nobody"]), 2)
    assert "--lc-anchor (nobody)" in lc and "--surrogate: no judgments by 'nobody'" in sur


@pytest.mark.parametrize("extra, named", [(["--draws", "0"], "--draws (0) must be an integer >= 1"),
                                          (["--draws", "50"], "--draws does not apply with --surrogate"),
                                          (["--markdown", "PLOTS"], "--markdown does not apply with --surrogate"),
                                          (["--engine", "nuts", "--seed", "3"],
                                           "--engine, --seed do not apply with --surrogate")])
def test_surrogate_refuses_the_options_it_would_ignore(demo, tmp_path, extra, named):
    args = [a if a != "PLOTS" else str(tmp_path / "plots") for a in extra]
    line = _error(runner.invoke(app, ["report", str(demo / "study"), "--surrogate", "simulated-judge", *args]), 2)
    assert named in line
    assert not (tmp_path / "plots").exists()


def test_surrogate_only_options_need_surrogate(demo):
    line = _error(runner.invoke(app, ["report", str(demo / "study"), "--ties", "davidson"]), 2)
    assert "--ties needs --surrogate" in line


def test_rewrite_of_a_voided_batch_is_refused(demo, tmp_path):
    import shutil

    study = tmp_path / "study"
    shutil.copytree(demo / "study", study)
    assert runner.invoke(app, ["void", str(study), "2", "--reason", "annotator left"]).exit_code == 0
    line = _error(runner.invoke(app, ["next-batch", str(study), "--rewrite", "2", "--out", str(tmp_path / "re")]), 2)
    assert "--rewrite (2): batch 2 was voided" in line and "'annotator left'" in line
    assert not list(tmp_path.glob("re*"))
    assert runner.invoke(app, ["void", str(study), "2", "--undo"]).exit_code == 0
    r = runner.invoke(app, ["next-batch", str(study), "--rewrite", "2", "--out", str(tmp_path / "re")])
    assert r.exit_code == 0, r.output
    assert (tmp_path / "re.jsonl").is_file()


def test_simulate_from_an_empty_study_says_why_without_raw_warnings(demo, tmp_path):
    src = demo / "study"
    with Study.open(src) as s:
        systems = list(s.systems)
    prompts = tmp_path / "p.jsonl"
    prompts.write_text("".join(json.dumps({"id": f"p{i}", "text": f"q{i}"}) + "\n" for i in range(5)))
    init_study(tmp_path / "empty", systems=systems, prompts_file=prompts)
    r = runner.invoke(app, ["simulate", "--from-study", str(tmp_path / "empty"), "--reps", "2", "--budget", "60"])
    line = _error(r, 1)
    assert "--from-study" in line and "no judgments to forecast from" in line and "--scenario" in line


def test_a_negative_prompt_difficulty_is_kept(tmp_path):
    """Not refused, deliberately: AlpacaEval's instruction_difficulty, the covariate the LC GLM takes, is a
    logit (tatsu-lab/alpaca_eval @ cd543a149df89434d8a54582c0151c0b945c3d20, notebooks/notebook_helpers.py
    ``make_data``: ``df.groupby("index")["preference"].mean().apply(logit)``), negative for every instruction
    the baseline wins more often than not."""
    prompts = tmp_path / "p.jsonl"
    prompts.write_text(json.dumps({"id": "p0", "text": "q", "difficulty": -1.25}) + "\n")
    init_study(tmp_path / "s", systems=["a", "b"], prompts_file=prompts)
    with Study.open(tmp_path / "s") as s:
        assert [p.difficulty for p in s.prompts()] == [-1.25]
