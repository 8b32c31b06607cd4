"""The two-stream (compute, communication) schedule of one training step.

One GPU runs a compute stream and a communication stream. For one micro-batch, a pipeline stage
executes ``Ls`` identical blocks forward, then backward; the schedule decides per block what the
communication stream can hide:

- **Tensor parallelism** (with or without sequence parallelism) and the **context-parallel ring**
  sit on the compute stream's critical path: TP collectives are fully exposed; the ring's
  send/recv of K/V overlaps the attention of the chunk at hand and only the excess is exposed.
- **FSDP** (full shard) gathers block i+1 while block i computes (prefetch depth one); forward
  per block ``max(compute, AllGather)``, backward ``max(compute, AllGather + ReduceScatter)``
  because both share one NCCL stream; the first gather and the last reduce-scatter are exposed.
  Parameters are resharded after forward, so they are re-gathered for backward and, under
  gradient accumulation, for every micro-batch. **HSDP** does the same inside a node and adds an
  AllReduce of each shard's gradient across replicas. **ZeRO-2** gathers in forward only.
- **Sharded data parallelism under PyTorch's pipelining** (``pipeline_defers_grad_sync``, the
  ``pytorch`` profile's; ``pp`` > 1): the pipeline stages defer FSDP's gradient sync and
  resharding to the last micro-batch
  (``torch/distributed/pipelining/stage.py``: ``set_requires_gradient_sync(False)`` and
  ``set_reshard_after_backward(False)`` on every backward, then ``_post_backward``), so the
  gradients are reduce-scattered (and, for HSDP, all-reduced across replicas) once per step, after
  the last backward, exposed whatever ``overlap_grad_reduce`` says. **ZeRO-2** is how torchtitan
  runs FSDP2 with PP (``reshard_after_forward=False`` "to avoid per-microbatch all-gathers",
  ``torchtitan/parallelisms/parallelize_llama.py``): its parameters are gathered once per step,
  prefetched under the first micro-batch's forward. **FSDP/HSDP** reshards after each forward,
  so every backward gathers again, while a forward that follows a backward finds the parameters
  still unsharded: only the forwards that follow a forward gather, ``min(pp, m)`` of the ``m``
  micro-batches on the first stage under 1F1B (its warm-up; taken for interleaving too).
  DeepSpeed's pipeline engine refuses ZeRO-2/3 (a configuration error); the other profiles'
  sharded data parallelism under PP keeps the per-micro-batch schedule above.
- **DDP** and **ZeRO-1** reduce gradients once per step in buckets while the last micro-batch's
  backward runs; only what the backward cannot cover, and at least the last bucket, is exposed.
  ZeRO-1 gathers the updated parameters in buckets under the next forward (Megatron's
  ``--overlap-param-gather``).
- **The framework** (:mod:`trainscale.sim.frameworks`) decides what of this overlaps: without
  ``overlap_grad_reduce`` the gradient reduction runs after the backward pass, wholly exposed
  (DeepSpeed ZeRO-0/1/2, Megatron without ``--overlap-grad-reduce``); without
  ``overlap_param_gather`` each gather waits on the critical path; with ``tp_comm_overlap`` TP
  collectives are pipelined with their GEMMs in ``tp`` chunks; with per-tensor granularity
  (DeepSpeed ZeRO-3) each block's all-gather is one collective per parameter tensor, each paying
  the ring's latency. Bucket sizes and host launch overhead come from the profile.
- Compute overlapped by a collective runs ``overlap_slowdown`` slower (NCCL kernels take SMs);
  the GEMM, attention, memory-traffic, FP8 and overlap efficiencies carry the framework's
  calibrated offset (:func:`efficiencies`).
- **Pipeline**: 1F1B (``vpp`` = 1) or interleaved 1F1B; step = ``(m + (pp−1)/vpp)`` micro-batch
  slots of the slowest stage (stages balanced so that the LM head's work is shared, as Llama 3
  and torchtitan do); the bubble is
  ``(pp−1)/vpp`` slots; stage boundaries send activations forward and gradients back
  (``vpp`` times as often when interleaved; ``1/tp`` of the tensor when sequence parallel).
- The host launches kernels ahead of the GPU; when a block's GPU time is shorter than the CPU
  time to launch it (the profile's ``host_overhead_per_layer_s``) the GPU waits
  (``host_stall_s``).
- Then the optimizer step (memory-bound) and, for DDP/ZeRO-1, the exposed gradient reduction.
- Every step waits for the slowest of the N GPUs: ``straggler_cv · E[max of N standard normals]``
  of the compute time, spent inside collectives (so counted as exposed communication, as a
  profiler sees it).

``step_time_s`` is the explicit sum ``compute_s + exposed_comm_s + bubble_s + host_stall_s``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike

from trainscale.schema import CP_COMM_TYPES, Recompute, Sharding
from trainscale.sim.calibration import Calibration
from trainscale.sim.configs import Configs
from trainscale.sim.frameworks import ZERO3_MAX_REUSE_DISTANCE, ZERO3_PERSISTENCE_THRESHOLD
from trainscale.sim.model.work import BlockWork
from trainscale.sim.plan.layout import Layout
from trainscale.sim.system.collectives import (
    Network,
    allgather_time,
    allreduce_time,
    p2p_time,
    reducescatter_time,
)
from trainscale.sim.system.compute import attention_time, gemm_efficiency, gemm_time, memory_time
from trainscale.sim.system.power import tensor_clock_ratio

__all__ = ["Efficiencies", "efficiencies", "step_times"]

#: FlashAttention's backward executes 2.5x the forward FLOPs (5 matmuls against 2).
_ATTENTION_BACKWARD_RATIO = 2.5


def expected_max_standard_normal(n: ArrayLike) -> np.ndarray:
    """E[max of n independent standard normals] by Blom's approximation (0 for n = 1)."""
    # scipy.special is imported here, not with the module: it costs about 0.3 s, which every
    # Snakemake start-up (rules/common.smk imports trainscale.study.sweep) would pay without
    # predicting.
    from scipy.special import ndtri

    n = np.asarray(n, dtype=np.float64)
    if n.ndim == 1 and n.size > 1000:  # a sweep: few distinct GPU counts, each computed once
        codes, distinct = pd.factorize(n)
        return expected_max_standard_normal(distinct)[codes]
    return np.where(n > 1, ndtri((n - 0.375) / (n + 0.25)), 0.0)


