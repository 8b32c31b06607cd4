"""What the figures and tables read besides the dataset: tables computed by their own rules, so
that presentation never runs the simulator (README, "Layout")."""

from __future__ import annotations

from trainscale.schema.column import Column, _c
from trainscale.schema.configuration import CONFIGURATION_COLUMNS
from trainscale.schema.dataset import column
from trainscale.schema.shared import RUN_ID, THROUGHPUT_MAPE_PCT

# The published CSV's columns that both the validation and the held-out table carry.
_CSV_ROW = _c("csv_row", "int64", "1", "line of the published CSV (the header is line 1)")
_MODEL_NAME = _c("model_name", "string", "1", "the source's own model name")
_APE_PCT = _c("ape_pct", "float64", "%", "absolute value of error_pct")

#: Columns of ``results/validation.parquet``: one row per line of the published CSV.
VALIDATION_COLUMNS: tuple[Column, ...] = (
    _CSV_ROW,
    _c("status", "string", "1", "predicted, or rejected (the simulator cannot represent it)"),
    _c("kind", "string", "1", "throughput or collective (nccl-tests); null if rejected"),
    column("citation"),
    column("url"),
    column("table_or_figure"),
    _MODEL_NAME,
    column("published_metric"),
    _c("published_value_text", "string", "1", "the source's number as printed"),
    *CONFIGURATION_COLUMNS,
    _c("quantity", "string", "1", "what is compared: tokens_per_s_per_gpu or busbw_gbytes_per_s"),
    _c("unit", "string", "1", "unit of observed and predicted: tokens/s or GB/s"),
    _c("observed", "float64", "see unit", "the published number converted to quantity"),
    _c("predicted", "float64", "see unit", "the simulator's prediction of quantity"),
    _c("error_pct", "float64", "%", "100 * (predicted - observed) / observed"),
    _APE_PCT,
    _c("flop_convention", "string", "1", "FLOP count the source used to report throughput"),
    _c("assumptions", "string", "1", "what trainscale assumed where the source is silent"),
    _c("reason", "string", "1", "why a rejected row cannot be predicted"),
    column("simulator_version"),
    column("calibration_id"),
)


#: Columns of ``results/collectives.parquet``: the collective cost model's time and bus bandwidth
#: of each collective, by GPU (in its default system), message size and node count
#: (:func:`trainscale.sim.collective_curves.collective_curves`).
COLLECTIVE_CURVE_COLUMNS: tuple[Column, ...] = (
    _c("gpu", "string", "1", "GPU catalogue key (data/hardware.yaml), in its default system"),
    _c("gpus_per_node", "int64", "1", "GPUs per node of that default system"),
    _c("collective", "string", "1", "allreduce, allgather or reducescatter (NCCL)"),
    _c(
        "model",
        "string",
        "1",
        "model catalogue key whose transformer block (weights in bf16) is the message: what "
        "FSDP gathers and scatters per layer; '' on the message-size sweep",
    ),
    _c("size_bytes", "float64", "bytes", "message size: the whole buffer, as nccl-tests counts it"),
    _c("num_nodes", "int64", "1", "nodes taking part"),
    _c("num_gpus", "int64", "1", "GPUs taking part: num_nodes * gpus_per_node"),
    _c(
        "term",
        "string",
        "1",
        "total: the collective's time; bandwidth: the same collective with NCCL's per-step "
        "latencies set to zero (its bandwidth term; total - bandwidth is its latency term)",
    ),
    _c("time_s", "float64", "s", "time of one collective"),
    _c(
        "busbw_gbytes_per_s",
        "float64",
        "GB/s",
        "bus bandwidth as nccl-tests defines it: size / time * factor(num_gpus), 10^9 bytes/s",
    ),
    _c("calibration_id", "string", "1", "content hash of the calibration that built the network"),
    _c("simulator_version", "string", "1", "trainscale version that computed the row"),
)

#: Columns of ``results/sim_vs_measured.parquet``: every measured row of the dataset with the
#: simulator's prediction for the same configuration, or why there is none
#: (:func:`trainscale.ingest.accuracy.predict_measured`).
SIM_VS_MEASURED_COLUMNS: tuple[Column, ...] = (
    RUN_ID,
    _c("config_id", "string", "1", "the measured row's configuration id"),
    _c("gpu", "string", "1", "GPU of the run as its manifest names it ('cpu' for a CPU run)"),
    _c("num_gpus", "int64", "1", "GPUs (or processes) in the run"),
    _c("calibration_id", "string", "1", "calibration of the prediction; '' without one"),
    _c("simulator_version", "string", "1", "trainscale version of the prediction; '' without one"),
    _c("reason", "string", "1", "why the row has no prediction; '' when it has one"),
    _c("measured_step_time_s", "float64", "s", "measured step time (steady-state median)"),
    _c("predicted_step_time_s", "float64", "s", "predicted step time; NaN without a prediction"),
    _c(
        "measured_tokens_per_s_per_gpu",
        "float64",
        "tokens/s",
        "measured tokens/s per GPU (steady-state median)",
    ),
    _c(
        "predicted_tokens_per_s_per_gpu",
        "float64",
        "tokens/s",
        "predicted tokens/s per GPU; NaN without a prediction",
    ),
    _c(
        "warnings",
        "string",
        "1",
        "the measured row's plausibility and parsing warnings (its dataset 'warnings'), "
        "'; '-separated; '' when none",
    ),
    _c("purpose", "string", "1", "the run manifest's purpose (what the run can show); '' unstated"),
    _c("predicted_step_time_s_lo", "float64", "s", "lower end of the 80 % interval; NaN without"),
    _c("predicted_step_time_s_hi", "float64", "s", "upper end of the 80 % interval; NaN without"),
    _c("predicted_tokens_per_s_per_gpu_lo", "float64", "tokens/s", "lower end, 80 % interval"),
    _c("predicted_tokens_per_s_per_gpu_hi", "float64", "tokens/s", "upper end, 80 % interval"),
    _c("measured_power_w_per_gpu", "float64", "W", "measured power per GPU; NaN without a log"),
    _c("predicted_power_w_per_gpu", "float64", "W", "predicted power per GPU; NaN without"),
    _c("power_log", "string", "1", "file(s) the measured power came from; '' without"),
)

