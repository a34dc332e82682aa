"""planner.prompt_choice: the per-prompt score, its shrinkage, the draw probabilities, and the next-batch hook."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace as NS

import numpy as np
import pytest
from typer.testing import CliRunner

from cli.main import app
from planner.errors import UsageError
from planner.prompt_choice import (
    PromptScores,
    agreement,
    check_mode,
    choose_prompt,
    probabilities,
    prompt_scores,
    shrink,
)
from planner.store.study import ingest, init_study
from planner.workflows.next_batch import BatchSelection, Output, QualityControl, next_batch

EXACT = 1e-12   # closed-form arithmetic on a handful of floats: only rounding separates the two sides


def _j(prompt, a, b, verdict, kind="external"):
    return NS(prompt=prompt, a=a, b=b, verdict=verdict, kind=kind)


def test_agreement_signs_each_verdict_against_the_current_order():
    strengths = {"x": 1.0, "y": 0.0, "z": 0.0}
    got = agreement([_j("p", "x", "y", "A"), _j("p", "y", "x", "A"), _j("p", "x", "y", "tie"),
                     _j("p", "x", "y", "invalid"), _j("q", "y", "x", "B"),
                     _j("q", "y", "z", "A"),                    # tied strengths: no predicted winner, skipped
                     _j("q", "x", "y", "A", kind="attention"),  # QC items do not count
                     _j("q", "x", "w", "A")], strengths)        # unknown system
    assert got == {"p": [1, -1, 0, 0], "q": [1]}
    js = [_j("p", "x", "y", "A"), _j("p", "y", "x", "A"), _j("q", "x", "y", "tie")]
    assert prompt_scores(js, strengths, {"p": "h", "q": "h"}) == shrink(agreement(js, strengths), {"p": "h", "q": "h"})


def test_shrinkage_matches_the_hand_calculation():
    # one stratum, z values: p1 [1,1,1,0], p2 [1,-1,0,0], p3 [1,1,1,1]
    # means .75, 0, 1; pooled mean m = 7/12
    # within SS: p1 3(1/4)^2 + (3/4)^2 = 3/4, p2 2, p3 0 -> sigma_w^2 = (11/4) / (12 - 3) = 11/36
    # var(means, ddof=1) = [(1/6)^2 + (7/12)^2 + (5/12)^2] / 2 = 13/48; mean(1/n) = 1/4
    # tau^2 = 13/48 - (11/36)(1/4) = 7/36; B = (7/36) / (7/36 + (11/36)/4) = 28/39
    z = {"p1": [1, 1, 1, 0], "p2": [1, -1, 0, 0], "p3": [1, 1, 1, 1], "q": [1, 0]}
    s = shrink(z, {"p1": "h", "p2": "h", "p3": "h", "q": "other"})
    h = s.strata["h"]
    m, b = 7 / 12, 28 / 39
    assert h.n == 12 and abs(h.m - m) < EXACT
    assert abs(h.sigma2_w - 11 / 36) < EXACT and abs(h.tau2 - 7 / 36) < EXACT
    for p, mean in (("p1", 0.75), ("p2", 0.0), ("p3", 1.0)):
        assert abs(s.score[p] - (m + b * (mean - m))) < EXACT
    assert abs(s.score["p1"] - 0.7029914529914530) < 1e-12   # 7/12 + (28/39)(1/6), worked out to 16 digits
    # a stratum with one judged prompt has no between-prompt evidence: its mean, no preference
    assert s.strata["other"].tau2 == 0.0 and s.score["q"] == 0.5
    assert s.of("unjudged", "h") == pytest.approx(m, abs=EXACT) and s.of("unjudged", "none") == 0.0


def test_no_heterogeneity_means_no_preference():
    # identical prompts: var(means) = 0 < sigma_w^2 mean(1/n) -> tau^2 = 0 -> every score is the stratum mean
    z = {"a": [1, 0, 1, 0], "b": [0, 1, 0, 1]}
    s = shrink(z, {"a": "h", "b": "h"})
    assert s.strata["h"].tau2 == 0.0 and s.score == {"a": 0.5, "b": 0.5}
    assert list(probabilities([s.score["a"], s.score["b"]])) == [0.5, 0.5]


def test_probabilities_follow_their_formula():
    # g = [.5, .25, 0, .25], sum 1 -> pi = .8 g + .2/4
    pi = probabilities([0.5, 0.25, -0.1, 0.25], floor=0.2)
    assert np.allclose(pi, [0.45, 0.25, 0.05, 0.25], atol=EXACT, rtol=0)
    # power 2: g = [.25, .0625, 0, .0625], sum .375
    pi2 = probabilities([0.5, 0.25, -0.1, 0.25], floor=0.2, power=2.0)
    assert np.allclose(pi2, [0.8 * 0.25 / 0.375 + 0.05, 0.8 * 0.0625 / 0.375 + 0.05, 0.05,
                             0.8 * 0.0625 / 0.375 + 0.05], atol=EXACT, rtol=0)
    assert list(probabilities([-1.0, 0.0])) == [0.5, 0.5]       # nothing to prefer: uniform
    assert list(probabilities([1.0, 0.0], floor=1.0)) == [0.5, 0.5]
    with pytest.raises(UsageError) as e:
        probabilities([1.0], floor=1.5)
    assert e.value.parameters == ("floor",)


def _prompts(n, frozen=()):
    return [NS(id=f"p{i}", stratum="h", frozen=f"p{i}" in frozen) for i in range(n)]


def test_choice_frequencies_match_the_probabilities_and_are_seeded():
    scores = PromptScores({}, {}, {"p0": 0.6, "p1": 0.3, "p2": 0.0, "p3": 0.1}, {})
    pi = probabilities([0.6, 0.3, 0.0, 0.1])
    cands = _prompts(4)[::-1]            # input order must not matter
    rng = np.random.default_rng(5)
    n = 10000
    draws = [choose_prompt(cands, "h", scores, rng) for _ in range(n)]
    freq = np.array([sum(d[0] == f"p{i}" for d in draws) for i in range(4)]) / n
    # binomial SE <= sqrt(.25/10000) = .005; 5 SE = .025 keeps a false failure below 1e-6 per prompt
    assert np.all(np.abs(freq - pi) < 0.025)
    assert {d[0]: d[1] for d in draws} == {f"p{i}": pytest.approx(pi[i], abs=EXACT) for i in range(4)}
    again = [choose_prompt(cands, "h", scores, np.random.default_rng(5)) for _ in range(1)]
    assert again[0] == draws[0]
    def seq():
        return [choose_prompt(cands, "h", scores, r)[0] for r in [np.random.default_rng(9)] for _ in range(50)]
    assert seq() == seq()
    assert choose_prompt(cands, "other", scores, rng) is None
    # frozen first: only frozen candidates are drawn from
    assert {choose_prompt(_prompts(4, frozen={"p2"}), "h", scores, rng)[0] for _ in range(50)} == {"p2"}


def test_mode_is_checked_with_the_parameter_named():
    assert check_mode("uniform") == "uniform"
    with pytest.raises(UsageError) as e:
        check_mode("best")
    assert e.value.parameters == ("prompts_by",) and "uniform, discriminative" in str(e.value)


# ---------------------------------------------------------------------------- next-batch hook

SYSTEMS = ["s0", "s1", "s2", "s3"]
N_PROMPTS = 40   # p0..p19 discriminative (the stronger system always wins), p20..p39 all ties


def _study(tmp: Path) -> Path:
    prompts, responses = tmp / "prompts.jsonl", tmp / "responses.jsonl"
    prompts.write_text("".join(json.dumps({"id": f"p{i}", "text": f"Question {i}?", "stratum": "all"}) + "\n"
                               for i in range(N_PROMPTS)))
    responses.write_text("".join(json.dumps({"prompt": f"p{i}", "system": s, "text": f"Answer {k} to {i}."}) + "\n"
                                 for i in range(N_PROMPTS) for k, s in enumerate(SYSTEMS)))
    path = tmp / "study"
    init_study(path, prompts_file=prompts, responses_file=responses, seed=3)
    rows = []
    for i in range(N_PROMPTS):
        for a, b in (("s0", "s1"), ("s2", "s3")):   # only these pairs judged: the other four keep every prompt
            rows.append({"id": f"j{i}{a}", "prompt": f"p{i}", "a": a, "b": b, "verdict": "A" if i < 20 else "tie"})
    f = tmp / "pilot.jsonl"
    f.write_text("".join(json.dumps(r) + "\n" for r in rows))
    ingest(path, [f])
    return path


def _plan(path, prompts_by=None):
    sel = BatchSelection(size=40, strategy="round-robin") if prompts_by is None else \
        BatchSelection(size=40, strategy="round-robin", prompts_by=prompts_by)
    return next_batch(path, sel, qc=QualityControl(attention=0, repeat=0, overlap=0, acceptability=0),
                      output=Output(dry_run=True))


def test_discriminative_prompts_are_preferred_and_uniform_is_unchanged(tmp_path):
    path = _study(tmp_path)
    default, uniform, disc = _plan(path), _plan(path, "uniform"), _plan(path, "discriminative")
    def key(r):
        return [(i.item_id, i.prompt_id, i.left_system, i.right_system) for i in r.items]
    assert key(default) == key(uniform) and default.manifest == uniform.manifest
    def share(r):
        return np.mean([int(i.prompt_id[1:]) < 20 for i in r.items])
    # scores: p0..p19 z = +1 twice, p20..p39 z = 0 twice; sigma_w^2 = 0 so B = 1: scores 1 and 0.
    # A draw among all 40 gives a discriminative prompt with probability .8 + .2/2 = .9 (less once some
    # are used by the pair); uniform gives about .5.
    assert share(disc) >= 0.75 > share(uniform)
    assert any("prompts by discriminativeness" in n for n in disc.notes)
    assert [i.prompt_id for i in _plan(path, "discriminative").items] == [i.prompt_id for i in disc.items]


def test_cli_names_the_flag_for_a_bad_mode(tmp_path):
    path = _study(tmp_path)
    r = CliRunner().invoke(app, ["next-batch", str(path), "--prompts-by", "best", "--dry-run"])
    assert r.exit_code == 2 and "--prompts-by" in r.stderr and "Traceback" not in r.stderr


def test_the_manifest_records_each_prompts_draw_probability(tmp_path):
    from planner.prompt_choice import DEFAULT_FLOOR

    path = _study(tmp_path)
    uniform, disc = _plan(path, "uniform"), _plan(path, "discriminative")
    assert "prompt_choice" not in uniform.manifest                      # uniform: the manifest as before
    rec = disc.manifest["prompt_choice"]
    assert rec["mode"] == "discriminative" and rec["floor"] == DEFAULT_FLOOR
    draws = {(p, *sorted((a, b))): (st, pi) for p, a, b, st, pi in rec["draws"]}
    regular = {(i.prompt_id, *sorted((i.left_system, i.right_system))) for i in disc.items if i.kind == "regular"}
    assert set(draws) == regular and len(rec["draws"]) == len(regular) == 40
    # scores 1 (p0..p19) and 0 (p20..p39): among C candidates with D discriminative ones, a
    # discriminative prompt has pi = 0.8 / D + 0.2 / C and a tie prompt 0.2 / C (C = 40, D = 20 for a
    # pair that has used no prompt: 0.045 and 0.005); every pi is one of those forms
    for (p, _a, _b), (st, pi) in draws.items():
        assert st == "all" and 0 < pi <= 1
        n = int(p[1:])
        if n >= 20:
            assert any(abs(pi - 0.2 / c) < 1e-12 for c in range(1, 41)), (p, pi)
        else:
            assert any(abs(pi - (0.8 / d + 0.2 / c)) < 1e-12 for c in range(1, 41) for d in range(1, c + 1)), (p, pi)
    fresh = [pi for (p, a, b), (st, pi) in draws.items() if (a, b) in {("s0", "s2"), ("s0", "s3")}]
    assert fresh and all(abs(x - 0.045) < 1e-12 or abs(x - 0.005) < 1e-12 for x in fresh[:1])
    # JSON-safe and seeded: the same record again
    assert json.loads(json.dumps(rec)) == rec and _plan(path, "discriminative").manifest["prompt_choice"] == rec


def _issue_and_answer(path: Path, tmp: Path, prompts_by: str, n_answers: int, name: str):
    """Issue a real batch (written, recorded in the study) and ingest verdicts for its first regular items."""
    res = next_batch(path, BatchSelection(size=40, strategy="round-robin", prompts_by=prompts_by),
                     qc=QualityControl(attention=0, repeat=0, overlap=0, acceptability=0),
                     output=Output(out=tmp / f"{name}.jsonl"))
    regular = [i for i in res.items if i.kind == "regular"][:n_answers]
    if regular:
        f = tmp / f"{name}-verdicts.jsonl"
        f.write_text("".join(json.dumps({"item": i.item_id, "verdict": "left"}) + "\n" for i in regular))
        ingest(path, [f])
    return len(regular)


def test_the_report_says_how_many_judgments_came_from_discriminative_draws(tmp_path):
    from planner.workflows.report import build_report

    path = _study(tmp_path)
    before = build_report(path)
    assert not any("drawn by discriminativeness" in n for n in before.notes)
    _issue_and_answer(path, tmp_path, "uniform", 10, "u")              # uniform batch: still no note
    assert not any("drawn by discriminativeness" in n for n in build_report(path).notes)
    n = _issue_and_answer(path, tmp_path, "discriminative", 12, "d")
    _issue_and_answer(path, tmp_path, "discriminative", 0, "d2")    # nothing back yet: not a batch they came from
    notes = [x for x in build_report(path).notes if "drawn by discriminativeness" in x]
    # 80 pilot judgments (p0..p19 A, p20..p39 tie: all usable) + 10 uniform + 12 discriminative = 102
    assert n == 12 and notes == ["12 of 102 usable judgments (12%) come from 1 batch(es) whose prompts were "
                                 "drawn by discriminativeness (next-batch --prompts-by discriminative): within a "
                                 "stratum the strengths describe the prompts as drawn, weighted toward those that "
                                 "separate the systems, not the stratum's prompts uniformly (the draw "
                                 "probabilities are in those batches' manifests, prompt_choice)"]
