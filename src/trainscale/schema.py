"""The two tables that carry everything: configuration and result.

Each column is defined once here, with its dtype, unit and meaning, and used by every stage: input
validation (:func:`trainscale.sim.configs.build_configs`), the simulator's output, the log
ingester, the
published-measurement normaliser, the Parquet dataset (``arrow_schema``) and the figures.

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

from dataclasses import dataclass
from enum import IntEnum
from typing import Literal

import pyarrow as pa

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
    "DERIVED_COLUMNS",
    "FIT_COLUMNS",
    "FP8_RECIPES",
    "FRAMEWORKS",
    "HARDWARE_COLUMNS",
    "HOLDOUT_COLUMNS",
    "LOGLOG_COLUMNS",
    "MARGINAL_COLUMNS",
    "MAX_GPUS",
    "METRIC_COLUMNS",
    "MODEL_COLUMNS",
    "MODEL_SHAPE_COLUMNS",
    "NCCL_COLUMNS",
    "NUMERIC_BOUNDS",
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
    "USL_COLUMNS",
    "USL_MARGINAL_COLUMNS",
    "VALIDATION_COLUMNS",
    "VALIDATION_TABLE_COLUMNS",
    "Bound",
    "Column",
    "Recompute",
    "Sharding",
    "arrow_schema",
    "column",
    "format_number",
    "names",
]

Dtype = Literal["int64", "float64", "string", "bool", "timestamp"]

SHARDINGS = ("ddp", "zero1", "zero2", "fsdp", "hsdp")
RECOMPUTE_MODES = ("none", "selective", "full")
PRECISIONS = ("bf16", "fp8")
MLP_KINDS = ("swiglu", "gelu")
FRAMEWORKS = ("megatron", "deepspeed", "pytorch")
"""Framework profile keys (data/frameworks.yaml), in the order the simulator's arrays index them."""
SHARD_GRANULARITIES = ("layer", "tensor")
FP8_RECIPES = ("delayed", "current", "tensorwise", "rowwise")
ATTENTION_KERNELS = ("flash2", "fused", "triton")
CP_COMM_TYPES = ("p2p", "all_gather")
SOURCES = ("sim", "measured", "published")


class Sharding(IntEnum):
    """Data-parallel sharding, as the simulator's arrays store it (index into SHARDINGS)."""

    DDP = SHARDINGS.index("ddp")
    ZERO1 = SHARDINGS.index("zero1")
    ZERO2 = SHARDINGS.index("zero2")
    FSDP = SHARDINGS.index("fsdp")
    HSDP = SHARDINGS.index("hsdp")


class Recompute(IntEnum):
    """Activation recomputation, as the simulator's arrays store it (index into
    RECOMPUTE_MODES)."""

    NONE = RECOMPUTE_MODES.index("none")
    SELECTIVE = RECOMPUTE_MODES.index("selective")
    FULL = RECOMPUTE_MODES.index("full")


@dataclass(frozen=True, slots=True, kw_only=True)
class Column:
    """One column of the configuration or result table."""

    name: str
    """Column name; the same from config key to dataclass field to Parquet column."""
    dtype: Dtype
    """Logical type; integers are int64, flags bool, categories string, points in time
    timestamp (naive, nanoseconds)."""
    unit: str
    """SI-style unit ("s", "W", "GiB", "tokens/s"), "1" for counts and fractions."""
    description: str
    """What the column means, with its convention where one is needed."""
    choices: tuple[str, ...] | None = None
    """Allowed values of a categorical column."""
    default: object = None
    """Value used when an optional input column is absent or empty; None means required."""


def _c(name: str, dtype: Dtype, unit: str, description: str, **kw: object) -> Column:
    return Column(name=name, dtype=dtype, unit=unit, description=description, **kw)  # type: ignore[arg-type]


MODEL_SHAPE_COLUMNS: tuple[Column, ...] = (
    _c("layers", "int64", "1", "transformer blocks"),
    _c("hidden", "int64", "1", "model width h"),
    _c("heads", "int64", "1", "attention (query) heads"),
    _c("kv_heads", "int64", "1", "key/value heads (grouped-query attention; = heads for MHA)"),
    _c("ffn", "int64", "1", "MLP inner size"),
    _c("vocab", "int64", "1", "vocabulary size (LM head rows)"),
    _c("mlp", "string", "1", "MLP kind: swiglu (3 matrices) or gelu (2)", choices=MLP_KINDS),
)

