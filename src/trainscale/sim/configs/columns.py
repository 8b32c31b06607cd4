"""Columns of a configuration table read as codes, numbers, choices and flags, problems noted.

Each reader works on a column's distinct values (one factorisation) and records what is wrong with
a cell in a :class:`~trainscale.sim.configs.problems.Problems`.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from trainscale.schema import (
    MOE_ROUTINGS,
    NUMERIC_BOUNDS,
)
from trainscale.schema.bounds import CAPACITY_FACTOR_BOUND
from trainscale.sim.cells import numeric as _numeric
from trainscale.sim.cells import raw as _raw
from trainscale.sim.cells import value_problem as _value_problem
from trainscale.sim.cells import within as _within
from trainscale.sim.configs.problems import Problems

__all__ = [
    "choice_codes",
    "coded_text",
    "lora_ranks",
    "missing_mask",
    "optional_bool",
    "optional_choice",
    "optional_choice_codes",
    "optional_positive",
    "per_row",
    "positive_ints",
    "stripped_text",
    "text_lookup",
]


_TRUE = {"true", "1", "yes", "t", "y"}
_FALSE = {"false", "0", "no", "f", "n"}


def coded_text(
    frame: pd.DataFrame, name: str, *, lower: bool = False
) -> tuple[np.ndarray, list[str]]:
    """Column as codes into its stripped (and maybe lower-cased) distinct values, with one
    factorisation: ``(codes, values)``, where a missing cell has the code ``len(values) - 1``,
    whose value is ""."""
    if name not in frame.columns:
        return np.zeros(len(frame), dtype=np.intp), [""]
    codes, uniques = pd.factorize(frame[name], use_na_sentinel=True)
    cleaned = [str(u).strip().lower() if lower else str(u).strip() for u in uniques]
    return np.where(codes < 0, len(cleaned), codes), [*cleaned, ""]


def stripped_text(frame: pd.DataFrame, name: str, *, lower: bool = False) -> np.ndarray:
    """Column as stripped strings; "" where missing. Works on the unique values only."""
    codes, values = coded_text(frame, name, lower=lower)
    return np.array(values, dtype=object)[codes]


def text_lookup(
    frame: pd.DataFrame, name: str, mapping: dict, default: int, *, lower: bool = False
) -> np.ndarray:
    """``mapping.get(text, default)`` for the column's stripped text, per row (int64)."""
    codes, values = coded_text(frame, name, lower=lower)
    return np.array([mapping.get(v, default) for v in values], dtype=np.int64)[codes]


def per_row(codes: np.ndarray, values: list, test) -> np.ndarray:
    """``test(value)`` for each row's value, evaluated once per distinct value: ``codes`` and
    ``values`` as :func:`coded_text` returns them (bool, shape ``(n,)``)."""
    return np.array([bool(test(v)) for v in values], dtype=bool)[codes]


def missing_mask(frame: pd.DataFrame, name: str) -> np.ndarray:
    if name not in frame.columns:
        return np.ones(len(frame), dtype=bool)
    column = frame[name]
    missing = column.isna().to_numpy(dtype=bool, copy=True)
    if column.dtype == object or pd.api.types.is_string_dtype(column):
        codes, values = coded_text(frame, name)
        missing |= per_row(codes, values, lambda v: v == "")
    return missing


def positive_ints(
    frame: pd.DataFrame, names: tuple[str, ...], problems: Problems, default: int | None = None
) -> dict[str, np.ndarray]:
    out = {}
    for name in names:
        values = _numeric(frame, name)
        missing = missing_mask(frame, name)
        if default is not None:
            values = np.where(missing, float(default), values)
        bad = ~_within(values, NUMERIC_BOUNDS[name])
        note = f" (empty: {default})" if default is not None else ""
        problems.add_where(
            bad, name,
            lambda r, name=name, note=note, values=values: (
                _value_problem(frame, name, r, values[r], note)
            ),
        )  # fmt: skip
        out[name] = np.where(bad, 1, values).astype(np.int64)
    return out


def choice_codes(
    frame: pd.DataFrame, name: str, allowed: tuple[str, ...], problems: Problems
) -> np.ndarray:
    index = text_lookup(frame, name, {t: i for i, t in enumerate(allowed)}, -1, lower=True)
    text = stripped_text(frame, name) if (index < 0).any() else None
    problems.add_where(
        index < 0, name,
        lambda r: ("missing" if text[r] == "" else f"{_raw(frame, name, r)!r} is not allowed")
        + f"; allowed: {', '.join(allowed)}",
    )  # fmt: skip
    return np.where(index < 0, 0, index)


#: ``lora_rank``: empty means this rank; allowed whole numbers from 1 to :data:`MAX_LORA_RANK`.
DEFAULT_LORA_RANK = 16
MAX_LORA_RANK = 65_536


def lora_ranks(frame: pd.DataFrame, problems: Problems) -> np.ndarray:
    """The optional ``lora_rank`` column: whole numbers 1 to :data:`MAX_LORA_RANK`, empty or
    absent :data:`DEFAULT_LORA_RANK`."""
    if "lora_rank" not in frame.columns:
        return np.full(len(frame), DEFAULT_LORA_RANK, dtype=np.int64)
    values = _numeric(frame, "lora_rank")
    values = np.where(missing_mask(frame, "lora_rank"), float(DEFAULT_LORA_RANK), values)
    bad = ~(np.isfinite(values) & (values >= 1) & (values <= MAX_LORA_RANK)
            & (values == np.floor(np.where(np.isfinite(values), values, 0))))  # fmt: skip
    problems.add_where(
        bad, "lora_rank",
        lambda r: f"{_raw(frame, 'lora_rank', r)!r} is not allowed; allowed: a whole number "
        f"from 1 to {MAX_LORA_RANK:,} (empty: {DEFAULT_LORA_RANK})",
    )  # fmt: skip
    return np.where(bad, DEFAULT_LORA_RANK, values).astype(np.int64)


