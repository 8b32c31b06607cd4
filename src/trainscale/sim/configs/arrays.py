"""The validated configurations as arrays: :class:`Configs`, one element per configuration.

Following Calculon's split, a configuration is composed of four parts, each a dataclass of arrays
of shape ``(n,)``: the **model** (:class:`ModelArrays`: the transformer's shape), the **plan**
(:class:`PlanArrays`: batch, sequence, GPU count, parallel degrees, sharding, recompute,
precision), the software **stack** (:class:`StackArrays`: the framework profile's behaviours,
``data/frameworks.yaml``) and the **system** (:class:`SystemArrays`: the GPU and system catalogue
values joined to each row, ``data/hardware.yaml``). Sizes in bytes, bandwidths in bytes/s, FLOP
rates in FLOP/s, power in W. A function reads the part it needs (``c.model.layers``,
``c.system.hbm_bytes``).
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import TypeVar

import numpy as np

__all__ = [
    "FIELD_NAMES",
    "PART_FIELDS",
    "Configs",
    "ModelArrays",
    "PlanArrays",
    "StackArrays",
    "SystemArrays",
    "compose",
]


@dataclass(slots=True, kw_only=True)
class ModelArrays:
    """The model's shape per configuration (the catalogue model's, or the row's own)."""

    layers: np.ndarray
    hidden: np.ndarray
    heads: np.ndarray
    kv_heads: np.ndarray
    ffn: np.ndarray
    vocab: np.ndarray
    swiglu: np.ndarray
    tied_embeddings: np.ndarray
    head_dim: np.ndarray
    """Width of one attention head (``hidden / heads`` unless the catalogue gives another)."""
    kv_lora_rank: np.ndarray
    """Multi-head latent attention's key/value latent rank; 0: grouped-query attention."""
    q_lora_rank: np.ndarray
    """Its query latent rank; 0: queries projected directly."""
    qk_head_dim: np.ndarray
    """Query/key width per head of MLA (no-rope plus rope part); 0 without MLA."""
    qk_rope_dim: np.ndarray
    """The rotary part of it (one rotary key shared by all heads); 0 without MLA."""
    v_head_dim: np.ndarray
    """Value width per head of MLA; 0 without MLA."""
    num_experts: np.ndarray
    """Routed experts per mixture-of-experts block; 0: a dense model."""
    experts_per_token: np.ndarray
    """Routed experts each token goes to (top-k); 0: a dense model."""
    expert_ffn: np.ndarray
    """Inner width of one routed expert; 0: a dense model."""
    shared_ffn: np.ndarray
    """Inner width of the shared experts together (``shared_experts · shared_expert_ffn``)."""
    moe_layers: np.ndarray
    """Blocks whose MLP is a mixture of experts (the others have the dense ``ffn``)."""
    active_matmul_params: np.ndarray
    """Weights one token multiplies (:func:`trainscale.sim.model.counts.active_matmul_params`)
    of a mixture-of-experts, MLA or wide-head catalogue model; 0 for a dense one."""
    block_params: np.ndarray
    """Weights of all transformer blocks (every expert) of such a model; 0 for a dense one
    (:func:`trainscale.sim.model.params.block_params_b` counts those)."""
    score_width: np.ndarray
    """``heads·(d_qk + d_v)`` of such a model (the attention scores' FLOPs per token and layer
    are ``2·seq_len`` times it, forward); 0 for a dense one."""


@dataclass(slots=True, kw_only=True)
class PlanArrays:
    """How each configuration runs: batch, sequence, GPU count, parallel degrees, sharding,
    recompute and precision."""

    seq_len: np.ndarray
    global_batch: np.ndarray
    micro_batch: np.ndarray
    num_gpus: np.ndarray
    tp: np.ndarray
    pp: np.ndarray
    cp: np.ndarray
    vpp: np.ndarray
    dp: np.ndarray
    grad_accum: np.ndarray
    ep: np.ndarray
    """Expert-parallel degree (1 for a dense model)."""
    etp: np.ndarray
    """Expert tensor-parallel degree (``tp`` unless the row gives another)."""
    edp: np.ndarray
    """Expert data-parallel degree, ``num_gpus / (pp·ep·etp)``."""
    sharding: np.ndarray
    """Index into :data:`~trainscale.schema.SHARDINGS`."""
    recompute: np.ndarray
    """Index into :data:`~trainscale.schema.RECOMPUTE_MODES`."""
    fp8: np.ndarray
    sequence_parallel: np.ndarray
    finetune: np.ndarray
    """Index into :data:`~trainscale.schema.FINETUNE_MODES`."""
    lora_rank: np.ndarray
    moe_routing: np.ndarray
    """Index into :data:`~trainscale.schema.MOE_ROUTINGS`."""
    capacity_factor: np.ndarray
    """Tokens an expert may take over the uniform share (``moe_routing`` capacity)."""


