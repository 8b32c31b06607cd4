"""Framework profiles: what a software stack does with a given model, plan and hardware.

The same plan (tp, pp, dp, sharding) runs differently under Megatron-Core, DeepSpeed and PyTorch
FSDP: which communication is overlapped with compute, how finely sharded collectives are split, how
FP8 scales are computed, how many kernels a block launches, and which plans it cannot run at all
(``pipeline_schedules``: DeepSpeed has no interleaved 1F1B; ``pipeline_shardings``: DeepSpeed's
pipeline engine refuses ZeRO-2/3). ``data/frameworks.yaml`` states each
profile's behaviours with the framework's own documentation or code as source; a configuration
names its profile in the ``framework`` column (default :data:`DEFAULT_FRAMEWORK`) and may override
single behaviours with the columns of :data:`OVERRIDE_COLUMNS`, named as the frameworks name them.

What a profile does *not* hold are efficiencies: each framework's offsets on the shared GEMM,
attention, memory-traffic, FP8 and overlap efficiencies are calibrated parameters
(:mod:`trainscale.sim.calibration`), so the hardware physics stays shared across stacks.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from pathlib import Path

from trainscale.errors import InputFileError
from trainscale.io.schema import check_document
from trainscale.io.yaml import load_yaml, require_keys
from trainscale.paths import data_dir, schema_file
from trainscale.schema import (
    ATTENTION_KERNELS,
    CP_COMM_TYPES,
    FP8_RECIPES,
    MOE_DISPATCHERS,
    SHARD_GRANULARITIES,
    SHARDINGS,
)

__all__ = [
    "BOOLEAN_BEHAVIOURS",
    "CHOICE_BEHAVIOURS",
    "OVERRIDE_COLUMNS",
    "PIPELINE_SCHEDULES",
    "TRITON_ATTENTION_RELATIVE_SPEED",
    "ZERO3_MAX_REUSE_DISTANCE",
    "ZERO3_PERSISTENCE_THRESHOLD",
    "FrameworkProfile",
    "fp8_cast_bytes_per_element",
    "load_frameworks",
]

BOOLEAN_BEHAVIOURS = (
    "overlap_grad_reduce", "overlap_param_gather", "tp_comm_overlap", "fused_kernels", "repeat_kv",
    "moe_a2a_overlap",
)  # fmt: skip
CHOICE_BEHAVIOURS: dict[str, tuple[str, ...]] = {
    "shard_granularity": SHARD_GRANULARITIES,
    "attention_kernel": ATTENTION_KERNELS,
    "fp8_recipe": FP8_RECIPES,
    "cp_comm_type": CP_COMM_TYPES,
    "moe_dispatcher": MOE_DISPATCHERS,
}
"""The categorical behaviours, each with the values it may take (in the order of its codes)."""
OVERRIDE_COLUMNS = (*BOOLEAN_BEHAVIOURS, *CHOICE_BEHAVIOURS)
"""Configuration columns that override one behaviour of the row's profile (empty: the profile's)."""

# Bytes moved per element of an FP8 GEMM input by its quantisation: delayed scaling casts with the
# scale of earlier steps (read bf16 2 + write fp8 1); current/dynamic scaling first reduces the
# input's amax (read bf16 2 more) — Transformer Engine's Float8CurrentScaling, torchao tensorwise
# and rowwise.
_CAST_BYTES = {"delayed": 3.0, "current": 5.0, "tensorwise": 5.0, "rowwise": 5.0}
_PROFILE_KEYS = (
    "description", "aliases", *BOOLEAN_BEHAVIOURS, *CHOICE_BEHAVIOURS,
    "pipeline_defers_grad_sync", "pipeline_schedules", "pipeline_shardings", "ddp_bucket_params",
    "ddp_bucket_params_per_dp_rank", "host_overhead_per_layer_s", "distributed_optimizer",
    "sources",
)  # fmt: skip


#: Speed of FlashAttention written in Triton relative to FlashAttention-2 on the same GPU:
#: "FlashAttention-2 is ... 1.3-2.5x faster than FlashAttention in Triton" (Dao 2023,
#: arXiv 2307.08691, section 4.1, forward and backward on A100); the geometric mean of the range.
TRITON_ATTENTION_RELATIVE_SPEED = 1.0 / (1.3 * 2.5) ** 0.5

#: DeepSpeed ZeRO-3, which gathers tensor by tensor (``shard_granularity: tensor``), does not
#: partition a parameter smaller than this many elements: it stays whole on every rank and is never
#: gathered ("stage3_param_persistence_threshold: Do not partition parameters smaller than this
#: threshold", default 1e5, https://www.deepspeed.ai/docs/config-json/; the same default,
#: ``param_persistence_threshold=100000``, in deepspeed/runtime/zero/stage3.py at v0.3.14).
ZERO3_PERSISTENCE_THRESHOLD = 1e5
#: ZeRO-3 releases a gathered parameter after its submodule runs unless the submodule runs again
#: within this many parameter elements ("stage3_max_reuse_distance: Do not release a parameter
#: if it will be reused within this threshold of parameters", default 1e9, same page; stage3.py
#: ``_keep_for_later`` at v0.3.14). With full recomputation a block's forward runs again right
#: before its backward, so a tensor is gathered a third time when the submodules between its
#: recomputed forward and its backward (those after it, twice) hold this many elements or more.
ZERO3_MAX_REUSE_DISTANCE = 1e9
#: ZeRO-3 keeps at most this many gathered parameter elements resident on a GPU
#: ("stage3_max_live_parameters: The maximum number of parameters resident per GPU before
#: releasing", default 1e9, https://www.deepspeed.ai/docs/config-json/; ``max_live_parameters``
#: in deepspeed/runtime/zero/stage3.py at v0.3.14): the bound on its gathered bf16 weights.
ZERO3_MAX_LIVE_PARAMETERS = 1e9

#: Behaviours whose source ``data/frameworks.yaml`` must give.
_DOCUMENTED = (
    *BOOLEAN_BEHAVIOURS, *CHOICE_BEHAVIOURS,
    "pipeline_defers_grad_sync", "pipeline_schedules", "pipeline_shardings", "ddp_bucket_params",
    "distributed_optimizer",
)  # fmt: skip


#: Pipeline schedules a profile may have (``pipeline_schedules``): 1F1B (PipeDream-Flush) and
#: interleaved 1F1B, which a row asks for with ``vpp`` > 1 (Narayanan et al. 2021).
PIPELINE_SCHEDULES = ("1f1b", "interleaved_1f1b")


def fp8_cast_bytes_per_element(recipe: str) -> float:
    """HBM bytes per FP8 GEMM input element spent quantising it under ``recipe``."""
    return _CAST_BYTES[recipe]


@dataclass(frozen=True, slots=True, kw_only=True)
class FrameworkProfile:
    """One software stack's documented behaviours (see ``data/frameworks.yaml``)."""

    key: str
    description: str
    aliases: tuple[str, ...]
    overlap_grad_reduce: dict[str, bool]
    """By sharding: data-parallel gradient reduction in buckets during backward (else after it)."""
    overlap_param_gather: dict[str, bool]
    """By sharding: parameter all-gathers prefetched under compute (else exposed)."""
    tp_comm_overlap: dict[str, bool]
    """Tensor-parallel collectives pipelined with their GEMMs (one of tp chunks exposed)."""
    fused_kernels: dict[str, bool]
    """Normalisation, rotary and activation kernels fused (Transformer Engine LayerNormLinear and
    LayerNormMLP, Megatron's rope and SwiGLU fusions, torch.compile), else one kernel per op."""
    shard_granularity: str
    """``layer``: one sharded all-gather per block; ``tensor``: one per parameter tensor."""
    attention_kernel: str
    """One of :data:`~trainscale.schema.ATTENTION_KERNELS`."""
    fp8_recipe: str
    """One of :data:`FP8_RECIPES`."""
    repeat_kv: dict[str, bool]
    """K/V repeated to the query heads before the attention kernel (what context parallelism
    then moves), else the kernel takes the ``kv_heads`` heads as they are (GQA)."""
    cp_comm_type: str
    """One of :data:`~trainscale.schema.CP_COMM_TYPES`: how context parallelism exchanges K/V."""
    moe_dispatcher: str
    """One of :data:`~trainscale.schema.MOE_DISPATCHERS`: how tokens reach their experts."""
    moe_a2a_overlap: dict[str, bool]
    """The expert-parallel all-to-all of one micro-batch runs beside another's compute (1F1B
    steady state), else on the critical path."""
    pipeline_defers_grad_sync: bool
    """Under pipeline parallelism, sharded data parallelism (ZeRO-2, FSDP, HSDP) reduces its
    gradients once per step after the last micro-batch and keeps the stage's parameters gathered
    after backward (PyTorch's pipeline stages), else it syncs every micro-batch."""
    pipeline_schedules: tuple[str, ...]
    """Of :data:`PIPELINE_SCHEDULES`: the schedules the stack has; without
    ``interleaved_1f1b`` a row with ``vpp`` > 1 is refused."""
    pipeline_shardings: tuple[str, ...]
    """Of :data:`~trainscale.schema.SHARDINGS`: those the stack runs with ``pp`` > 1; a row with
    ``pp`` > 1 and another sharding is refused (DeepSpeed: ddp and zero1 only)."""
    ddp_bucket_params: float
    """Smallest gradient bucket, parameters."""
    ddp_bucket_params_per_dp_rank: float
    """Bucket growth with the data-parallel degree: bucket = max(min, this × dp), parameters."""
    host_overhead_per_layer_s: float
    """CPU time to launch one block's kernels for forward and backward of one micro-batch, s."""
    distributed_optimizer: bool
    """Unsharded (``ddp``) and ``zero1`` rows run Megatron-Core's distributed optimizer: bf16
    parameters, fp32 main gradients and the fp32 optimizer states sharded over the data-parallel
    ranks (memory only: :mod:`trainscale.sim.model.memory`)."""
    sources: dict[str, str]
    """Where each behaviour is documented."""

    @property
    def interleaves(self) -> bool:
        """The stack has interleaved 1F1B (runs ``vpp`` > 1)."""
        return "interleaved_1f1b" in self.pipeline_schedules


