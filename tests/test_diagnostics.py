"""Tests for planner.diagnostics. Every number has its source in a comment."""

from __future__ import annotations

import json
import math
from itertools import product

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from planner import diagnostics as dg
from planner.counts import Counts, half_tie_score
from planner.diagnostics import JudgmentRecord as J
from planner.errors import DataError, UsageError
from planner.jsonable import jsonable

# Float results computed from closed forms: only rounding error, so 1e-12.
EXACT = 1e-12


# ----------------------------------------------------------------- half tie
def test_half_tie_seeds():
    # seed (issue): A1 B1 tie1 invalid1 -> 0.500; invalid is not an argument: (1 + 1/2) / 3
    assert half_tie_score(1, 1, 1) == pytest.approx(0.5, abs=EXACT)
    # seed: empty -> None, only invalid -> None (no usable judgment), only tie -> 0.5
    assert half_tie_score(0, 0, 0) is None
    assert half_tie_score(0, 0, 1) == 0.5
    # hand: (3 + 1/2) / (3 + 1 + 1) = 0.7
    assert half_tie_score(3, 1, 1) == pytest.approx(0.7, abs=EXACT)


# ------------------------------------------------------------------- wilson
@pytest.mark.parametrize("k,n", [(0, 5), (3, 10), (60, 100), (100, 100), (2512, 3867)])
def test_wilson_matches_scipy(k, n):
    from scipy.stats import binomtest

    ref = binomtest(k, n).proportion_ci(confidence_level=0.95, method="wilson")
    lo, hi = dg.wilson_interval(k, n)
    # same closed form, different arithmetic order: 1e-9
    assert lo == pytest.approx(ref.low, abs=1e-9)
    assert hi == pytest.approx(ref.high, abs=1e-9)


def test_wilson_empty():
    assert dg.wilson_interval(0, 0) == (None, None)


# --------------------------------------------------------------- pair table
SYS = ("x", "y", "z")


def _counts(records, strata=("all",)):
    return Counts.from_records(SYS, records, strata)


def test_pair_table_orients_to_system_order():
    # y-vs-x shown y left: y wins twice, x wins once, one tie, one invalid;
    # x-vs-y shown x left: x wins once. Oriented to (x, y): x 2, y 2, tie 1, invalid 1.
    recs = [("y", "x", "A")] * 2 + [("y", "x", "B"), ("y", "x", "tie"), ("y", "x", "invalid"),
                                    ("x", "y", "A")]
    p = np.array([[0.5, 0.3, 0.9], [0.7, 0.5, 0.8], [0.1, 0.2, 0.5]])
    t = dg.pair_table(_counts(recs), p_better=p)
    assert len(t.rows) == 1
    r = t.rows[0]
    assert (r.system_a, r.system_b, r.a_wins, r.b_wins, r.ties, r.invalid) == ("x", "y", 2, 2, 1, 1)
    assert r.score == pytest.approx(0.5, abs=EXACT)      # (2 + 0.5) / 5
    assert r.p_a_better == 0.3                           # p[0, 1] passed through
    assert dg.pair_table(_counts(recs)).rows[0].p_a_better is None


def test_pair_table_bad_matrix_shape():
    with pytest.raises(UsageError, match="`p_better` shape"):
        dg.pair_table(_counts([("x", "y", "A")]), p_better=np.eye(2))


# ------------------------------------------------------------- anchor tests
def test_anchor_tests_drop_and_half():
    # y vs anchor x: y wins 60, loses 40, 10 ties, 2 invalid, split over both positions
    recs = ([("y", "x", "A")] * 30 + [("x", "y", "B")] * 30 + [("y", "x", "B")] * 40
            + [("x", "y", "tie")] * 10 + [("y", "x", "invalid")] * 2)
    res = dg.anchor_tests(_counts(recs), "x")
    (row,) = res.rows
    assert (row.system, row.wins, row.losses, row.ties, row.invalid, row.n) == ("y", 60, 40, 10, 2, 100)
    assert row.win_rate == pytest.approx(0.6, abs=EXACT)
    # scipy.stats.binomtest(60, 100).pvalue = 0.05688793364098089 (R: binom.test(60, 100))
    assert row.pvalue == pytest.approx(0.05688793364098089, rel=1e-9)
    # binomtest(60, 100).proportion_ci(method="wilson") = (0.502002587, 0.690598714)
    assert row.ci_low == pytest.approx(0.5020025867910618, abs=1e-9)
    assert row.ci_high == pytest.approx(0.6905987135675411, abs=1e-9)
    half = dg.anchor_tests(_counts(recs), "x", ties="half").rows[0]
    # half: (60 + 5) / 110; test on k rounded toward n/2 = 65 (integer already) -> binomtest(65, 110)
    from scipy.stats import binomtest
    assert half.win_rate == pytest.approx(65 / 110, abs=EXACT)
    assert half.pvalue == pytest.approx(binomtest(65, 110).pvalue, rel=1e-12)


