"""One cell of a configuration table as a number, and why it is not an allowed one.

Shared by the checks of :mod:`trainscale.sim.configs`: a column read as numbers (text strictly,
:mod:`trainscale.io.numbers`), a value's place in its range (:data:`trainscale.schema.
NUMERIC_BOUNDS`), and the message naming what is wrong with a cell and what is allowed.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from trainscale.io.numbers import number_problem, parse_number
from trainscale.schema import NUMERIC_BOUNDS, Bound, format_number

__all__ = ["fmt", "numeric", "raw", "value_problem", "within"]


def _as_float(value: object) -> float:
    """One cell as a number: a number as it is, text only if it is a plain number
    (:func:`~trainscale.io.numbers.parse_number`), NaN for anything else (booleans included)."""
    if isinstance(value, bool | np.bool_) or value is None:
        return math.nan
    if isinstance(value, str):
        number = parse_number(value)
        return math.nan if number is None else number
    try:
        return float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError, OverflowError):
        return math.nan


def numeric(frame: pd.DataFrame, name: str) -> np.ndarray:
    """Column as float64; NaN where missing or not a number (booleans are not numbers, text is
    read strictly: ``1,024`` is not 1024). Text columns are parsed once per distinct value."""
    if name not in frame.columns:
        return np.full(len(frame), np.nan)
    column = frame[name]
    if column.dtype == bool:
        return np.full(len(frame), np.nan)
    if column.dtype.kind in "iuf":
        return column.to_numpy(dtype=np.float64, na_value=np.nan)
    codes, uniques = pd.factorize(column, use_na_sentinel=True)
    values = np.array([*(_as_float(u) for u in uniques), np.nan], dtype=np.float64)
    return values[np.where(codes < 0, len(uniques), codes)]


def within(values: np.ndarray, bound: Bound) -> np.ndarray:
    """``values`` inside ``bound`` (and whole numbers where it says so); False for NaN."""
    with np.errstate(invalid="ignore"):
        inside = np.isfinite(values) & (values >= bound.low) & (values <= bound.high)
        return inside & (values == np.floor(values)) if bound.integer else inside


def value_problem(frame: pd.DataFrame, name: str, row: int, value: float, note: str = "") -> str:
    """Why one cell of a bounded column (:data:`~trainscale.schema.NUMERIC_BOUNDS`) is not
    allowed: text that is not a number, missing, not a whole number, or outside the range;
    ``value`` is the cell as a number (NaN when it is none); ``note`` ends the message."""
    bound = NUMERIC_BOUNDS[name]
    cell = raw(frame, name, row)
    allowed = f"; allowed: {bound.allowed()}{note}"
    if isinstance(cell, str) and cell.strip() and parse_number(cell) is None:
        return number_problem(cell, integer=bound.integer) + allowed
    if cell is None or (isinstance(cell, str) and not cell.strip()) or _is_na(cell):
        return "missing" + allowed
    shown = fmt(cell)
    if not np.isfinite(value):
        return f"{shown} is not a finite number{allowed}"
    if bound.integer and (value != math.floor(value) or value < 1):
        return f"{shown} is not a positive integer{allowed}"
    unit = f" {bound.noun}" if bound.noun else ""
    if value > bound.high:
        return f"{shown} is above the limit of {format_number(bound.high)}{unit}{allowed}"
    return f"{shown} is below the lower limit of {format_number(bound.low)}{unit}{allowed}"


def _is_na(value: object) -> bool:
    try:
        return bool(pd.isna(value))
    except (TypeError, ValueError):
        return False


def fmt(value: object) -> str:
    """A value as the user wrote it: 8 not np.int64(8), 2.5 not 2.5000, 'x' quoted; a number of
    16 digits or more in exponent form (1e+19)."""
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, int | float) and not isinstance(value, bool) and abs(value) >= 1e15:
        return f"{value:.6g}"
    if isinstance(value, float) and np.isfinite(value) and value == int(value):
        return str(int(value))
    if isinstance(value, int | float):
        return str(value)
    return repr(value)


def raw(frame: pd.DataFrame, name: str, row: int) -> object:
    return frame[name].iloc[row] if name in frame.columns else None
