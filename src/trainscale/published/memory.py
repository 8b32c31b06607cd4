"""Published peak-memory figures against the memory model.

``data/published/memory.csv`` holds the peak memory per GPU that the calibration data's sources
print beside their throughput, one row per figure, keyed by ``csv_row`` (the line of the
throughput row in ``data/published/measurements.csv`` that ran the same configuration):
``measured_mem_gib_per_gpu`` (GiB), ``quantity`` (``max_reserved``: the CUDA caching allocator's
peak reserved memory, what torchtitan's memory monitor prints), ``source``, ``table_or_figure``,
``url`` and ``notes``.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from trainscale.errors import InputFileError
from trainscale.paths import data_dir

__all__ = ["MEMORY_FIGURE_COLUMNS", "load_memory_figures", "memory_accuracy", "memory_summary"]

MEMORY_FIGURE_COLUMNS = (
    "csv_row", "measured_mem_gib_per_gpu", "quantity", "source", "table_or_figure", "url", "notes",
)  # fmt: skip
_QUANTITIES = ("max_reserved",)


def load_memory_figures(path: str | Path | None = None) -> pd.DataFrame:
    """Read and check the published memory figures (default ``data/published/memory.csv``)."""
    path = Path(path) if path is not None else data_dir() / "published" / "memory.csv"
    frame = pd.read_csv(path, dtype=str, keep_default_na=False)
    missing = [c for c in MEMORY_FIGURE_COLUMNS if c not in frame.columns]
    if missing:
        raise InputFileError(path, f"missing column(s) {', '.join(missing)}")
    for row, record in frame.iterrows():
        line = int(row) + 2
        try:
            value = float(record["measured_mem_gib_per_gpu"])
            int(record["csv_row"])
        except ValueError:
            raise InputFileError(
                path, f"line {line}: csv_row must be an integer and measured_mem_gib_per_gpu a "
                f"number, got {record['csv_row']!r}, {record['measured_mem_gib_per_gpu']!r}",
            ) from None  # fmt: skip
        if not np.isfinite(value) or value <= 0:
            raise InputFileError(path, f"line {line}: measured_mem_gib_per_gpu must be > 0")
        if record["quantity"] not in _QUANTITIES:
            raise InputFileError(
                path, f"line {line}: quantity {record['quantity']!r}; allowed: {_QUANTITIES}"
            )
    return frame.assign(
        csv_row=frame["csv_row"].astype(int),
        measured_mem_gib_per_gpu=frame["measured_mem_gib_per_gpu"].astype(float),
    )


def memory_accuracy(throughput: pd.DataFrame, figures: pd.DataFrame) -> pd.DataFrame:
    """One row per figure: ``figures``' columns plus the predicted ``mem_gib_per_gpu`` of the
    throughput row with the same ``csv_row`` (``throughput``: predicted published rows, e.g.
    :func:`trainscale.published.accuracy.throughput_predictions`) and ``error_pct`` (predicted
    over measured, −1, in %). Figures whose row was not predicted (a subset of the published
    rows) are left out; ``attrs["left_out"]`` counts them."""
    predicted = throughput.set_index("csv_row")["mem_gib_per_gpu"]
    present = figures["csv_row"].isin(predicted.index)
    figures = figures[present].reset_index(drop=True)
    out = figures.assign(mem_gib_per_gpu=predicted.loc[figures["csv_row"]].to_numpy())
    out["error_pct"] = 100.0 * (out["mem_gib_per_gpu"] / out["measured_mem_gib_per_gpu"] - 1.0)
    out.attrs["left_out"] = int((~present).sum())
    return out


def memory_summary(accuracy: pd.DataFrame) -> pd.DataFrame:
    """Per source and table: ``rows``, ``mape_pct`` (mean absolute error, %), ``min_error_pct``
    and ``max_error_pct`` (%)."""
    grouped = accuracy.groupby(["source", "table_or_figure"], sort=False)["error_pct"]
    return pd.DataFrame({
        "rows": grouped.size(),
        "mape_pct": grouped.apply(lambda e: e.abs().mean()),
        "min_error_pct": grouped.min(),
        "max_error_pct": grouped.max(),
    }).reset_index()  # fmt: skip
