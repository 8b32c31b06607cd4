"""Columns that tables in different modules share, each defined once.

A table that holds one of these holds the very same column (name, dtype, unit and description);
a column that only reads alike elsewhere but says something else there is defined with its table.
"""

from __future__ import annotations

from trainscale.schema.column import Column, _c

RUN_ID = _c("run_id", "string", "1", "run folder under data/runs")
"""A measured run: its folder under ``data/runs``."""

THROUGHPUT_MAPE_PCT = _c(
    "throughput_mape_pct",
    "float64",
    "%",
    "mean absolute percentage error of the refit's tokens/s per GPU, published rows",
)
"""A refitted calibration's in-sample error on the published throughputs, in percent."""

POINTS_FITTED = _c("n", "int64", "1", "points fitted")
"""How many points a fit used."""

X_MIN = _c("x_min", "float64", "see x", "smallest x of the series")
"""Smallest x of a fitted series, in the x column's unit."""

X_MAX = _c("x_max", "float64", "see x", "largest x of the series")
"""Largest x of a fitted series, in the x column's unit."""


def ape_summary(of: str = "") -> tuple[Column, ...]:
    """``mape_pct``, ``median_ape_pct`` and ``max_ape_pct``: the mean, median and largest
    absolute percentage error (in %), their descriptions ending in ``of`` (e.g. `` of bus
    bandwidth``)."""
    return (
        _c("mape_pct", "float64", "%", f"mean absolute percentage error{of}"),
        _c("median_ape_pct", "float64", "%", f"median absolute percentage error{of}"),
        _c("max_ape_pct", "float64", "%", f"largest absolute percentage error{of}"),
    )


def in_sample_mape(caveat: str = "") -> Column:
    """``in_sample_mape_pct``: the shipped calibration's in-sample error (in %), the description
    ending in ``caveat`` (e.g. ``; NaN where …``)."""
    return _c(
        "in_sample_mape_pct",
        "float64",
        "%",
        "mean absolute percentage error of the shipped calibration, fitted on every source"
        + caveat,
    )