@dataclass(slots=True, kw_only=True)
class StackArrays:
    """The software stack per configuration: its framework profile's behaviours (with the row's
    overrides), ``data/frameworks.yaml``."""

    framework: np.ndarray
    """Index into the framework list of the catalogue the configurations were built from
    (``Catalogue.framework_keys``)."""
    overlap_grad_reduce: np.ndarray
    overlap_param_gather: np.ndarray
    tp_comm_overlap: np.ndarray
    fused_kernels: np.ndarray
    """Normalisation, rotary and activation kernels fused (fewer HBM passes)."""
    attention_kernel: np.ndarray
    """Index into :data:`~trainscale.schema.ATTENTION_KERNELS`."""
    fused_attention: np.ndarray
    """The fused attention kernel (cuDNN / FlashAttention-3) rather than FlashAttention-2."""
    per_tensor_gather: np.ndarray
    """Sharded all-gathers are issued per parameter tensor (DeepSpeed ZeRO-3), not per layer."""
    fp8_recipe: np.ndarray
    """Index into :data:`~trainscale.schema.FP8_RECIPES`."""
    repeat_kv: np.ndarray
    """K/V repeated to the query heads before the attention kernel (context parallelism moves
    ``heads`` heads of K/V, not ``kv_heads``)."""
    cp_comm_type: np.ndarray
    """Index into :data:`~trainscale.schema.CP_COMM_TYPES`."""
    moe_dispatcher: np.ndarray
    """Index into :data:`~trainscale.schema.MOE_DISPATCHERS`."""
    moe_a2a_overlap: np.ndarray
    """The expert-parallel all-to-all overlaps another micro-batch's compute."""
    deferred_grad_sync: np.ndarray
    """Sharded data parallelism (ZeRO-2, FSDP, HSDP) under pipeline parallelism whose profile
    defers its gradient sync and resharding to the last micro-batch (``pipeline_defers_grad_sync``,
    PyTorch's pipeline stages)."""
    distributed_optimizer: np.ndarray
    """Unsharded and ZeRO-1 rows hold bf16 parameters, fp32 main gradients and fp32 optimizer
    states sharded over the data-parallel ranks (the profile's ``distributed_optimizer``)."""
    fp8_cast_bytes: np.ndarray
    """HBM bytes per FP8 GEMM input element spent on quantisation (the FP8 recipe)."""
    ddp_bucket_params: np.ndarray
    """Gradient bucket of overlapped data-parallel reduction, parameters."""
    host_overhead_s: np.ndarray
    """CPU time to launch one block's kernels (forward + backward, one micro-batch), s."""


@dataclass(slots=True, kw_only=True)
class SystemArrays:
    """The hardware per configuration: the GPU's and system's catalogue values (with the row's
    own ``gpus_per_node``, NIC rate and power limit where given)."""

    gpu_index: np.ndarray
    """Index into the sorted GPU keys of the hardware catalogue."""
    name: np.ndarray
    """System catalogue key (object array)."""
    gpus_per_node: np.ndarray
    peak_flops_per_s: np.ndarray
    """Dense peak of the configured precision (what the linear layers run at)."""
    bf16_flops_per_s: np.ndarray
    """Dense BF16 peak: attention and everything outside the linear layers run at it."""
    gemm_efficiency_max: np.ndarray
    """Catalogued large-GEMM fraction of the configured precision's peak (MAMF / peak)."""
    bf16_gemm_efficiency_max: np.ndarray
    """The same for BF16 GEMMs."""
    gemm_half_efficiency_dim: np.ndarray
    attention_efficiency_max: np.ndarray
    flash_attention: np.ndarray
    hbm_bytes: np.ndarray
    hbm_bytes_per_s: np.ndarray
    nvlink_bytes_per_s: np.ndarray
    nvls: np.ndarray
    nic_bytes_per_s: np.ndarray
    """Scale-out NIC line rate per GPU."""
    fabric_factor: np.ndarray
    tdp_w: np.ndarray
    idle_w: np.ndarray
    power_limit_w: np.ndarray
    """Board power limit, W: the TDP unless the configuration sets a lower one."""


_Part = TypeVar("_Part", ModelArrays, PlanArrays, StackArrays, SystemArrays)


def _take(part: _Part, index: np.ndarray) -> _Part:
    return type(part)(**{f.name: getattr(part, f.name)[index] for f in fields(part)})


@dataclass(slots=True, kw_only=True)
class Configs:
    """Validated configurations, composed of their model, plan, stack and system parts."""

    model: ModelArrays
    plan: PlanArrays
    stack: StackArrays
    system: SystemArrays

    def __len__(self) -> int:
        return len(self.model.layers)

    def take(self, index: np.ndarray) -> Configs:
        """Return the configurations selected by an index or boolean mask."""
        return Configs(**{part: _take(getattr(self, part), index) for part in _PARTS})

    def flat(self) -> dict[str, np.ndarray]:
        """Every field of every part by its configuration name (the system's key as
        ``system``), in :data:`FIELD_NAMES` order."""
        return {
            name: getattr(getattr(self, part), attribute)
            for name, (part, attribute) in _WHERE.items()
        }


_PARTS = {"model": ModelArrays, "plan": PlanArrays, "stack": StackArrays, "system": SystemArrays}

#: The one field whose attribute is not its configuration name: ``c.system.name`` is the
#: ``system`` column (``c.system.system`` would say it twice).
_COLUMN_OF_ATTRIBUTE = {("system", "name"): "system"}

#: Configuration name -> (part, attribute) of every field, in part and field order.
_WHERE: dict[str, tuple[str, str]] = {
    _COLUMN_OF_ATTRIBUTE.get((part, f.name), f.name): (part, f.name)
    for part, kind in _PARTS.items()
    for f in fields(kind)
}

PART_FIELDS: dict[str, str] = {name: part for name, (part, _) in _WHERE.items()}
"""Each field's part (``"model"``, ``"plan"``, ``"stack"`` or ``"system"``), by the field's
configuration name (the system part's ``name`` is the ``system`` column)."""

FIELD_NAMES = tuple(PART_FIELDS)
"""The fields of every part, in order."""


def compose(columns: dict[str, np.ndarray]) -> Configs:
    """A :class:`Configs` from one array per name of :data:`FIELD_NAMES`."""
    parts: dict[str, dict[str, np.ndarray]] = {part: {} for part in _PARTS}
    for name, (part, attribute) in _WHERE.items():
        parts[part][attribute] = columns[name]
    return Configs(**{part: _PARTS[part](**values) for part, values in parts.items()})
