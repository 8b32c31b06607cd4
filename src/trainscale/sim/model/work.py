"""The work of one transformer block and of the LM head on one GPU, per micro-batch.

Given the shape and the plan (tensor- and context-parallel degrees), this lists what one GPU
executes for one micro-batch: the GEMM shapes of a block's forward pass, the FlashAttention FLOPs,
and the HBM bytes of the memory-bound kernels. Backward GEMMs are the two transposed products of
each forward GEMM (input gradient and weight gradient), so the same shapes serve both passes.

Shapes are ``(n,)`` arrays, one element per configuration. ``tokens`` = micro_batch·seq_len/cp are
the tokens a GPU processes per micro-batch.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from trainscale.sim.model.params import (
    attention_params_per_layer,
    embedding_params,
    mlp_params_per_layer,
)

if TYPE_CHECKING:
    from trainscale.sim.configs.arrays import ModelArrays, PlanArrays, StackArrays
    from trainscale.sim.model.moe_work import MoEWork


__all__ = ["BlockWork", "block_work"]

#: HBM traffic of a block's memory-bound kernels, in bf16-element equivalents (bytes / 2) read or
#: written per token in the forward pass; the backward moves about twice as much. The ``mlp``
#: column selects the block family, because the shape columns carry nothing else:
#:
#: - ``gelu`` — GPT/MPT block: two fused LayerNorms (read + write h each: 4h), two residual adds
#:   (read 2h, write h each: 6h), GELU (read + write ffn: 2 ffn); positions are learned or ALiBi
#:   (fused into attention), so no rotary pass;
#: - ``swiglu`` — Llama block as in the PyTorch reference implementations (torchtitan, fms): two
#:   RMSNorms computed in fp32 (upcast 2+4, square-mean 4, normalise 4+2, weight 2+2 bytes =
#:   20 bytes = 10 elements each: 20h), two residual adds (6h), rotary embeddings on Q and K via
#:   a complex multiply in fp32 (upcast 2+4, multiply 4+4, downcast 4+2 bytes = 10 elements per
#:   element of Q and K), SwiGLU as SiLU (read + write ffn) then a product (read 2 ffn, write ffn):
#:   5 ffn.
_BLOCK_ELEMENTS = {
    # family: (per hidden element, per Q/K element for rotary, per ffn element)
    "gelu": (10.0, 0.0, 2.0),
    "swiglu": (26.0, 10.0, 5.0),
}
#: The same with the framework's fused kernels (``fused_kernels``: Transformer Engine
#: LayerNormLinear/LayerNormMLP with Megatron's rope and bias-SwiGLU fusions, or torch.compile):
#: each RMSNorm one pass in bf16 (read + write h: 2h each, 4h), the residual adds unchanged (6h),
#: rotary one pass (read + write: 2 per Q/K element), SwiGLU one kernel (read 2 ffn, write ffn:
#: 3 ffn). The GPT family is already counted fused.
_FUSED_BLOCK_ELEMENTS = {
    "gelu": (10.0, 0.0, 2.0),
    "swiglu": (10.0, 2.0, 3.0),
}
#: Bytes per attention score when the s×s scores are materialised (no FlashAttention): fp16
#: scores written (2), read and softmax written (4), dropout read, mask and output (5), read by
#: the AV product (2) — Korthikanti et al.'s 5·a·s² activation bytes plus their reads.
_SCORE_BYTES = 13.0
#: Bytes per logit element over the LM head's cross-entropy, forward and backward: bf16 logits
#: written and read, upcast to fp32 for the softmax, gradient written (2 + 2 + 4 + 4).
_LOGIT_BYTES = 12.0


@dataclass(frozen=True, slots=True, kw_only=True)
class BlockWork:
    """One GPU's work for one micro-batch. GEMM dims are (M, N, K); FLOPs and bytes are totals."""

    tokens: np.ndarray
    """Tokens per GPU per micro-batch, b·s/cp."""
    gemms: tuple[tuple[np.ndarray, np.ndarray, np.ndarray], ...]
    """Forward GEMMs of one block: QKV, output projection, MLP in, MLP out."""
    attention_flops_fwd: np.ndarray
    """FlashAttention FLOPs executed in one block's forward (causal blocks skipped)."""
    score_flops_fwd: np.ndarray
    """FLOPs of QKᵀ and AV as plain batched GEMMs, the whole s×s square (no FlashAttention)."""
    score_bytes_fwd: np.ndarray
    """HBM bytes of the materialised s×s scores in one block's forward (no FlashAttention):
    scores written, masked softmax read and written, dropout, read by AV — :data:`_SCORE_BYTES`
    (13) bytes each."""
    elementwise_bytes: np.ndarray
    """HBM bytes of one block's memory-bound kernels, forward plus backward."""
    head_gemm: tuple[np.ndarray, np.ndarray, np.ndarray]
    """The LM head GEMM (tokens × vocab/tp × hidden)."""
    head_elementwise_bytes: np.ndarray
    """HBM bytes of the cross-entropy over the logits, forward plus backward."""
    layer_param_bytes: np.ndarray
    """bf16 bytes of one block's weights on this GPU (after tensor parallelism)."""
    embedding_param_bytes: np.ndarray
    """bf16 bytes of the embedding and LM head weights on this GPU."""
    shape: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]
    """``(swiglu, hidden, hidden / tp, K/V width on this GPU, ffn / tp)`` of every configuration,
    what :meth:`block_tensors` sizes the block's parameter tensors from."""
    moe: MoEWork | None = None
    """The average block's work of the configurations with a mixture-of-experts MLP,
    multi-head latent attention or heads not ``hidden / heads`` wide
    (:func:`trainscale.sim.model.moe_work.with_moe_work`); None where there are none."""

    def block_tensors(self, rows: np.ndarray) -> np.ndarray:
        """Elements on one GPU of each parameter tensor of one block, submodule by submodule in
        forward order, for the configurations ``rows`` (indices): shape ``(len(rows), 9, 2)``, 0
        where a slot is unused. Llama: attention RMSNorm, q, k, v, o, MLP RMSNorm, gate (w1), up
        (w3), down (w2), one weight each; GPT/MPT (Megatron and DeepSpeed GPT layout): LayerNorm,
        fused QKV, projection, LayerNorm, MLP in, MLP out, each a weight and a bias. What a
        framework that gathers tensor by tensor (DeepSpeed ZeRO-3) gathers and regathers depends
        on them (:mod:`trainscale.sim.plan.schedule`); built only for the rows that need them."""
        swiglu, h, h_local, kv_local, ffn = (a[rows] for a in self.shape)
        zero = np.zeros_like(h)
        qkv = h_local + 2.0 * kv_local
        llama = [  # (weight, bias) per submodule
            (h, zero), (h * h_local, zero), (h * kv_local, zero), (h * kv_local, zero),
            (h_local * h, zero), (h, zero), (h * ffn, zero), (h * ffn, zero), (ffn * h, zero),
        ]  # fmt: skip
        gpt = [
            (h, h), (h * qkv, qkv), (h_local * h, h), (h, h), (h * ffn, ffn), (ffn * h, h),
            (zero, zero), (zero, zero), (zero, zero),
        ]  # fmt: skip
        return np.where(
            swiglu[:, None, None],
            np.stack([np.stack(pair, axis=-1) for pair in llama], axis=1),
            np.stack([np.stack(pair, axis=-1) for pair in gpt], axis=1),
        )


