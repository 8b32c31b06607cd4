"""The configuration table: one row per training setup (columns in ``columns.yaml``)."""

from __future__ import annotations

from trainscale.schema.column import Column
from trainscale.schema.dictionary import table

MODEL_SHAPE_COLUMNS: tuple[Column, ...] = table("MODEL_SHAPE_COLUMNS")
"""The model's shape: the columns of a ``data/models.yaml`` entry that a configuration may give."""

CONFIGURATION_COLUMNS: tuple[Column, ...] = table("CONFIGURATION_COLUMNS")
"""The configuration table's columns: the model, its shape, the batch, the GPUs and the plan."""
