"""The result table (configuration, derived degrees, metrics, provenance) and the dataset."""

from __future__ import annotations

import pyarrow as pa

from trainscale.schema.choices import SOURCES
from trainscale.schema.column import ARROW_TYPES, Column, _c
from trainscale.schema.configuration import CONFIGURATION_COLUMNS

DERIVED_COLUMNS: tuple[Column, ...] = (
    _c("dp", "int64", "1", "data-parallel degree = num_gpus / (tp * pp * cp)"),
    _c(
        "grad_accum",
        "int64",
        "1",
        "micro-batches per step per data-parallel rank = global_batch / (dp * micro_batch)",
    ),
)

METRIC_COLUMNS: tuple[Column, ...] = (
    _c("step_time_s", "float64", "s", "wall time of one optimizer step"),
    _c("tokens_per_s", "float64", "tokens/s", "training tokens per second, whole job"),
    _c("tokens_per_s_per_gpu", "float64", "tokens/s", "tokens_per_s / num_gpus"),
    _c(
        "mfu",
        "float64",
        "1",
        "model FLOPs utilisation: model FLOPs per token (6*N_matmul + "
        "12*layers*hidden*seq_len, no recomputation, causal mask ignored) * tokens/s / "
        "(num_gpus * dense peak FLOP/s of the configured precision)",
    ),
    _c("hfu", "float64", "1", "hardware FLOPs utilisation: as mfu, plus recomputed FLOPs"),
    _c(
        "compute_s",
        "float64",
        "s",
        "busy time of the compute stream per step (GEMMs, attention, "
        "memory-bound kernels, optimizer)",
    ),
    _c(
        "comm_s",
        "float64",
        "s",
        "busy time of all collectives per step, hidden or not: the four "
        "kinds below plus straggler_s",
    ),
    _c("allgather_s", "float64", "s", "AllGather busy time per step"),
    _c("reducescatter_s", "float64", "s", "ReduceScatter busy time per step"),
    _c("allreduce_s", "float64", "s", "AllReduce busy time per step"),
    _c(
        "p2p_s",
        "float64",
        "s",
        "point-to-point (pipeline, context-parallel ring) busy time per step",
    ),
    _c(
        "straggler_s",
        "float64",
        "s",
        "time per step waiting inside collectives for the slowest "
        "GPU (part of comm_s and of exposed_comm_s)",
    ),
    _c("exposed_comm_s", "float64", "s", "communication not hidden behind compute per step"),
    _c("exposed_comm_frac", "float64", "1", "exposed_comm_s / step_time_s"),
    _c("bubble_s", "float64", "s", "pipeline bubble (idle) time per step"),
    _c(
        "host_stall_s",
        "float64",
        "s",
        "GPU idle waiting for the host to launch kernels per step; "
        "step_time_s = compute_s + exposed_comm_s + bubble_s + host_stall_s",
    ),
    _c(
        "mem_gib_per_gpu",
        "float64",
        "GiB",
        "peak memory per GPU (model states, activations, buffers, runtime overhead)",
    ),
    _c("fits_memory", "bool", "1", "mem_gib_per_gpu within the usable fraction of HBM"),
    _c("power_w_per_gpu", "float64", "W", "average power per GPU over a step"),
    _c("energy_j_per_token", "float64", "J/token", "GPU energy per trained token, whole job"),
    _c(
        "tokens_per_s_per_gpu_lo",
        "float64",
        "tokens/s",
        "lower end of the 80 % prediction interval of tokens_per_s_per_gpu (split conformal on "
        "leave-one-source-out errors, trainscale.sim.intervals); NaN without an intervals block",
    ),
    _c(
        "tokens_per_s_per_gpu_hi",
        "float64",
        "tokens/s",
        "upper end of the 80 % prediction interval of tokens_per_s_per_gpu",
    ),
    _c(
        "step_time_s_lo",
        "float64",
        "s",
        "lower end of the 80 % interval of step_time_s (the step time at tokens_per_s_per_gpu_hi)",
    ),
    _c(
        "step_time_s_hi",
        "float64",
        "s",
        "upper end of the 80 % interval of step_time_s (the step time at tokens_per_s_per_gpu_lo)",
    ),
    _c(
        "extrapolation",
        "string",
        "1",
        "what no calibration row covers, ';'-separated flags such as gpu:b200, "
        "fsdp_ranks:1024>256, seq_len:32768>8192 (grammar: trainscale.sim.support); empty when "
        "every flag is clear; the interval widens with each flag",
    ),
)

PROVENANCE_COLUMNS: tuple[Column, ...] = (
    _c("source", "string", "1", "where the numbers come from", choices=SOURCES),
    _c("simulator_version", "string", "1", "trainscale version that predicted the row (sim)"),
    _c("calibration_id", "string", "1", "content hash of data/calibration.yaml (sim)"),
)

#: Columns of the simulator's output after the input's own columns.
RESULT_COLUMNS: tuple[Column, ...] = (
    *CONFIGURATION_COLUMNS,
    *DERIVED_COLUMNS,
    *METRIC_COLUMNS,
    *PROVENANCE_COLUMNS,
)

#: Extra columns of the dataset (results/dataset): identify the row and carry the provenance of
#: measured and published rows. Empty strings / nulls where they do not apply.
DATASET_EXTRA_COLUMNS: tuple[Column, ...] = (
    _c("study", "string", "1", "study name (sim), 'runs' (measured) or 'published'"),
    _c(
        "config_id",
        "string",
        "1",
        "readable configuration name, e.g. llama2-7b_h100-sxm-80gb_n2048_fsdp_tp1_pp1",
    ),
    _c("run_id", "string", "1", "run folder under data/runs (measured)"),
    _c("log_file", "string", "1", "log file(s) the measured values came from (measured)"),
    _c("line_range", "string", "1", "first-last line of the steady-state steps used (measured)"),
    _c(
        "warnings",
        "string",
        "1",
        "problems the logs had that did not stop ingestion (duplicate lines dropped, power not "
        "covering the steps, garbled lines skipped …), '; '-separated, each naming file and "
        "line; '' when none (measured)",
    ),
    _c("n_steps", "int64", "1", "steady-state steps behind a measured median (measured)"),
    _c("step_time_s_iqr", "float64", "s", "interquartile range of measured step time (measured)"),
    _c("citation", "string", "1", "publication or repository (published)"),
    _c("url", "string", "1", "link to the source (published)"),
    _c("table_or_figure", "string", "1", "where in the source the number appears (published)"),
    _c("published_metric", "string", "1", "the source's own metric name (published)"),
    _c("published_value", "float64", "1", "the source's own number, in its own unit (published)"),
)

DATASET_COLUMNS: tuple[Column, ...] = (*RESULT_COLUMNS, *DATASET_EXTRA_COLUMNS)

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
