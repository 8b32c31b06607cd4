"""A configuration table from a user, checked before the simulator validates it.

:func:`missing_configuration_columns` names the required columns a table lacks;
:func:`check_table` converts number columns given as text and refuses text that is not a number
and GPU counts above :data:`MAX_GPUS`, naming row and column. ``trainscale predict`` and a user
calibration (:mod:`trainscale.calibrate.user`) share these checks.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from trainscale.errors import ConfigurationError, InputFileError
from trainscale.schema import CONFIGURATION_COLUMNS, MODEL_SHAPE_COLUMNS, column

__all__ = [
    "MAX_GPUS",
    "REQUIRED_COLUMNS",
    "SHAPE_COLUMNS",
    "check_table",
    "missing_configuration_columns",
]

#: The most GPUs one configuration may have: 2^20 = 1,048,576, several times any cluster
#: built or announced; above it the simulator's integer arithmetic (dp, batches) is meaningless
#: (from 2^53 a float64 cannot even hold the count).
MAX_GPUS = 2**20
#: Columns every configuration table needs (the shape columns too, unless it has ``model``).
REQUIRED_COLUMNS = (
    "seq_len", "global_batch", "micro_batch", "gpu", "num_gpus", "tp", "pp", "sharding",
    "recompute", "precision",
)  # fmt: skip
#: The model-shape columns, needed where a table has no ``model`` column.
SHAPE_COLUMNS = tuple(c.name for c in MODEL_SHAPE_COLUMNS)
_CONFIG_NAMES = {c.name for c in CONFIGURATION_COLUMNS}


def missing_configuration_columns(table: pd.DataFrame, also: tuple[str, ...] = ()) -> list[str]:
    """The required configuration columns (and ``also``) that ``table`` lacks; the shape columns
    count only without a ``model`` column."""
    missing = [name for name in (*REQUIRED_COLUMNS, *also) if name not in table.columns]
    if "model" not in table.columns:
        missing += [name for name in SHAPE_COLUMNS if name not in table.columns]
    return missing


def check_table(table: pd.DataFrame, origin: str) -> pd.DataFrame:
    """The table with schema number columns converted from text, after the input checks.

    Raises
    ------
    InputFileError
        A required column is missing (the file is named).
    ConfigurationError
        A number column holds text that is not a number, or ``num_gpus`` is above
        :data:`MAX_GPUS` (row and column named).
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
        text = values.astype("string").str.strip()
        numbers = pd.to_numeric(text.str.replace(",", "", regex=False), errors="coerce")
        bad = numbers.isna() & text.notna() & (text != "")
        problems += [
            (int(i), name, f"{values.iloc[i]!r} is not a number")
            for i in np.flatnonzero(bad.to_numpy())
        ]
        table[name] = numbers
    if "num_gpus" in table.columns and table["num_gpus"].dtype.kind in "iuf":
        gpus = table["num_gpus"].to_numpy(dtype=float)
        for i in np.flatnonzero(gpus > MAX_GPUS):
            problems.append(
                (
                    int(i),
                    "num_gpus",
                    f"{table['num_gpus'].iloc[i]:.6g} is above the limit of {MAX_GPUS:,} GPUs "
                    "(2^20, more than any cluster); allowed: 1 to 1,048,576",
                )
            )
    if problems:
        raise ConfigurationError(sorted(problems), origin=origin)
    return table
