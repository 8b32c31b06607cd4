"""Strict reading of numbers written as text: a plain decimal number, or a named error.

pandas and Python read more than a plain number (``float("1_024")`` is 1024, ``float("inf")`` is
infinite) and a lenient reader strips what it does not understand (``"1,024"`` -> 1024, and a
decimal comma ``"0,5"`` -> 5, ten times too large). Here only a plain decimal number is a number:
an optional sign, digits with at most one ``.``, an optional exponent (``4096``, ``-2``, ``0.5``,
``.5``, ``1e3``, ``2.5E-3``). Anything else gets a reason that says what to write instead.
"""

from __future__ import annotations

import argparse
import re
from collections.abc import Callable

__all__ = ["number_problem", "option_float", "option_int", "option_number", "parse_number"]

_PLAIN = re.compile(r"[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?")
_THOUSANDS = re.compile(
    r"[+-]?\d{1,3}(?:[,' _\u00a0\u202f]\d{3})+(?:\.\d+)?|[+-]?\d{1,3}(?:\.\d{3}){2,}"
)
_HEX = re.compile(r"[+-]?0[xX][0-9a-fA-F_]+")
_DECIMAL_COMMA = re.compile(r"[+-]?\d*,\d+")
_WITH_UNIT = re.compile(r"([+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?)\s*([A-Za-z%/µ][\w/%.\- ]*)")
#: Dashes that look like a minus sign but are not ASCII '-'.
_DASHES = "\u2212\u2012\u2013\u2014\u2010\u2011\ufe63\uff0d"


def parse_number(text: str) -> float | None:
    """``text`` (stripped) as a float if it is a plain decimal number, else None."""
    s = text.strip()
    return float(s) if _PLAIN.fullmatch(s) else None


def number_problem(text: str, *, integer: bool = False) -> str:
    """Why ``text`` is not a plain number, with what to write instead (``text`` quoted);
    ``integer``: the column holds whole numbers, so ``1,500`` can only be 1500."""
    s = text.strip()
    shown = repr(text)
    if s == "":
        return "missing"
    if any(dash in s for dash in _DASHES):
        plain = "".join("-" if ch in _DASHES else ch for ch in s)
        return f"{shown} is not a number: its minus sign is not ASCII '-'; write {plain}"
    if _THOUSANDS.fullmatch(s):
        plain = re.sub(r"[,' _\u00a0\u202f]", "", s)
        plain = plain.replace(".", "") if s.count(".") > 1 else plain
        # 1,500: a thousands separator or a decimal comma (only the first in an integer column)
        if not integer and _DECIMAL_COMMA.fullmatch(s):
            return (
                f"{shown} is not a number: a thousands separator or a decimal comma; write "
                f"{plain} or {s.replace(',', '.')}"
            )
        return f"{shown} is not a number: write it without a thousands separator, {plain}"
    if _HEX.fullmatch(s):
        return (
            f"{shown} is not a number: a hexadecimal number; write it in decimal, "
            f"{int(s.replace('_', ''), 16)}"
        )
    if _DECIMAL_COMMA.fullmatch(s) and integer:
        return (
            f"{shown} is not a whole number: the column holds whole numbers and a comma is "
            "neither a decimal point nor a thousands separator (groups of three digits); write "
            "the number without it"
        )
    if _DECIMAL_COMMA.fullmatch(s):
        return (
            f"{shown} is not a number: a decimal comma; write a decimal point, "
            f"{s.replace(',', '.')}"
        )
    if match := _WITH_UNIT.fullmatch(s):
        return (
            f"{shown} is not a number: it carries a unit ({match.group(2).strip()!r}); write the "
            f"bare number in the column's unit, e.g. {match.group(1)}"
        )
    lowered = s.lower().lstrip("+-")
    if lowered in ("inf", "infinity", "nan"):
        return f"{shown} is not a finite number"
    return f"{shown} is not a number"


def option_float(text: str) -> float:
    """A command-line option's number, read as strictly as a table's (:func:`parse_number`):
    no ``nan``, ``inf``, separators or units (an ``argparse`` type: a bad value is a usage
    error naming the option, exit status 2)."""
    number = parse_number(text)
    if number is None:
        raise argparse.ArgumentTypeError(number_problem(text))
    return number


def option_int(text: str) -> int:
    """An option's whole number (``4096``, ``1e3``), read as :func:`option_float`."""
    number = option_float(text)
    if not number.is_integer():
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number")
    return int(text) if text.strip().lstrip("+-").isdigit() else int(number)


def option_number(*, minimum: float | None = None, integer: bool = False) -> Callable[[str], float]:
    """An ``argparse`` type: :func:`option_float` (or :func:`option_int`) at least ``minimum``."""

    def read(text: str) -> float:
        number = option_int(text) if integer else option_float(text)
        if minimum is not None and number < minimum:
            raise argparse.ArgumentTypeError(f"{text!r} is below the smallest allowed, {minimum:g}")
        return number

    read.__name__ = "integer" if integer else "number"
    return read