def _bool(path: Path, where: str, value: object) -> bool:
    if not isinstance(value, bool):
        raise InputFileError(path, f"{where}: expected true or false, got {value!r}")
    return value


def _by_sharding(path: Path, where: str, value: object) -> dict[str, bool]:
    """A behaviour given once, or per sharding (every one of SHARDINGS named)."""
    if not isinstance(value, dict):
        flag = _bool(path, where, value)
        return dict.fromkeys(SHARDINGS, flag)
    if set(value) != set(SHARDINGS):
        raise InputFileError(
            path, f"{where}: a mapping by sharding must name exactly {', '.join(SHARDINGS)}"
        )
    return {s: _bool(path, f"{where}.{s}", value[s]) for s in SHARDINGS}


def _number(path: Path, where: str, value: object) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or value < 0:
        raise InputFileError(path, f"{where}: expected a number >= 0, got {value!r}")
    return float(value)


def _choice(path: Path, where: str, value: object, allowed: tuple[str, ...]) -> str:
    if value not in allowed:
        raise InputFileError(
            path, f"{where}: {value!r} is not allowed; allowed: {', '.join(allowed)}"
        )
    return str(value)


def _choices(path: Path, where: str, value: object, allowed: tuple[str, ...]) -> tuple[str, ...]:
    """A non-empty list of distinct values of ``allowed``, in the order of ``allowed``."""
    if not isinstance(value, list) or not value:
        raise InputFileError(
            path, f"{where}: expected a non-empty list of {', '.join(allowed)}, got {value!r}"
        )
    chosen = {_choice(path, where, v, allowed) for v in value}
    return tuple(a for a in allowed if a in chosen)


