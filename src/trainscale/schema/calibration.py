"""The tables the calibration checks return or write: the profile, the prior scan, held-out
accuracy."""

from __future__ import annotations

from trainscale.schema.column import Column
from trainscale.schema.dictionary import table

PROFILE_COLUMNS: tuple[Column, ...] = table("PROFILE_COLUMNS")
"""Columns of :func:`trainscale.calibrate.sensitivity.profile` (``trainscale calibrate --profile
--table``): one row per pinned value of one parameter, the others refitted."""

PRIOR_SCAN_COLUMNS: tuple[Column, ...] = table("PRIOR_SCAN_COLUMNS")
"""Columns of :func:`trainscale.calibrate.sensitivity.prior_width_scan` (``trainscale calibrate
--prior-scan --table``): one row per prior width."""

ACCURACY_COLUMNS: tuple[Column, ...] = table("ACCURACY_COLUMNS")
"""Columns of :func:`trainscale.published.holdout.accuracy` after its first column (``source``, the
citation or ``all``, or ``framework``): one row per group, then ``all``."""

COLLECTIVE_ACCURACY_COLUMNS: tuple[Column, ...] = table("COLLECTIVE_ACCURACY_COLUMNS")
"""Columns of :func:`trainscale.published.holdout.collective_accuracy`: the error of the nccl-tests
bus bandwidths per source, all sizes and the sizes precise enough to score."""

PILOT_ERROR_COLUMNS: tuple[Column, ...] = table("PILOT_ERROR_COLUMNS")
"""Columns of :func:`trainscale.calibrate.pilot_series.pilot_errors`: one row per larger-scale
row of every published scaling series, predicted from the series' pilots (its smallest GPU
count), by the base without its source and by perfect weak scaling."""

PILOT_REACH_COLUMNS: tuple[Column, ...] = table("PILOT_REACH_COLUMNS")
"""Columns of :func:`trainscale.calibrate.pilot_reach.reach_evidence`: per bin of distance from
the pilots, whether a pilot-calibrated prediction beat the shipped level on the published scaling
series, and whether the shipped interval's width was enough there."""

PILOT_TABLE_COLUMNS: tuple[Column, ...] = table("PILOT_TABLE_COLUMNS")
"""Columns of ``results/pilots.parquet`` (rule ``published_pilots``,
:func:`trainscale.calibrate.pilot_series.pilot_table`): :data:`PILOT_ERROR_COLUMNS`, whether the
row is inside its pilot interval, and the provenance."""
