"""The two tables that carry everything: configuration and result.

Each column is defined once, with its dtype, unit and meaning, in the data dictionary
``columns.yaml`` of this package (read by :mod:`trainscale.schema.dictionary`), and used by every
stage: input validation (:func:`trainscale.sim.configs.build_configs`), the simulator's output,
the log ingester, the published-measurement normaliser, the Parquet dataset (``arrow_schema``)
and the figures.

- **configuration**: one row per training setup.
- **result**: the configuration's columns, the derived parallel degrees, what was predicted or
  measured, and provenance (``source`` = ``sim`` | ``measured`` | ``published``).

Beside them, the tables the figures and tables read that no study holds (validation, collective
curves, measured runs against their prediction, the paper's claims and their sensitivity), so
that presentation reads tables and never runs the simulator.
Then the presentation tables themselves (``reports/tables/<name>`` and each study's fits): the
columns each one prints, in order. Last, the tables the ingesters, the fits and the calibration
checks return or write (a run's steps, nccl-tests results, traces, rejects, the log-log, USL and
marginal-return fits, the calibration profile and prior scan, held-out accuracy), each with its
columns in order.

Column names carry their units (``_s``, ``_w``, ``_gib``, ``_j``); ratios (``mfu``) are fractions
in [0, 1], never percentages.
"""

from __future__ import annotations

# One module a concept: column (the Column type), choices (categorical values), bounds (numeric
# ranges), configuration, dataset (result and dataset tables, column(), arrow_schema()), results
# (the other tables under results/), presentation (reports/tables), ingest, calibration, fits;
# shared holds the columns tables of different modules have in common. Every table's columns are
# data, in columns.yaml (the data dictionary); dictionary reads and checks it, and each module
# names its tables' constants.
from trainscale.schema.bounds import (
    MAX_GPUS,
    NUMERIC_BOUNDS,
    Bound,
    format_number,
)
from trainscale.schema.calibration import (
    ACCURACY_COLUMNS,
    COLLECTIVE_ACCURACY_COLUMNS,
    PILOT_ERROR_COLUMNS,
    PILOT_REACH_COLUMNS,
    PILOT_TABLE_COLUMNS,
    PRIOR_SCAN_COLUMNS,
    PROFILE_COLUMNS,
)
from trainscale.schema.choices import (
    ATTENTION_KERNELS,
    CP_COMM_TYPES,
    FINETUNE_MODES,
    FP8_RECIPES,
    MLP_KINDS,
    MOE_DISPATCHERS,
    MOE_ROUTINGS,
    PRECISIONS,
    RECOMPUTE_MODES,
    SHARD_GRANULARITIES,
    SHARDINGS,
    SOURCES,
    Recompute,
    Sharding,
)
from trainscale.schema.column import (
    Column,
    Dtype,
    names,
)
from trainscale.schema.configuration import (
    CONFIGURATION_COLUMNS,
    MODEL_SHAPE_COLUMNS,
)
from trainscale.schema.dataset import (
    DATASET_COLUMNS,
    DATASET_EXTRA_COLUMNS,
    DERIVED_COLUMNS,
    METRIC_COLUMNS,
    PROVENANCE_COLUMNS,
    RESULT_COLUMNS,
    arrow_schema,
    column,
)
from trainscale.schema.energy import (
    ENERGY_BILL_COLUMNS,
    NODE_POWER_COLUMNS,
    TRAINING_BILL_COLUMNS,
)
from trainscale.schema.fits import (
    LOGLOG_COLUMNS,
    MARGINAL_COLUMNS,
    USL_COLUMNS,
    USL_MARGINAL_COLUMNS,
)
from trainscale.schema.ingest import (
    NCCL_COLUMNS,
    REJECT_COLUMNS,
    STEP_COLUMNS,
    STEP_TABLE_COLUMNS,
    TRACE_COLUMNS,
)
from trainscale.schema.presentation import (
    BEST_PLAN_COLUMNS,
    CLAIM_SENSITIVITY_TABLE_COLUMNS,
    CLAIMS_TABLE_COLUMNS,
    FIT_COLUMNS,
    HARDWARE_COLUMNS,
    MODEL_COLUMNS,
    PILOTS_TABLE_COLUMNS,
    SCALING_FIT_COLUMNS,
    SCALING_SERIES_COLUMNS,
    STUDY_FIT_COLUMNS,
    VALIDATION_TABLE_COLUMNS,
)
from trainscale.schema.results import (
    CLAIM_COLUMNS,
    CLAIM_SENSITIVITY_COLUMNS,
    COLLECTIVE_CURVE_COLUMNS,
    HOLDOUT_COLUMNS,
    SIM_VS_MEASURED_COLUMNS,
    VALIDATION_COLUMNS,
)

__all__ = [
    "ACCURACY_COLUMNS",
    "ATTENTION_KERNELS",
    "BEST_PLAN_COLUMNS",
    "CLAIMS_TABLE_COLUMNS",
    "CLAIM_COLUMNS",
    "CLAIM_SENSITIVITY_COLUMNS",
    "CLAIM_SENSITIVITY_TABLE_COLUMNS",
    "COLLECTIVE_ACCURACY_COLUMNS",
    "COLLECTIVE_CURVE_COLUMNS",
    "CONFIGURATION_COLUMNS",
    "CP_COMM_TYPES",
    "DATASET_COLUMNS",
    "DATASET_EXTRA_COLUMNS",
    "DERIVED_COLUMNS",
    "ENERGY_BILL_COLUMNS",
    "FINETUNE_MODES",
    "FIT_COLUMNS",
    "FP8_RECIPES",
    "HARDWARE_COLUMNS",
    "HOLDOUT_COLUMNS",
    "LOGLOG_COLUMNS",
    "MARGINAL_COLUMNS",
    "MAX_GPUS",
    "METRIC_COLUMNS",
    "MLP_KINDS",
    "MODEL_COLUMNS",
    "MODEL_SHAPE_COLUMNS",
    "MOE_DISPATCHERS",
    "MOE_ROUTINGS",
    "NCCL_COLUMNS",
    "NODE_POWER_COLUMNS",
    "NUMERIC_BOUNDS",
    "PILOTS_TABLE_COLUMNS",
    "PILOT_ERROR_COLUMNS",
    "PILOT_REACH_COLUMNS",
    "PILOT_TABLE_COLUMNS",
    "PRECISIONS",
    "PRIOR_SCAN_COLUMNS",
    "PROFILE_COLUMNS",
    "PROVENANCE_COLUMNS",
    "RECOMPUTE_MODES",
    "REJECT_COLUMNS",
    "RESULT_COLUMNS",
    "SCALING_FIT_COLUMNS",
    "SCALING_SERIES_COLUMNS",
    "SHARDINGS",
    "SHARD_GRANULARITIES",
    "SIM_VS_MEASURED_COLUMNS",
    "SOURCES",
    "STEP_COLUMNS",
    "STEP_TABLE_COLUMNS",
    "STUDY_FIT_COLUMNS",
    "TRACE_COLUMNS",
    "TRAINING_BILL_COLUMNS",
    "USL_COLUMNS",
    "USL_MARGINAL_COLUMNS",
    "VALIDATION_COLUMNS",
    "VALIDATION_TABLE_COLUMNS",
    "Bound",
    "Column",
    "Dtype",
    "Recompute",
    "Sharding",
    "arrow_schema",
    "column",
    "format_number",
    "names",
]
