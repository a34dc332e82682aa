"""next-batch hostile options, exhausted candidates, and system names inside responses."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from cli.main import app
from planner.blinding import REDACTION, name_mentions, name_pattern, redact
from planner.errors import DataError, UsageError
from planner.store.study import Study, init_study
from planner.workflows.next_batch import MAX_SIZE, BatchSelection, Output, QualityControl, next_batch


def _study(tmp: Path, systems, n_prompts: int, text=None) -> Path:
    prompts, responses = tmp / "prompts.jsonl", tmp / "responses.jsonl"
    prompts.write_text("".join(json.dumps({"id": f"p{i}", "text": f"Question {i}?"}) + "\n"
                               for i in range(n_prompts)))
    rows = []
    for i in range(n_prompts):
        for k, s in enumerate(systems):
            t = text(i, k, s) if text else f"Answer {k} to {i}. " + "word " * (10 + k)
            rows.append(json.dumps({"prompt": f"p{i}", "system": s, "text": t}) + "\n")
    responses.write_text("".join(rows))
    path = tmp / "study"
    init_study(path, prompts_file=prompts, responses_file=responses, seed=1)
    return path


@pytest.fixture
def small(tmp_path):
    return _study(tmp_path, ["s-a", "s-b", "s-c", "s-d"], 3)


# ------------------------------------------------------------------ options
@pytest.mark.parametrize("size", [0, -3, MAX_SIZE + 1, 10 ** 9, 10 ** 300, True])
def test_size_outside_the_documented_range(small, size):
    limit = r"(>= 1 \(and <= 100,000\)|<= 100,000|in \[1, 100,000\])"
    with pytest.raises(UsageError, match=r"`size` \(.*\) must be an integer " + limit) as err:
        next_batch(small, BatchSelection(size=size), output=Output(dry_run=True))
    assert len(str(err.value)) < 160


@pytest.mark.parametrize("seed", [-1, -(10 ** 40)])
def test_negative_seed(small, seed):
    with pytest.raises(UsageError, match=r"`seed` .* must be an integer in \[0, 2\*\*63 - 1\]"):
        next_batch(small, BatchSelection(size=3, seed=seed), output=Output(dry_run=True))


def test_cli_hostile_options_exit_2_without_traceback(small):
    for args in (["--size", str(10 ** 9)], ["--seed", "-5"], ["--temperature", "nan"], ["--temperature", "3"]):
        r = CliRunner().invoke(app, ["next-batch", str(small), "--dry-run", *args])
        assert r.exit_code == 2, (args, r.output)
        assert args[0] in r.stderr and "Traceback" not in r.output
    with Study.open(small) as st:
        assert st.batches() == []


# --------------------------------------------------------- exhausted pairs
@pytest.mark.parametrize("strategy", ["swiss", "arena", "round-robin"])
def test_strategies_issue_what_is_left_then_refuse_cleanly(tmp_path, strategy):
    # 4 systems x 3 prompts: 6 pairs x 3 prompts = 18 comparisons can ever be issued
    study = _study(tmp_path, ["s-a", "s-b", "s-c", "s-d"], 3)
    issued, notes = 0, []
    for round_ in range(12):
        try:
            res = next_batch(study, BatchSelection(size=5, strategy=strategy),
                             qc=QualityControl(attention=0, repeat=0, overlap=0, acceptability=0),
                             output=Output(out=tmp_path / f"b{round_}"))
        except DataError as exc:
            assert "no comparison can be issued" in str(exc)
            break
        issued += sum(1 for it in res.items if it.kind == "regular")
        notes += res.notes
    else:
        pytest.fail("never ran out of comparisons")
    assert issued == 18      # every comparison was issued before the strategy gave up
    if strategy == "swiss":  # its neighbours ran out first: it fell back, and said so
        assert any(n.startswith("swiss: ") and "took the least-judged pairs" in n for n in notes)
    # a batch the pairs cannot fill comes back shorter, said once (no picks wasted on spent pairs)
    assert any("of the 5 requested comparison(s) can be issued" in n for n in notes)


def test_big_size_returns_what_it_can_with_a_note(small, tmp_path):
    res = next_batch(small, BatchSelection(size=40, strategy="round-robin"),
                     qc=QualityControl(attention=0, repeat=0, overlap=0, acceptability=0),
                     output=Output(out=tmp_path / "b"))
    assert sum(1 for it in res.items if it.kind == "regular") == 18
    assert any("only 18 of the 40 requested comparison(s) can be issued" in n for n in res.notes)


# ------------------------------------------------------ names in responses
def test_name_pattern_variants():
    rx = name_pattern(["gpt-4", "claude-3-opus", "llama"])
    for hit in ("As GPT-4, I", "as gpt4 i", "GPT 4 here", "gpt_4", "Claude 3 Opus", "claude-3-opus.",
                "LLAMA says", "(llama)"):
        assert rx.search(hit), hit
    for miss in ("gpt-4.5", "gpt-40", "chatgpt-4", "llamas", "claude", "gpt"):
        assert not rx.search(miss), miss
    assert redact("I am GPT4 and gpt-4.", rx) == f"I am {REDACTION} and {REDACTION}."
    assert name_pattern([]) is None and name_pattern(["---"]) is None


SYSTEMS = ["gpt-4", "claude-3", "llama-2", "mistral"]


def _naming_text(i, k, s):
    if k == 0 and i % 2 == 0:
        return f"As GPT4, I would say answer {i} is: " + "word " * 12
    if k == 1 and i == 3:
        return "I am Claude 3, made to help. " + "word " * 12
    return f"Answer {k} to {i}. " + "word " * (10 + k)


def test_names_in_responses_are_reported_and_reach_files_without_redaction(tmp_path):
    study = _study(tmp_path, SYSTEMS, 8, _naming_text)
    res = next_batch(study, BatchSelection(size=24),
                     qc=QualityControl(attention=0, repeat=0, overlap=0, acceptability=0),
                     output=Output(out=tmp_path / "b"))
    mentions = name_mentions(res.items, SYSTEMS)
    assert mentions
    (note,) = [n for n in res.notes if "names a system" in n]
    assert f"{len(mentions)} item(s)" in note and "--redact-names" in note and next(iter(mentions)) in note
    assert "\n" not in note
    assert res.manifest["name_mentions"]["items"] == len(mentions)
    text = Path(res.files[0]).read_text()
    assert name_pattern(SYSTEMS).search(text)


@pytest.mark.parametrize("fmt", ["jsonl", "csv", "label-studio", "argilla", "judge"])
def test_redact_names_removes_every_mention_from_every_file(tmp_path, fmt):
    study = _study(tmp_path, SYSTEMS, 8, _naming_text)
    res = next_batch(study, BatchSelection(size=24),
                     qc=QualityControl(attention=0.1, repeat=0.1, overlap=0, acceptability=0.1),
                     output=Output(out=tmp_path / "b", format=fmt, judge_model="judge-x", redact_names=True))
    rx = name_pattern(SYSTEMS)
    texts = [Path(f).read_text() for f in res.files]
    assert not any(rx.search(t) for t in texts)
    assert any(REDACTION in t for t in texts)
    assert any(n.startswith("redacted ") for n in res.notes)
    assert res.manifest["name_mentions"]["redacted"] is True
    with Study.open(study) as st:   # the stored responses are never changed
        assert any("As GPT4" in r.text for r in st.responses())


def test_cli_prints_the_names_note_on_stderr(tmp_path):
    study = _study(tmp_path, SYSTEMS, 8, _naming_text)
    r = CliRunner().invoke(app, ["next-batch", str(study), "--size", "24", "--dry-run", "--json"])
    assert r.exit_code == 0, r.stderr
    assert "names a system" in r.stderr and "names a system" not in r.stdout.split('"notes"')[0]
    r = CliRunner().invoke(app, ["next-batch", str(study), "--size", "24", "--out", str(tmp_path / "x"),
                                 "--redact-names"])
    assert r.exit_code == 0, r.stderr
    assert "redacted" in r.stderr
    assert not name_pattern(SYSTEMS).search((tmp_path / "x.jsonl").read_text())


def test_judge_format_problems_are_refused_before_the_fit(small, tmp_path, monkeypatch):
    import planner.model

    monkeypatch.setattr(planner.model, "fit", lambda *a, **k: (_ for _ in ()).throw(AssertionError("fitted")))
    with pytest.raises(UsageError, match="`judge_model`"):
        next_batch(small, BatchSelection(size=3), output=Output(format="judge", out=tmp_path / "j"))
    tpl = tmp_path / "t.txt"
    tpl.write_text("{prompt} {left} {colour}")
    with pytest.raises(UsageError, match=r"`template`: unknown placeholder \{colour\}"):
        next_batch(small, BatchSelection(size=3),
                   output=Output(format="judge", judge_model="m", template=tpl, out=tmp_path / "j"))
    with Study.open(small) as st:
        assert st.batches() == []


@pytest.mark.parametrize("name", ["bad\0name.jsonl", "x" * 5000 + ".jsonl", "z" * 230 + ".jsonl"])
def test_output_names_the_system_cannot_take(small, tmp_path, name):
    with pytest.raises(UsageError, match=r"`out`: .* cannot be used as an output file") as err:
        next_batch(small, BatchSelection(size=3), output=Output(out=tmp_path / name))
    assert len(str(err.value)) < 300
    with Study.open(small) as st:
        assert st.batches() == []
    r = CliRunner().invoke(app, ["next-batch", str(small), "--out", str(tmp_path / ("y" * 5000))])
    assert r.exit_code == 2 and "Traceback" not in r.output