CONFIGURATION_COLUMNS: tuple[Column, ...] = (
    _c(
        "model",
        "string",
        "1",
        "model catalogue key (data/models.yaml); explicit shape columns override its values",
        default="",
    ),
    *MODEL_SHAPE_COLUMNS,
    _c("seq_len", "int64", "tokens", "tokens per sequence"),
    _c("global_batch", "int64", "sequences", "sequences per optimizer step"),
    _c("micro_batch", "int64", "sequences", "sequences per GPU per micro-step"),
    _c("gpu", "string", "1", "GPU catalogue key (data/hardware.yaml)"),
    _c("num_gpus", "int64", "1", "GPUs in the job"),
    _c(
        "gpus_per_node",
        "int64",
        "1",
        "GPUs per node (default: the GPU's default system)",
        default=0,
    ),
    _c(
        "nic_gbit_per_s_per_gpu",
        "float64",
        "Gb/s",
        "scale-out NIC line rate per GPU in gigabits/s (default: the GPU's default system)",
        default=0.0,
    ),
    _c(
        "power_limit_w",
        "float64",
        "W",
        "GPU board power limit (nvidia-smi -pl); below the TDP the clock drops during GEMM-bound "
        "compute (default: the GPU's TDP, no limit)",
        default=0.0,
    ),
    _c("tp", "int64", "1", "tensor-parallel degree"),
    _c("pp", "int64", "1", "pipeline-parallel degree"),
    _c("cp", "int64", "1", "context-parallel degree", default=1),
    _c(
        "vpp",
        "int64",
        "1",
        "virtual pipeline stages per rank (interleaved 1F1B when > 1)",
        default=1,
    ),
    _c(
        "sharding",
        "string",
        "1",
        "data-parallel sharding: ddp, zero1, zero2, fsdp (full shard), "
        "hsdp (shard within a node, replicate across nodes)",
        choices=SHARDINGS,
    ),
    _c("recompute", "string", "1", "activation recomputation", choices=RECOMPUTE_MODES),
    _c(
        "precision",
        "string",
        "1",
        "GEMM precision (bf16 mixed precision or fp8 linears)",
        choices=PRECISIONS,
    ),
    _c(
        "sequence_parallel",
        "bool",
        "1",
        "Megatron sequence parallelism (default: tp > 1)",
        default=None,
    ),
    _c(
        "system",
        "string",
        "1",
        "system catalogue key (data/hardware.yaml systems: node size, NICs, fabric); default: the "
        "GPU's default system; gpus_per_node and nic_gbit_per_s_per_gpu override it",
        default="",
    ),
    _c(
        "framework",
        "string",
        "1",
        "software stack profile (data/frameworks.yaml): megatron (Megatron-LM/Core, NeMo, "
        "Megatron-Bridge), deepspeed (DeepSpeed ZeRO, Megatron-DeepSpeed), pytorch (DDP, FSDP, "
        "FSDP2, torchtitan, Composer); default pytorch",
        choices=FRAMEWORKS,
        default="pytorch",
    ),
    _c(
        "overlap_grad_reduce",
        "bool",
        "1",
        "data-parallel gradient reduction overlapped with the backward pass (Megatron "
        "--overlap-grad-reduce, DeepSpeed overlap_comm); default: the framework profile's",
        default=None,
    ),
    _c(
        "overlap_param_gather",
        "bool",
        "1",
        "parameter all-gathers prefetched under compute (Megatron --overlap-param-gather, FSDP "
        "prefetch, ZeRO-3 prefetch); default: the framework profile's",
        default=None,
    ),
    _c(
        "tp_comm_overlap",
        "bool",
        "1",
        "tensor-parallel communication pipelined with its GEMMs (Megatron --tp-comm-overlap, "
        "torchtitan AsyncTP); default: the framework profile's",
        default=None,
    ),
    _c(
        "fused_kernels",
        "bool",
        "1",
        "normalisation, rotary and SwiGLU kernels fused (Transformer Engine LayerNormLinear/"
        "LayerNormMLP with Megatron's rope and bias-SwiGLU fusions, or torch.compile) rather "
        "than one eager kernel per operation; default: the framework profile's",
        default=None,
    ),
    _c(
        "shard_granularity",
        "string",
        "1",
        "sharded (fsdp/hsdp) all-gathers per layer (FSDP flat parameter) or per parameter tensor "
        "(DeepSpeed ZeRO-3); default: the framework profile's",
        choices=SHARD_GRANULARITIES,
        default="",
    ),
    _c(
        "attention_kernel",
        "string",
        "1",
        "attention kernel: flash2 (FlashAttention-2, PyTorch SDPA), fused (cuDNN fused "
        "attention / FlashAttention-3, Transformer Engine) or triton (FlashAttention in Triton, "
        "llm-foundry's attn_impl: triton); default: the framework profile's",
        choices=ATTENTION_KERNELS,
        default="",
    ),
    _c(
        "fp8_recipe",
        "string",
        "1",
        "FP8 scaling: delayed (Transformer Engine DelayedScaling), current (TE current scaling), "
        "tensorwise or rowwise (torchao float8); default: the framework profile's",
        choices=FP8_RECIPES,
        default="",
    ),
    _c(
        "repeat_kv",
        "bool",
        "1",
        "the model repeats K/V to the query heads before the attention kernel (torchtitan's "
        "Llama: repeat_kv), so context parallelism moves heads / kv_heads times the K/V bytes; "
        "default: the framework profile's",
        default=None,
    ),
    _c(
        "cp_comm_type",
        "string",
        "1",
        "context-parallel K/V exchange: p2p (a ring of sends, each hidden behind one chunk's "
        "attention; Transformer Engine cp_comm_type p2p) or all_gather (one AllGather hidden "
        "behind the local chunk only; PyTorch's allgather rotate method, Llama 3); default: the "
        "framework profile's",
        choices=CP_COMM_TYPES,
        default="",
    ),
)

