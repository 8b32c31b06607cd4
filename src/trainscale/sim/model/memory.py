"""Peak memory per GPU, term by term, to flag or reject configurations that do not fit.

Each term is its own function of what it reads, and :class:`MemoryTerms` holds them, so that a
new kind of state (for example experts) is one more function and one more field:

- **Model states** (:func:`model_state_bytes`) for the parameters this GPU holds after tensor and
  pipeline parallelism, Ψ'. Mixed-precision AdamW under ZeRO's accounting (Rajbhandari et al.
  2019, arXiv 1910.02054, 16 bytes per parameter: bf16 weights 2, bf16 gradients 2, fp32 master
  weights, momentum and variance 12): ``ddp`` 16Ψ', ``zero1`` (4 + 12/d)Ψ', ``zero2``
  (2 + 14/d)Ψ', ``fsdp`` 16Ψ'/d, ``hsdp`` 16Ψ'/g with d the sharding group (dp·cp) and g its ranks
  on one node. A stack with Megatron-Core's distributed optimizer (the profile's
  ``distributed_optimizer``) keeps bf16 parameters, fp32 main gradients and the optimizer states
  sharded over d for ``ddp`` and ``zero1`` rows: (6 + 12/d)Ψ' (Megatron-Core
  docs/source/api-guide/dist_optimizer.md, the bytes-per-parameter table, "bf16 param, fp32
  grads"). FSDP and HSDP add two gathered blocks of bf16 weights and gradients
  (:func:`gathered_bytes`: the one computing and the one prefetched; DeepSpeed's ZeRO-3 at most
  its ``stage3_max_live_parameters`` and one reduce bucket). Under PyTorch's pipelining
  (``StackArrays.deferred_grad_sync``) ZeRO-2, FSDP and HSDP keep the stage's gradients
  unsharded until the last micro-batch and its parameters unsharded after each backward
  (:mod:`trainscale.sim.plan.schedule`), so they hold (4 + 12/d)Ψ', as ZeRO-1 does, and no
  separately gathered blocks.
- **Activations** per block per token (:func:`block_activation_bytes`), in bf16, counted for
  FlashAttention (no s² softmax is stored): layer-norm inputs and outputs (4h), Q (h), K and V
  (2·kv_dim), attention output (h), MLP intermediates (3·ffn SwiGLU, 2·ffn GELU): Korthikanti
  et al. 2022 (arXiv 2205.05198) Table 2's 34·s·b·h without the dropout masks. Without sequence
  parallelism the 4h of the norms is replicated on every TP rank; everything else is split by
  TP. Where the GPU has no FlashAttention (V100) the s×s scores are stored as well, 5 bytes each
  (Korthikanti et al.'s 5·a·s²·b per block); ``selective`` recomputation drops them from every
  stored block (with FlashAttention it stores the same as ``none``) and holds one block's scores
  again while that block's attention core is recomputed in its backward; ``full`` stores only
  each block's input (h) plus one block's full activations while it is recomputed. Context
  parallelism divides the tokens.
- **Blocks in flight per pipeline stage** (:func:`layers_in_flight`): Megatron-Core's schedules
  (megatron/core/pipeline_parallel/schedules.py) run ``(pp − rank − 1)·2 + (vpp − 1)·pp``
  warm-up model chunks on pipeline rank ``rank`` before its first backward, plus the one in
  steady state (``forward_backward_pipelining_with_interleaving``): the first stage holds
  ``vpp·pp + pp − 1`` chunks of ``layers/(pp·vpp)`` blocks, the last ``(vpp − 1)·pp + 1``.
  Without interleaving, 1F1B's ``pp − rank − 1`` warm-up micro-batches plus one (Narayanan et al.
  2021, arXiv 2104.04473, §2.2): pp micro-batches of the stage's blocks on the first stage, one on
  the last. With fewer micro-batches than stages, their number takes pp's place.
- **The LM head's logits** (:func:`logits_bytes`), fp32 and their bf16 copy (6 bytes per logit),
  exist on the last pipeline stage only, which holds the fewest micro-batches: the peak is the
  larger of the first stage (most activations) and the last (activations plus logits).
  "Different PP ranks can have different peak memory usages" (torchtitan
  benchmarks/llama3_h100_202412_torchtitan.md, footnote 1).
- A fixed runtime overhead (CUDA context, NCCL buffers, allocator slack;
  ``memory_overhead_gib``).
- **Experts** (:func:`expert_memory_bytes`, mixture-of-experts, MLA and wide-head models only):
  the routed experts' weights sharded by ``ep`` and ``etp``, their gradients and optimizer
  states by the expert data-parallel degree ``edp`` as the row's sharding shards the dense ones
  over ``dp·cp`` (FSDP: ``16/edp`` bytes per weight); the routed rows' activations of the
  stored blocks (each token's ``k`` copies: dispatched input, gate/up and SwiGLU outputs); one
  block's dispatch buffers; and the difference of the attention (MLA's or wide heads' Q, K, V)
  and MLP (dense and shared experts) activations from the dense block's count above. The model
  states and gathered blocks above then count the block's other weights only.

Returns bytes, shape ``(n,)``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from trainscale.schema import MOE_ROUTINGS, Recompute, Sharding
from trainscale.sim.frameworks import ZERO3_MAX_LIVE_PARAMETERS
from trainscale.sim.model.finetune import lora_mask, trainable_share
from trainscale.sim.model.work import BlockWork

if TYPE_CHECKING:
    from trainscale.sim.calibration import Calibration
    from trainscale.sim.configs.arrays import ModelArrays, PlanArrays, StackArrays, SystemArrays
    from trainscale.sim.model.moe_work import MoEWork
    from trainscale.sim.plan.layout import Layout

__all__ = [
    "MemoryTerms",
    "block_activation_bytes",
    "expert_memory_bytes",
    "gathered_bytes",
    "layers_in_flight",
    "logits_bytes",
    "memory_bytes_per_gpu",
    "memory_terms",
    "model_state_bytes",
]


@dataclass(frozen=True, slots=True)
class MemoryTerms:
    """Bytes per GPU of each term at the peak stage; arrays of shape ``(n,)``."""

    states: np.ndarray
    """Weights, gradients and optimizer states."""
    gathered: np.ndarray
    """FSDP/HSDP working copies of gathered blocks."""
    activations: np.ndarray
    """Stored activations (plus one block recomputed) on the peak stage."""
    logits: np.ndarray
    """LM-head logits, where the peak stage holds them (the last stage, or the only one)."""
    overhead: np.ndarray
    """CUDA context, NCCL buffers, allocator slack."""
    experts: np.ndarray
    """What a mixture-of-experts, MLA or wide-head model adds (:func:`expert_memory_bytes`):
    routed experts' states, their gathered copies, the routed rows' activations, the dispatch
    buffers, and the difference of its attention and MLP activations from the dense block's;
    0 for a dense model."""

    @property
    def total(self) -> np.ndarray:
        """Peak bytes per GPU."""
        return (
            self.states + self.gathered + self.activations + self.logits + self.overhead
            + self.experts
        )  # fmt: skip


def _layers_per_stage(layers: np.ndarray, pp: np.ndarray, vpp: np.ndarray) -> np.ndarray:
    """Blocks of the slowest stage: ``vpp`` chunks of ``ceil(layers / (pp·vpp))`` blocks."""
    chunks = pp * vpp
    return np.ceil(layers / chunks) * vpp


def model_state_bytes(
    layers: np.ndarray, plan: PlanArrays, stack: StackArrays, work: BlockWork, place: Layout
) -> np.ndarray:
    """Weights, gradients and optimizer states of the parameters this GPU holds (module
    docstring), bytes. ``layers``: the model's blocks; reads ``plan.pp``, ``vpp``, ``sharding``,
    ``finetune``, ``lora_rank`` and ``stack.distributed_optimizer``, ``deferred_grad_sync``."""
    embed_on_stage = np.where(plan.pp > 1, 0.5, 1.0)  # input embedding and head apart
    params = (
        _layers_per_stage(layers, plan.pp, plan.vpp) * work.layer_param_bytes
        + embed_on_stage * work.embedding_param_bytes
    ) / 2.0
    d = place.shard_size.astype(np.float64)
    sharding = plan.sharding
    unsharded = (sharding == Sharding.DDP) | (sharding == Sharding.ZERO1)
    states = np.select(
        [
            stack.distributed_optimizer & unsharded,
            stack.deferred_grad_sync | (sharding == Sharding.ZERO1),
            sharding == Sharding.DDP,
            sharding == Sharding.ZERO2,
        ],
        [
            (6.0 + 12.0 / d) * params,
            (4.0 + 12.0 / d) * params,
            16.0 * params,
            (2.0 + 14.0 / d) * params,
        ],
        default=16.0 * params / d,
    )
    # LoRA: frozen weights in bf16 (sharded as the plan shards them), no gradient or Adam state;
    # the adapters' full training state (16 bytes per parameter) on top.
    sharded = (sharding == Sharding.FSDP) | (sharding == Sharding.HSDP)
    frozen = np.where(sharded, 2.0 / d, 2.0) * params
    return np.where(
        lora_mask(plan.finetune),
        frozen + 16.0 * trainable_share(plan.finetune, plan.lora_rank, work) * params,
        states,
    )


def gathered_bytes(sharding: np.ndarray, stack: StackArrays, work: BlockWork) -> np.ndarray:
    """FSDP/HSDP: two gathered blocks of bf16 weights and two of gradients, bytes. A stack that
    gathers tensor by tensor (DeepSpeed ZeRO-3, ``per_tensor_gather``) holds at most
    :data:`~trainscale.sim.frameworks.ZERO3_MAX_LIVE_PARAMETERS` gathered weight elements and one
    gradient bucket (``ddp_bucket_params``, its ``reduce_bucket_size``) in bf16. ``sharding``:
    :class:`~trainscale.schema.Sharding` codes; reads ``stack.per_tensor_gather``,
    ``ddp_bucket_params`` and ``deferred_grad_sync``."""
    sharded = (sharding == Sharding.FSDP) | (sharding == Sharding.HSDP)
    blocks = 2.0 * work.layer_param_bytes
    weights = np.where(
        stack.per_tensor_gather, np.minimum(blocks, 2.0 * ZERO3_MAX_LIVE_PARAMETERS), blocks
    )
    grads = np.where(
        stack.per_tensor_gather, np.minimum(blocks, 2.0 * stack.ddp_bucket_params), blocks
    )
    return np.where(sharded & ~stack.deferred_grad_sync, weights + grads, 0.0)


def block_activation_bytes(
    model: ModelArrays, plan: PlanArrays, flash_attention: np.ndarray, work: BlockWork
) -> tuple[np.ndarray, np.ndarray]:
    """``(stored, recomputing)``: bytes one block stores per micro-batch under the row's
    recomputation, and the bytes one block's backward holds again while it recomputes.

    Reads ``model.hidden``, ``heads``, ``kv_heads``, ``ffn``, ``swiglu``; ``plan.tp``,
    ``sequence_parallel``, ``seq_len``, ``recompute``; ``flash_attention``: bool, the GPU runs
    FlashAttention (no s×s scores stored); ``work.tokens``.
    """
    h = model.hidden.astype(np.float64)
    tp = plan.tp.astype(np.float64)
    kv_dim = model.kv_heads * (model.hidden // model.heads)
    split = np.where(plan.sequence_parallel, tp, 1.0)
    mlp = np.where(model.swiglu, 3.0, 2.0) * model.ffn
    per_token = 2.0 * (4.0 * h / split + (2.0 * h + 2.0 * kv_dim + mlp) / tp)
    tokens = work.tokens
    # Without FlashAttention the s×s scores are stored too: 5 bytes per score (softmax input and
    # output, dropout mask), 5·a·s²·b per block (Korthikanti et al.); selective recomputation
    # exists to drop exactly these.
    scores = np.where(
        flash_attention,
        0.0,
        5.0 * np.maximum(model.heads // plan.tp, 1) * tokens * plan.seq_len,
    )
    full_block = per_token * tokens + scores
    full, selective = plan.recompute == Recompute.FULL, plan.recompute == Recompute.SELECTIVE
    stored = np.select(
        [full, selective], [2.0 * h / split * tokens, per_token * tokens], default=full_block
    )
    # While one block's backward recomputes what was not stored, that part exists once more:
    # under full recomputation the whole block, under selective its attention core, whose s×s
    # scores are all it adds (zero with FlashAttention, which never stores them).
    recomputing = np.select([full, selective], [full_block, scores], default=0.0)
    return stored, recomputing


def layers_in_flight(layers: np.ndarray, plan: PlanArrays) -> tuple[np.ndarray, np.ndarray]:
    """``(first, last)``: block-micro-batches whose activations the first and the last pipeline
    stage hold at their peak (module docstring; one stage: its blocks, once). ``layers``: the
    model's blocks; reads ``plan.pp``, ``vpp`` and ``grad_accum``."""
    chunk_layers = _layers_per_stage(layers, plan.pp, plan.vpp) / plan.vpp
    m = np.where(plan.pp > 1, np.minimum(plan.pp, plan.grad_accum), 1).astype(np.float64)
    vpp = plan.vpp.astype(np.float64)
    first = chunk_layers * (vpp * m + np.where(vpp > 1, m - 1.0, 0.0))
    last = chunk_layers * ((vpp - 1.0) * m + 1.0)
    return first, last


