"""The presentation tables: what trainscale.tables writes to reports/tables/<name>.{csv,md,tex}
and reports/studies/<study>/fits.{csv,md,tex}, each table's columns in order (the CSV keeps
full precision; Markdown and LaTeX print the same columns formatted)."""

from __future__ import annotations

from trainscale.schema.column import Column, _c
from trainscale.schema.configuration import MODEL_SHAPE_COLUMNS
from trainscale.schema.dataset import column
from trainscale.schema.results import CLAIM_COLUMNS, CLAIM_SENSITIVITY_COLUMNS
from trainscale.schema.shared import POINTS_FITTED, X_MAX, X_MIN, ape_summary, in_sample_mape

_HARDWARE_QUANTITIES: tuple[Column, ...] = (
    _c("bf16_tflops", "float64", "TFLOP/s", "dense bf16 peak, 10^12 FLOP/s"),
    _c("hbm_gbytes_per_s", "float64", "GB/s", "HBM bandwidth, 10^9 bytes/s"),
    _c("nvlink_gbytes_per_s", "float64", "GB/s", "NVLink bandwidth per direction, 10^9 bytes/s"),
    _c(
        "nic_gbit_per_s_per_gpu",
        "float64",
        "Gb/s",
        "scale-out NIC line rate per GPU in its default system, 10^9 bits/s",
    ),
    _c("tdp_w", "float64", "W", "thermal design power"),
)

#: Columns of table ``hardware`` (:func:`trainscale.tables.hardware.hardware_table`): one row per
#: GPU of the catalogue in catalogue (generation) order, and each quantity's growth over the V100.
HARDWARE_COLUMNS: tuple[Column, ...] = (
    column("gpu"),
    _c("system", "string", "1", "the GPU's default system (data/hardware.yaml)"),
    _HARDWARE_QUANTITIES[0],
    _c("hbm_gib", "float64", "GiB", "HBM capacity"),
    *_HARDWARE_QUANTITIES[1:],
    *(
        _c(
            f"{c.name}_x_v100",
            "float64",
            "1",
            f"{c.name} divided by the V100's (v100-sxm-32gb; NaN without one)",
        )
        for c in _HARDWARE_QUANTITIES
    ),
)

#: Columns of table ``models`` (:func:`trainscale.tables.models.models_table`): one row per
#: model of the catalogue, smallest first; parameter counts derived from the shape.
MODEL_COLUMNS: tuple[Column, ...] = (
    _c("model", "string", "1", "model catalogue key (data/models.yaml)"),
    *MODEL_SHAPE_COLUMNS,
    _c("tied_embeddings", "bool", "1", "the input embedding and the LM head share one matrix"),
    _c(
        "params_b",
        "float64",
        "10^9 parameters",
        "every weight: transformer blocks, final norm, embeddings",
    ),
    _c(
        "layer_params_m",
        "float64",
        "10^6 parameters",
        "one transformer block's matrices: what FSDP gathers per layer",
    ),
)

#: Columns of table ``claims`` (:mod:`trainscale.tables.claims`): those of
#: ``results/paper/claims.parquet`` without the claim's key and the provenance (the calibration
#: id is in the caption).
CLAIMS_TABLE_COLUMNS: tuple[Column, ...] = tuple(
    c for c in CLAIM_COLUMNS if c.name not in ("key", "calibration_id", "simulator_version")
)

#: Columns of table ``claim_sensitivity`` (:mod:`trainscale.tables.claim_sensitivity`): those of
#: ``results/paper/claim_sensitivity.parquet`` without the calibration ids (the calibrated row's
#: is in the caption).
CLAIM_SENSITIVITY_TABLE_COLUMNS: tuple[Column, ...] = tuple(
    c
    for c in CLAIM_SENSITIVITY_COLUMNS
    if c.name not in ("calibration_id", "reference_calibration_id")
)

#: Columns of every fit row (:func:`trainscale.fits.scaling.fit_scaling_series`), in order: the
#: log-log slope of a per-GPU metric or one parameter of the Universal Scalability Law.
FIT_COLUMNS: tuple[Column, ...] = (
    _c(
        "metric",
        "string",
        "1",
        "what is fitted: tokens_per_s_per_gpu or power_w_per_gpu (log-log), tokens_per_s (USL)",
    ),
    _c("fit", "string", "1", "loglog_hc3 (OLS of log2 y on log2 x, HC3 errors) or usl"),
    _c(
        "parameter",
        "string",
        "1",
        "slope or pct_per_doubling (log-log); sigma, kappa or n_star (USL)",
    ),
    _c(
        "estimate",
        "float64",
        "see parameter",
        "the parameter: slope and sigma, kappa dimensionless, pct_per_doubling %, n_star GPUs",
    ),
    _c("ci_low", "float64", "see parameter", "lower end of the estimate's interval (95 %)"),
    _c("ci_high", "float64", "see parameter", "upper end of the estimate's interval (95 %)"),
    _c("r2", "float64", "1", "R² of the fit on the log per-GPU scale (the USL's too)"),
    POINTS_FITTED,
    _c(
        "note",
        "string",
        "1",
        "why a value is missing, what was dropped, what an infinite n_star means; '' if none",
    ),
)