#: The most GPUs one configuration may have: 2^20 = 1,048,576, several times any cluster built or
#: announced; above it the simulator's integer arithmetic (dp, batches) is meaningless (from 2^53
#: a float64 cannot even hold the count).
MAX_GPUS = 2**20


@dataclass(frozen=True, slots=True, kw_only=True)
class Bound:
    """The plausible range of one numeric input column, inclusive at both ends."""

    low: float
    """Smallest allowed value (in the column's unit)."""
    high: float
    """Largest allowed value (in the column's unit)."""
    integer: bool
    """Whole numbers only (counts, sizes, degrees)."""
    noun: str
    """What the number counts, for messages: ``1e+19 is above the limit of 1,048,576 GPUs``."""
    why: str
    """Why the range is what it is (written into docs/bad-input.md)."""

    def allowed(self) -> str:
        """The range in words, e.g. ``a whole number from 1 to 1,048,576``."""
        kind = "a whole number" if self.integer else "a number"
        return f"{kind} from {format_number(self.low)} to {format_number(self.high)}"


def format_number(value: float) -> str:
    """A bound as people write it: ``1,048,576``, ``0.5``."""
    return f"{int(value):,}" if float(value).is_integer() else f"{value:,g}"


#: Plausible range of every numeric column of a configuration table (``trainscale predict``,
#: studies, the published CSV's matching columns): a value outside is an error naming the file,
#: row, column and this range. The integer ranges are far above any model or run published and
#: keep every product the simulator forms in int64 (the largest, ``global_batch * seq_len``
#: tokens per step, stays below 2^54; ``layers * params_per_layer`` below 2^58): no value
#: allowed here can overflow. ``gpus_per_node``, ``nic_gbit_per_s_per_gpu`` and ``power_limit_w``
#: also accept 0 or empty for "the default" (the GPU's catalogue system, its TDP).
NUMERIC_BOUNDS: dict[str, Bound] = {
    "layers": Bound(low=1, high=10_000, integer=True, noun="layers",
                    why="the deepest published models have about 200 blocks"),
    "hidden": Bound(low=1, high=2**20, integer=True, noun="",
                    why="widest published models: h = 2^14 to 2^15"),
    "heads": Bound(low=1, high=2**16, integer=True, noun="heads",
                   why="published models use at most a few hundred heads"),
    "kv_heads": Bound(low=1, high=2**16, integer=True, noun="heads", why="as heads"),
    "ffn": Bound(low=1, high=2**22, integer=True, noun="",
                 why="MLP widths of published models are below 2^17"),
    "vocab": Bound(low=1, high=2**24, integer=True, noun="tokens",
                   why="published vocabularies hold at most about 2^18 tokens"),
    "seq_len": Bound(low=1, high=2**24, integer=True, noun="tokens",
                     why="16.8 M tokens, above the longest contexts trained (about 10^6 to 10^7)"),
    "global_batch": Bound(low=1, high=2**30, integer=True, noun="sequences",
                          why="global_batch * seq_len stays below 2^54 tokens per step"),
    "micro_batch": Bound(low=1, high=2**30, integer=True, noun="sequences",
                         why="at most the global batch's bound"),
    "num_gpus": Bound(low=1, high=MAX_GPUS, integer=True, noun="GPUs",
                      why="2^20, several times any cluster built or announced"),
    "gpus_per_node": Bound(low=1, high=1024, integer=True, noun="GPUs",
                           why="the largest NVLink domains announced hold 576 GPUs"),
    "tp": Bound(low=1, high=MAX_GPUS, integer=True, noun="GPUs", why="at most num_gpus"),
    "pp": Bound(low=1, high=MAX_GPUS, integer=True, noun="GPUs", why="at most num_gpus"),
    "cp": Bound(low=1, high=MAX_GPUS, integer=True, noun="GPUs", why="at most num_gpus"),
    "vpp": Bound(low=1, high=10_000, integer=True, noun="stages",
                 why="pp * vpp may not exceed layers"),
    "nic_gbit_per_s_per_gpu": Bound(
        low=1, high=100_000, integer=False, noun="Gb/s",
        why="1 Gb/s Ethernet to 100 Tb/s per GPU; NICs shipped today run 100 to 1,600 Gb/s",
    ),
    "power_limit_w": Bound(
        low=1, high=10_000, integer=False, noun="W",
        why="a wide frame; each GPU's own range is checked too: above its idle power, at most "
        "its TDP (data/hardware.yaml)",
    ),
}  # fmt: skip

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