def logits_bytes(vocab: np.ndarray, tp: np.ndarray, work: BlockWork) -> np.ndarray:
    """The LM head's fp32 logits and their bf16 copy, 6 bytes per logit (``work.tokens`` ×
    ``vocab / tp`` on this GPU), bytes."""
    return 6.0 * work.tokens * vocab / tp.astype(np.float64)


def memory_terms(
    model: ModelArrays,
    plan: PlanArrays,
    stack: StackArrays,
    system: SystemArrays,
    work: BlockWork,
    place: Layout,
    cal: Calibration,
) -> MemoryTerms:
    """Every term of the peak stage of every configuration (bytes per GPU); of ``system`` only
    ``flash_attention`` is read, of ``cal`` ``memory_overhead_gib``."""
    stored, recomputing = block_activation_bytes(model, plan, system.flash_attention, work)
    first, last = layers_in_flight(model.layers, plan)
    logits = logits_bytes(model.vocab, plan.tp, work)
    single = plan.pp == 1
    at_first = stored * first + recomputing + np.where(single, logits, 0.0)
    at_last = stored * last + recomputing + logits
    last_peaks = at_last > at_first
    n = len(stored)
    experts = np.zeros(n)
    if work.moe is not None:
        experts[work.moe.rows] = expert_memory_bytes(
            work.moe, layers=_layers_per_stage(model.layers, plan.pp, plan.vpp)[work.moe.rows],
            in_flight=first[work.moe.rows], plan=plan, model=model,
            distributed_optimizer=stack.distributed_optimizer[work.moe.rows],
        )  # fmt: skip
    return MemoryTerms(
        states=model_state_bytes(model.layers, plan, stack, work, place),
        gathered=gathered_bytes(plan.sharding, stack, work),
        activations=np.where(last_peaks, at_last - logits, at_first - np.where(single, logits, 0)),
        logits=np.where(last_peaks | single, logits, 0.0),
        overhead=np.full(n, cal.memory_overhead_gib * 2**30),
        experts=experts,
    )


