"""planner.strata: the one stratum-weight rule, and the three places that must use it.

The example that showed three rules: stratum a with weights 3 and 1, stratum b with two prompts without
a weight. Before, next_batch gave a/b = 1.00/0.00, decide 0.50/0.50 and report
0.67/0.33. The rule (a missing weight counts as 1) gives 4/6 and 2/6, by hand.
"""

from __future__ import annotations

from types import SimpleNamespace as P

import pytest

from planner.errors import DataError
from planner.strata import stratum_weights

ISSUE = [P(id="a1", stratum="a", weight=3.0), P(id="a2", stratum="a", weight=1.0),
         P(id="b1", stratum="b", weight=None), P(id="b2", stratum="b", weight=None)]


def test_issue_example_by_hand():
    sw = stratum_weights(ISSUE, ("a", "b"))
    assert sw.weights == {"a": pytest.approx(4 / 6, abs=1e-15), "b": pytest.approx(2 / 6, abs=1e-15)}
    assert sw.source == "prompt weights"
    assert "2 of 4 prompts have no weight and count as 1" in sw.note
    assert sw.as_list() == [sw["a"], sw["b"]]


def test_no_weights_is_stratum_sizes():
    ps = [P(stratum="a", weight=None)] * 3 + [P(stratum=None, weight=None)]
    sw = stratum_weights(ps)
    assert sw.strata == ("a", "all") and sw.weights == {"a": 0.75, "all": 0.25}
    assert sw.source == "stratum sizes" and sw.note == "prompts per stratum"


def test_all_weighted():
    ps = [P(stratum="a", weight=2.0), P(stratum="b", weight=6.0), P(stratum="b", weight=0.0)]
    sw = stratum_weights(ps, ("a", "b"))
    assert sw.weights == {"a": 0.25, "b": 0.75} and sw.note == "summed prompt weight per stratum"


def test_zero_weight_stratum_is_outside_the_population():
    ps = [P(stratum="a", weight=0.0), P(stratum="b", weight=5.0)]
    assert stratum_weights(ps, ("a", "b")).weights == {"a": 0.0, "b": 1.0}
    # a missing weight next to zero weights still counts as 1
    ps = [P(stratum="a", weight=0.0), P(stratum="b", weight=None)]
    assert stratum_weights(ps, ("a", "b")).weights == {"a": 0.0, "b": 1.0}


def test_all_zero_weights_fall_back_to_sizes():
    ps = [P(stratum="a", weight=0.0)] + [P(stratum="b", weight=0.0)] * 3
    sw = stratum_weights(ps, ("a", "b"))
    assert sw.weights == {"a": 0.25, "b": 0.75} and sw.source == "stratum sizes"
    assert "every prompt weight is 0" in sw.note


def test_no_prompts_is_equal_and_unknown_strata_get_zero():
    sw = stratum_weights([], ("x", "y", "z"))
    assert sw.weights == {"x": pytest.approx(1 / 3)} | {"y": pytest.approx(1 / 3), "z": pytest.approx(1 / 3)}
    assert sw.source == "equal"
    assert stratum_weights([], None).weights == {"all": 1.0}
    # "all" holds judgments on unknown prompts but no prompt: weight 0
    assert stratum_weights(ISSUE, ("a", "b", "all")).weights["all"] == 0.0
    # a prompt whose stratum is not asked for is outside the population here
    assert stratum_weights(ISSUE, ("b",)).weights == {"b": 1.0}


@pytest.mark.parametrize("bad", [-1.0, float("nan"), float("inf"), "3", True])
def test_bad_weight_is_a_data_error(bad):
    with pytest.raises(DataError, match=r"prompt 'q': weight .*; expected a finite number >= 0"):
        stratum_weights([P(id="q", stratum="a", weight=bad)])


def test_next_batch_decide_and_report_use_the_rule(tmp_path):
    """The three consumers give the same shares on the example's prompts."""
    import json

    from planner.store.study import ingest, init_study
    from planner.workflows.decide import decide
    from planner.workflows.next_batch import target_shares
    from planner.workflows.report import build_report

    assert target_shares(ISSUE, ("a", "b")) == stratum_weights(ISSUE, ("a", "b")).weights
    root = tmp_path / "s"
    prompts = tmp_path / "p.jsonl"
    rows = [{"id": p.id, "text": p.id, "stratum": p.stratum} | ({"weight": p.weight} if p.weight else {})
            for p in ISSUE]
    prompts.write_text("".join(json.dumps(r) + "\n" for r in rows))
    init_study(root, systems=["new", "old"], prompts_file=prompts)
    judg = tmp_path / "j.jsonl"
    verdicts = ["A", "B", "A", "tie"] * 10
    judg.write_text("".join(json.dumps({"id": f"j{i}", "prompt": ISSUE[i % 4].id, "a": "new", "b": "old",
                                        "verdict": v}) + "\n" for i, v in enumerate(verdicts)))
    ingest(root, [judg])
    d = decide(root, "new", "old")
    assert {s.stratum: s.weight for s in d.strata} == {"a": pytest.approx(4 / 6), "b": pytest.approx(2 / 6)}
    r = build_report(root, by_stratum=True, save_posterior=False)
    w = {row.stratum: row.weight for row in r.strata.rows}
    assert w == {"a": pytest.approx(4 / 6), "b": pytest.approx(2 / 6)}
    assert r.strata.weights_source == "prompt weights"