_ARROW_TYPES = {
    "int64": pa.int64(),
    "float64": pa.float64(),
    "string": pa.string(),
    "bool": pa.bool_(),
    "timestamp": pa.timestamp("ns"),
}


def column(name: str) -> Column:
    """Return the definition of a column by name."""
    return _BY_NAME[name]


def names(columns: tuple[Column, ...]) -> list[str]:
    """Return the column names, in order."""
    return [c.name for c in columns]


def arrow_schema(columns: tuple[Column, ...] = DATASET_COLUMNS, **metadata: str) -> pa.Schema:
    """Return an explicit pyarrow schema; each field's metadata holds its unit and description.

    ``metadata`` is added to the schema (file) metadata, e.g. ``calibration_id=...``.
    """
    fields = [
        pa.field(
            c.name,
            _ARROW_TYPES[c.dtype],
            nullable=True,
            metadata={"unit": c.unit, "description": c.description},
        )
        for c in columns
    ]
    return pa.schema(fields, metadata={k: str(v) for k, v in metadata.items()} or None)


#: Columns of ``results/validation.parquet``: one row per line of the published CSV.
VALIDATION_COLUMNS: tuple[Column, ...] = (
    _c("csv_row", "int64", "1", "line of the published CSV (the header is line 1)"),
    _c("status", "string", "1", "predicted, or rejected (the simulator cannot represent it)"),
    _c("kind", "string", "1", "throughput or collective (nccl-tests); null if rejected"),
    column("citation"),
    column("url"),
    column("table_or_figure"),
    _c("model_name", "string", "1", "the source's own model name"),
    column("published_metric"),
    _c("published_value_text", "string", "1", "the source's number as printed"),
    *CONFIGURATION_COLUMNS,
    _c("quantity", "string", "1", "what is compared: tokens_per_s_per_gpu or busbw_gbytes_per_s"),
    _c("unit", "string", "1", "unit of observed and predicted: tokens/s or GB/s"),
    _c("observed", "float64", "see unit", "the published number converted to quantity"),
    _c("predicted", "float64", "see unit", "the simulator's prediction of quantity"),
    _c("error_pct", "float64", "%", "100 * (predicted - observed) / observed"),
    _c("ape_pct", "float64", "%", "absolute value of error_pct"),
    _c("flop_convention", "string", "1", "FLOP count the source used to report throughput"),
    _c("assumptions", "string", "1", "what trainscale assumed where the source is silent"),
    _c("reason", "string", "1", "why a rejected row cannot be predicted"),
    column("simulator_version"),
    column("calibration_id"),
)


# --------------------------------------------------------------------------------------------
# What the figures and tables read besides the dataset: tables computed by their own rules, so
# that presentation never runs the simulator (README, "Layout").

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
    _c("run_id", "string", "1", "run folder under data/runs"),
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
    _c(
        "throughput_mape_pct",
        "float64",
        "%",
        "mean absolute percentage error of the refit's tokens/s per GPU, published rows",
    ),
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
    _c("csv_row", "int64", "1", "line of the published CSV (the header is line 1)"),
    column("citation"),
    column("framework"),
    _c("model_name", "string", "1", "the source's own model name"),
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
    _c("ape_pct", "float64", "%", "absolute value of error_pct"),
    _c(
        "calibration_id",
        "string",
        "1",
        "the shipped calibration (data/calibration.yaml) whose in-sample error sits beside it",
    ),
    column("simulator_version"),
)