def test_anchor_tests_errors():
    c = _counts([("x", "y", "A")])
    with pytest.raises(UsageError, match="anchor"):
        dg.anchor_tests(c, "nope")
    with pytest.raises(UsageError, match="ties"):
        dg.anchor_tests(c, "x", ties="zero")


# ------------------------------------------------------ tie rate / position
def test_tie_rates_per_stratum():
    recs = [("x", "y", "tie", "s1"), ("x", "y", "A", "s1"), ("x", "y", "invalid", "s1"),
            ("y", "z", "B", "s2"), ("y", "z", "A", "s2"), ("y", "z", "A", "s2")]
    r = dg.tie_rates(_counts(recs, ("s1", "s2")))
    # hand: overall 1 tie / 5 usable; s1 1/2 (invalid excluded); s2 0/3
    assert (r.overall.ties, r.overall.usable, r.overall.rate) == (1, 5, 0.2)
    assert [(s.stratum, s.rate) for s in r.per_stratum] == [("s1", 0.5), ("s2", 0.0)]


def test_position_bias_flag():
    # hand: left wins 27, right wins 23 -> 54% left, difference 8 points: not above 8 -> no flag
    c = _counts([("x", "y", "A")] * 27 + [("x", "y", "B")] * 23 + [("x", "y", "tie")] * 9)
    pb = dg.position_bias(c, gamma=(0.1, -0.05, 0.25))
    assert pb.n_decisive == 50
    assert pb.difference_points == pytest.approx(8.0, abs=1e-9)
    assert not pb.flagged
    assert pb.gamma == (0.1, -0.05, 0.25)
    # 28 / 50 = 56% -> 12 points > 8, but the 95% Wilson interval [42.3%, 68.8%] includes 50%:
    # 50 judgments cannot tell a 56% left preference from chance -> no flag
    c2 = _counts([("x", "y", "A")] * 28 + [("x", "y", "B")] * 22)
    assert not dg.position_bias(c2).flagged
    # 280 / 500 = 56%: 12 points, Wilson [51.6%, 60.3%] excludes 50% -> flag
    c3 = _counts([("x", "y", "A")] * 280 + [("x", "y", "B")] * 220)
    assert dg.position_bias(c3).flagged


def test_position_bias_empty():
    pb = dg.position_bias(Counts.empty(SYS))
    assert pb.left_win_rate is None and pb.difference_points is None and not pb.flagged


# --------------------------------------------------------------- length bias
def test_length_bias():
    lengths = {("p1", "x"): 100, ("p1", "y"): 50, ("p2", "x"): 10, ("p2", "y"): 10}
    js = ([J("x", "y", "A", prompt="p1")] * 40 + [J("x", "y", "B", prompt="p1")] * 10
          + [J("y", "x", "A", prompt="p1", a_position="right")] * 2     # shorter (y) won
          + [J("x", "y", "A", prompt="p2")] * 3                          # equal lengths
          + [J("x", "z", "A", prompt="p1")]                              # z length unknown
          + [J("x", "y", "tie", prompt="p1")] * 5                        # not decisive
          + [J("x", "y", "A", prompt="p1", kind="attention")] * 7)      # QC item, skipped
    r = dg.length_bias(js, lengths)
    # hand: longer won 40, shorter won 10 + 2
    assert (r.longer_wins, r.shorter_wins, r.n, r.n_equal, r.n_missing) == (40, 12, 52, 3, 1)
    from scipy.stats import binomtest
    ref = binomtest(40, 52)
    assert r.pvalue == pytest.approx(ref.pvalue, rel=1e-12)
    # Wilson lower bound for 40/52 is ~0.64 > 0.5 -> flag
    assert r.ci_low == pytest.approx(ref.proportion_ci(method="wilson").low, abs=1e-9)
    assert r.flagged


# ----------------------------------------------------------- circular triads
# The seed tournament, m = 5 (issue: d = 2 -> zeta = 0.60), written out:
#   A>B, A>C, B>C, B>D, D>A, C>D, and everyone beats E.
#   scores: A 3 (B, C, E), B 3 (C, D, E), C 2 (D, E), D 2 (A, E), E 0
#   circular: A>B>D>A and A>C>D>A; transitive: ABC, BCD and every triad with E.
#   d by formula: m(m-1)(2m-1)/12 - ½ Σ s² = 5·4·9/12 - ½(9+9+4+4+0) = 15 - 13 = 2
#   zeta = 1 - 24·2/(125 - 5) = 1 - 48/120 = 0.60
SEED_BEATS = [("A", "B"), ("A", "C"), ("B", "C"), ("B", "D"), ("D", "A"), ("C", "D"),
              ("A", "E"), ("B", "E"), ("C", "E"), ("D", "E")]
