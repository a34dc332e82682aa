"""The library speaks in parameter names; the CLI names its flags (issue 12).

An error about an option names the parameter (``batch_size``) and lists it in
``parameters``; ``cli/common.call`` prints it with the command's flag
(``--batch-size``), so the user of the command line and the user of the
library each read the name they typed.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from planner.errors import DataError, UsageError, flag_for
from planner.limits import check_float, check_int, check_input_file

ROOT = Path(__file__).resolve().parents[1]


def test_the_message_names_the_parameter_and_the_cli_its_flag():
    exc = UsageError("`batch_size` (0) must be an integer >= 1", parameters="batch_size")
    assert str(exc) == "`batch_size` (0) must be an integer >= 1"
    assert exc.render() == "`batch_size` (0) must be an integer >= 1"
    assert exc.render(True) == "--batch-size (0) must be an integer >= 1"
    assert exc.lines(True) == ["--batch-size (0) must be an integer >= 1"]


def test_a_command_whose_flag_has_another_name_maps_it():
    exc = UsageError("`n_systems` (1) must be an integer >= 2", parameters=("n_systems",))
    assert exc.render({"n_systems": "--systems"}) == "--systems (1) must be an integer >= 2"
    assert exc.render({}) == "--n-systems (1) must be an integer >= 2"


def test_two_parameters_and_the_problems_lines_are_renamed():
    exc = DataError("`candidate` and `baseline` (x) must be different systems", ["see `baseline`"],
                    parameters=("candidate", "baseline"))
    assert exc.lines(True) == ["--candidate and --baseline (x) must be different systems", "see --baseline"]


def test_only_the_backquoted_name_is_renamed():
    # the same word as plain English, inside a quoted value or a path keeps its spelling
    exc = DataError("no judgment has both responses stored ('responses', /tmp/responses); load them with "
                    "`responses`", parameters="responses")
    assert exc.render(True) == ("no judgment has both responses stored ('responses', /tmp/responses); load them "
                                "with --responses")


def test_without_parameters_nothing_changes():
    exc = UsageError("budget must be positive")
    assert exc.render(True) == "budget must be positive"


def test_limits_checks_name_the_parameter():
    with pytest.raises(UsageError) as info:
        check_int("batch_size", 0, 1, 10)
    assert info.value.parameters == ("batch_size",)
    assert info.value.message.startswith("`batch_size` (0)")
    assert info.value.render(True).startswith("--batch-size (0)")
    with pytest.raises(UsageError) as info:
        check_float("tie_rate", float("nan"), 0, 1)
    assert info.value.render(True).startswith("--tie-rate (nan)")
    with pytest.raises(UsageError) as info:
        check_input_file("prompts", ROOT / "no-such-file.jsonl")
    assert info.value.render(True).startswith("--prompts (")


def test_flag_for():
    assert flag_for("min_pass_rate") == "--min-pass-rate"
    assert flag_for("seed") == "--seed"