# --------------------------------------------------------------------------------------------
# The presentation tables: what trainscale.tables writes to reports/tables/<name>.{csv,md,tex}
# and reports/studies/<study>/fits.{csv,md,tex}, each table's columns in order (the CSV keeps
# full precision; Markdown and LaTeX print the same columns formatted).

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
    _c("gpu", "string", "1", "GPU catalogue key (data/hardware.yaml)"),
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
    _c("n", "int64", "1", "points fitted"),
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
    _c("gpu", "string", "1", "GPU catalogue key (data/hardware.yaml)"),
    _c("plan", "string", "1", "tp<t>×pp<p> <sharding>, recompute <mode>"),
    _c("seq_len", "int64", "tokens", "tokens per sequence"),
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
    _c("x_min", "float64", "see x", "smallest x of the series"),
    _c("x_max", "float64", "see x", "largest x of the series"),
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
    _c("mape_pct", "float64", "%", "mean absolute percentage error"),
    _c("median_ape_pct", "float64", "%", "median absolute percentage error"),
    _c("max_ape_pct", "float64", "%", "largest absolute percentage error"),
    _c(
        "in_sample_mape_pct",
        "float64",
        "%",
        "mean absolute percentage error of the shipped calibration, fitted on every source",
    ),
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


# --------------------------------------------------------------------------------------------
# The tables the ingesters, the fits and the calibration checks return or write, each with its
# columns in order.

#: Columns of :attr:`trainscale.ingest.steplog.StepLog.steps`: one row per logged step of one
#: step log. Fields a format does not have are null.
STEP_COLUMNS: tuple[Column, ...] = (
    _c("step", "int64", "1", "optimizer step / iteration number as logged"),
    _c("line", "int64", "1", "1-based line of the log file; null for a JSON log"),
    _c("timestamp", "timestamp", "datetime", "the line's time, naive, as written; null if none"),
    _c("loss", "float64", "1", "training loss (Megatron lm loss)"),
    _c(
        "step_time_s",
        "float64",
        "s",
        "seconds per step: the log's own (Megatron elapsed time per iteration, golden values "
        "iteration-time) or, for torchtitan, the time since the previous parsed line divided by "
        "the steps between them",
    ),
    _c(
        "tokens_per_s_per_gpu",
        "float64",
        "tokens/s",
        "logged tokens/s per GPU (torchtitan tps/wps, Primus tokens per GPU, Megatron-DeepSpeed "
        "tgs)",
    ),
    _c(
        "tflops_per_gpu",
        "float64",
        "TFLOP/s",
        "logged model TFLOP/s per GPU (torchtitan tflops, Megatron throughput per GPU)",
    ),
    _c("mfu", "float64", "1", "logged model FLOPs utilisation, fraction in [0, 1]"),
    _c("mem_gib", "float64", "GiB", "peak memory per GPU (torchtitan reserved, golden allocated)"),
    _c("power_w_per_gpu", "float64", "W", "logged average power per GPU (Megatron --log-energy)"),
    _c(
        "energy_j_per_gpu", "float64", "J", "logged energy per GPU per step (Megatron --log-energy)"
    ),
    _c("global_batch", "int64", "sequences", "sequences per step as logged (Megatron)"),
)

#: Columns of the per-step table of a run (:func:`trainscale.ingest.runs.ingest_run`, written to
#: ``results/measured/<run>_steps.parquet``): where each step came from, whether it was warm-up,
#: then the parsed step-log columns (:data:`STEP_COLUMNS`).
STEP_TABLE_COLUMNS: tuple[Column, ...] = (
    _c("run_id", "string", "1", "run folder under data/runs"),
    _c("job", "string", "1", "the job of the run the step belongs to (the run id for one job)"),
    _c("log_file", "string", "1", "the step log, relative to the run folder"),
    *(c for c in STEP_COLUMNS if c.name == "line"),
    *(c for c in STEP_COLUMNS if c.name == "step"),
    _c("warmup", "bool", "1", "the step is warm-up, left out of the run's steady state"),
    *(c for c in STEP_COLUMNS if c.name not in ("step", "line")),
)