NAMES = ("A", "B", "C", "D", "E")


def _win_matrix(beats, names=NAMES):
    w = np.zeros((len(names), len(names)))
    for x, y in beats:
        w[names.index(x), names.index(y)] += 1
    return w


def test_circular_triads_seed():
    r = dg.circular_triads(_win_matrix(SEED_BEATS), NAMES)
    assert r.d == 2
    assert r.d_max == 5.0                       # (125 - 5) / 24
    assert r.zeta == pytest.approx(0.60, abs=EXACT)
    assert r.scores == (3, 3, 2, 2, 0)
    assert dg.circular_triads_from_scores(r.scores) == 2
    assert set(r.examples) == {("A", "B", "D"), ("A", "C", "D")}


def test_circular_triads_from_counts_even_m():
    # m = 4 cycle x>y>z>w>x plus x>z, y>w: scores x2 y2 z1 w1
    # d = 4·3·7/12 - ½(4+4+1+1) = 7 - 5 = 2 ; d_max = (64 - 16)/24 = 2 -> zeta = 0
    systems = ("x", "y", "z", "w")
    beats = [("x", "y"), ("y", "z"), ("z", "w"), ("w", "x"), ("x", "z"), ("y", "w")]
    # each pair judged 3 times, 2 to the winner (shown left once, right once) and a tie
    recs = []
    for p, q in beats:
        recs += [(p, q, "A"), (q, p, "B"), (p, q, "tie")]
    r = dg.circular_triads(Counts.from_records(systems, recs))
    assert (r.d, r.d_max, r.zeta) == (2, 2.0, 0.0)


def test_circular_triads_tied_and_unobserved_pairs():
    # x>y, y>z, x~z tied: the triad is circular with probability 1/2 (coin for x~z)
    w = _win_matrix([("x", "y"), ("y", "z"), ("x", "z"), ("z", "x")], ("x", "y", "z"))
    r = dg.circular_triads(w, ("x", "y", "z"))
    assert (r.d, r.n_tied_pairs, r.examples) == (0.5, 1, ())
    # d_max for m = 3 is (27 - 3)/24 = 1 -> zeta = 0.5
    assert r.zeta == 0.5
    # unobserved pair: zeta undefined, d over observed triads only (none here)
    w2 = _win_matrix([("x", "y"), ("y", "z")], ("x", "y", "z"))
    r2 = dg.circular_triads(w2, ("x", "y", "z"))
    assert (r2.d, r2.zeta, r2.n_unobserved_pairs) == (0.0, None, 1)