#: Best fraction of peak any GEMM can reach, whatever a framework offset says.
_GEMM_EFFICIENCY_CAP = 0.99


@dataclass(frozen=True, slots=True)
class Efficiencies:
    """The calibrated efficiencies of each configuration's framework, shape ``(n,)``."""

    gemm_max: np.ndarray
    """Large-GEMM fraction of the configured precision's peak."""
    bf16_gemm_max: np.ndarray
    """Large-GEMM fraction of the BF16 peak (attention's batched GEMMs on GPUs without
    FlashAttention)."""
    attention: np.ndarray
    elementwise_traffic: np.ndarray
    overlap_slowdown: np.ndarray
    clock_ratio: np.ndarray
    """SM clock during dense compute over the unlimited clock: below 1 where a power limit
    throttles it (:func:`trainscale.sim.system.power.tensor_clock_ratio`)."""


def efficiencies(c: Configs, cal: Calibration) -> Efficiencies:
    """Shared calibrated efficiencies times each row's framework factor ``exp(offset)``."""

    def factor(base: str) -> np.ndarray:
        return cal.framework_factors(base)[c.framework]

    gemm = factor("gemm_efficiency")
    bf16 = np.minimum(c.bf16_gemm_efficiency_max * gemm, _GEMM_EFFICIENCY_CAP)
    fp8 = c.gemm_efficiency_max * gemm * cal.fp8_gemm_scale * factor("fp8_gemm")
    return Efficiencies(
        gemm_max=np.where(c.fp8, np.minimum(fp8, _GEMM_EFFICIENCY_CAP), bf16),
        bf16_gemm_max=bf16,
        attention=cal.attention_efficiency_scale * factor("attention_efficiency")
        * c.attention_efficiency_max,
        elementwise_traffic=cal.elementwise_traffic_scale * factor("elementwise_traffic"),
        overlap_slowdown=cal.overlap_slowdown * factor("overlap_slowdown"),
        clock_ratio=tensor_clock_ratio(
            power_limit_w=c.power_limit_w, tdp_w=c.tdp_w, idle_w=c.idle_w, cal=cal
        ),
    )  # fmt: skip


