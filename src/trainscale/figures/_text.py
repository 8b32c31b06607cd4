"""Text helpers of the figures."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["seq_and_batch", "shorten"]


def _values(rows: pd.DataFrame, column: str) -> str:
    """The value of ``column`` in ``rows`` with a thousands separator, or ``low–high`` where the
    rows hold several."""
    values = sorted(int(v) for v in rows[column].dropna().unique())
    if not values:
        return "?"
    low, high = values[0], values[-1]
    return f"{low:,}" if low == high else f"{low:,}–{high:,}"


def seq_and_batch(rows: pd.DataFrame) -> str:
    """``seq 4,096, global batch 2,048``: the sequence length (tokens) and global batch
    (sequences) of the simulated ``rows``, read from their ``seq_len`` and ``global_batch``
    columns, so that a figure's setup note says what was simulated."""
    return f"seq {_values(rows, 'seq_len')}, global batch {_values(rows, 'global_batch')}"


def shorten(text: str, width: int) -> str:
    """``text`` in at most ``width`` characters, cut at the last word boundary that fits (never
    mid-word) with ``…`` after it; whitespace collapsed. A first word longer than ``width`` is
    cut at ``width - 1``."""
    text = " ".join(str(text).split())
    if len(text) <= width:
        return text
    head = text[: width - 1]
    if text[width - 1] != " " and " " in head:
        head = head[: head.rindex(" ")]
    return head.rstrip(" ,;:—-") + "…"
