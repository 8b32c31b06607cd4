"""Columns that tables in different modules share, each defined once.

A table that holds one of these holds the very same column (name, dtype, unit and description):
in the data dictionary (``columns.yaml``, section ``shared``) each is written once, with an anchor,
and named by its alias in the tables. A column that only reads alike elsewhere but says something
else there is defined with its table.
"""

from __future__ import annotations

from trainscale.schema.column import Column
from trainscale.schema.dictionary import shared_column

RUN_ID: Column = shared_column("RUN_ID")
"""A measured run: its folder under ``data/runs``."""

THROUGHPUT_MAPE_PCT: Column = shared_column("THROUGHPUT_MAPE_PCT")
"""A refitted calibration's in-sample error on the published throughputs, in percent."""

POINTS_FITTED: Column = shared_column("POINTS_FITTED")
"""How many points a fit used."""

X_MIN: Column = shared_column("X_MIN")
"""Smallest x of a fitted series, in the x column's unit."""

X_MAX: Column = shared_column("X_MAX")
"""Largest x of a fitted series, in the x column's unit."""
