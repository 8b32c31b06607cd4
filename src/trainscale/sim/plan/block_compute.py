"""Compute-stream time of one transformer block and of the LM head, per micro-batch.

GEMMs on the roofline with their size-dependent efficiency, FlashAttention (or, on GPUs without
it, the materialised s×s scores), the memory-bound kernels, and what full or selective
recomputation executes again in backward. Arrays are float64 of shape ``(n,)``, seconds.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from trainscale.schema import Recompute
from trainscale.sim.configs.arrays import PlanArrays, SystemArrays
from trainscale.sim.model.finetune import adapter_gemms, lora_mask, weight_gradient_share
from trainscale.sim.model.work import BlockWork
from trainscale.sim.plan.efficiency import Efficiencies
from trainscale.sim.system.compute import attention_time, gemm_efficiency, gemm_time, memory_time

if TYPE_CHECKING:
    from trainscale.sim.calibration import Calibration

__all__ = ["ATTENTION_BACKWARD_RATIO", "BlockCompute", "block_compute"]

#: FlashAttention's backward executes 2.5x the forward FLOPs (5 matmuls against 2).
ATTENTION_BACKWARD_RATIO = 2.5


@dataclass(frozen=True, slots=True, kw_only=True)
class BlockCompute:
    """Compute-stream time of one block (and of the head) per micro-batch: float64 arrays of
    shape ``(n,)``, seconds."""

    gemm_fwd_s: np.ndarray
    """The block's forward GEMMs."""
    gemm_bwd_s: np.ndarray
    """The block's backward GEMMs (input and weight gradients: twice the forward)."""
    attention_fwd_s: np.ndarray
    """The block's forward attention."""
    fwd_dense_s: np.ndarray
    """Forward GEMMs plus attention."""
    fwd_memory_s: np.ndarray
    """Forward memory-bound kernels (a third of the block's traffic)."""
    bwd_dense_s: np.ndarray
    """Backward GEMMs and attention plus the recomputed dense forward."""
    bwd_memory_s: np.ndarray
    """Backward memory-bound kernels plus the recomputed ones."""
    head_dense_s: np.ndarray
    """The LM head GEMM, forward and backward."""
    head_memory_s: np.ndarray
    """The cross-entropy over the logits, forward and backward."""


