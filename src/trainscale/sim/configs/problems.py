"""The problems of a configuration table, collected with their row and column."""

from __future__ import annotations

import numpy as np

__all__ = ["INT_SHAPE", "SHAPE_GROUP", "Problems"]


INT_SHAPE = ("layers", "hidden", "heads", "kv_heads", "ffn", "vocab")
"""The integer model-shape columns."""
SHAPE_GROUP = {"model", "mlp", *INT_SHAPE}
"""Columns whose problems count as one: the model's shape."""


class Problems:
    """Collects ``(row, column, message)`` problems; rows are positions in the input."""

    def __init__(self, n: int) -> None:
        self.items: list[tuple[int, str, str]] = []
        self.bad = np.zeros(n, dtype=bool)
        self.bad_by_column: dict[str, np.ndarray] = {}

    def add_where(self, mask: np.ndarray, column: str, message) -> None:
        """Record a problem for every row in ``mask``; ``message(row)`` builds the text."""
        for row in np.flatnonzero(mask):
            self.items.append((int(row), column, message(int(row))))
        self.bad |= mask
        group = "shape" if column in SHAPE_GROUP else column
        self.bad_by_column[group] = self.bad_by_column.get(group, False) | mask

    def ok_for(self, *columns: str) -> np.ndarray:
        """Rows whose given columns (and model shape) are valid so far: an interlock between
        valid columns is reported even when another column of the row is invalid."""
        bad = np.zeros_like(self.bad)
        for column in (*columns, "shape"):
            bad = bad | self.bad_by_column.get(column, False)
        return ~bad

    def sorted_items(self) -> list[tuple[int, str, str]]:
        return sorted(self.items, key=lambda item: item[0])