#: Columns of ``results/paper/claims.parquet``: each claim of the paper against the simulator
#: with the paper setup (:func:`trainscale.paper.claims.claim_rows`). Values mix units (percent,
#: a model-parallel degree), so the unit is a column of its own.
CLAIM_COLUMNS: tuple[Column, ...] = (
    _c("key", "string", "1", "the claim's name, e.g. throughput_drop_pct"),
    _c("claim", "string", "1", "what the paper says, in words"),
    _c("paper_value", "float64", "see unit", "the paper's number; NaN where it gives a range"),
    _c("paper_range", "string", "see unit", "the paper's range, e.g. 2–4; null for a number"),
    _c("reproduced_value", "float64", "see unit", "the simulator's value with the paper setup"),
    _c("unit", "string", "1", "unit of paper_value and reproduced_value: % or tp*pp"),
    _c("tolerance", "string", "1", "allowed difference, e.g. ±5 points, or within 2–4"),
    _c("holds", "bool", "1", "the reproduced value is within the tolerance of the paper's"),
    _c("check", "string", "1", "reproduced, or the calibrated parameter fitted to this claim"),
    _c("setup", "string", "1", "the configuration the value was reproduced with"),
    _c("assumptions", "string", "1", "the paper-setup assumptions the value rests on, ; list"),
    _c("reproduced_min", "float64", "see unit", "lowest value under the alternatives scanned"),
    _c("reproduced_max", "float64", "see unit", "highest value under the alternatives scanned"),
    _c("range_over", "string", "1", "the alternatives reproduced_min/max span"),
    _c("note", "string", "1", "where the value comes from, e.g. the steepest doubling; or null"),
    _c("calibration_id", "string", "1", "content hash of the calibration that reproduced it"),
    _c("simulator_version", "string", "1", "trainscale version that reproduced it"),
)

#: Columns of ``results/paper/claim_sensitivity.parquet``: the claims with NCCL's latency scale
#: pinned at each value and every other parameter refitted to the published measurements
#: (:func:`trainscale.calibrate.sensitivity.claim_sensitivity`); ascending nccl_latency_scale.
CLAIM_SENSITIVITY_COLUMNS: tuple[Column, ...] = (
    _c("nccl_latency_scale", "float64", "1", "the pinned factor on NCCL's per-step latencies"),
    _c("calibrated", "bool", "1", "the value of the calibration the profile was made for"),
    THROUGHPUT_MAPE_PCT,
    _c(
        "busbw_mape_pct",
        "float64",
        "%",
        "mean absolute percentage error of the refit's nccl-tests bus bandwidth",
    ),
    _c("throughput_drop_pct", "float64", "%", "paper setup: tokens/s per GPU, 128 to 2,048 GPUs"),
    _c("drop_claim_holds", "bool", "1", "throughput_drop_pct is within the claim's tolerance"),
    _c("power_drop_pct", "float64", "%", "paper setup: power per GPU, 128 to 2,048 GPUs"),
    _c("mfu_a100_pct", "float64", "%", "paper setup: MFU on A100 at 128 GPUs"),
    _c("mfu_h100_pct", "float64", "%", "paper setup: MFU on H100 at 128 GPUs"),
    _c("calibration_id", "string", "1", "content hash of the refitted calibration of the row"),
    _c(
        "reference_calibration_id",
        "string",
        "1",
        "content hash of the calibration whose nccl_latency_scale marks the calibrated row",
    ),
)


#: Columns of ``results/holdout.parquet``: one row per predictable published throughput row,
#: predicted by a fit that left the row's whole source out; sorted by ``csv_row``.
HOLDOUT_COLUMNS: tuple[Column, ...] = (
    _CSV_ROW,
    column("citation"),
    column("framework"),
    _MODEL_NAME,
    column("num_gpus"),
    column("gpu"),
    _c("observed_tokens_per_s_per_gpu", "float64", "tokens/s", "published, as tokens/s per GPU"),
    _c(
        "predicted_tokens_per_s_per_gpu",
        "float64",
        "tokens/s",
        "predicted by a fit to every other source (held out)",
    ),
    _c("error_pct", "float64", "%", "100 * (held-out predicted - observed) / observed"),
    _APE_PCT,
    _c(
        "calibration_id",
        "string",
        "1",
        "the shipped calibration (data/calibration.yaml) whose in-sample error sits beside it",
    ),
    column("simulator_version"),
)