@settings(max_examples=60, deadline=None)
@given(st.integers(3, 9).flatmap(
    lambda m: st.tuples(st.just(m), st.lists(st.booleans(), min_size=m * (m - 1) // 2,
                                             max_size=m * (m - 1) // 2))))
def test_circular_triads_properties(case):
    # complete random tournaments: enumeration == score formula, 0 <= d <= d_max, zeta in [0, 1]
    m, bits = case
    w = np.zeros((m, m))
    for (i, j), b in zip(((x, y) for x in range(m) for y in range(x + 1, m)), bits):
        w[(i, j) if b else (j, i)] = 1
    r = dg.circular_triads(w)
    assert r.d == pytest.approx(dg.circular_triads_from_scores(r.scores), abs=EXACT)
    assert 0 <= r.d <= r.d_max
    assert -EXACT <= r.zeta <= 1 + EXACT


# ------------------------------------------------------------- reason shares
def test_reason_shares():
    js = [J("x", "y", "A", reason="accuracy"), J("x", "y", "A", reason="accuracy"),
          J("x", "y", "A", reason="style"), J("y", "x", "A", reason=""),
          J("x", "y", "tie"), J("x", "y", "invalid"), J("x", "y", "A", kind="attention")]
    r = dg.reason_shares(js)
    x, y = r.rows
    # hand: x won 3 (accuracy 2, style 1), lost 1 (no reason); y the mirror
    assert (x.system, x.wins, x.losses) == ("x", 3, 1)
    assert [(s.reason, s.count) for s in x.win_reasons] == [("accuracy", 2), ("style", 1)]
    assert x.win_reasons[0].share == pytest.approx(2 / 3, abs=EXACT)
    assert [(s.reason, s.share) for s in x.loss_reasons] == [(None, 1.0)]
    assert (y.wins, y.losses) == (1, 3)
    # 1 of 4 decisive judgments without a reason
    assert (r.n_decisive, r.n_without_reason, r.share_without_reason) == (4, 1, 0.25)


# ------------------------------------------------------------------- kappas
def test_cohen_kappa_matches_statsmodels():
    from statsmodels.stats.inter_rater import cohens_kappa

    # 3x3 table rater1 x rater2 over labels A, B, tie (33 items). Hand:
    #   p_o = 23/33; margins rows (13, 13, 7), cols (14, 11, 8)
    #   p_e = (13·14 + 13·11 + 7·8)/33² = 381/1089; κ = (759 - 381)/(1089 - 381) = 378/708
    table = np.array([[10, 2, 1], [3, 8, 2], [1, 1, 5]])
    labels = ("A", "B", "tie")
    x, y = [], []
    for (i, j) in product(range(3), range(3)):
        x += [labels[i]] * table[i, j]
        y += [labels[j]] * table[i, j]
    k = dg.cohen_kappa(x, y)
    assert k == pytest.approx(378 / 708, abs=EXACT)
    assert k == pytest.approx(cohens_kappa(table).kappa, abs=EXACT)
    assert dg.cohen_kappa(["A"] * 4, ["A"] * 4) is None        # p_e = 1: undefined


def test_fleiss_kappa_matches_statsmodels():
    from statsmodels.stats.inter_rater import fleiss_kappa

    # Fleiss (1971) Table 1 style: 10 items x 3 categories, 4 raters each
    rng = np.random.default_rng(4)
    table = np.array([rng.multinomial(4, [0.5, 0.3, 0.2]) for _ in range(10)])
    assert dg.fleiss_kappa(table) == pytest.approx(fleiss_kappa(table, method="fleiss"), abs=EXACT)


# ------------------------------------------------------------- annotator QC
def _items(prefix, n):
    return [f"{prefix}{i}" for i in range(n)]


def test_annotator_qc_attention_swap_speed():
    # the broken side is known; expected verdict in A/B form or in position form
    expected = {f"att{i}": ("A" if i % 2 else "left") for i in range(20)}
    js = []
    # ann1 passes 19/20 attention items (95%: not below 95%), ann2 passes 18/20 (90%: flag)
    for i in range(20):
        js.append(J("x", "y", "A" if i < 19 else "B", item=f"att{i}", annotator="ann1", kind="attention"))
        js.append(J("x", "y", "A" if i < 18 else "tie", item=f"att{i}", annotator="ann2", kind="attention"))
    # swapped repeats for ann1 on prompts p0..p9: x-left and x-right; consistent on 7 of 10 (70%: flag)
    for i in range(10):
        js.append(J("x", "y", "A", prompt=f"p{i}", item=f"s{i}a", annotator="ann1", seconds=60))
        consistent = i < 7
        # shown y left (a = y), so "B" means x won again
        js.append(J("y", "x", "B" if consistent else "A", prompt=f"p{i}", item=f"s{i}b",
                    annotator="ann1", seconds=5))
    words = {f"s{i}{s}": 250 for i in range(10) for s in "ab"}
    r = dg.annotator_qc(js, attention_expected=expected, item_words=words)
    a1, a2 = r.annotators
    assert (a1.attention_n, a1.attention_passed, a1.attention_rate) == (20, 19, 0.95)
    assert a2.attention_rate == 0.9
    assert (a1.swap_pairs, a1.swap_consistent, a1.swap_rate) == (10, 7, 0.7)
    # floor: 60·250/(250·2) = 30 s; the 10 "b" items took 5 s -> 10 of 20 fast
    assert (a1.timed_items, a1.fast_items, a1.fast_share) == (20, 10, 0.5)
    assert set(a1.flags) == {"swap-consistency", "speed"}
    assert a2.flags == ("attention",)


def test_annotator_qc_agreement_two_and_three():
    labels = ["A", "B", "tie", "A", "A", "B", "B", "tie", "A", "B"]
    other = ["A", "B", "tie", "B", "A", "B", "A", "tie", "A", "B"]
    # one comparison per prompt; v saw every comparison with positions swapped (a = y), so
    # its stored verdicts are mirrored: the comparison's label (winner or tie) is what counts
    mirror = {"A": "B", "B": "A", "tie": "tie"}
    js = [J("x", "y", v, prompt=f"o{i}", item=f"u{i}", annotator="u") for i, v in enumerate(labels)]
    js += [J("y", "x", mirror[v], prompt=f"o{i}", item=f"v{i}", annotator="v", a_position="right")
           for i, v in enumerate(other)]
    r = dg.annotator_qc(js)
    assert r.agreement.method == "cohen" and r.agreement.n_items == 10
    assert r.agreement.kappa == pytest.approx(dg.cohen_kappa(labels, other), abs=EXACT)
    # with two annotators the leave-one-out majority is the other annotator: same κ per person
    assert r.annotators[0].kappa == pytest.approx(r.agreement.kappa, abs=EXACT)
    # a third annotator -> Fleiss over the (items x {A, B, tie}) table
    from statsmodels.stats.inter_rater import fleiss_kappa
    third = ["A", "A", "tie", "B", "A", "B", "B", "B", "A", "tie"]
    js3 = js + [J("x", "y", v, prompt=f"o{i}", item=f"w{i}", annotator="w") for i, v in enumerate(third)]
    r3 = dg.annotator_qc(js3)
    table = np.array([[sum(v == c for v in trio) for c in ("A", "B", "tie")]
                      for trio in zip(labels, other, third)])
    assert r3.agreement.method == "fleiss"
    assert r3.agreement.kappa == pytest.approx(fleiss_kappa(table, method="fleiss"), abs=EXACT)


def test_annotator_qc_degenerate_patterns():
    js = []
    # lazy: 40 judgments, always left -> always-left, never ties (overall tie rate below is >= 10%),
    # one run of 40 identical verdicts
    for i in range(40):
        js.append(J("x", "y", "A", item=f"l{i}", annotator="lazy"))
    # careful: 60 judgments cycling left/right/tie (20 ties -> overall tie rate 20/100 = 20%)
    for i in range(60):
        js.append(J("x", "y", ("A", "B", "tie")[i % 3], item=f"c{i}", annotator="careful"))
    r = dg.annotator_qc(js)
    careful, lazy = r.annotators
    assert r.overall_tie_rate == pytest.approx(0.2, abs=EXACT)
    assert lazy.left_share == 1.0 and lazy.longest_run == 40
    assert "always-left" in lazy.flags and "never-tie" in lazy.flags
    # single-label annotator: a run of 40 is certain under its own frequencies -> p = 1, no run flag
    assert lazy.run_pvalue == pytest.approx(1.0, abs=EXACT)
    assert careful.flags == () and careful.longest_run == 1


def test_run_probability_exact():
    # binary fair labels, n = 8: strings with every run of length 1 or 2 number 2·F(9) = 68
    # (compositions of 8 into 1s and 2s = Fibonacci F(9) = 34, times 2 start symbols)
    assert dg.run_probability(8, [0.5, 0.5], 3) == pytest.approx(1 - 68 / 256, abs=EXACT)
    # brute force over all 3^6 sequences with unequal probabilities
    p = [0.5, 0.3, 0.2]
    total = 0.0
    for seq in product(range(3), repeat=6):
        if dg.longest_run(seq)[0] >= 3:
            total += math.prod(p[s] for s in seq)
    assert dg.run_probability(6, p, 3) == pytest.approx(total, abs=EXACT)


def test_longest_run():
    assert dg.longest_run(["a", "b", "b", "b", "a"]) == (3, "b")
    assert dg.longest_run([]) == (0, None)


# ------------------------------------------------------------- acceptability
def test_acceptability_leader_flag():
    recs = [("m1", "pass")] * 41 + [("m1", "fail")] * 59 + [("m1", "invalid")] * 3
    recs += [("m2", True)] * 90 + [("m2", False)] * 10
    js = [J("m2", "m2", "pass", kind="acceptability"), J("m1", "m2", "A")]   # regular one ignored
    r = dg.acceptability(recs + js, ranking=["m1", "m2"])
    m1, m2 = r.rows
    assert (m1.passed, m1.failed, m1.invalid, m1.pass_rate) == (41, 59, 3, 0.41)
    assert (m2.passed, m2.failed) == (91, 10)
    # binomtest(41, 100).proportion_ci(method="wilson") = (0.31867, 0.50799): half width 0.0947 -> "± 9%"
    assert m1.half_width == pytest.approx(0.0946562846272635, abs=1e-9)
    assert r.leader_flagged
    assert r.message == "m1: ranked first, acceptable 41% ± 9%"
    assert not dg.acceptability(recs, ranking=["m2", "m1"]).leader_flagged


def test_acceptability_from_counts_object():
    # planner.store.study.AcceptabilityCounts shape: (n_systems, n_strata) arrays
    from types import SimpleNamespace

    ac = SimpleNamespace(systems=("m1", "m2", "m3"), strata=("s1", "s2"),
                         passed=np.array([[20, 21], [50, 40], [0, 0]]),
                         failed=np.array([[30, 29], [5, 5], [0, 0]]),
                         invalid=np.array([[1, 2], [0, 0], [0, 0]]))
    r = dg.acceptability(ac, ranking=["m1", "m2", "m3"])
    # hand: m1 41 pass / 59 fail / 3 invalid; m3 never judged -> rate None
    assert [(x.system, x.passed, x.failed, x.invalid) for x in r.rows] == [
        ("m1", 41, 59, 3), ("m2", 90, 10, 0), ("m3", 0, 0, 0)]
    assert r.rows[2].pass_rate is None and r.leader_flagged


def test_acceptability_bad_verdict():
    with pytest.raises(DataError, match="acceptability verdict"):
        dg.acceptability([("m1", "A")])


# --------------------------------------------------------------- rank groups
def test_rank_groups_seed_one_group():
    # seed fixture: Elo 1512, 1508, 1497, 1491, 1483 with SE 22 are one group:
    # largest adjacent gap 11 < 1.96·22·√2 = 61
    names = ["s1", "s2", "s3", "s4", "s5"]
    r = dg.rank_groups(names, [1512, 1508, 1497, 1491, 1483], sds=[22] * 5)
    assert r.letters == ("a",) * 5 and r.tied_with_leader == tuple(names)
    assert r.rank_low is None and r.p_best is None


def test_rank_groups_separated_and_draws():
    rng = np.random.default_rng(0)
    names = ["b", "a", "c"]
    means = np.array([1600.0, 1700.0, 1595.0])
    draws = means + rng.normal(0, 10, size=(4000, 3))
    r = dg.rank_groups(names, means, draws=draws)
    # a is 100 points (7 SD of the difference) clear; b and c are 5 apart
    assert r.order == ("a", "b", "c")
    assert r.letters == ("a", "b", "b") and r.tied_with_leader == ("a",)
    assert r.p_leader_better[0] is None and min(r.p_leader_better[1:]) == 1.0
    assert (r.rank_low[0], r.rank_high[0]) == (1, 1)
    assert (r.rank_low[1], r.rank_high[1]) == (2, 3)
    # P(a best) is 1 up to a 7-sigma event in 4000 draws
    assert r.p_best[0] == 1.0
    # the same via sds: gap 5 < 1.96·10·√2 = 27.7; gap 100 > 27.7
    assert dg.rank_groups(names, means, sds=[10] * 3).letters == r.letters


def test_rank_groups_never_chain_a_separated_pair():
    # why chained groups went, a synthetic chain: A~B and B~C but A > C. Draws: means 0.6, 0.3, 0.0 with
    # independent sd 0.1 -> sd of a difference 0.141, 95% half-width 0.277: A-B (0.3) and B-C (0.3)
    # ... both exclude 0 at 0.277; use sd 0.12 -> half-width 0.333 > 0.3 (A~B, B~C), A-C 0.6 > 0.333.
    rng = np.random.default_rng(3)
    draws = np.array([0.6, 0.3, 0.0]) + rng.normal(0, 0.12, size=(20000, 3))
    r = dg.rank_groups(["A", "B", "C"], [0.6, 0.3, 0.0], draws=draws)
    assert r.letters == ("a", "ab", "b")          # A and C share nothing, B shares with both
    # tied with the leader: P(A > B) = Phi(0.3 / 0.170) = 0.961 >= 0.95 -> B is credibly below A
    # (one-sided) though their two-sided 95% interval includes 0
    assert r.p_leader_better[1] == pytest.approx(0.961, abs=0.01)   # MC sd sqrt(.04/20000) = 0.0014
    assert r.tied_with_leader == ("A",)
    # rank intervals: A is 1-2, C is 2-3; no single "group" is reported
    assert (r.rank_low[0], r.rank_high[0]) == (1, 2) and (r.rank_low[2], r.rank_high[2]) == (2, 3)
    # a wider posterior (sd 0.2): B is tied with the leader, C is not (P(A>C) = Phi(0.6/0.283) = 0.983)
    draws = np.array([0.6, 0.3, 0.0]) + rng.normal(0, 0.2, size=(20000, 3))
    r = dg.rank_groups(["A", "B", "C"], [0.6, 0.3, 0.0], draws=draws)
    assert r.tied_with_leader == ("A", "B")


def test_rank_groups_errors():
    with pytest.raises(UsageError, match="`sds`, `cov` or `draws`"):
        dg.rank_groups(["a"], [1.0])


# ------------------------------------------------------------------- JSON
def test_results_are_jsonable():
    c = _counts([("x", "y", "A"), ("y", "z", "tie")])
    for res in (dg.pair_table(c), dg.tie_rates(c), dg.position_bias(c), dg.circular_triads(c),
                dg.anchor_tests(c, "y")):
        json.dumps(jsonable(res))


# -------------------------------------------------------------- real data
def _load(path):
    with open(path, encoding="utf-8") as fh:
        for line in fh:
            r = json.loads(line)
            yield J(r["a"], r["b"], r["verdict"], id=r["id"], prompt=r["prompt"],
                    item=r["id"], a_position=r.get("a_position", "left"), annotator=r.get("judge"))


def test_real_vicuna_gpt4_position_and_swap(vicuna_data):
    js = list(_load(vicuna_data / "judgments" / "qlora_vicuna80_gpt4.jsonl"))
    systems = sorted({j.a for j in js} | {j.b for j in js})
    c = Counts.from_records(systems, [(j.a, j.b, j.verdict) for j in js])
    pb = dg.position_bias(c)
    # shared/data README: A 2,512 / B 1,355; share of decisive verdicts to position A 0.650
    assert (pb.left_wins, pb.right_wins) == (2512, 1355)
    assert round(pb.left_win_rate, 3) == 0.650
    assert pb.flagged                               # 30 points > 8
    # README: both orders agree on 1,367 of 2,227 (prompt, pair) items, invalid left out
    (gpt4,) = dg.annotator_qc(js).annotators
    assert (gpt4.swap_pairs, gpt4.swap_consistent) == (2227, 1367)
    # README: tie 600 of 4,467 usable
    assert dg.tie_rates(c).overall.ties == 600


def test_real_vicuna_gpt4_strata_and_length(vicuna_data):
    prompts = [json.loads(x) for x in
               (vicuna_data / "vicuna80" / "prompts.jsonl").read_text(encoding="utf-8").splitlines()]
    stratum = {p["id"]: p["stratum"] for p in prompts}
    strata = tuple(sorted(set(stratum.values())))
    js = list(_load(vicuna_data / "judgments" / "qlora_vicuna80_gpt4.jsonl"))
    systems = sorted({j.a for j in js} | {j.b for j in js})
    c = Counts.from_records(systems, [(j.a, j.b, j.verdict, stratum[j.prompt]) for j in js], strata)
    rates = {s.stratum: s.rate for s in dg.tie_rates(c).per_stratum}
    # shared/data README: "26% roleplay and math, 21% writing, 4% coding, 7% generic and fermi"
    # The README writes whole percents and writes 7.5% as "7%", so the tolerance is one point.
    expected = {"roleplay": 0.26, "math": 0.26, "writing": 0.21, "coding": 0.04, "generic": 0.07, "fermi": 0.07}
    for k, v in expected.items():
        assert rates[k] == pytest.approx(v, abs=0.01), k
    words = {(r["prompt"], r["system"]): len(r["text"].split())
             for r in map(json.loads,
                          (vicuna_data / "vicuna80" / "responses.jsonl").read_text(encoding="utf-8").splitlines())}
    lb = dg.length_bias(js, words)
    # every one of the README's 2,512 + 1,355 decisive verdicts lands in exactly one bucket
    assert lb.n + lb.n_equal + lb.n_missing == 2512 + 1355
    assert lb.n_missing == 0                      # all 80 x 8 responses are present (README)


@settings(max_examples=100, deadline=None)
@given(st.integers(1, 500).flatmap(lambda n: st.tuples(st.integers(0, n), st.just(n))),
       st.sampled_from([0.8, 0.9, 0.95, 0.99]))
def test_wilson_contains_estimate(kn, level):
    # property of the Wilson interval: inside [0, 1] and contains k/n
    k, n = kn
    lo, hi = dg.wilson_interval(k, n, level)
    assert 0.0 <= lo <= k / n + EXACT and k / n - EXACT <= hi <= 1.0


def test_circular_triad_example_orientation():
    # y beats x, z beats y, x beats z: the cycle reads x -> z -> y -> x
    r = dg.circular_triads(_win_matrix([("y", "x"), ("z", "y"), ("x", "z")], ("x", "y", "z")), ("x", "y", "z"))
    assert r.examples == (("x", "z", "y"),) and r.d == 1 and r.zeta == 0.0


def test_anchor_half_rounds_toward_null():
    from scipy.stats import binomtest

    # y vs anchor x: 6 wins, 2 losses, 1 tie -> k = 6.5 of n = 9; test with k = 6 (toward 4.5)
    recs = [("y", "x", "A")] * 6 + [("y", "x", "B")] * 2 + [("y", "x", "tie")]
    row = dg.anchor_tests(_counts(recs), "x", ties="half").rows[0]
    assert row.win_rate == pytest.approx(6.5 / 9, abs=EXACT)
    assert row.pvalue == pytest.approx(binomtest(6, 9).pvalue, rel=1e-12)


def test_p_better_from_draws():
    # hand: system 0 above system 1 in draws 1, 3 and 4 -> 3/4; the reverse 1/4
    p = dg.p_better_from_draws(np.array([[1.0, 0.0], [0.0, 1.0], [2.0, 1.0], [3.0, 0.0]]))
    assert p.tolist() == [[0.5, 0.75], [0.25, 0.5]]


def test_compact_letters_do_not_chain():
    # Hand example: strengths 120, 80, 40, 0 with SE 20. Adjacent differences 40 with
    # SE 20*sqrt(2) = 28.3: 95% interval 40 ± 55.4 includes 0 -> not separated; two apart:
    # 80 ± 55.4 excludes 0 -> separated. Chained groups put all four together; the letter
    # display (Piepho 2004) gives a / ab / bc / c: neighbours share a letter, the ends do not.
    r = dg.rank_groups(["W", "X", "Y", "Z"], [120, 80, 40, 0], sds=[20] * 4)
    assert not hasattr(r, "groups")            # chained groups are not transitive: gone
    assert r.letters == ("a", "ab", "bc", "c")
    # the seed fixture (1512, 1508, 1497, 1491, 1483; SE 22): nothing separated, one letter
    assert dg.rank_groups(list("ABCDE"), [1512, 1508, 1497, 1491, 1483], sds=[22] * 5).letters == ("a",) * 5


def test_compact_letters_share_a_letter_iff_not_separated():
    # Property check on random separation patterns: share a letter <=> not separated.
    rng = np.random.default_rng(0)
    for _ in range(50):
        m = int(rng.integers(2, 9))
        sep = np.triu(rng.random((m, m)) < 0.4, 1)
        sep = sep | sep.T
        letters = dg.compact_letters(sep)
        for p in range(m):
            for q in range(p + 1, m):
                assert bool(set(letters[p]) & set(letters[q])) == (not sep[p, q])


# ------------------------------------------------- tallied forms (used by the report's grouped scan)
def test_length_bias_counts_by_hand():
    # (verdict, sign(len_a - len_b), n): longer won 40 + 5 = 45, shorter 10 + 2 = 12, 3 equal, 1 missing
    rows = [("A", 1, 40), ("B", -1, 5), ("B", 1, 10), ("A", -1, 2), ("A", 0, 3), ("B", None, 1), ("tie", 1, 9)]
    r = dg.length_bias_counts(rows)
    assert (r.longer_wins, r.shorter_wins, r.n, r.n_equal, r.n_missing) == (45, 12, 57, 3, 1)
    from scipy.stats import binomtest
    assert r.pvalue == pytest.approx(binomtest(45, 57).pvalue, rel=1e-12)
    assert r.flagged and r.share == pytest.approx(45 / 57, abs=EXACT)


def test_reason_shares_counts_by_hand():
    rows = [("x", "y", "A", "accuracy", 2), ("x", "y", "A", " style ", 1), ("y", "x", "A", "", 1),
            ("x", "w", "tie", None, 4), ("x", "y", "invalid", "accuracy", 3)]
    r = dg.reason_shares_counts(rows, ["y"])
    assert [row.system for row in r.rows] == ["y", "x", "w"]       # given order, then first appearance
    y, x, w = r.rows
    assert [(s.reason, s.count) for s in x.win_reasons] == [("accuracy", 2), ("style", 1)]
    assert (x.wins, x.losses, y.wins, y.losses, w.wins) == (3, 1, 1, 3, 0)
    assert (r.n_decisive, r.n_without_reason, r.share_without_reason) == (4, 1, 0.25)


def test_annotator_qc_unknown_position_is_not_left():
    # An alpaca_eval/MT-bench file without presentation order stores a_position = None
    # (study.Judgment passes it through). Such a judgment says nothing about where the
    # annotator clicked: it must not count as "left" in always-left, the run test, the
    # swap pairs, or a position-form attention check.
    js = [J("x", "y", "A", item=f"u{i}", prompt=f"p{i}", annotator="judge", a_position=None)
          for i in range(40)]
    (qc,) = dg.annotator_qc(js).annotators
    assert qc.n_judgments == 40
    assert (qc.n_decisive, qc.left_share, qc.longest_run, qc.run_pvalue) == (0, None, 0, None)
    assert "always-left" not in qc.flags and "long-run" not in qc.flags
    # swap pairs need both positions known: the same comparison with unknown positions is no pair
    js2 = [J("x", "y", "A", prompt="p", item="s1", annotator="a", a_position=None),
           J("y", "x", "A", prompt="p", item="s2", annotator="a", a_position="left")]
    (qc2,) = dg.annotator_qc(js2).annotators
    assert qc2.swap_pairs == 0
    # attention: an A/B-form expectation is checkable without the position; a position-form
    # one is not, and such an item is left out of the attention count (not failed, not passed)
    expected = {"t1": "A", "t2": "left"}
    js3 = [J("x", "y", "A", item="t1", annotator="a", a_position=None, kind="attention"),
           J("x", "y", "A", item="t2", annotator="a", a_position=None, kind="attention")]
    (qc3,) = dg.annotator_qc(js3, attention_expected=expected).annotators
    assert (qc3.attention_n, qc3.attention_passed) == (1, 1)
    # position_verdict says so instead of guessing
    assert dg.position_verdict(js[0]) == "unknown"
    assert dg.position_verdict(J("x", "y", "tie", a_position=None)) == "tie"
