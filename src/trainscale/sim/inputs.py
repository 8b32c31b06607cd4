"""A configuration table from a user, checked before the simulator validates it.

:func:`missing_configuration_columns` names the required columns a table lacks;
:func:`check_table` converts number columns given as text, strictly
(:mod:`trainscale.io.numbers`: ``1,024``, ``0,5``, a unicode minus or a unit are errors naming
row and column, never reinterpreted); :func:`unknown_column_warnings` names a column that is
not a configuration column but is close to one (``framwork``, ``power_limit``). The range of
every number (:data:`trainscale.schema.NUMERIC_BOUNDS`) is checked with the plan itself, by
:func:`trainscale.sim.configs.build_configs`. ``trainscale predict`` and a user calibration
(:mod:`trainscale.calibrate.user`) share these checks.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable

import numpy as np
import pandas as pd

from trainscale.errors import ConfigurationError, InputFileError
from trainscale.io.numbers import number_problem, parse_number
from trainscale.io.suggest import normalised
from trainscale.schema import (
    CONFIGURATION_COLUMNS,
    DATASET_COLUMNS,
    MAX_GPUS,
    MODEL_SHAPE_COLUMNS,
    NUMERIC_BOUNDS,
    REJECT_COLUMNS,
    column,
    format_number,
)

__all__ = [
    "MAX_GPUS",
    "REQUIRED_COLUMNS",
    "SHAPE_COLUMNS",
    "bounds_markdown",
    "check_table",
    "missing_configuration_columns",
    "unknown_column_warnings",
]

#: Columns every configuration table needs (the shape columns too, unless it has ``model``).
REQUIRED_COLUMNS = (
    "seq_len", "global_batch", "micro_batch", "gpu", "num_gpus", "tp", "pp", "sharding",
    "recompute", "precision",
)  # fmt: skip
#: The model-shape columns, needed where a table has no ``model`` column.
SHAPE_COLUMNS = tuple(c.name for c in MODEL_SHAPE_COLUMNS)
_CONFIG_NAMES = {c.name for c in CONFIGURATION_COLUMNS}
#: Every column trainscale itself writes (a result table fed back in is not warned about).
_KNOWN_NAMES = {c.name for c in (*DATASET_COLUMNS, *REJECT_COLUMNS)}
#: How close (difflib ratio) an unknown column must be to a configuration column to be warned
#: about as its misspelling: ``framwork`` -> framework is 0.94, ``power_limit`` ->
#: power_limit_w 0.92, ``gpus`` -> num_gpus only 0.67 (not warned).
_MISSPELLING_CUTOFF = 0.8


def missing_configuration_columns(table: pd.DataFrame, also: tuple[str, ...] = ()) -> list[str]:
    """The required configuration columns (and ``also``) that ``table`` lacks; the shape columns
    count only without a ``model`` column."""
    missing = [name for name in (*REQUIRED_COLUMNS, *also) if name not in table.columns]
    if "model" not in table.columns:
        missing += [name for name in SHAPE_COLUMNS if name not in table.columns]
    return missing


def unknown_column_warnings(columns: Iterable[object]) -> list[str]:
    """One warning per column that no trainscale table has but that is close to a configuration
    column (a misspelling, whose value would otherwise be ignored for the default), compared
    after :func:`trainscale.io.suggest.normalised` (case and separators ignored). Other
    columns (a user's own labels) are carried through to the output untouched, without a word.
    """
    warnings = []
    by_normal = {normalised(known): known for known in sorted(_CONFIG_NAMES)}
    for name in columns:
        if not isinstance(name, str) or name in _KNOWN_NAMES:
            continue
        # case and separators do not count: GLOBAL_BATCH, power-limit-w, Num GPUs
        close = difflib.get_close_matches(normalised(name), list(by_normal), n=1,
                                          cutoff=_MISSPELLING_CUTOFF)  # fmt: skip
        close = [by_normal[c] for c in close]
        if close:
            warnings.append(
                f"column {name!r} is not a configuration column (did you mean {close[0]!r}?); "
                f"it is carried through unchanged and {close[0]} takes its default"
            )
    return warnings


def _parse_text_column(values: pd.Series) -> tuple[pd.Series, np.ndarray]:
    """A text column's numbers (NaN where empty or not a number) and the rows whose text is not
    a plain number (:func:`trainscale.io.numbers.parse_number`); parsed once per distinct text."""
    codes, uniques = pd.factorize(values, use_na_sentinel=True)
    parsed = []
    bad_unique = []
    for u in uniques:
        text = str(u)
        number = parse_number(text)
        parsed.append(np.nan if number is None else number)
        bad_unique.append(number is None and text.strip() != "")
    index = np.where(codes < 0, len(parsed), codes)
    numbers = np.array([*parsed, np.nan], dtype=np.float64)[index]
    bad = np.array([*bad_unique, False], dtype=bool)[index]
    return pd.Series(numbers, index=values.index), bad


def check_table(table: pd.DataFrame, origin: str, *, keep_text: bool = False) -> pd.DataFrame:
    """The table with schema number columns converted from text, after the input checks.

    A cell of a number column whose text is not a plain number is an error naming row, column
    and what to write instead; with ``keep_text`` it is left as its text, for
    :func:`~trainscale.sim.configs.build_configs` to report with every other problem of the
    table (same reason, plus the column's range), or, skipping invalid rows, to reject that row
    alone while the others are predicted.

    Raises
    ------
    InputFileError
        A required column is missing (the file is named).
    ConfigurationError
        Without ``keep_text``: a number column holds text that is not a plain number (row
        and column named).
    """
    missing = missing_configuration_columns(table)
    if missing:
        raise InputFileError(
            origin,
            f"missing column(s) {', '.join(missing)}; the input needs "
            f"{', '.join(REQUIRED_COLUMNS)} and either 'model' or all of "
            f"{', '.join(SHAPE_COLUMNS)}",
        )
    table = table.copy()
    problems: list[tuple[int, str, str]] = []
    for name in table.columns:
        if name not in _CONFIG_NAMES or column(name).dtype not in ("int64", "float64"):
            continue
        values = table[name]
        if values.dtype.kind in "iufb":
            continue
        numbers, bad = _parse_text_column(values)
        integer = column(name).dtype == "int64"
        problems += [
            (int(i), name, number_problem(str(values.iloc[i]), integer=integer))
            for i in np.flatnonzero(bad)
        ]
        if keep_text and bad.any():
            table[name] = pd.Series(
                np.where(bad, values.to_numpy(dtype=object), numbers.to_numpy(dtype=object)),
                index=values.index, dtype=object,
            )  # fmt: skip
        else:
            table[name] = numbers
    if problems and not keep_text:
        raise ConfigurationError(sorted(problems), origin=origin)
    return table


#: What an empty cell means, for the bounds table (docs/bad-input.md).
_EMPTY_MEANS = {
    **{name: "the model's (with `model`), else an error" for name in SHAPE_COLUMNS},
    "cp": "1 (0 is an error)", "vpp": "1 (0 is an error)",
    "gpus_per_node": "the GPU's default system (so does 0)",
    "nic_gbit_per_s_per_gpu": "the GPU's default system (so does 0)",
    "power_limit_w": "the GPU's TDP, no limit (so does 0)",
}  # fmt: skip


def bounds_markdown() -> str:
    """The bounds table of docs/bad-input.md, generated from
    :data:`~trainscale.schema.NUMERIC_BOUNDS` (a test checks that the page holds it)."""
    lines = [
        "| column | unit | allowed | empty means | why this range |",
        "|---|---|---|---|---|",
    ]
    for name, bound in NUMERIC_BOUNDS.items():
        spec = column(name)
        default = _EMPTY_MEANS.get(name, "an error")
        kind = "whole number" if bound.integer else "number"
        lines.append(
            f"| `{name}` | {spec.unit} | {kind}, {format_number(bound.low)} to "
            f"{format_number(bound.high)} | {default} | {bound.why} |"
        )
    return "\n".join(lines) + "\n"
