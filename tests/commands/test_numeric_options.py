"""Every numeric option of every command is read as strictly as a table value
(:mod:`trainscale.io.numbers`): ``nan``, ``inf``, separators, units and non-ASCII minus signs
are a usage error naming the option (exit status 2), never a number."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from trainscale.cli import _build_parser
from trainscale.io.numbers import option_float, option_int, parse_number


def _numeric_options() -> list[tuple[str, str, argparse.Action]]:
    parser = _build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    out = []
    for command, command_parser in sub.choices.items():
        for action in command_parser._actions:
            if action.option_strings and action.type not in (None, str, Path):
                out.append((command, action.option_strings[-1], action))
    return out


OPTIONS = _numeric_options()


def test_no_option_reads_numbers_with_float_or_int() -> None:
    assert OPTIONS, "no numeric option found"
    loose = [(c, o) for c, o, action in OPTIONS if action.type in (float, int)]
    assert not loose, f"read with float()/int(), which take nan, inf and 1_000: {loose}"


_BAD = st.one_of(
    st.sampled_from(["nan", "NaN", "inf", "-inf", "Infinity", "1_000", "1,5", "1,024", "0x80",
                     "10GB", "\u22121", "", " ", "1e", "--"]),
    st.from_regex(r"\A[0-9]{1,4}(,[0-9]{3}){1,2}\Z"),
    st.from_regex(r"\A[0-9]{1,3} ?[a-zA-Z%]{1,4}\Z"),  # a unit; surrounding blanks are stripped
)  # fmt: skip


@settings(max_examples=300, deadline=None)
@given(option=st.sampled_from(OPTIONS), text=_BAD)
def test_a_number_that_is_not_plain_is_a_usage_error(
    option: tuple[str, str, argparse.Action], text: str
) -> None:
    _, _, action = option
    with pytest.raises((argparse.ArgumentTypeError, ValueError, TypeError)):
        action.type(text)


@settings(max_examples=300, deadline=None)
@given(value=st.floats(allow_nan=False, allow_infinity=False, min_value=0, max_value=1e12))
def test_a_plain_number_reads_as_written(value: float) -> None:
    assert option_float(repr(value)) == value == parse_number(repr(value))
    if value.is_integer():
        assert option_int(str(int(value))) == int(value)


@pytest.mark.parametrize("text", ["nan", "inf", "-1", "1,5", "5%"])
def test_validate_max_mape_is_strict(text: str, capsys: pytest.CaptureFixture[str]) -> None:
    from trainscale.cli import main

    with pytest.raises(SystemExit) as exit_:
        main(["validate", "--max-mape", text])
    assert exit_.value.code == 2
    assert "argument --max-mape" in capsys.readouterr().err


def test_calibrate_profile_values_are_strict(capsys: pytest.CaptureFixture[str]) -> None:
    from trainscale.cli import main

    assert main(["calibrate", "--profile", "nccl_latency_scale=1,nan"]) == 2
    assert "'nan' is not a finite number" in capsys.readouterr().err


@pytest.mark.parametrize(
    "text, integer, message",
    [
        ("0x80", False, "'0x80' is not a number: a hexadecimal number; write it in decimal, 128"),
        ("1,28", True, "'1,28' is not a whole number: the column holds whole numbers"),
        ("1,28", False, "'1,28' is not a number: a decimal comma; write a decimal point, 1.28"),
    ],
)
def test_hex_and_comma_messages(text: str, integer: bool, message: str) -> None:
    from trainscale.io.numbers import number_problem

    assert number_problem(text, integer=integer).startswith(message)
