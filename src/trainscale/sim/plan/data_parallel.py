"""Data parallelism: the sharded collectives of each block (FSDP, HSDP, ZeRO-2, per micro-batch
or, under PyTorch's pipelining, per step) and the once-per-step gradient sync (DDP, ZeRO-1,
deferred sharded gradients), with what the communication stream hides of them.

The schedule is in :mod:`trainscale.sim.plan.schedule`'s docstring. Arrays are float64 of shape
``(n,)``, seconds.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from trainscale.schema import Recompute, Sharding
from trainscale.sim.configs.arrays import PlanArrays, StackArrays
from trainscale.sim.frameworks import ZERO3_MAX_REUSE_DISTANCE, ZERO3_PERSISTENCE_THRESHOLD
from trainscale.sim.model.finetune import trainable_share
from trainscale.sim.model.work import BlockWork
from trainscale.sim.plan.layout import Layout
from trainscale.sim.plan.streams import bucketed, only_where, prefetched
from trainscale.sim.system.collectives import (
    Network,
    allgather_time,
    allreduce_time,
    reducescatter_time,
)

__all__ = ["DataParallel", "StepSync", "data_parallel", "per_tensor_gathers", "step_sync"]


@dataclass(frozen=True, slots=True, kw_only=True)
class DataParallel:
    """The data-parallel collectives of one block: float64 arrays of shape ``(n,)``, seconds;
    per micro-batch unless named ``step_`` (per step, PyTorch's pipelining defers them)."""

    gather_fwd_s: np.ndarray
    """Parameter gathers of the forward (FSDP, HSDP, ZeRO-2; the share of the forwards that
    gather under PyTorch's pipelining)."""
    gather_bwd_s: np.ndarray
    """Parameter gathers of the backward (FSDP, HSDP; ZeRO-3's regathers under full
    recomputation included)."""
    reduce_bwd_s: np.ndarray
    """Gradient reduce-scatter plus HSDP's AllReduce across replicas."""
    replica_allreduce_s: np.ndarray
    """HSDP's AllReduce of the shard's gradient across replicas."""
    embedding_gather_s: np.ndarray
    """The embeddings' gather, once per micro-batch."""
    step_gather_s: np.ndarray
    """Deferred ZeRO-2's gathers, once per step."""
    step_reducescatter_s: np.ndarray
    step_allreduce_s: np.ndarray
    step_embedding_gather_s: np.ndarray
    comm_fwd_s: np.ndarray
    """What of the forward's collectives runs on the communication stream (prefetched)."""
    comm_bwd_s: np.ndarray
    """What of the backward's runs on the communication stream (prefetched, overlapped)."""
    serial_fwd_s: np.ndarray
    """What runs on the critical path instead (gathers issued when the layer is reached)."""
    serial_bwd_s: np.ndarray
    """The same in backward (and reductions after the backward pass)."""


def per_tensor_gathers(
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


def _block_collectives(
    plan: PlanArrays, stack: StackArrays, w: BlockWork, place: Layout, net: Network
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """One block's sharded collectives before any deferral: ``(gather, reduce_scatter,
    replica_allreduce, regather, embedding_gather)``, seconds.

    A framework that gathers tensor by tensor (DeepSpeed ZeRO-3) issues one all-gather per
    partitioned parameter tensor of the block, each paying the full ring latency; under full
    recomputation its recomputed forward gathers again what was released (``regather``).
    """
    sharding = plan.sharding
    n, g = place.shard_size, place.shard_per_node
    tensors, regathered, regathered_share = per_tensor_gathers(w, stack.per_tensor_gather)
    calls = np.where(stack.per_tensor_gather, tensors, 1.0)
    gathers = (
        (sharding == Sharding.FSDP) | (sharding == Sharding.HSDP) | (sharding == Sharding.ZERO2)
    )
    ag = calls * only_where(gathers, allgather_time, w.layer_param_bytes / calls, n, g, net)
    grads = (
        trainable_share(plan.finetune, plan.lora_rank, w) * w.layer_param_bytes
    )  # LoRA: the adapters' gradients only
    rs = only_where(gathers, reducescatter_time, grads, n, g, net)
    ar_replicas = only_where(
        sharding == Sharding.HSDP, allreduce_time,
        grads / np.maximum(n, 1), place.replicas, 1, net,
    )  # fmt: skip
    sharded = (sharding == Sharding.FSDP) | (sharding == Sharding.HSDP)
    again = (
        sharded & stack.per_tensor_gather & (plan.recompute == Recompute.FULL) & (regathered > 0)
    )
    regather = np.where(again, regathered, 1.0) * only_where(
        again, allgather_time,
        regathered_share * w.layer_param_bytes / np.maximum(regathered, 1.0), n, g, net,
    )  # fmt: skip
    embed_calls = np.where(stack.per_tensor_gather, 2.0, 1.0)
    embed_gather = embed_calls * only_where(
        gathers, allgather_time, w.embedding_param_bytes / embed_calls, n, g, net
    )
    return ag, rs, ar_replicas, regather, embed_gather


def data_parallel(
    plan: PlanArrays, stack: StackArrays, w: BlockWork, place: Layout, net: Network
) -> DataParallel:
    """The data-parallel collectives of one block, per micro-batch or deferred to the step.

    PyTorch's pipeline stages (:mod:`trainscale.sim.plan.schedule`): the gradients are reduced
    once per step, after the last backward; ZeRO-2 is gathered once per step; FSDP/HSDP,
    resharded after forward, is gathered by every backward but only by the forwards that follow
    a forward.

    Reads ``plan.sharding``, ``recompute``, ``grad_accum``, ``pp``, ``finetune`` and
    ``lora_rank``, and ``stack.per_tensor_gather``, ``deferred_grad_sync``,
    ``overlap_param_gather`` and ``overlap_grad_reduce``; ``w``: the block's parameter bytes and
    tensors; ``place``: the data-parallel group sizes; ``net``: the links. Times in s.
    """
    ag, rs, ar_replicas, regather, embed_gather = _block_collectives(plan, stack, w, place, net)
    sharding = plan.sharding
    sharded = (sharding == Sharding.FSDP) | (sharding == Sharding.HSDP)
    pipelined = stack.deferred_grad_sync
    deferred = pipelined & (sharding == Sharding.ZERO2)
    m_safe = np.maximum(plan.grad_accum.astype(np.float64), 1.0)
    fwd_share = np.where(pipelined & sharded, np.minimum(plan.pp, m_safe) / m_safe, 1.0)
    step_gather = np.where(deferred, ag, 0.0)
    step_rs = np.where(pipelined, rs, 0.0)
    step_ar = np.where(pipelined, ar_replicas, 0.0)
    ag = np.where(deferred, 0.0, ag)
    rs = np.where(pipelined, 0.0, rs)
    ar_replicas = np.where(pipelined, 0.0, ar_replicas)
    gather_fwd = fwd_share * np.where(sharded | (sharding == Sharding.ZERO2), ag, 0.0)
    gather_bwd = np.where(sharded, ag, 0.0) + regather
    reduce_bwd = np.where(sharded | (sharding == Sharding.ZERO2), rs, 0.0) + ar_replicas
    # What the communication stream hides (prefetched gathers, overlapped reductions) and what
    # runs on the critical path instead (gathers issued when the layer is reached, reductions
    # after the backward pass).
    prefetch = stack.overlap_param_gather
    comm_fwd = np.where(prefetch, gather_fwd, 0.0)
    comm_bwd = np.where(prefetch, gather_bwd, 0.0) + np.where(
        stack.overlap_grad_reduce, reduce_bwd, 0.0
    )
    return DataParallel(
        gather_fwd_s=gather_fwd,
        gather_bwd_s=gather_bwd,
        reduce_bwd_s=reduce_bwd,
        replica_allreduce_s=ar_replicas,
        embedding_gather_s=fwd_share * np.where(deferred, 0.0, embed_gather),
        step_gather_s=step_gather,
        step_reducescatter_s=step_rs,
        step_allreduce_s=step_ar,
        step_embedding_gather_s=np.where(deferred, embed_gather, 0.0),
        comm_fwd_s=comm_fwd,
        comm_bwd_s=comm_bwd,
        serial_fwd_s=gather_fwd - comm_fwd,
        serial_bwd_s=gather_bwd + reduce_bwd - comm_bwd,
    )


@dataclass(frozen=True, slots=True, kw_only=True)
class StepSync:
    """The once-per-step data-parallel collectives: float64 arrays of shape ``(n,)``, seconds."""

    allreduce_s: np.ndarray
    """DDP's bucketed gradient AllReduce, all buckets."""
    reducescatter_s: np.ndarray
    """ZeRO-1's bucketed gradient ReduceScatter, all buckets."""
    allgather_s: np.ndarray
    """ZeRO-1's bucketed AllGather of the updated parameters, all buckets."""
    exposed_s: np.ndarray
    """What of them (and of the deferred sharded collectives) no compute window covers."""
    slowdown_s: np.ndarray
    """The compute they overlap, slowed by the SMs the collectives take."""


def step_sync(
    sharding: np.ndarray,
    stack: StackArrays,
    place: Layout,
    net: Network,
    dp: DataParallel,
    *,
    layers: np.ndarray,
    grad_bytes: np.ndarray,
    fwd_compute: np.ndarray,
    fwd_critical: np.ndarray,
    bwd_critical: np.ndarray,
    slow: np.ndarray,
) -> StepSync:
    """Once per step: gradient reduction (DDP, ZeRO-1), parameter gather (ZeRO-1), and the
    collectives PyTorch's pipelining defers.

    Overlapped reductions run in the framework's buckets under the last micro-batch's backward
    (``layers`` blocks of ``bwd_critical`` seconds); without overlap (DeepSpeed below ZeRO-3,
    Megatron without --overlap-grad-reduce) they run after it, wholly exposed. Deferred ZeRO-2:
    the first micro-batch's forward prefetches the gathers one block ahead; the reduce-scatters
    all run after the last backward, exposed. ``grad_bytes``: the stage's gradient bytes;
    ``slow``: the overlap slowdown (dimensionless); ``layers``: blocks on the stage; the
    ``fwd_``/``bwd_`` windows in s. ``sharding``: each row's
    :class:`~trainscale.schema.Sharding` code; ``stack``: ``overlap_param_gather``,
    ``overlap_grad_reduce`` and ``ddp_bucket_params`` (parameters per bucket, bf16: 2 bytes each).
    """
    prefetch = stack.overlap_param_gather
    d, dg = place.data_size, place.data_per_node
    bucket = 2.0 * stack.ddp_bucket_params
    bwd_window = np.where(stack.overlap_grad_reduce, layers * bwd_critical, 0.0)
    fwd_window = np.where(prefetch, layers * fwd_critical, 0.0)
    ddp, zero1 = sharding == Sharding.DDP, sharding == Sharding.ZERO1
    ddp_ar_busy, ddp_ar_exposed = bucketed(
        np.where(ddp, grad_bytes, 0.0), bucket,
        lambda s: only_where(ddp, allreduce_time, s, d, dg, net), bwd_window,
    )  # fmt: skip
    z1_rs_busy, z1_rs_exposed = bucketed(
        np.where(zero1, grad_bytes, 0.0), bucket,
        lambda s: only_where(zero1, reducescatter_time, s, d, dg, net), bwd_window,
    )  # fmt: skip
    z1_ag_busy, z1_ag_exposed = bucketed(
        np.where(zero1, grad_bytes, 0.0), bucket,
        lambda s: only_where(zero1, allgather_time, s, d, dg, net), fwd_window,
    )  # fmt: skip
    step_gather = dp.step_gather_s
    deferred_gather_exposed = np.where(
        prefetch,
        prefetched(step_gather, step_gather, fwd_critical, layers),
        layers * step_gather,
    )
    deferred_exposed = (
        dp.step_embedding_gather_s + deferred_gather_exposed
        + layers * (dp.step_reducescatter_s + dp.step_allreduce_s)
    )  # fmt: skip
    deferred_slow = slow * layers * np.where(prefetch, np.minimum(step_gather, fwd_compute), 0.0)
    return StepSync(
        allreduce_s=ddp_ar_busy,
        reducescatter_s=z1_rs_busy,
        allgather_s=z1_ag_busy,
        exposed_s=ddp_ar_exposed + z1_rs_exposed + z1_ag_exposed + deferred_exposed,
        slowdown_s=deferred_slow + slow * (
            np.minimum(ddp_ar_busy + z1_rs_busy, bwd_window) + np.minimum(z1_ag_busy, fwd_window)
        ),
    )  # fmt: skip