#: The columns that name a series of table ``scaling_fits``: rows that share them differ only in
#: their GPU count.
SCALING_SERIES_COLUMNS: tuple[Column, ...] = (
    _c("source", "string", "1", "simulated, measured or published"),
    _c(
        "origin",
        "string",
        "1",
        "citation (published), run id (measured) or 'simulated scale-out studies'",
    ),
    _c(
        "model",
        "string",
        "1",
        "model catalogue key, or <layers>L h<hidden> for a shape the catalogue lacks",
    ),
    column("gpu"),
    _c("plan", "string", "1", "tp<t>×pp<p> <sharding>, recompute <mode>"),
    column("seq_len"),
    _c(
        "batch",
        "string",
        "1",
        "global <n> (fixed): the global batch held while GPUs are added (simulated); micro <n> "
        "per GPU: the micro-batch held, the global batch growing with the GPUs (published)",
    ),
)

#: Columns of table ``scaling_fits`` (:func:`trainscale.tables.scaling_fits.scaling_fits`): one
#: row per series, metric and parameter.
SCALING_FIT_COLUMNS: tuple[Column, ...] = (
    *SCALING_SERIES_COLUMNS,
    *(c for c in FIT_COLUMNS if c.name != "note"),
    _c("gpus_min", "int64", "1", "fewest GPUs of the series"),
    _c("gpus_max", "int64", "1", "most GPUs of the series"),
    *(c for c in FIT_COLUMNS if c.name == "note"),
)

#: Columns of a study's fits table ``reports/studies/<study>/fits``
#: (:func:`trainscale.tables.study_fits.study_fits`), after the study's own facet and series
#: columns (readable text); ``facet`` only when the study has a facet.
STUDY_FIT_COLUMNS: tuple[Column, ...] = (
    _c("facet", "string", "1", "the facet's label, as in the figure's panel titles"),
    _c("series", "string", "1", "the series' label, as in the figure's legend"),
    _c("source", "string", "1", "simulated"),
    _c("calibration_id", "string", "1", "calibration id(s) of the series' rows, comma-separated"),
    _c("x", "string", "1", "the column fitted against: the study's x axis"),
    *(c for c in FIT_COLUMNS if c.name != "note"),
    X_MIN,
    X_MAX,
    *(c for c in FIT_COLUMNS if c.name == "note"),
)

#: Columns of table ``validation`` (:func:`trainscale.tables.validation.validation_table`): the
#: simulator's error per published source, held out first, then in sample, then what could not
#: be predicted.
VALIDATION_TABLE_COLUMNS: tuple[Column, ...] = (
    _c(
        "block",
        "string",
        "1",
        "what the row reports: tokens/s per GPU (per source, per framework, all sources), "
        "nccl-tests bus bandwidth (all sizes, >= 16 MiB), not predicted: <quantity>, or "
        "measured, with warnings (a measured run's row whose ingestion warned; the warnings "
        "in reason)",
    ),
    _c("source", "string", "1", "citation, framework, or all"),
    _c("rows", "int64", "1", "rows predicted (held out, or in sample for bus bandwidth)"),
    _c("rejected", "int64", "1", "rows of that quantity the simulator cannot represent"),
    _c("error", "string", "1", "held out, in sample, or '' (not predicted)"),
    *ape_summary(),
    in_sample_mape(),
    _c(
        "interval_coverage_pct",
        "float64",
        "%",
        "share of the rows inside the 80 % prediction interval computed without their source",
    ),
    _c(
        "interval_median_width_pct",
        "float64",
        "%",
        "median width of those intervals: (hi - lo) / predicted",
    ),
    _c("reason", "string", "1", "why rows were rejected, with counts; '' if none"),
)

#: Columns of table ``best_plans`` (:func:`trainscale.tables.best_plans.best_plans`): the fastest
#: plan that fits in memory per model, GPU and GPU count; models smallest first.
BEST_PLAN_COLUMNS: tuple[Column, ...] = (
    column("model"),
    column("gpu"),
    column("num_gpus"),
    column("tp"),
    column("pp"),
    column("dp"),
    _c(
        "sharding",
        "string",
        "1",
        "data-parallel sharding (ddp, zero1, zero2, fsdp, hsdp), or 'none (dp = 1)' for one "
        "data-parallel replica",
    ),
    column("recompute"),
    column("micro_batch"),
    column("grad_accum"),
    column("tokens_per_s"),
    column("tokens_per_s_per_gpu"),
    _c("mfu_pct", "float64", "%", "model FLOPs utilisation, 100 * mfu"),
    column("mem_gib_per_gpu"),
    column("power_w_per_gpu"),
    _c("exposed_comm_pct", "float64", "%", "exposed communication, 100 * exposed_comm_frac"),
    _c(
        "plans_fitting",
        "int64",
        "1",
        "swept plans that fit in memory at this model, GPU and count (the row is the fastest)",
    ),
)
