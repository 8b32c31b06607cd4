"""What the figures and tables read besides the dataset: tables computed by their own rules, so
that presentation never runs the simulator (README, "Layout")."""

from __future__ import annotations

from trainscale.schema.column import Column
from trainscale.schema.dictionary import table

VALIDATION_COLUMNS: tuple[Column, ...] = table("VALIDATION_COLUMNS")
"""Columns of ``results/validation.parquet``: one row per line of the published CSV."""

COLLECTIVE_CURVE_COLUMNS: tuple[Column, ...] = table("COLLECTIVE_CURVE_COLUMNS")
"""Columns of ``results/collectives.parquet``: the collective cost model's time and bus bandwidth of
each collective, by GPU (in its default system), message size and node count
(:func:`trainscale.sim.collective_curves.collective_curves`)."""

SIM_VS_MEASURED_COLUMNS: tuple[Column, ...] = table("SIM_VS_MEASURED_COLUMNS")
"""Columns of ``results/sim_vs_measured.parquet``: every measured row of the dataset with the
simulator's prediction for the same configuration, or why there is none
(:func:`trainscale.ingest.accuracy.predict_measured`)."""

CLAIM_COLUMNS: tuple[Column, ...] = table("CLAIM_COLUMNS")
"""Columns of ``results/paper/claims.parquet``: each claim of the paper against the simulator with
the paper setup (:func:`trainscale.paper.claims.claim_rows`). Values mix units (percent, a
model-parallel degree), so the unit is a column of its own."""

CLAIM_SENSITIVITY_COLUMNS: tuple[Column, ...] = table("CLAIM_SENSITIVITY_COLUMNS")
"""Columns of ``results/paper/claim_sensitivity.parquet``: the claims with NCCL's latency scale
pinned at each value and every other parameter refitted to the published measurements
(:func:`trainscale.calibrate.sensitivity.claim_sensitivity`); ascending nccl_latency_scale."""

HOLDOUT_COLUMNS: tuple[Column, ...] = table("HOLDOUT_COLUMNS")
"""Columns of ``results/holdout.parquet``: one row per predictable published throughput row,
predicted by a fit that left the row's whole source out; sorted by ``csv_row``."""