def _attention_fwd(c: Configs, w: BlockWork, cal: Calibration, eff: Efficiencies) -> np.ndarray:
    """Forward attention time of one block: FlashAttention, or (where the GPU has none) two
    batched GEMMs over the whole s×s square plus the HBM traffic of the materialised scores."""
    flash = attention_time(
        w.attention_flops_fwd,
        peak=c.bf16_flops_per_s * eff.clock_ratio,
        attention_efficiency=eff.attention,
    )
    head_dim = (c.hidden // c.heads).astype(np.float64)
    seq = c.seq_len.astype(np.float64)
    d0 = c.gemm_half_efficiency_dim * cal.gemm_size_scale
    eta = gemm_efficiency(seq, seq, head_dim, eff.bf16_gemm_max, d0, cal.gemm_size_exponent)
    materialised = w.score_flops_fwd / (eta * c.bf16_flops_per_s * eff.clock_ratio) + memory_time(
        eff.elementwise_traffic * w.score_bytes_fwd,
        hbm_bw=c.hbm_bytes_per_s, hbm_efficiency=cal.hbm_efficiency,
    )  # fmt: skip
    return np.where(c.flash_attention, flash, materialised)


def _block_compute(
    c: Configs, w: BlockWork, cal: Calibration, eff: Efficiencies
) -> dict[str, np.ndarray]:
    """Forward and backward compute-stream time of one block and of the head, per micro-batch."""
    d0 = c.gemm_half_efficiency_dim * cal.gemm_size_scale
    kw = {"peak": c.peak_flops_per_s * eff.clock_ratio, "eta_max": eff.gemm_max, "d0": d0,
          "hbm_bw": c.hbm_bytes_per_s, "exponent": cal.gemm_size_exponent}  # fmt: skip
    # The two backward GEMMs of a (m, n, k) product, (m, k, n) and (k, n, m), have its FLOPs, its
    # smallest dimension and its traffic: each takes the forward GEMM's time.
    gemm_fwd = sum(gemm_time(m, n, k, **kw) for m, n, k in w.gemms)
    gemm_bwd = 2.0 * gemm_fwd
    attn_fwd = _attention_fwd(c, w, cal, eff)
    mem = memory_time(
        eff.elementwise_traffic * w.elementwise_bytes,
        hbm_bw=c.hbm_bytes_per_s, hbm_efficiency=cal.hbm_efficiency,
    )  # fmt: skip
    fwd_dense = gemm_fwd + attn_fwd
    fwd_mem = mem / 3.0
    recompute_dense = np.select(
        [c.recompute == Recompute.FULL, c.recompute == Recompute.SELECTIVE],
        [fwd_dense, attn_fwd],
        0.0,
    )
    recompute_mem = np.where(c.recompute == Recompute.FULL, fwd_mem, 0.0)
    bwd_dense = gemm_bwd + _ATTENTION_BACKWARD_RATIO * attn_fwd + recompute_dense
    bwd_mem = 2.0 * mem / 3.0 + recompute_mem

    m, n, k = w.head_gemm
    head_mem = memory_time(
        eff.elementwise_traffic * w.head_elementwise_bytes,
        hbm_bw=c.hbm_bytes_per_s, hbm_efficiency=cal.hbm_efficiency,
    )  # fmt: skip
    return {
        "gemm_fwd": gemm_fwd,
        "gemm_bwd": gemm_bwd,
        "attn_fwd": attn_fwd,
        "fwd_dense": fwd_dense,
        "fwd_mem": fwd_mem,
        "bwd_dense": bwd_dense,
        "bwd_mem": bwd_mem,
        "head_dense": 3.0 * gemm_time(m, n, k, **kw),
        "head_mem": head_mem,
    }


def _tensor_parallel(c: Configs, w: BlockWork, place: Layout, net: Network) -> dict:
    """Per block per micro-batch TP collective times (forward, backward) by kind.

    Under FP8 the sequence-parallel AllGathers move the FP8 cast of their tensor, 1 byte per
    element: Transformer Engine gathers the FP8 output of the norm (forward) and of the output
    gradient (backward), and torchao's ``Float8ColwiseParallel`` / ``Float8RowwiseParallel``
    (torchtitan's TP under Float8) cast before the all-gather ("all-gather in float8"). The
    ReduceScatters sum GEMM outputs in bf16, 2 bytes.
    """
    size = 2.0 * w.tokens * c.hidden
    on = c.tp > 1
    sp = c.sequence_parallel & on
    group = (size, c.tp, place.tp_per_node, net)
    gathered = np.where(c.fp8, 0.5, 1.0) * size
    ag = _only_where(sp, allgather_time, gathered, c.tp, place.tp_per_node, net)
    # A ring ReduceScatter of a buffer costs the AllGather of the same buffer (reducescatter_time).
    rs = _only_where(sp, allgather_time, *group)
    ar = _only_where(on & ~sp, allreduce_time, *group)
    passes_bwd = np.where(
        c.recompute == Recompute.FULL, 2.0, 1.0
    )  # the recomputed forward repeats them
    return {
        "ag_fwd": np.where(sp, 2.0 * ag, 0.0),
        "rs_fwd": np.where(sp, 2.0 * rs, 0.0),
        "ar_fwd": np.where(sp, 0.0, 2.0 * ar),
        "ag_bwd": np.where(sp, 2.0 * ag * passes_bwd, 0.0),
        "rs_bwd": np.where(sp, 2.0 * rs * passes_bwd, 0.0),
        "ar_bwd": np.where(sp, 0.0, 2.0 * ar * passes_bwd),
    }


def _context_parallel(
    c: Configs, w: BlockWork, place: Layout, net: Network, attn_fwd: ArrayLike
) -> dict:
    """Context-parallel K/V exchange of one block pass (forward; backward, recomputation
    included), busy and exposed.

    The attention of the local queries runs chunk by chunk over the ``cp`` K/V chunks, the local
    chunk first. The K/V moved are the tensors the attention kernel takes: ``kv_heads`` heads, or
    ``heads`` where the model repeats K/V to the query heads before the kernel (``repeat_kv``).

    - ``cp_comm_type`` ``p2p`` (ring; Transformer Engine's ``p2p``): ``cp − 1`` sends of one chunk
      forward, each hidden behind one chunk's attention; backward K/V and their gradients, twice
      the volume.
    - ``all_gather`` (PyTorch's ``allgather`` rotate method, Llama 3's CP): one AllGather of all
      ``cp`` chunks, started before the local chunk's attention and waited for after it, so only
      that chunk's attention hides it; backward gathers K/V again the same way and passes the
      K/V gradients around the ring in fp32 (twice a bf16 chunk per step), each step hidden
      behind one chunk's backward attention, the last one exposed.

    Full and selective recomputation rerun the forward attention, and with it its exchange.
    """
    _, _, q_width, kv_width, _ = w.shape  # per GPU: all query heads, the K/V heads
    chunk = 2.0 * 2.0 * w.tokens * np.where(c.repeat_kv, q_width, kv_width)  # K and V, bf16
    all_gather = c.cp_comm_type == CP_COMM_TYPES.index("all_gather")
    on = c.cp > 1
    cp = np.maximum(c.cp, 1).astype(np.float64)
    steps = cp - 1.0
    same_node = place.cp_per_node >= c.cp
    one = p2p_time(chunk, same_node, net)
    local_fwd = attn_fwd / cp  # the attention of one chunk
    local_bwd = _ATTENTION_BACKWARD_RATIO * local_fwd
    # ring
    ring_fwd, ring_bwd = steps * one, 2.0 * steps * one
    ring_exposed_fwd = np.maximum(ring_fwd - steps * local_fwd, 0.0)
    ring_exposed_bwd = np.maximum(ring_bwd - steps * local_bwd, 0.0)
    # all-gather
    gather = _only_where(on & all_gather, allgather_time, cp * chunk, c.cp, place.cp_per_node,
                         net)  # fmt: skip
    grads = steps * p2p_time(2.0 * chunk, same_node, net)
    ag_exposed_fwd = np.maximum(gather - local_fwd, 0.0)
    ag_exposed_bwd = np.maximum(gather - local_bwd, 0.0) + np.maximum(
        grads - steps * local_bwd, grads / np.maximum(steps, 1.0)
    )
    busy_fwd = np.where(on, np.where(all_gather, gather, ring_fwd), 0.0)
    busy_bwd = np.where(on, np.where(all_gather, gather + grads, ring_bwd), 0.0)
    exposed_fwd = np.where(on, np.where(all_gather, ag_exposed_fwd, ring_exposed_fwd), 0.0)
    exposed_bwd = np.where(on, np.where(all_gather, ag_exposed_bwd, ring_exposed_bwd), 0.0)
    recomputed = c.recompute != Recompute.NONE
    return {
        "busy_fwd": busy_fwd,
        "busy_bwd": busy_bwd + np.where(recomputed, busy_fwd, 0.0),
        "exposed_fwd": exposed_fwd,
        "exposed_bwd": exposed_bwd + np.where(recomputed, exposed_fwd, 0.0),
    }


def _only_where(
    mask: np.ndarray,
    collective: Callable[..., np.ndarray],
    size: ArrayLike,
    n: ArrayLike,
    g: ArrayLike,
    net: Network,
) -> np.ndarray:
    """``collective(size, n, g, net)`` evaluated on the rows in ``mask`` only, 0 elsewhere (a
    sweep where few rows use a collective does not pay for it on every row)."""
    out = np.zeros(len(mask))
    rows = np.flatnonzero(mask)
    if rows.size:
        size, n, g = (np.broadcast_to(np.asarray(a, dtype=np.float64), mask.shape)[rows]
                      for a in (size, n, g))  # fmt: skip
        out[rows] = collective(size, n, g, net.take(rows))
    return out


def _prefetched(
    first: ArrayLike, per_block: ArrayLike, critical: ArrayLike, blocks: ArrayLike
) -> np.ndarray:
    """What a communication stream that prefetches one block ahead adds to ``blocks`` identical
    blocks (seconds): the ``first`` collective, which nothing hides, then whatever of each later
    block's ``per_block`` collectives outlasts the block before it on the ``critical`` path."""
    return first + (blocks - 1) * np.maximum(per_block - critical, 0.0)


def _bucketed(
    size: ArrayLike,
    bucket: ArrayLike,
    collective: Callable[[np.ndarray], np.ndarray],
    window: ArrayLike,
) -> np.ndarray:
    """Bucketed collective of ``size`` bytes overlapped with a compute ``window``.

    Returns (busy, exposed): all buckets' time, and what the window cannot cover (at least the
    last bucket, which starts when the window ends).
    """
    buckets = np.maximum(np.ceil(size / bucket), 1.0)
    per_bucket = collective(size / buckets)
    busy = buckets * per_bucket
    exposed = np.maximum(per_bucket, busy - window * (1.0 - 1.0 / buckets))
    return busy, np.where(size > 0, exposed, 0.0)


def _per_tensor_gathers(
    w: BlockWork, per_tensor: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """What a framework that gathers tensor by tensor (DeepSpeed ZeRO-3) gathers per block:
    ``(tensors, regathered, regathered_share)``.

    ``tensors``: the block's parameter tensors of at least
    :data:`~trainscale.sim.frameworks.ZERO3_PERSISTENCE_THRESHOLD` elements (smaller ones stay
    whole on every rank). ``regathered``: those gathered a third time under full recomputation,
    whose submodule's reuse distance (the elements of the submodules after it in the block, once
    in the recomputed forward and once in backward) reaches
    :data:`~trainscale.sim.frameworks.ZERO3_MAX_REUSE_DISTANCE`; ``regathered_share``: their
    share of the gathered elements. Computed on the rows of ``per_tensor`` (a mask); 0 elsewhere.
    """
    out = np.zeros((3, len(per_tensor)))
    rows = np.flatnonzero(per_tensor)
    if rows.size:
        numel = w.block_tensors(rows)
        gathered = numel >= ZERO3_PERSISTENCE_THRESHOLD
        per_submodule = numel.sum(axis=2)
        after = per_submodule[:, ::-1].cumsum(axis=1)[:, ::-1] - per_submodule
        released = gathered & (2.0 * after >= ZERO3_MAX_REUSE_DISTANCE)[:, :, None]
        total = np.maximum((numel * gathered).sum(axis=(1, 2)), 1.0)
        out[0, rows] = gathered.sum(axis=(1, 2))
        out[1, rows] = released.sum(axis=(1, 2))
        out[2, rows] = (numel * released).sum(axis=(1, 2)) / total
    return out[0], out[1], out[2]


def _tensor_parallel_exposed(
    c: Configs, busy: np.ndarray, gemm: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Exposed TP communication of one block pass and the GEMM time it overlaps.

    Without overlap every TP collective sits on the critical path. With ``tp_comm_overlap``
    (Transformer Engine userbuffers, torchtitan AsyncTP) each all-gather/reduce-scatter is split
    into ``tp`` chunks exchanged while the GEMM runs on the chunks already received: only the first
    chunk, ``busy / tp``, and whatever the GEMMs cannot cover stay exposed.
    """
    tp = c.tp.astype(np.float64)
    overlapped = np.minimum(busy * (1.0 - 1.0 / tp), gemm)
    exposed = busy - overlapped
    on = c.tp_comm_overlap & (c.tp > 1)
    return np.where(on, exposed, busy), np.where(on, overlapped, 0.0)


def step_times(
    c: Configs, w: BlockWork, place: Layout, net: Network, cal: Calibration
) -> dict[str, np.ndarray]:
    """Time components of one optimizer step for every configuration (seconds, shape ``(n,)``)."""
    eff = efficiencies(c, cal)
    comp = _block_compute(c, w, cal, eff)
    tp = _tensor_parallel(c, w, place, net)
    cp = _context_parallel(c, w, place, net, comp["attn_fwd"])
    sharding = c.sharding
    layers = np.ceil(c.layers / (c.pp * c.vpp)) * c.vpp  # blocks on the slowest stage
    m = c.grad_accum.astype(np.float64)
    stage_params_bytes = (
        layers * w.layer_param_bytes + np.where(c.pp > 1, 0.5, 1.0) * w.embedding_param_bytes
    )
    slow = eff.overlap_slowdown

    # --- Data-parallel collectives of one block (per micro-batch for FSDP/HSDP/ZeRO-2). A
    # framework that gathers tensor by tensor (DeepSpeed ZeRO-3) issues one all-gather per
    # partitioned parameter tensor of the block, each paying the full ring latency.
    n, g = place.shard_size, place.shard_per_node
    tensors, regathered, regathered_share = _per_tensor_gathers(w, c.per_tensor_gather)
    calls = np.where(c.per_tensor_gather, tensors, 1.0)
    gathers = (
        (sharding == Sharding.FSDP) | (sharding == Sharding.HSDP) | (sharding == Sharding.ZERO2)
    )
    ag = calls * _only_where(gathers, allgather_time, w.layer_param_bytes / calls, n, g, net)
    rs = _only_where(gathers, reducescatter_time, w.layer_param_bytes, n, g, net)
    ar_replicas = _only_where(
        sharding == Sharding.HSDP, allreduce_time,
        w.layer_param_bytes / np.maximum(n, 1), place.replicas, 1, net,
    )  # fmt: skip
    sharded = (sharding == Sharding.FSDP) | (sharding == Sharding.HSDP)
    # PyTorch's pipeline stages (module docstring): the gradients are reduced once per step, after
    # the last backward; ZeRO-2 is gathered once per step; FSDP/HSDP, resharded after forward, is
    # gathered by every backward but only by the forwards that follow a forward.
    pipelined = c.deferred_grad_sync
    deferred = pipelined & (sharding == Sharding.ZERO2)
    m_safe = np.maximum(m, 1.0)
    fwd_share = np.where(pipelined & sharded, np.minimum(c.pp, m_safe) / m_safe, 1.0)
    step_gather = np.where(deferred, ag, 0.0)
    step_rs = np.where(pipelined, rs, 0.0)
    step_ar = np.where(pipelined, ar_replicas, 0.0)
    ag = np.where(deferred, 0.0, ag)
    rs = np.where(pipelined, 0.0, rs)
    ar_replicas = np.where(pipelined, 0.0, ar_replicas)
    gather_fwd = fwd_share * np.where(sharded | (sharding == Sharding.ZERO2), ag, 0.0)
    gather_bwd = np.where(sharded, ag, 0.0)
    # ZeRO-3 under full recomputation: the recomputed forward gathers again what was released.
    again = sharded & c.per_tensor_gather & (c.recompute == Recompute.FULL) & (regathered > 0)
    regather = np.where(again, regathered, 1.0) * _only_where(
        again, allgather_time,
        regathered_share * w.layer_param_bytes / np.maximum(regathered, 1.0), n, g, net,
    )  # fmt: skip
    gather_bwd = gather_bwd + regather
    reduce_bwd = np.where(sharded | (sharding == Sharding.ZERO2), rs, 0.0) + ar_replicas
    embed_calls = np.where(c.per_tensor_gather, 2.0, 1.0)
    embed_gather = embed_calls * _only_where(
        gathers, allgather_time, w.embedding_param_bytes / embed_calls, n, g, net
    )
    step_embed_gather = np.where(deferred, embed_gather, 0.0)
    embed_gather = fwd_share * np.where(deferred, 0.0, embed_gather)
    # What the communication stream hides (prefetched gathers, overlapped reductions) and what
    # runs on the critical path instead (gathers issued when the layer is reached, reductions
    # after the backward pass).
    prefetch = c.overlap_param_gather
    grad_overlap = c.overlap_grad_reduce
    comm_fwd = np.where(prefetch, gather_fwd, 0.0)
    comm_bwd = np.where(prefetch, gather_bwd, 0.0) + np.where(grad_overlap, reduce_bwd, 0.0)
    serial_fwd = gather_fwd - comm_fwd
    serial_bwd = gather_bwd + reduce_bwd - comm_bwd

    # --- Critical path of one block: compute plus TP collectives plus the exposed CP ring.
    tp_fwd_busy = tp["ag_fwd"] + tp["rs_fwd"] + tp["ar_fwd"]
    tp_bwd_busy = tp["ag_bwd"] + tp["rs_bwd"] + tp["ar_bwd"]
    tp_fwd, tp_fwd_hidden = _tensor_parallel_exposed(c, tp_fwd_busy, comp["gemm_fwd"])
    tp_bwd, tp_bwd_hidden = _tensor_parallel_exposed(c, tp_bwd_busy, comp["gemm_bwd"])
    f_comp = comp["fwd_dense"] + comp["fwd_mem"]
    b_comp = comp["bwd_dense"] + comp["bwd_mem"]
    host = c.host_overhead_s
    f_gpu = np.maximum(f_comp, host / 3.0)
    b_gpu = np.maximum(b_comp, 2.0 * host / 3.0)

    f_slow = slow * (np.minimum(comm_fwd, f_comp) + tp_fwd_hidden)
    b_slow = slow * (np.minimum(comm_bwd, b_comp) + tp_bwd_hidden)
    f_crit = f_gpu + f_slow + tp_fwd + cp["exposed_fwd"]
    b_crit = b_gpu + b_slow + tp_bwd + cp["exposed_bwd"]

    # Two streams, Ls identical blocks, prefetch depth one: per pass the time is
    # first gather + (Ls - 1) * max(critical path, comm) + critical path (+ last reduce-scatter);
    # written below as the compute on the critical path plus what the comm stream adds.
    fwd_exposed = (
        _prefetched(embed_gather + comm_fwd, comm_fwd, f_crit, layers)
        + layers * (tp_fwd + cp["exposed_fwd"] + serial_fwd)
    )  # fmt: skip
    bwd_exposed = (
        _prefetched(np.where(prefetch, gather_bwd, 0.0), comm_bwd, b_crit, layers)
        + np.where(grad_overlap, reduce_bwd, 0.0)
        + layers * (tp_bwd + cp["exposed_bwd"] + serial_bwd)
    )  # fmt: skip
    # The LM head runs on the last stage. Stages are balanced (the last one takes fewer blocks, as
    # Llama 3 and torchtitan do): the slowest stage carries whatever of the head does not fit in
    # the balance, max(0, (L·block + head)/pp - Ls·block); without pipelining, all of it.
    block = comp["fwd_dense"] + comp["fwd_mem"] + comp["bwd_dense"] + comp["bwd_mem"]
    head_total = comp["head_dense"] + comp["head_mem"]
    head_share = np.clip(
        (c.layers * block + head_total) / c.pp - layers * block, 0.0, head_total
    ) / np.where(head_total > 0, head_total, 1.0)
    head = head_share * head_total

    # --- Pipeline boundaries: activations forward, gradients backward, vpp times when
    # interleaved; with sequence parallelism only 1/tp of the tensor crosses (scatter/gather).
    act_bytes = 2.0 * w.tokens * c.hidden / np.where(c.sequence_parallel, c.tp, 1)
    p2p_one = np.where(c.pp > 1, p2p_time(act_bytes, place.pp_same_node, net), 0.0)
    p2p_mb = 2.0 * c.vpp * p2p_one

    compute_mb = (
        layers * (comp["fwd_dense"] + comp["fwd_mem"] + comp["bwd_dense"] + comp["bwd_mem"])
        + layers * (f_slow + b_slow) + head
    )  # fmt: skip
    stall_mb = layers * ((f_gpu - f_comp) + (b_gpu - b_comp))
    exposed_mb = fwd_exposed + bwd_exposed + p2p_mb
    bubble = (c.pp - 1) / c.vpp * (compute_mb + stall_mb + exposed_mb)

    # --- Once per step: gradient reduction (DDP, ZeRO-1), parameter gather (ZeRO-1), optimizer.
    # Overlapped reductions run in the framework's buckets under the last micro-batch's backward;
    # without overlap (DeepSpeed below ZeRO-3, Megatron without --overlap-grad-reduce) they run
    # after it, wholly exposed.
    grad_bytes = stage_params_bytes
    d, dg = place.data_size, place.data_per_node
    bucket = 2.0 * c.ddp_bucket_params
    bwd_window = np.where(grad_overlap, layers * b_crit, 0.0)
    fwd_window = np.where(prefetch, layers * f_crit, 0.0)
    ddp, zero1 = sharding == Sharding.DDP, sharding == Sharding.ZERO1
    ddp_ar_busy, ddp_ar_exposed = _bucketed(
        np.where(ddp, grad_bytes, 0.0), bucket,
        lambda s: _only_where(ddp, allreduce_time, s, d, dg, net), bwd_window,
    )  # fmt: skip
    z1_rs_busy, z1_rs_exposed = _bucketed(
        np.where(zero1, grad_bytes, 0.0), bucket,
        lambda s: _only_where(zero1, reducescatter_time, s, d, dg, net), bwd_window,
    )  # fmt: skip
    z1_ag_busy, z1_ag_exposed = _bucketed(
        np.where(zero1, grad_bytes, 0.0), bucket,
        lambda s: _only_where(zero1, allgather_time, s, d, dg, net), fwd_window,
    )  # fmt: skip
    # Deferred ZeRO-2 (above): the first micro-batch's forward prefetches the gathers one block
    # ahead; the reduce-scatters all run after the last backward, exposed.
    deferred_gather_exposed = np.where(
        prefetch,
        _prefetched(step_gather, step_gather, f_crit, layers),
        layers * step_gather,
    )
    deferred_exposed = step_embed_gather + deferred_gather_exposed + layers * (step_rs + step_ar)
    deferred_slow = slow * layers * np.where(prefetch, np.minimum(step_gather, f_comp), 0.0)
    step_sync_exposed = ddp_ar_exposed + z1_rs_exposed + z1_ag_exposed + deferred_exposed
    step_sync_slow = deferred_slow + slow * (
        np.minimum(ddp_ar_busy + z1_rs_busy, bwd_window) + np.minimum(z1_ag_busy, fwd_window)
    )

    shard = np.select(
        [sharding == Sharding.DDP, sharding == Sharding.HSDP],
        [1.0, place.shard_size],
        default=place.data_size,
    )
    local_params = stage_params_bytes / 2.0 / shard
    optimizer = memory_time(
        cal.optimizer_bytes_per_param * local_params,
        hbm_bw=c.hbm_bytes_per_s, hbm_efficiency=cal.hbm_efficiency,
    )  # fmt: skip

    # --- Components per step.
    blocks = m * layers
    dense = blocks * (comp["fwd_dense"] + comp["bwd_dense"]) + m * head_share * comp["head_dense"]
    memory_bound = (
        blocks * (comp["fwd_mem"] + comp["bwd_mem"]) + m * head_share * comp["head_mem"] + optimizer
    )
    slowdown = blocks * (f_slow + b_slow) + step_sync_slow
    compute = dense + memory_bound + slowdown
    host_stall = m * stall_mb
    # Synchronous training waits for the slowest GPU at every step: with a per-GPU coefficient of
    # variation cv, the expected maximum of N normal compute times exceeds the mean by cv·z_N,
    # z_N = Φ⁻¹((N − 0.375)/(N + 0.25)) (Blom's approximation; 1.42 for 8 GPUs, 3.43 for 2,048).
    stragglers = cal.straggler_cv * expected_max_standard_normal(c.num_gpus) * compute
    exposed = m * exposed_mb + step_sync_exposed + stragglers
    step = compute + exposed + bubble + host_stall

    allgather = (
        m * (layers * (gather_fwd + gather_bwd) + embed_gather)
        + blocks * (tp["ag_fwd"] + tp["ag_bwd"])
        + z1_ag_busy + layers * step_gather + step_embed_gather
    )  # fmt: skip
    reducescatter = (
        blocks * (reduce_bwd - ar_replicas + tp["rs_fwd"] + tp["rs_bwd"]) + z1_rs_busy
        + layers * step_rs
    )  # fmt: skip
    allreduce = (
        blocks * (ar_replicas + tp["ar_fwd"] + tp["ar_bwd"]) + ddp_ar_busy + layers * step_ar
    )
    p2p = m * p2p_mb + blocks * (cp["busy_fwd"] + cp["busy_bwd"])
    return {
        "step_time_s": step,
        "compute_s": compute,
        "dense_s": dense + slowdown,
        "memory_bound_s": memory_bound,
        "host_stall_s": host_stall,
        "bubble_s": bubble,
        "exposed_comm_s": exposed,
        "allgather_s": allgather,
        "reducescatter_s": reducescatter,
        "allreduce_s": allreduce,
        "p2p_s": p2p,
        "straggler_s": stragglers,
        "comm_s": allgather + reducescatter + allreduce + p2p + stragglers,
    }
