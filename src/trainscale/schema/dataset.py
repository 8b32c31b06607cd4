"""The result table (configuration, derived degrees, metrics, provenance) and the dataset;
their columns are in ``columns.yaml``."""

from __future__ import annotations

import pyarrow as pa

from trainscale.schema.column import ARROW_TYPES, Column
from trainscale.schema.dictionary import table

DERIVED_COLUMNS: tuple[Column, ...] = table("DERIVED_COLUMNS")
"""The parallel degrees derived from the configuration."""

METRIC_COLUMNS: tuple[Column, ...] = table("METRIC_COLUMNS")
"""What is predicted or measured: time, throughput, utilisation, communication, memory, power."""

PROVENANCE_COLUMNS: tuple[Column, ...] = table("PROVENANCE_COLUMNS")
"""Where the numbers come from (``source``) and, for simulated rows, what predicted them."""

RESULT_COLUMNS: tuple[Column, ...] = table("RESULT_COLUMNS")
"""Columns of the simulator's output after the input's own columns."""

DATASET_EXTRA_COLUMNS: tuple[Column, ...] = table("DATASET_EXTRA_COLUMNS")
"""Extra columns of the dataset (results/dataset): identify the row and carry the provenance of
measured and published rows. Empty strings / nulls where they do not apply."""

DATASET_COLUMNS: tuple[Column, ...] = table("DATASET_COLUMNS")
"""Columns of the dataset: the result table's, then the extra ones."""

_BY_NAME = {c.name: c for c in DATASET_COLUMNS}


def column(name: str) -> Column:
    """Return the definition of a column by name."""
    return _BY_NAME[name]


def arrow_schema(columns: tuple[Column, ...] = DATASET_COLUMNS, **metadata: str) -> pa.Schema:
    """Return an explicit pyarrow schema; each field's metadata holds its unit and description.

    ``metadata`` is added to the schema (file) metadata, e.g. ``calibration_id=...``.
    """
    fields = [
        pa.field(
            c.name,
            ARROW_TYPES[c.dtype],
            nullable=True,
            metadata={"unit": c.unit, "description": c.description},
        )
        for c in columns
    ]
    return pa.schema(fields, metadata={k: str(v) for k, v in metadata.items()} or None)
