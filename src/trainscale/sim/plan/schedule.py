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

The parts, one module each: :mod:`~trainscale.sim.plan.block_compute` (a block's compute),
:mod:`~trainscale.sim.plan.tensor_parallel`, :mod:`~trainscale.sim.plan.context_parallel`,
:mod:`~trainscale.sim.plan.data_parallel` (per block and once per step),
:mod:`~trainscale.sim.plan.critical_path` (a block's critical path, the host's launches),
:mod:`~trainscale.sim.plan.pipeline` (stage balance, boundary transfers, the bubble),
:mod:`~trainscale.sim.plan.streams` (the shared overlap helpers) and
:mod:`~trainscale.sim.plan.efficiency`; this module composes them into :class:`StepTimes`.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

import numpy as np

from trainscale.schema import Sharding
from trainscale.sim.configs import Configs
from trainscale.sim.configs.arrays import StackArrays
from trainscale.sim.model.finetune import trainable_share
from trainscale.sim.model.work import BlockWork
from trainscale.sim.plan.block_compute import BlockCompute, block_compute
from trainscale.sim.plan.context_parallel import ContextParallel, context_parallel
from trainscale.sim.plan.critical_path import BlockPath, block_path
from trainscale.sim.plan.data_parallel import DataParallel, StepSync, data_parallel, step_sync
from trainscale.sim.plan.efficiency import Efficiencies, efficiencies
from trainscale.sim.plan.experts import ExpertSteps, expert_parallel
from trainscale.sim.plan.layout import Layout
from trainscale.sim.plan.order_statistics import expected_max_standard_normal
from trainscale.sim.plan.pipeline import (
    block_time,
    boundary_bytes,
    boundary_p2p,
    bubble,
    head_share,
)
from trainscale.sim.plan.streams import prefetched
from trainscale.sim.plan.tensor_parallel import TensorParallel, tensor_parallel
from trainscale.sim.system.collectives import Network
from trainscale.sim.system.compute import memory_time

if TYPE_CHECKING:
    from trainscale.sim.calibration import Calibration

__all__ = [
    "Efficiencies",
    "StepTimes",
    "efficiencies",
    "expected_max_standard_normal",
    "step_times",
]


@dataclass(frozen=True, slots=True, kw_only=True)
class StepTimes:
    """Time components of one optimizer step for every configuration.

    Every field is a float64 array of shape ``(n,)``, one element per configuration (the
    simulator is vectorised over all of them), in seconds. ``step_time_s`` is the explicit sum
    ``compute_s + exposed_comm_s + bubble_s + host_stall_s``; ``comm_s`` the busy time of every
    collective (``allgather_s + reducescatter_s + allreduce_s + p2p_s + straggler_s``), hidden
    or not, and the expert-parallel exchange (``alltoall_s``).
    """

    step_time_s: np.ndarray
    """One optimizer step."""
    compute_s: np.ndarray
    """``dense_s + memory_bound_s``: every micro-batch's compute on the slowest stage."""
    dense_s: np.ndarray
    """GEMMs and attention, and the slowdown of compute that collectives overlap."""
    memory_bound_s: np.ndarray
    """Memory-bound kernels and the optimizer step."""
    host_stall_s: np.ndarray
    """The GPU waiting for the host to launch its kernels."""
    bubble_s: np.ndarray
    """The pipeline bubble."""
    exposed_comm_s: np.ndarray
    """Communication on the critical path, waiting for stragglers included."""
    allgather_s: np.ndarray
    """Busy time of every AllGather (data-, tensor-parallel)."""
    reducescatter_s: np.ndarray
    allreduce_s: np.ndarray
    p2p_s: np.ndarray
    """Pipeline boundaries and the context-parallel exchange."""
    straggler_s: np.ndarray
    """Waiting for the slowest GPU, inside the collectives."""
    comm_s: np.ndarray
    alltoall_s: np.ndarray
    """Expert-parallel dispatch and combine busy time (part of ``comm_s``)."""
    exposed_alltoall_s: np.ndarray
    """What of it is exposed (part of ``exposed_comm_s``)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class _MicroBatch:
    """The slowest stage's time for one micro-batch: float64 arrays of shape ``(n,)``, s."""

    head_share: np.ndarray
    """The share of the LM head this stage carries (0 to 1)."""
    compute_s: np.ndarray
    host_stall_s: np.ndarray
    exposed_comm_s: np.ndarray
    """Exposed data-, tensor- and context-parallel communication and the boundary transfers."""
    p2p_s: np.ndarray
    """The stage-boundary transfers."""


def _exposed_comm(
    overlap_param_gather: np.ndarray,
    overlap_grad_reduce: np.ndarray,
    cp: ContextParallel,
    dp: DataParallel,
    path: BlockPath,
    layers: np.ndarray,
) -> np.ndarray:
    """Exposed communication of one micro-batch's ``layers`` blocks, forward plus backward (s);
    ``overlap_param_gather``, ``overlap_grad_reduce``: bool, the stack prefetches the backward's
    gathers and overlaps the gradient reduction.

    Two streams, Ls identical blocks, prefetch depth one: per pass the time is first gather +
    (Ls - 1) * max(critical path, comm) + critical path (+ last reduce-scatter); written here as
    what the comm stream adds to the compute on the critical path.
    """
    fwd_exposed = (
        prefetched(dp.embedding_gather_s + dp.comm_fwd_s, dp.comm_fwd_s, path.fwd_critical_s,
                   layers)
        + layers * (path.fwd_tp_exposed_s + cp.exposed_fwd_s + dp.serial_fwd_s)
    )  # fmt: skip
    bwd_exposed = (
        prefetched(np.where(overlap_param_gather, dp.gather_bwd_s, 0.0), dp.comm_bwd_s,
                   path.bwd_critical_s, layers)
        + np.where(overlap_grad_reduce, dp.reduce_bwd_s, 0.0)
        + layers * (path.bwd_tp_exposed_s + cp.exposed_bwd_s + dp.serial_bwd_s)
    )  # fmt: skip
    return fwd_exposed + bwd_exposed


def _micro_batch(
    model_layers: np.ndarray,
    pp: np.ndarray,
    stack: StackArrays,
    comp: BlockCompute,
    cp: ContextParallel,
    dp: DataParallel,
    path: BlockPath,
    layers: np.ndarray,
    p2p: np.ndarray,
) -> _MicroBatch:
    """One micro-batch on the slowest stage (s): ``layers`` blocks, its share of the head, the
    stage-boundary transfers ``p2p``; ``model_layers``: the model's blocks, ``pp``: pipeline
    stages, ``stack``: its ``overlap_param_gather`` and ``overlap_grad_reduce``."""
    share = head_share(model_layers, pp, comp, layers)
    head = share * (comp.head_dense_s + comp.head_memory_s)
    return _MicroBatch(
        head_share=share,
        compute_s=layers * block_time(comp)
        + layers * (path.fwd_slowdown_s + path.bwd_slowdown_s) + head,
        host_stall_s=layers * path.host_stall_s,
        exposed_comm_s=_exposed_comm(
            stack.overlap_param_gather, stack.overlap_grad_reduce, cp, dp, path, layers
        )
        + p2p,
        p2p_s=p2p,
    )  # fmt: skip


def _optimizer_step(
    sharding: np.ndarray,
    hbm_bytes_per_s: np.ndarray,
    place: Layout,
    cal: Calibration,
    stage_params_bytes: np.ndarray,
) -> np.ndarray:
    """The optimizer step (memory-bound) over this GPU's share of the stage's parameters, s;
    ``sharding``: :class:`~trainscale.schema.Sharding` codes, ``hbm_bytes_per_s``: B/s,
    ``stage_params_bytes``: the stage's bf16 parameter bytes (2 per parameter)."""
    shard = np.select(
        [sharding == Sharding.DDP, sharding == Sharding.HSDP],
        [1.0, place.shard_size],
        default=place.data_size,
    )
    local_params = stage_params_bytes / 2.0 / shard
    return memory_time(
        cal.optimizer_bytes_per_param * local_params,
        hbm_bw=hbm_bytes_per_s, hbm_efficiency=cal.hbm_efficiency,
    )  # fmt: skip


def _collectives(
    m: np.ndarray,
    layers: np.ndarray,
    tp: TensorParallel,
    cp: ContextParallel,
    dp: DataParallel,
    sync: StepSync,
    p2p_mb: np.ndarray,
    ex: ExpertSteps,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Busy time per step of every AllGather, ReduceScatter, AllReduce and send/recv (s); the
    expert gradients' once-per-step collectives included."""
    blocks = m * layers
    allgather = (
        m * (layers * (dp.gather_fwd_s + dp.gather_bwd_s) + dp.embedding_gather_s)
        + blocks * (tp.allgather_fwd_s + tp.allgather_bwd_s)
        + sync.allgather_s + layers * dp.step_gather_s + dp.step_embedding_gather_s
        + ex.step_allgather_s
    )  # fmt: skip
    reducescatter = (
        blocks * (dp.reduce_bwd_s - dp.replica_allreduce_s + tp.reducescatter_fwd_s
                  + tp.reducescatter_bwd_s)
        + sync.reducescatter_s + layers * dp.step_reducescatter_s + ex.step_reducescatter_s
    )  # fmt: skip
    allreduce = (
        blocks * (dp.replica_allreduce_s + tp.allreduce_fwd_s + tp.allreduce_bwd_s)
        + sync.allreduce_s + layers * dp.step_allreduce_s + ex.step_allreduce_s
    )  # fmt: skip
    p2p = m * p2p_mb + blocks * (cp.busy_fwd_s + cp.busy_bwd_s)
    return allgather, reducescatter, allreduce, p2p


def step_times(
    c: Configs, w: BlockWork, place: Layout, net: Network, cal: Calibration
) -> StepTimes:
    """Time components of one optimizer step for every configuration (seconds, shape ``(n,)``)."""
    eff = efficiencies(c.stack.framework, c.plan.fp8, c.system, cal)
    slow = eff.overlap_slowdown
    comp = block_compute(c.plan, c.system, c.model.hidden, c.model.heads, w, cal, eff)
    tp = tensor_parallel(c.plan, c.model.hidden, w, place, net)
    cp = context_parallel(
        c.plan.cp, c.stack.cp_comm_type, c.stack.repeat_kv, c.plan.recompute, w, place, net,
        comp.attention_fwd_s,
    )  # fmt: skip
    dp = data_parallel(c.plan, c.stack, w, place, net)
    layers = np.ceil(c.model.layers / (c.plan.pp * c.plan.vpp)) * c.plan.vpp  # slowest stage
    comp, tp, dp, ex = expert_parallel(
        w.moe, comp, tp, dp, model=c.model, plan=c.plan, stack=c.stack, system=c.system, net=net,
        eff=eff, cal=cal, layers=layers,
    )  # fmt: skip
    path = block_path(
        c.plan.tp, c.stack.tp_comm_overlap, c.stack.host_overhead_s, comp, tp, cp, dp, slow
    )
    m = c.plan.grad_accum.astype(np.float64)
    stage_params_bytes = (
        layers * w.layer_param_bytes + np.where(c.plan.pp > 1, 0.5, 1.0) * w.embedding_param_bytes
    )
    act_bytes = boundary_bytes(w.tokens, c.model.hidden, c.plan.tp, c.plan.sequence_parallel)
    boundary_s = boundary_p2p(act_bytes, c.plan.pp, c.plan.vpp, place, net)
    mb = _micro_batch(c.model.layers, c.plan.pp, c.stack, comp, cp, dp, path, layers, boundary_s)
    mb = replace(mb, exposed_comm_s=mb.exposed_comm_s + layers * ex.exposed_alltoall_s)
    trained = trainable_share(c.plan.finetune, c.plan.lora_rank, w)  # LoRA: the adapters only
    trained_bytes = trained * stage_params_bytes
    sync = step_sync(
        c.plan.sharding, c.stack, place, net, dp, layers=layers, grad_bytes=trained_bytes,
        fwd_compute=path.fwd_compute_s, fwd_critical=path.fwd_critical_s,
        bwd_critical=path.bwd_critical_s, slow=slow,
    )  # fmt: skip
    optimizer = _optimizer_step(c.plan.sharding, c.system.hbm_bytes_per_s, place, cal,
                                trained_bytes) + ex.step_optimizer_s  # fmt: skip

    blocks = m * layers
    dense = blocks * (comp.fwd_dense_s + comp.bwd_dense_s) + m * mb.head_share * comp.head_dense_s
    memory_bound = (
        blocks * (comp.fwd_memory_s + comp.bwd_memory_s) + m * mb.head_share * comp.head_memory_s
        + optimizer
    )  # fmt: skip
    slowdown = (
        blocks * (path.fwd_slowdown_s + path.bwd_slowdown_s + ex.slowdown_s) + sync.slowdown_s
    )
    compute = dense + memory_bound + slowdown
    # Synchronous training waits for the slowest GPU at every step: with a per-GPU coefficient of
    # variation cv, the expected maximum of N normal compute times exceeds the mean by cv·z_N,
    # z_N = Φ⁻¹((N − 0.375)/(N + 0.25)) (Blom's approximation; 1.42 for 8 GPUs, 3.43 for 2,048).
    stragglers = cal.straggler_cv * expected_max_standard_normal(c.plan.num_gpus) * compute
    exposed = m * mb.exposed_comm_s + sync.exposed_s + stragglers + ex.step_exposed_s
    pipeline_bubble = bubble(
        c.plan.pp, c.plan.vpp, mb.compute_s + mb.host_stall_s + mb.exposed_comm_s
    )
    host_stall = m * mb.host_stall_s
    allgather, reducescatter, allreduce, p2p = _collectives(
        m, layers, tp, cp, dp, sync, mb.p2p_s, ex
    )
    alltoall = blocks * ex.alltoall_s
    return StepTimes(
        step_time_s=compute + exposed + pipeline_bubble + host_stall,
        compute_s=compute,
        dense_s=dense + slowdown,
        memory_bound_s=memory_bound,
        host_stall_s=host_stall,
        bubble_s=pipeline_bubble,
        exposed_comm_s=exposed,
        allgather_s=allgather,
        reducescatter_s=reducescatter,
        allreduce_s=allreduce,
        p2p_s=p2p,
        straggler_s=stragglers,
        comm_s=allgather + reducescatter + allreduce + p2p + stragglers + alltoall,
        alltoall_s=alltoall,
        exposed_alltoall_s=blocks * ex.exposed_alltoall_s,
    )