#: Columns of :attr:`trainscale.ingest.nccltests.NcclTestsLog.results`: one row per message size
#: (and test) of an nccl-tests output. Columns an output has beyond these (``max_error``, the
#: per-iteration timings ``i_min_us`` …) come between ``gpu_name`` and ``line``.
NCCL_COLUMNS: tuple[Column, ...] = (
    _c("test", "string", "1", "nccl-tests binary, e.g. all_reduce_perf"),
    _c("collective", "string", "1", "canonical collective: allreduce, allgather, reducescatter …"),
    _c("size_bytes", "int64", "bytes", "message size: the whole buffer, as nccl-tests counts it"),
    _c("count", "int64", "1", "elements in the buffer"),
    _c("dtype", "string", "1", "element type, e.g. float"),
    _c("redop", "string", "1", "reduction operator, e.g. sum; null where the test has none"),
    _c("root", "int64", "1", "root rank (-1 for none); null where the release has no column"),
    *(
        _c(f"{prefix}{name}", dtype, unit, f"{place}: {meaning}")
        for prefix, place in (("", "out of place"), ("inplace_", "in place"))
        for name, dtype, unit, meaning in (
            ("time_us", "float64", "µs", "time of one collective"),
            ("algbw_gbytes_per_s", "float64", "GB/s", "algorithm bandwidth: size / time"),
            ("busbw_gbytes_per_s", "float64", "GB/s", "bus bandwidth as nccl-tests defines it"),
            ("wrong", "float64", "1", "wrong elements; NaN when validation is off"),
        )
    ),
    _c("num_ranks", "int64", "1", "distinct ranks of the device lines; null without them"),
    _c("num_nodes", "int64", "1", "distinct hostnames of the device lines; null without them"),
    _c("gpu_name", "string", "1", "the device lines' (most common) GPU name; null without them"),
    _c("line", "int64", "1", "1-based line of the output; null for a JSON report"),
)

#: Columns of ``trainscale trace`` (:func:`trainscale.commands.trace.trace_table`): one row per
#: rank of a job's Kineto traces, HolisticTraceAnalysis's overlap and temporal breakdown.
TRACE_COLUMNS: tuple[Column, ...] = (
    _c("rank", "int64", "1", "the trace's rank"),
    _c("comp_us", "float64", "µs", "computation kernels' time (merged intervals)"),
    _c("comm_us", "float64", "µs", "communication kernels' time (merged intervals)"),
    _c("overlap_us", "float64", "µs", "communication time overlapped by computation"),
    _c(
        "comp_comm_overlap_pctg",
        "float64",
        "%",
        "share of communication time hidden under computation, 2 decimals; NaN without any",
    ),
    _c("exposed_comm_us", "float64", "µs", "communication time not overlapped: comm - overlap"),
    _c("idle_us", "float64", "µs", "time of the kernel span with no kernel running"),
    _c("idle_pct", "float64", "%", "idle_us as a share of the kernel span, 2 decimals"),
    _c("kernel_span_us", "float64", "µs", "last GPU kernel end - first GPU kernel start"),
    _c("path", "string", "1", "the trace file"),
)

#: Columns of a rejects table after the columns of the rows it rejects: a study's
#: ``results/studies/<study>/rejects.parquet``, :func:`trainscale.sim.configs.build_configs`'
#: rejects.
REJECT_COLUMNS: tuple[Column, ...] = (
    _c("row", "int64", "1", "0-based row of the input (a study's grid)"),
    _c(
        "column",
        "string",
        "1",
        "configuration column at fault, or the study key (derive.*, filters.*) that dropped the "
        "row",
    ),
    _c("reason", "string", "1", "why the row was dropped"),
)

#: The paper setup's claims as :func:`trainscale.paper.setup.headline_claims` computes them, in
#: percent: the columns the calibration checks report next to each refit.
_HEADLINE_CLAIM_COLUMNS: tuple[Column, ...] = tuple(
    c
    for c in CLAIM_SENSITIVITY_COLUMNS
    if c.name in ("throughput_drop_pct", "power_drop_pct", "mfu_a100_pct", "mfu_h100_pct")
)

#: Columns of :func:`trainscale.calibrate.sensitivity.profile` (``trainscale calibrate --profile
#: --table``): one row per pinned value of one parameter, the others refitted.
PROFILE_COLUMNS: tuple[Column, ...] = (
    _c("parameter", "string", "1", "the pinned calibration parameter"),
    _c("value", "float64", "see parameter", "the value it is pinned at"),
    _c(
        "throughput_mape_pct",
        "float64",
        "%",
        "mean absolute percentage error of the refit's tokens/s per GPU, published rows",
    ),
    _c(
        "throughput_median_ape_pct",
        "float64",
        "%",
        "median absolute percentage error of the refit's tokens/s per GPU, published rows",
    ),
    _c(
        "busbw_mape_pct",
        "float64",
        "%",
        "mean absolute percentage error of the refit's nccl-tests bus bandwidth; NaN without rows",
    ),
    *_HEADLINE_CLAIM_COLUMNS,
    _c("calibration_id", "string", "1", "content hash of the refitted calibration"),
)

