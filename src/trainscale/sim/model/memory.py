"""Peak memory per GPU, to reject configurations that do not fit.

- **Model states** (mixed-precision AdamW, ZeRO's accounting, 16 bytes per parameter: bf16 weights
  2, bf16 gradients 2, fp32 master weights, momentum and variance 12) for the parameters this GPU
  holds after tensor and pipeline parallelism, Ψ': ``ddp`` 16Ψ', ``zero1`` (4 + 12/d)Ψ',
  ``zero2`` (2 + 14/d)Ψ', ``fsdp`` 16Ψ'/d, ``hsdp`` 16Ψ'/g with d the sharding group and g its
  ranks on one node. FSDP and HSDP add two gathered blocks of bf16 weights and gradients
  (the one computing and the one prefetched). Under PyTorch's pipelining
  (``Configs.stack.deferred_grad_sync``) ZeRO-2, FSDP and HSDP keep the stage's gradients unsharded
  until the last micro-batch and its parameters unsharded after each backward (PyTorch's
  pipeline stages defer FSDP's gradient sync and resharding: :mod:`trainscale.sim.plan.schedule`),
  so they hold (4 + 12/d)Ψ', as ZeRO-1 does, and no separately gathered blocks.
- **Activations** per block per token, in bf16, counted for FlashAttention (no s² softmax is
  stored): layer-norm inputs and outputs (4h), Q (h), K and V (2·kv_dim), attention output (h),
  MLP intermediates (3·ffn SwiGLU, 2·ffn GELU). Without sequence parallelism the 4h of the norms
  is replicated on every TP rank; everything else is split by TP (Korthikanti et al. 2022).
  Where the GPU has no FlashAttention (V100) the s×s scores are stored as well, 5 bytes each
  (Korthikanti et al.'s 5·a·s²·b per block); ``selective`` recomputation drops them from every
  stored block (with FlashAttention it stores the same as ``none``) and holds one block's scores
  again while that block's attention core is recomputed in its backward;
  ``full`` stores only each block's input (h) plus one block's full activations while it is
  recomputed. So on every GPU selective needs at least what full needs whenever the stage holds
  two or more blocks' activations (layers × micro-batches in flight ≥ 2): per block it keeps
  34·s·b·h/t against full's 2·s·b·h, and both hold one block's scores at the peak. (With a
  single block held, full counts that block's input twice, once stored and once in the
  recomputed block, and comes out 2·s·b·h/t bytes above selective.) Context parallelism divides
  the tokens.
- **In flight**: one micro-batch without pipelining; with 1F1B the first stage holds
  ``min(pp, grad_accum)`` micro-batches of its layers, times ``1 + (pp−1)/(pp·vpp)`` when
  interleaved.
- The LM head's fp32 logits and their bf16 copy (6 bytes per logit), and a fixed runtime overhead
  (CUDA context, NCCL buffers, allocator slack; ``memory_overhead_gib``).

Returns bytes, shape ``(n,)``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from trainscale.schema import Recompute, Sharding
from trainscale.sim.model.finetune import lora_mask, trainable_share
from trainscale.sim.model.work import BlockWork

if TYPE_CHECKING:
    from trainscale.sim.calibration import Calibration
    from trainscale.sim.configs import Configs
    from trainscale.sim.plan.layout import Layout

__all__ = ["memory_bytes_per_gpu"]


def _layers_per_stage(c: Configs) -> np.ndarray:
    chunks = c.plan.pp * c.plan.vpp
    return np.ceil(c.model.layers / chunks) * c.plan.vpp


def memory_bytes_per_gpu(
    c: Configs, work: BlockWork, place: Layout, cal: Calibration
) -> np.ndarray:
    """Peak bytes per GPU of every configuration."""
    stage_layers = _layers_per_stage(c)
    embed_on_stage = np.where(
        c.plan.pp > 1, 0.5, 1.0
    )  # input embedding and head on different stages
    params = (
        stage_layers * work.layer_param_bytes + embed_on_stage * work.embedding_param_bytes
    ) / 2.0
    d = place.shard_size.astype(np.float64)
    sharded = (c.plan.sharding == Sharding.FSDP) | (c.plan.sharding == Sharding.HSDP)
    pipelined = c.stack.deferred_grad_sync
    states = np.select(
        [
            pipelined | (c.plan.sharding == Sharding.ZERO1),
            c.plan.sharding == Sharding.DDP,
            c.plan.sharding == Sharding.ZERO2,
        ],
        [(4.0 + 12.0 / d) * params, 16.0 * params, (2.0 + 14.0 / d) * params],
        default=16.0 * params / d,
    )
    # LoRA: frozen weights in bf16 (sharded as the plan shards them), no gradient or Adam state;
    # the adapters' full training state (16 bytes per parameter) on top.
    frozen = np.where(sharded, 2.0 / d, 2.0) * params
    states = np.where(lora_mask(c), frozen + 16.0 * trainable_share(c, work) * params, states)
    gathered = np.where(sharded & ~pipelined, 2.0 * 2.0 * work.layer_param_bytes, 0.0)

    h = c.model.hidden.astype(np.float64)
    tp = c.plan.tp.astype(np.float64)
    kv_dim = c.model.kv_heads * (c.model.hidden // c.model.heads)
    split = np.where(c.plan.sequence_parallel, tp, 1.0)
    mlp = np.where(c.model.swiglu, 3.0, 2.0) * c.model.ffn
    per_token = 2.0 * (4.0 * h / split + (2.0 * h + 2.0 * kv_dim + mlp) / tp)
    block_input = 2.0 * h / split
    tokens = work.tokens
    # Without FlashAttention the s×s scores are stored too: 5 bytes per score (softmax input and
    # output, dropout mask), 5·a·s²·b per block (Korthikanti et al.); selective recomputation
    # exists to drop exactly these.
    scores = np.where(
        c.system.flash_attention,
        0.0,
        5.0 * np.maximum(c.model.heads // c.plan.tp, 1) * tokens * c.plan.seq_len,
    )
    full_block = per_token * tokens + scores
    kept = np.select(
        [c.plan.recompute == Recompute.FULL, c.plan.recompute == Recompute.SELECTIVE],
        [block_input * tokens, per_token * tokens],
        default=full_block,
    )
    stored_per_layer = kept
    # While one block's backward recomputes what was not stored, that part exists once more:
    # under full recomputation the whole block, under selective its attention core, whose s×s
    # scores are all it adds (zero with FlashAttention, which never stores them).
    recompute_buffer = np.select(
        [c.plan.recompute == Recompute.FULL, c.plan.recompute == Recompute.SELECTIVE],
        [full_block, scores],
        default=0.0,
    )
    in_flight = np.where(c.plan.pp > 1, np.minimum(c.plan.pp, c.plan.grad_accum), 1.0)
    interleave = np.where(c.plan.vpp > 1, 1.0 + (c.plan.pp - 1) / (c.plan.pp * c.plan.vpp), 1.0)
    activations = stored_per_layer * stage_layers * in_flight * interleave + recompute_buffer
    logits = 6.0 * tokens * c.model.vocab / tp
    overhead = cal.memory_overhead_gib * 2**30
    return states + gathered + activations + logits + overhead
