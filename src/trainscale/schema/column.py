"""One column of a table: its name, dtype, unit and meaning, and its pyarrow type."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import pyarrow as pa

Dtype = Literal["int64", "float64", "string", "bool", "timestamp"]


@dataclass(frozen=True, slots=True, kw_only=True)
class Column:
    """One column of the configuration or result table."""

    name: str
    """Column name; the same from config key to dataclass field to Parquet column."""
    dtype: Dtype
    """Logical type; integers are int64, flags bool, categories string, points in time
    timestamp (naive, nanoseconds)."""
    unit: str
    """SI-style unit ("s", "W", "GiB", "tokens/s"), "1" for counts and fractions."""
    description: str
    """What the column means, with its convention where one is needed."""
    choices: tuple[str, ...] | None = None
    """Allowed values of a categorical column."""
    default: object = None
    """Value used when an optional input column is absent or empty; None means required."""


#: The pyarrow type of each dtype.
ARROW_TYPES = {
    "int64": pa.int64(),
    "float64": pa.float64(),
    "string": pa.string(),
    "bool": pa.bool_(),
    "timestamp": pa.timestamp("ns"),
}


def names(columns: tuple[Column, ...]) -> list[str]:
    """Return the column names, in order."""
    return [c.name for c in columns]
