"""planner.stats.proportions: the one Wilson interval and the one Newcombe difference.

Independent references: statsmodels ``proportion_confint(method="wilson")`` and
Newcombe (1998) Stat. Med. 17:873-890, Table II, method 10 (four decimals).
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest
from _lazy import attribute

from planner import diagnostics
from planner.gate import acceptability
from planner.stats import pass_rate, significance
from planner.stats.proportions import newcombe_difference, proportion, wilson_half_width, wilson_interval

proportion_confint = attribute("statsmodels.stats.proportion", "proportion_confint")   # imported when called

# same closed form, different arithmetic order: observed differences <= 2e-16; 1e-12 leaves room
# for other BLAS/libm builds while still catching any formula slip (those are >= 1e-4 here)
ARITH = 1e-12
GRID = [(0, 1), (1, 1), (0, 7), (3, 7), (7, 7), (12.5, 30), (37, 80), (484, 967), (2512, 3867), (3, 1000)]


@pytest.mark.parametrize("conf", [0.8, 0.9, 0.95, 0.99])
@pytest.mark.parametrize("k,n", GRID)
def test_wilson_matches_statsmodels(k, n, conf):
    ref = proportion_confint(k, n, alpha=1 - conf, method="wilson")
    lo, hi = wilson_interval(k, n, conf)
    assert lo == pytest.approx(ref[0], abs=ARITH) and hi == pytest.approx(ref[1], abs=ARITH)
    if 0 < k < n:   # unclipped: the half-width is half the interval
        assert float(wilson_half_width(k / n, n, conf)) == pytest.approx((ref[1] - ref[0]) / 2, abs=ARITH)


def test_wilson_ends_are_exact_and_empty_is_none():
    assert wilson_interval(0, 9)[0] == 0.0 and wilson_interval(9, 9)[1] == 1.0
    assert wilson_interval(0, 0) == (None, None)
    p = proportion(3, 0)
    assert (p.rate, p.ci_low, p.ci_high) == (None, None, None)


def test_half_width_is_vectorised_and_decreasing():
    hw = wilson_half_width(0.3, np.arange(1, 200), 0.95)
    assert hw.shape == (199,) and np.all(np.diff(hw) < 0)


# Newcombe (1998) Table II, method 10 (score, no continuity correction)
NEWCOMBE = [
    ((56, 70, 48, 80), (0.0524, 0.3339)),
    ((9, 10, 3, 10), (0.1705, 0.8090)),
    ((6, 7, 2, 7), (0.0582, 0.8062)),
    ((5, 56, 0, 29), (-0.0381, 0.1926)),
    ((0, 10, 0, 20), (-0.1611, 0.2775)),
    ((0, 10, 0, 10), (-0.2775, 0.2775)),
    ((10, 10, 0, 20), (0.6791, 1.0000)),
    ((10, 10, 0, 10), (0.6075, 1.0000)),
]


@pytest.mark.parametrize("counts,ref", NEWCOMBE)
def test_newcombe_table_ii(counts, ref):
    d, lo, hi = newcombe_difference(*counts, 0.95)
    k1, n1, k2, n2 = counts
    assert d == pytest.approx(k1 / n1 - k2 / n2, abs=1e-15)
    assert lo == pytest.approx(ref[0], abs=5e-5) and hi == pytest.approx(ref[1], abs=5e-5)  # 4-decimal table


def test_every_caller_uses_the_one_implementation():
    assert diagnostics.wilson_interval is wilson_interval and diagnostics.proportion is proportion
    assert acceptability.newcombe_difference is newcombe_difference and pass_rate.wilson_half_width is wilson_half_width
    r = significance.significance(37, 43, confidence_level=0.9)
    assert (r.wilson.low, r.wilson.high) == wilson_interval(37, 80, 0.9)
    # no second Wilson formula anywhere in the library
    root = Path(__file__).resolve().parents[1] / "planner"
    for f in root.rglob("*.py"):
        if f.name == "proportions.py":
            continue
        text = f.read_text(encoding="utf-8")
        assert not re.search(r"method\s*=\s*[\"']wilson[\"']", text), f
        assert not re.search(r"z \* z / \(4 \* n \* n\)", text), f
