"""The documented maxima (planner/limits.py) match the --help texts and docs/guide.md, and each
maximum is enforced at exactly its value (the maximum passes the check, one more is refused)."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from cli.main import app
from planner import limits
from planner.errors import UsageError

runner = CliRunner()
GUIDE = Path(__file__).resolve().parents[1] / "docs" / "guide.md"


def _help(cmd):
    r = runner.invoke(app, [cmd, "--help"], terminal_width=400)
    assert r.exit_code == 0
    return " ".join(r.stdout.split())


@pytest.mark.parametrize("cmd, text", [
    ("size", f"1 <= K <= {limits.MAX_LOOKS}"),
    ("size", f"at most {limits.MAX_JUDGMENTS:,}"),
    ("size", f"{limits.MAX_EXACT_N:,} comparisons per pair"),
    ("size", f"2 <= M <= {limits.MAX_SYSTEMS:,}"),
    ("significance", f"1 <= K <= {limits.MAX_LOOKS}"),
    ("allocate", f"1 to {limits.MAX_PROMPT_BUDGET:,}"),
    ("report", f"1 to {limits.MAX_DRAWS:,}"),
    ("report", f"1 to {limits.MAX_CHAINS}"),
    ("decide", f"1 <= K <= {limits.MAX_LOOKS}"),
    ("simulate", f"2 to {limits.MAX_SIM_SYSTEMS}"),
    ("simulate", f"1 to {limits.MAX_WORKERS}"),
    ("simulate", f"-{limits.MAX_POSITION:g} to {limits.MAX_POSITION:g}"),
    ("simulate", f"0 to {limits.MAX_SPREAD:,.0f}"),
    ("demo", f"1 to {limits.MAX_DEMO_ROUNDS}"),
])
def test_help_states_the_maximum(cmd, text):
    assert text in _help(cmd)


def test_guide_lists_the_maxima():
    guide = GUIDE.read_text(encoding="utf-8")
    assert "## Limits and refused input" in guide
    for v in (limits.MAX_EXACT_N, limits.MAX_JUDGMENTS, limits.MAX_DRAWS, limits.MAX_PROMPT_BUDGET):
        assert f"{v:,}" in guide


@pytest.mark.parametrize("high", [limits.MAX_LOOKS, limits.MAX_DRAWS, limits.MAX_SIM_SYSTEMS])
def test_maximum_is_inclusive(high):
    assert limits.check_int("x", high, 1, high) == high
    with pytest.raises(UsageError, match=r"`x` \(\d+\) must be an integer <= "):
        limits.check_int("x", high + 1, 1, high)


def test_huge_and_odd_values_are_quoted_short():
    with pytest.raises(UsageError) as e:
        limits.check_int("wins", int("9" * 500), 0, limits.MAX_COUNT)
    assert "an integer of 500 digits" in str(e.value) and len(str(e.value)) < 200
    for bad in (True, 2.5, "3", None):
        with pytest.raises(UsageError, match="`n`"):
            limits.check_int("n", bad, 0, 10)
    for bad in (float("inf"), float("nan"), -1e-9, "x", 10 ** 400):
        with pytest.raises(UsageError, match=r"`spread` .* must be a finite number"):
            limits.check_float("spread", bad, 0, limits.MAX_SPREAD)
    assert limits.check_seed("seed", None) is None
    assert limits.check_seed("seed", 2 ** 63 - 1) == 2 ** 63 - 1
    for bad in (-1, 2 ** 63, 1.0):
        with pytest.raises(UsageError, match=r"`seed` .* must be an integer in \[0, 2\*\*63 - 1\]"):
            limits.check_seed("seed", bad)


def test_size_refuses_tiny_effect_fast():
    """--effect 1e-300 used to raise OverflowError; 1e-9 to allocate an impossible array."""
    import time

    from planner.stats.power import size

    t = time.perf_counter()
    for eff in (1e-300, 1e-9, 1e-4):
        with pytest.raises(UsageError, match="`effect`"):
            size(eff)
    assert time.perf_counter() - t < 5
    assert size(0.005).comparisons_exact <= limits.MAX_EXACT_N  # just inside the limit still runs