#: Columns of :func:`trainscale.calibrate.sensitivity.prior_width_scan` (``trainscale calibrate
#: --prior-scan --table``): one row per prior width.
PRIOR_SCAN_COLUMNS: tuple[Column, ...] = (
    _c(
        "prior_scale",
        "float64",
        "1",
        "factor on every prior's width (1: the calibration's; inf: no prior)",
    ),
    *(c for c in PROFILE_COLUMNS if c.name == "throughput_mape_pct"),
    _c(
        "heldout_mape_pct",
        "float64",
        "%",
        "mean absolute percentage error of tokens/s per GPU, each source predicted by a fit "
        "without it",
    ),
    _c("heldout_median_ape_pct", "float64", "%", "median of those held-out errors"),
    _c(
        "parameters_at_bounds",
        "string",
        "1",
        "fitted parameters that end on a bound, comma-separated (held by the bound, not the data)",
    ),
    *_HEADLINE_CLAIM_COLUMNS,
    _c("calibration_id", "string", "1", "content hash of the refitted calibration"),
)

#: Columns of :func:`trainscale.published.holdout.accuracy` after its first column (``source``,
#: the citation or ``all``, or ``framework``): one row per group, then ``all``.
ACCURACY_COLUMNS: tuple[Column, ...] = (
    _c("rows", "int64", "1", "rows held out"),
    _c(
        "held_out_mape_pct",
        "float64",
        "%",
        "mean absolute percentage error of tokens/s per GPU, each source predicted by a fit "
        "without it",
    ),
    _c("held_out_median_ape_pct", "float64", "%", "median of those held-out errors"),
    _c("held_out_max_ape_pct", "float64", "%", "largest of those held-out errors"),
    _c(
        "in_sample_mape_pct",
        "float64",
        "%",
        "mean absolute percentage error of the shipped calibration, fitted on every source; NaN "
        "where the group has no in-sample row",
    ),
)

#: Columns of :func:`trainscale.published.holdout.collective_accuracy`: the error of the
#: nccl-tests bus bandwidths per source, all sizes and the sizes precise enough to score.
COLLECTIVE_ACCURACY_COLUMNS: tuple[Column, ...] = (
    _c(
        "sizes",
        "string",
        "1",
        "all, >= 16 MiB, or >= 16 MiB, no problem reports (without the NCCL issue reports)",
    ),
    _c("source", "string", "1", "citation, or all"),
    _c("rows", "int64", "1", "rows predicted"),
    _c("mape_pct", "float64", "%", "mean absolute percentage error of bus bandwidth"),
    _c("median_ape_pct", "float64", "%", "median absolute percentage error of bus bandwidth"),
    _c("max_ape_pct", "float64", "%", "largest absolute percentage error of bus bandwidth"),
)

_FIT_METRIC = _c("metric", "string", "1", "the column fitted")
_FIT_NOTE = _c("note", "string", "1", "why a value is NaN, or what was dropped; '' if nothing")

#: Columns of :func:`trainscale.fits.loglog.fit_loglog` after the series (``by``) columns: the
#: power law ``log2(y) = intercept + slope * log2(x)`` of each series and metric.
LOGLOG_COLUMNS: tuple[Column, ...] = (
    _FIT_METRIC,
    _c("n", "int64", "1", "points fitted (rows with a missing x or y are dropped)"),
    _c("x_min", "float64", "see x", "smallest x of the series"),
    _c("x_max", "float64", "see x", "largest x of the series"),
    _c("slope", "float64", "1", "elasticity of y in x (1: linear scaling, 0: flat)"),
    _c("slope_se", "float64", "1", "HC3 heteroskedasticity-robust standard error of the slope"),
    _c("slope_ci_low", "float64", "1", "lower end of the slope's Student-t interval"),
    _c("slope_ci_high", "float64", "1", "upper end of the slope's Student-t interval"),
    _c("intercept", "float64", "log2 of y's unit", "log2(y) at x = 1"),
    _c("r2", "float64", "1", "R² on the log2 scale; NaN when log2(y) has no spread"),
    _c(
        "pct_change_per_doubling",
        "float64",
        "%",
        "change of y when x doubles: 100 * (2**slope - 1)",
    ),
    _c("pct_change_per_doubling_ci_low", "float64", "%", "the slope interval's lower end, mapped"),
    _c("pct_change_per_doubling_ci_high", "float64", "%", "the slope interval's upper end, mapped"),
    _FIT_NOTE,
)