def block_work(model: ModelArrays, plan: PlanArrays, stack: StackArrays) -> BlockWork:
    """Return the per-micro-batch work of one block and of the head for every configuration.

    Reads ``model``'s shape (``hidden``, ``heads``, ``kv_heads``, ``ffn``, ``vocab``,
    ``swiglu``, ``tied_embeddings``), ``plan``'s ``tp``, ``cp``, ``micro_batch``, ``seq_len``,
    ``sequence_parallel`` and ``fp8``, and ``stack``'s ``fused_kernels`` and ``fp8_cast_bytes``
    (bytes per element). Tokens, GEMM dimensions and parameters are counts; FLOPs per micro-batch;
    bytes of HBM traffic or of bf16 parameters on this GPU.
    """
    tp = plan.tp.astype(np.float64)
    head_dim = model.hidden // model.heads
    # KV heads are split over TP ranks when there are enough, replicated otherwise.
    kv_local = np.maximum(model.kv_heads // plan.tp, 1) * head_dim
    tokens = (plan.micro_batch * plan.seq_len / plan.cp).astype(np.float64)
    h = model.hidden.astype(np.float64)
    ffn_local = model.ffn / tp
    mlp_in = np.where(model.swiglu, 2.0, 1.0) * ffn_local
    gemms = (
        (tokens, h / tp + 2.0 * kv_local, h),  # QKV projection
        (tokens, h, h / tp),  # attention output projection
        (tokens, mlp_in, h),  # MLP up (and gate)
        (tokens, h, ffn_local),  # MLP down
    )
    # Causal attention with the sequence split over cp ranks (load-balanced): each rank's queries
    # meet on average half of the full sequence's keys.
    attention_flops_fwd = 4.0 * tokens * plan.seq_len * 0.5 * h / tp
    score_flops_fwd = 4.0 * tokens * plan.seq_len * h / tp
    score_bytes_fwd = _SCORE_BYTES * tokens * plan.seq_len * np.maximum(model.heads // plan.tp, 1)

    norm_share = np.where(plan.sequence_parallel & (plan.tp > 1), 1.0 / tp, 1.0)
    per_hidden, per_rotary, per_ffn = (
        np.where(model.swiglu, np.where(stack.fused_kernels, fused_llama, llama), gpt)
        for llama, fused_llama, gpt in zip(
            _BLOCK_ELEMENTS["swiglu"],
            _FUSED_BLOCK_ELEMENTS["swiglu"],
            _BLOCK_ELEMENTS["gelu"],
            strict=True,
        )
    )
    forward_elements = (
        per_hidden * h * norm_share + per_rotary * (h / tp + kv_local) + per_ffn * ffn_local
    )
    elementwise_bytes = 3.0 * 2.0 * tokens * forward_elements
    # FP8 linears quantise their inputs and weights on every pass, forward and the two backward
    # GEMMs; the bytes per element depend on the framework's FP8 recipe (delayed scaling: read
    # bf16, write fp8, 3 bytes; current/dynamic scaling adds an amax pass, 5 bytes).
    # With fused kernels the norm writes the QKV and MLP-in inputs already cast (Transformer
    # Engine LayerNormLinear / LayerNormMLP; Inductor fuses the cast into the norm likewise): only
    # their weights are cast.
    cast_elements = sum(m * k + k * n for m, n, k in gemms) - np.where(
        stack.fused_kernels, gemms[0][0] * gemms[0][2] + gemms[2][0] * gemms[2][2], 0.0
    )
    elementwise_bytes = elementwise_bytes + np.where(
        plan.fp8, 3.0 * stack.fp8_cast_bytes * cast_elements, 0.0
    )

    head_gemm = (tokens, model.vocab / tp, h)
    head_elementwise_bytes = _LOGIT_BYTES * tokens * model.vocab / tp

    # The block's matrices (no norms: their weights are not sharded over tensor parallelism).
    layer_params = attention_params_per_layer(h, model.heads, model.kv_heads) + (
        mlp_params_per_layer(h, model.ffn, model.swiglu)
    )
    embeddings = embedding_params(h, model.vocab, model.tied_embeddings)
    return BlockWork(
        tokens=tokens,
        gemms=gemms,
        attention_flops_fwd=attention_flops_fwd,
        score_flops_fwd=score_flops_fwd,
        score_bytes_fwd=score_bytes_fwd,
        elementwise_bytes=elementwise_bytes,
        head_gemm=head_gemm,
        head_elementwise_bytes=head_elementwise_bytes,
        layer_param_bytes=2.0 * layer_params / tp,
        embedding_param_bytes=2.0 * embeddings / tp,
        shape=(np.asarray(model.swiglu), h, h / tp, kv_local.astype(np.float64), ffn_local),
    )