def optional_choice_codes(
    frame: pd.DataFrame, name: str, allowed: tuple[str, ...], problems: Problems
) -> np.ndarray:
    """:func:`choice_codes` of an optional column: absent or empty is ``allowed[0]``."""
    if name not in frame.columns:
        return np.zeros(len(frame), dtype=np.int64)
    empty = missing_mask(frame, name)
    if empty.all():
        return np.zeros(len(frame), dtype=np.int64)
    filled = frame.assign(**{name: frame[name].astype(object).where(~empty, allowed[0])})
    return choice_codes(filled, name, allowed, problems)


def optional_number(frame: pd.DataFrame, name: str, problems: Problems, note: str) -> np.ndarray:
    """Optional number within :data:`~trainscale.schema.NUMERIC_BOUNDS`, 0 or empty meaning
    absent; NaN where absent or invalid (each invalid cell a problem, ``note`` saying what else is
    allowed)."""
    values = _numeric(frame, name)
    missing = missing_mask(frame, name) | (values == 0)
    bad = ~missing & ~_within(values, NUMERIC_BOUNDS[name])
    problems.add_where(bad, name, lambda r: _value_problem(frame, name, r, values[r], note))
    return np.where(missing | bad, np.nan, values)


def capacity_factors(frame: pd.DataFrame, routing: np.ndarray, problems: Problems) -> np.ndarray:
    """The ``capacity_factor`` column: the row's value (1 where empty), within
    :data:`~trainscale.schema.bounds.CAPACITY_FACTOR_BOUND`, for ``moe_routing`` capacity only;
    anything else is a problem."""
    values = _numeric(frame, "capacity_factor")
    given = ~missing_mask(frame, "capacity_factor")
    bad = given & ~_within(values, CAPACITY_FACTOR_BOUND)
    problems.add_where(
        bad, "capacity_factor",
        lambda r: f"{_raw(frame, 'capacity_factor', r)!r} is not allowed; allowed: "
        f"{CAPACITY_FACTOR_BOUND.allowed()} (empty: 1)",
    )  # fmt: skip
    capacity = MOE_ROUTINGS.index("capacity")
    problems.add_where(
        given & ~bad & (routing != capacity), "capacity_factor",
        lambda r: f"capacity_factor {values[r]:g} applies to moe_routing capacity only; "
        f"moe_routing is {MOE_ROUTINGS[routing[r]]}",
    )  # fmt: skip
    return np.where(given & ~bad, values, 1.0)


def optional_positive(frame: pd.DataFrame, name: str, problems: Problems) -> np.ndarray:
    """:func:`optional_number` where 0 or empty means "use the default system"."""
    return optional_number(frame, name, problems, ", or 0 or empty for the GPU's default system")


def _as_number(text: str) -> float:
    """``text`` as a number, NaN where it is none (as ``pd.to_numeric(errors="coerce")``)."""
    try:
        return float(text)
    except ValueError:
        return math.nan


def optional_bool(
    frame: pd.DataFrame, name: str, problems: Problems, default: np.ndarray, default_text: str
) -> tuple[np.ndarray, np.ndarray]:
    """Optional boolean column; returns (values with ``default`` where empty, given mask)."""
    if name not in frame.columns:
        return default, np.zeros(len(frame), dtype=bool)
    column = frame[name]
    if column.dtype == bool:
        return column.to_numpy(dtype=bool), np.ones(len(frame), dtype=bool)
    # Decided on the distinct values: empty, a word of _TRUE or _FALSE, or the number 1 or 0.
    codes, values = coded_text(frame, name, lower=True)
    missing = per_row(codes, values, lambda v: v == "")
    true = per_row(codes, values, lambda v: v in _TRUE or _as_number(v) == 1)
    false = per_row(codes, values, lambda v: v in _FALSE or _as_number(v) == 0)
    bad = ~missing & ~true & ~false
    problems.add_where(
        bad, name,
        lambda r: f"{_raw(frame, name, r)!r} is not allowed; allowed: true, false "
        f"(default: {default_text})",
    )  # fmt: skip
    given = ~missing & ~bad
    return np.where(given, true, default), given


def optional_choice(
    frame: pd.DataFrame, name: str, allowed: tuple[str, ...], problems: Problems
) -> np.ndarray:
    """Optional categorical column: index into ``allowed``, -1 where empty or invalid."""
    if name not in frame.columns:
        return np.full(len(frame), -1, dtype=np.int64)
    codes, values = coded_text(frame, name, lower=True)
    index = np.array([allowed.index(v) if v in allowed else -1 for v in values])[codes]
    empty = per_row(codes, values, lambda v: v == "")
    problems.add_where(
        ~empty & (index < 0), name,
        lambda r: f"{_raw(frame, name, r)!r} is not allowed; allowed: {', '.join(allowed)} "
        "(or empty for the framework profile's)",
    )  # fmt: skip
    return index