def _parse(path: Path, key: str, entry: dict) -> FrameworkProfile:
    where = f"profiles.{key}"
    require_keys(path, where, entry, _PROFILE_KEYS)
    sources = entry["sources"]
    if not isinstance(sources, dict):
        raise InputFileError(path, f"{where}.sources: expected a mapping behaviour -> source")
    undocumented = [b for b in _DOCUMENTED if b not in sources]
    if undocumented:
        raise InputFileError(path, f"{where}.sources: no source for {', '.join(undocumented)}")
    return FrameworkProfile(
        key=key,
        description=str(entry["description"]),
        aliases=tuple(str(a) for a in entry["aliases"]),
        **{b: _by_sharding(path, f"{where}.{b}", entry[b]) for b in BOOLEAN_BEHAVIOURS},
        **{
            b: _choice(path, f"{where}.{b}", entry[b], allowed)
            for b, allowed in CHOICE_BEHAVIOURS.items()
        },
        pipeline_defers_grad_sync=_bool(
            path, f"{where}.pipeline_defers_grad_sync", entry["pipeline_defers_grad_sync"]
        ),
        pipeline_schedules=_choices(
            path, f"{where}.pipeline_schedules", entry["pipeline_schedules"], PIPELINE_SCHEDULES
        ),
        pipeline_shardings=_choices(
            path, f"{where}.pipeline_shardings", entry["pipeline_shardings"], SHARDINGS
        ),
        ddp_bucket_params=_number(path, f"{where}.ddp_bucket_params", entry["ddp_bucket_params"]),
        ddp_bucket_params_per_dp_rank=_number(
            path, f"{where}.ddp_bucket_params_per_dp_rank", entry["ddp_bucket_params_per_dp_rank"]
        ),
        host_overhead_per_layer_s=_number(
            path, f"{where}.host_overhead_per_layer_s", entry["host_overhead_per_layer_s"]
        ),
        distributed_optimizer=_bool(
            path, f"{where}.distributed_optimizer", entry["distributed_optimizer"]
        ),
        sources={str(k): str(v) for k, v in sources.items()},
    )


@cache
def _load(path: Path) -> dict[str, FrameworkProfile]:
    data = load_yaml(path)
    check_document(data, path, schema_file("frameworks"))
    require_keys(path, "top level", data, ("profiles",))
    profiles = data["profiles"]
    if not isinstance(profiles, dict):
        raise InputFileError(
            path, f"profiles: expected a mapping of profile key -> profile, not "
            f"{type(profiles).__name__}",
        )  # fmt: skip
    return {str(key): _parse(path, str(key), profile) for key, profile in profiles.items()}


def load_frameworks(path: str | Path | None = None) -> dict[str, FrameworkProfile]:
    """Load (and cache) the framework profiles ``path`` (default: the data folder's
    ``frameworks.yaml``, :func:`trainscale.paths.data_dir`, read at the call), checked against
    ``workflow/schemas/frameworks.schema.yaml``: profile key -> :class:`FrameworkProfile`, in file
    order. Its keys are the framework list of every computation given this catalogue
    (:attr:`trainscale.sim.catalogue.Catalogue.framework_keys`)."""
    return _load(Path(path) if path is not None else data_dir() / "frameworks.yaml")
