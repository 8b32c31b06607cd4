"""Expanding a study's sweep into its grid, block by block (:func:`grid_blocks`).

The grid is the cartesian product of the sweep lists (last axis fastest) plus the fixed values.
Blocks of at most :data:`BLOCK_ROWS` rows are built from their row numbers by index arithmetic,
so memory holds one block and never the whole grid. Each column is typed as
:data:`trainscale.schema.CONFIGURATION_COLUMNS` declares it (``micro_batch`` ``"auto"`` becomes
null). Which rows survive is decided afterwards, by :mod:`trainscale.study.rules`.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np
import pandas as pd

from trainscale.schema import Column
from trainscale.study.spec import AUTO, Study, configuration_columns

__all__ = ["BLOCK_ROWS", "grid_blocks"]

#: Grid rows expanded, filtered and written at a time: memory holds one block, never the grid.
BLOCK_ROWS = 1 << 16


def _typed(values: np.ndarray, column: Column) -> pd.Series:
    series = pd.Series(values, dtype=object)
    if column.name == "micro_batch":
        series = series.where(series != AUTO, None)
    if column.dtype == "int64":
        return pd.to_numeric(series).astype("Int64")
    if column.dtype == "float64":
        return pd.to_numeric(series).astype("float64")
    if column.dtype == "bool":
        return series.astype("boolean")
    return series.astype("string")


def grid_blocks(study: Study, block_rows: int = BLOCK_ROWS) -> Iterator[tuple[int, pd.DataFrame]]:
    """Yield ``(first grid row, block)``: the grid in order, at most ``block_rows`` rows a block.

    The grid is the cartesian product of the sweep axes (last axis fastest) plus the fixed
    values. Each block is built from its row numbers by index arithmetic over the sweep lists
    (:func:`numpy.unravel_index`), so the full grid is never materialised: a sweep of 10^7 rows
    costs the memory of one block. Each axis's values are typed once; a block column is a
    ``take`` of them.
    """
    if block_rows < 1:
        raise ValueError(f"block_rows must be at least 1, got {block_rows}")
    columns = configuration_columns(study)
    axes = list(study.sweep)
    sizes = [len(study.sweep[key]) for key in axes]
    typed: dict[str, Any] = {}
    for c in columns:
        if c.name in study.sweep:
            values = study.sweep[c.name]
        elif c.name in study.fixed:
            values = [study.fixed[c.name]]
        else:  # global_batch, filled by derive
            values = [0]
        typed[c.name] = _typed(np.array(values, dtype=object), c).array
    total = study.grid_size
    for first in range(0, total, block_rows):
        positions = np.arange(first, min(first + block_rows, total), dtype=np.int64)
        index = dict(zip(axes, np.unravel_index(positions, sizes), strict=True)) if axes else {}
        zeros = np.zeros(len(positions), dtype=np.int64)
        block = pd.DataFrame(
            {name: values.take(index.get(name, zeros)) for name, values in typed.items()},
            index=pd.RangeIndex(len(positions)),
        )
        yield first, block