def _attention_fwd(
    seq_len: np.ndarray,
    hidden: np.ndarray,
    heads: np.ndarray,
    system: SystemArrays,
    w: BlockWork,
    cal: Calibration,
    eff: Efficiencies,
) -> np.ndarray:
    """Forward attention time of one block: FlashAttention, or (where the GPU has none) two
    batched GEMMs over the whole s×s square plus the HBM traffic of the materialised scores."""
    flash = attention_time(
        w.attention_flops_fwd,
        peak=system.bf16_flops_per_s * eff.clock_ratio,
        attention_efficiency=eff.attention,
    )
    head_dim = (hidden // heads).astype(np.float64)
    seq = seq_len.astype(np.float64)
    d0 = system.gemm_half_efficiency_dim * cal.gemm_size_scale
    eta = gemm_efficiency(seq, seq, head_dim, eff.bf16_gemm_max, d0, cal.gemm_size_exponent)
    materialised = w.score_flops_fwd / (
        eta * system.bf16_flops_per_s * eff.clock_ratio
    ) + memory_time(
        eff.elementwise_traffic * w.score_bytes_fwd,
        hbm_bw=system.hbm_bytes_per_s, hbm_efficiency=cal.hbm_efficiency,
    )  # fmt: skip
    return np.where(system.flash_attention, flash, materialised)


def _adapter_time(
    finetune: np.ndarray, lora_rank: np.ndarray, w: BlockWork, kw: dict
) -> np.ndarray:
    """Forward time of one block's LoRA adapters (0 where not LoRA)."""
    lora = lora_mask(finetune)
    if not lora.any():
        return np.zeros(len(lora))
    rows = np.flatnonzero(lora)
    sub = {k: v[rows] if isinstance(v, np.ndarray) and v.shape == lora.shape else v
           for k, v in kw.items()}  # fmt: skip
    out = np.zeros(len(lora))
    out[rows] = sum(gemm_time(m[rows], n[rows], k[rows], **sub)
                    for m, n, k in adapter_gemms(lora_rank, w))  # fmt: skip
    return out


def block_compute(
    plan: PlanArrays,
    system: SystemArrays,
    hidden: np.ndarray,
    heads: np.ndarray,
    w: BlockWork,
    cal: Calibration,
    eff: Efficiencies,
) -> BlockCompute:
    """Forward and backward compute-stream time of one block and of the head, per micro-batch
    (s, shape ``(n,)``).

    Reads ``plan.seq_len``, ``recompute``, ``finetune`` and ``lora_rank``; ``system``'s peaks
    (``peak_flops_per_s``, ``bf16_flops_per_s``: FLOP/s), ``hbm_bytes_per_s`` (B/s),
    ``gemm_half_efficiency_dim`` (elements) and ``flash_attention``; ``hidden`` and ``heads``
    (the attention scores' head width ``hidden // heads`` where the GPU has no FlashAttention);
    ``w``: the block's GEMMs, FLOPs and bytes; ``eff``: the calibrated efficiencies.
    """
    d0 = system.gemm_half_efficiency_dim * cal.gemm_size_scale
    kw = {"peak": system.peak_flops_per_s * eff.clock_ratio, "eta_max": eff.gemm_max, "d0": d0,
          "hbm_bw": system.hbm_bytes_per_s, "exponent": cal.gemm_size_exponent}  # fmt: skip
    # The two backward GEMMs of a (m, n, k) product, (m, k, n) and (k, n, m), have its FLOPs, its
    # smallest dimension and its traffic: each takes the forward GEMM's time.
    gemm_fwd = sum(gemm_time(m, n, k, **kw) for m, n, k in w.gemms)
    # LoRA: frozen weights skip their weight-gradient GEMM; the adapters run all three passes.
    wgrad = weight_gradient_share(plan.finetune)
    adapters = _adapter_time(plan.finetune, plan.lora_rank, w, kw)
    gemm_fwd = gemm_fwd + adapters
    gemm_bwd = (1.0 + wgrad) * (gemm_fwd - adapters) + 2.0 * adapters
    attn_fwd = _attention_fwd(plan.seq_len, hidden, heads, system, w, cal, eff)
    mem = memory_time(
        eff.elementwise_traffic * w.elementwise_bytes,
        hbm_bw=system.hbm_bytes_per_s, hbm_efficiency=cal.hbm_efficiency,
    )  # fmt: skip
    fwd_dense = gemm_fwd + attn_fwd
    fwd_mem = mem / 3.0
    recompute_dense = np.select(
        [plan.recompute == Recompute.FULL, plan.recompute == Recompute.SELECTIVE],
        [fwd_dense, attn_fwd],
        0.0,
    )
    recompute_mem = np.where(plan.recompute == Recompute.FULL, fwd_mem, 0.0)
    m, n, k = w.head_gemm
    return BlockCompute(
        gemm_fwd_s=gemm_fwd,
        gemm_bwd_s=gemm_bwd,
        attention_fwd_s=attn_fwd,
        fwd_dense_s=fwd_dense,
        fwd_memory_s=fwd_mem,
        bwd_dense_s=gemm_bwd + ATTENTION_BACKWARD_RATIO * attn_fwd + recompute_dense,
        bwd_memory_s=2.0 * mem / 3.0 + recompute_mem,
        head_dense_s=(2.0 + wgrad) * gemm_time(m, n, k, **kw),
        head_memory_s=memory_time(
            eff.elementwise_traffic * w.head_elementwise_bytes,
            hbm_bw=system.hbm_bytes_per_s, hbm_efficiency=cal.hbm_efficiency,
        ),
    )  # fmt: skip
