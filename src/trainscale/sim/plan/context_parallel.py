"""Context parallelism: the K/V exchange of one block pass, busy and exposed.

The ring's send/recv of K/V overlaps the attention of the chunk at hand and only the excess is
exposed; the all-gather variant hides behind the local chunk's attention only. Arrays are float64
of shape ``(n,)``, seconds per block per micro-batch.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike

from trainscale.schema import CP_COMM_TYPES, Recompute
from trainscale.sim.model.work import BlockWork
from trainscale.sim.plan.block_compute import ATTENTION_BACKWARD_RATIO
from trainscale.sim.plan.layout import Layout
from trainscale.sim.plan.streams import only_where
from trainscale.sim.system.collectives import Network, allgather_time, p2p_time

__all__ = ["ContextParallel", "context_parallel"]


@dataclass(frozen=True, slots=True, kw_only=True)
class ContextParallel:
    """The K/V exchange of one block per micro-batch: float64 arrays of shape ``(n,)``, seconds;
    0 where ``cp`` is 1. Backward includes the recomputed forward's exchange."""

    busy_fwd_s: np.ndarray
    busy_bwd_s: np.ndarray
    exposed_fwd_s: np.ndarray
    exposed_bwd_s: np.ndarray


def context_parallel(
    cp_degree: np.ndarray,
    cp_comm_type: np.ndarray,
    repeat_kv: np.ndarray,
    recompute: np.ndarray,
    w: BlockWork,
    place: Layout,
    net: Network,
    attn_fwd: ArrayLike,
) -> ContextParallel:
    """Context-parallel K/V exchange of one block pass (forward; backward, recomputation
    included), busy and exposed, for context-parallel degree ``cp_degree``, ``cp_comm_type``
    (codes of :data:`~trainscale.schema.CP_COMM_TYPES`), ``repeat_kv`` and ``recompute``
    (codes of :class:`~trainscale.schema.Recompute`); ``attn_fwd`` is the block's forward
    attention (seconds).

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
    chunk = 2.0 * 2.0 * w.tokens * np.where(repeat_kv, q_width, kv_width)  # K and V, bf16
    all_gather = cp_comm_type == CP_COMM_TYPES.index("all_gather")
    on = cp_degree > 1
    cp = np.maximum(cp_degree, 1).astype(np.float64)
    steps = cp - 1.0
    same_node = place.cp_per_node >= cp_degree
    one = p2p_time(chunk, same_node, net)
    local_fwd = attn_fwd / cp  # the attention of one chunk
    local_bwd = ATTENTION_BACKWARD_RATIO * local_fwd
    # ring
    ring_fwd, ring_bwd = steps * one, 2.0 * steps * one
    ring_exposed_fwd = np.maximum(ring_fwd - steps * local_fwd, 0.0)
    ring_exposed_bwd = np.maximum(ring_bwd - steps * local_bwd, 0.0)
    # all-gather
    gather = only_where(on & all_gather, allgather_time, cp * chunk, cp_degree, place.cp_per_node,
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
    recomputed = recompute != Recompute.NONE
    return ContextParallel(
        busy_fwd_s=busy_fwd,
        busy_bwd_s=busy_bwd + np.where(recomputed, busy_fwd, 0.0),
        exposed_fwd_s=exposed_fwd,
        exposed_bwd_s=exposed_bwd + np.where(recomputed, exposed_fwd, 0.0),
    )