def _interval(name: str, unit: str, what: str) -> tuple[Column, ...]:
    """``name``, its standard error and its interval's ends."""
    return (
        _c(name, "float64", unit, what),
        _c(f"{name}_se", "float64", unit, f"standard error of {name}"),
        _c(f"{name}_ci_low", "float64", unit, f"lower end of the interval of {name}"),
        _c(f"{name}_ci_high", "float64", unit, f"upper end of the interval of {name}"),
    )


#: Columns of :func:`trainscale.fits.usl.fit_usl_table` after the series (``by``) columns: the
#: Universal Scalability Law ``X(N) = x1 N / (1 + sigma (N - 1) + kappa N (N - 1))`` of each
#: series; the fields of :class:`trainscale.fits.usl.UslFit` but its covariance.
USL_COLUMNS: tuple[Column, ...] = (
    _FIT_METRIC,
    *_interval("x1", "see metric", "throughput of one GPU without contention (Wald on ln x1)"),
    *_interval("sigma", "1", "contention coefficient in [0, 1] (interval clipped to it)"),
    *_interval("kappa", "1", "coherency coefficient >= 0 (interval clipped at 0)"),
    _c("n_star", "float64", "GPUs", "GPU count of peak throughput; inf when kappa = 0"),
    _c("n_star_ci_low", "float64", "GPUs", "lower end of the interval of n_star (>= 1)"),
    _c("n_star_ci_high", "float64", "GPUs", "upper end of the interval of n_star; inf: no peak"),
    _c("n_star_ci_method", "string", "1", "how the n_star interval was made: delta or bootstrap"),
    _c("r2", "float64", "1", "R² of ln(X / N), the per-GPU throughput"),
    _c("residual_sd_log", "float64", "1", "residual standard deviation of ln X"),
    _c("n", "int64", "1", "points fitted"),
    _c("dof", "int64", "1", "residual degrees of freedom, n - 3"),
    _c("level", "float64", "1", "confidence level of every interval"),
    _c("converged", "bool", "1", "the optimiser converged (false when nothing could be fitted)"),
    _c("note", "string", "1", "why values are NaN, active bounds, what was dropped; '' if none"),
)

#: Columns of :func:`trainscale.fits.marginal.marginal_returns` after the series (``by``)
#: columns: one row per pair of consecutive GPU counts.
MARGINAL_COLUMNS: tuple[Column, ...] = (
    _c("n_from", "int64", "GPUs", "the smaller GPU count of the pair"),
    _c("n_to", "int64", "GPUs", "the larger GPU count of the pair"),
    _c("tokens_per_s_from", "float64", "tokens/s", "throughput at n_from, mean of replicates"),
    _c("tokens_per_s_to", "float64", "tokens/s", "throughput at n_to, mean of replicates"),
    _c("power_kw_from", "float64", "kW", "total GPU power at n_from, mean of replicates"),
    _c("power_kw_to", "float64", "kW", "total GPU power at n_to, mean of replicates"),
    _c("added_tokens_per_s_per_gpu", "float64", "tokens/s", "throughput per added GPU: ΔX / ΔN"),
    _c(
        "added_tokens_per_s_per_kw",
        "float64",
        "tokens/s per kW",
        "throughput per added kW of total GPU power: ΔX / ΔP; NaN when power did not rise",
    ),
    *(
        _c(f"usl_added_tokens_per_s_per_{per}{end}", "float64", unit, f"{what}{suffix}")
        for per, unit, what in (
            ("gpu", "tokens/s", "the USL fit's (X(n_to) - X(n_from)) / ΔN"),
            ("kw", "tokens/s per kW", "the USL fit's secant divided by the measured ΔP"),
        )
        for end, suffix in (
            ("", "; NaN unless usl=True"),
            ("_ci_low", ": lower end of its delta-method band"),
            ("_ci_high", ": upper end of its delta-method band"),
        )
    ),
    _c("note", "string", "1", "replicates averaged, rows dropped, why a value is NaN"),
)

#: Columns of :func:`trainscale.fits.marginal.usl_marginal`: a USL fit's derivative dX/dN on a
#: grid of GPU counts, with a delta-method band.
USL_MARGINAL_COLUMNS: tuple[Column, ...] = (
    _c("n", "float64", "GPUs", "GPU count of the grid"),
    *(
        _c(f"marginal_tokens_per_s_per_{per}{end}", "float64", unit, f"{what}{suffix}")
        for per, unit, what in (
            ("gpu", "tokens/s", "dX/dN: throughput per added GPU (0 at n_star, negative beyond)"),
            ("kw", "tokens/s per kW", "dX/dN divided by the power one more GPU adds"),
        )
        for end, suffix in (
            ("", ""),
            ("_ci_low", ": lower end of its band"),
            ("_ci_high", ": upper end of its band"),
        )
    ),
)
