"""The validated configurations as arrays: :class:`Configs`, one element per configuration."""

from __future__ import annotations

from dataclasses import dataclass, fields

import numpy as np

__all__ = ["FIELD_NAMES", "Configs"]


@dataclass(slots=True, kw_only=True)
class Configs:
    """Validated configurations as arrays; every field has one element per configuration.

    Shapes are ``(n,)``. Sizes in bytes, bandwidths in bytes/s, FLOP rates in FLOP/s, power in W.
    """

    # model
    layers: np.ndarray
    hidden: np.ndarray
    heads: np.ndarray
    kv_heads: np.ndarray
    ffn: np.ndarray
    vocab: np.ndarray
    swiglu: np.ndarray
    tied_embeddings: np.ndarray
    # batch
    seq_len: np.ndarray
    global_batch: np.ndarray
    micro_batch: np.ndarray
    # plan
    num_gpus: np.ndarray
    gpus_per_node: np.ndarray
    tp: np.ndarray
    pp: np.ndarray
    cp: np.ndarray
    vpp: np.ndarray
    dp: np.ndarray
    grad_accum: np.ndarray
    sharding: np.ndarray
    """Index into :data:`~trainscale.schema.SHARDINGS`."""
    recompute: np.ndarray
    """Index into :data:`~trainscale.schema.RECOMPUTE_MODES`."""
    fp8: np.ndarray
    sequence_parallel: np.ndarray
    # framework (the software stack's behaviours, data/frameworks.yaml)
    framework: np.ndarray
    """Index into :data:`~trainscale.schema.FRAMEWORKS`."""
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
    deferred_grad_sync: np.ndarray
    """Sharded data parallelism (ZeRO-2, FSDP, HSDP) under pipeline parallelism whose profile
    defers its gradient sync and resharding to the last micro-batch (``pipeline_defers_grad_sync``,
    PyTorch's pipeline stages)."""
    fp8_cast_bytes: np.ndarray
    """HBM bytes per FP8 GEMM input element spent on quantisation (the FP8 recipe)."""
    ddp_bucket_params: np.ndarray
    """Gradient bucket of overlapped data-parallel reduction, parameters."""
    host_overhead_s: np.ndarray
    """CPU time to launch one block's kernels (forward + backward, one micro-batch), s."""
    # system
    gpu_index: np.ndarray
    """Index into the sorted GPU keys of the hardware catalogue."""
    system: np.ndarray
    """System catalogue key (object array)."""
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

    def __len__(self) -> int:
        return len(self.layers)

    def take(self, index: np.ndarray) -> Configs:
        """Return the configurations selected by an index or boolean mask."""
        return Configs(**{f.name: getattr(self, f.name)[index] for f in fields(self)})


FIELD_NAMES = tuple(f.name for f in fields(Configs))
"""The fields of :class:`Configs`, in order."""