def _expert_states(
    params: np.ndarray, sharding: np.ndarray, edp: np.ndarray, distributed_optimizer: np.ndarray
) -> np.ndarray:
    """Bytes of the weights, gradients and optimizer states of ``params`` routed-expert
    parameters, sharded over the ``edp`` expert data-parallel ranks as the row's sharding shards
    the dense ones over ``dp·cp`` (:func:`model_state_bytes`)."""
    d = edp.astype(np.float64)
    unsharded = (sharding == Sharding.DDP) | (sharding == Sharding.ZERO1)
    return params * np.select(
        [distributed_optimizer & unsharded, sharding == Sharding.ZERO1, sharding == Sharding.DDP,
         sharding == Sharding.ZERO2],
        [6.0 + 12.0 / d, 4.0 + 12.0 / d, np.full_like(d, 16.0), 2.0 + 14.0 / d],
        default=16.0 / d,
    )  # fmt: skip


def expert_memory_bytes(
    mw: MoEWork, *, layers: np.ndarray, in_flight: np.ndarray, plan: PlanArrays,
    model: ModelArrays, distributed_optimizer: np.ndarray,
) -> np.ndarray:  # fmt: skip
    """Bytes per GPU a mixture-of-experts, MLA or wide-head model adds, on the rows of ``mw``
    (``layers`` the stage's blocks and ``in_flight`` its stored block-micro-batches, of those
    rows; ``plan`` and ``model`` of every row):

    - the routed experts this GPU holds, ``layers · mw.expert_param_bytes / 2`` parameters
      (``E/ep`` experts split ``etp`` ways, for the MoE share of the blocks), their gradients
      and optimizer states sharded over ``edp`` (:func:`_expert_states`); ZeRO-2, FSDP and HSDP
      add two gathered blocks of expert weights and gradients;
    - per stored block and micro-batch, the routed rows' activations (unless ``full``
      recomputation): ``mw.moe_share · E/ep · r`` rows (mean routing; ``capacity_factor`` times
      more under capacity routing) of the dispatched input (``h``), the gate/up output
      (``2·f/etp``) and the SwiGLU output (``f/etp``), bf16; and the difference of the average
      block's attention (Q, K, V, output of ``heads·(d_qk, d_qk, d_v, d_v)``) and MLP (dense
      and shared) activations from what :func:`block_activation_bytes` counted for a dense
      block of this ``hidden`` and ``ffn``;
    - one block's dispatch buffers: the ``k`` copies of the routed tokens sent and received
      and their permuted copy (3 · T_r·k·h bf16).
    """
    i = mw.rows
    tp = plan.tp[i].astype(np.float64)
    sharding = plan.sharding[i]
    params = layers * mw.expert_param_bytes / 2.0
    states = _expert_states(params, sharding, plan.edp[i], distributed_optimizer)
    gathers = np.isin(sharding, (Sharding.ZERO2, Sharding.FSDP, Sharding.HSDP))
    gathered = np.where(gathers, 4.0 * mw.expert_param_bytes, 0.0)
    h = model.hidden[i].astype(np.float64)
    f_local = mw.expert_out[1]
    routing_pad = np.where(plan.moe_routing[i] == MOE_ROUTINGS.index("capacity"),
                           plan.capacity_factor[i], 1.0)  # fmt: skip
    rows = mw.moe_share * mw.local_experts * mw.expert_rows * routing_pad
    routed = 2.0 * rows * (h + 3.0 * f_local)
    tokens = plan.micro_batch[i] * plan.seq_len[i] / plan.cp[i].astype(np.float64)
    heads = model.heads[i].astype(np.float64)
    mla = model.kv_lora_rank[i] > 0
    d_qk = np.where(mla, model.qk_head_dim[i], model.head_dim[i])
    d_v = np.where(mla, model.v_head_dim[i], model.head_dim[i])
    kv_dim = model.kv_heads[i] * (model.hidden[i] // model.heads[i])
    kv_heads = np.where(mla, heads, model.kv_heads[i])
    attention = heads * (d_qk + d_v) + kv_heads * (d_qk + d_v) - 2.0 * h - 2.0 * kv_dim
    dense_share = 1.0 - mw.moe_share
    mlp = 3.0 * (dense_share * model.ffn[i] + mw.moe_share * model.shared_ffn[i] - model.ffn[i])
    blocks = 2.0 * tokens * (attention + mlp) / tp + routed
    stored = np.where(plan.recompute[i] == Recompute.FULL, 0.0, in_flight * blocks)
    buffers = 3.0 * 2.0 * mw.routed_tokens * model.experts_per_token[i] * h
    return states + gathered + stored + buffers


def memory_bytes_per_gpu(
    model: ModelArrays,
    plan: PlanArrays,
    stack: StackArrays,
    system: SystemArrays,
    work: BlockWork,
    place: Layout,
    cal: Calibration,
) -> np.ndarray:
    """Peak bytes per GPU of every configuration (:func:`memory_terms`' total)."""
    return memory_terms(model, plan, stack, system, work, place, cal).total
