"""Placement of the parallel groups on nodes.

Ranks are ordered with tensor parallelism innermost, then context parallelism, then data
parallelism, with pipeline stages outermost (the order of Megatron-LM's ``tp-cp-dp-pp`` and of
torchtitan's device mesh): TP groups fill a node first, so their collectives stay on NVLink while
they fit; a pipeline boundary crosses nodes as soon as one stage spans a node.

For each group: its size and how many of its ranks share a node (``*_per_node``); collectives of a
group use NVLink among those and the NICs of the node for the rest.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from trainscale.schema import Sharding

__all__ = ["Layout", "layout"]


@dataclass(frozen=True, slots=True, kw_only=True)
class Layout:
    """Group sizes and ranks per node; arrays of shape ``(n,)``."""

    tp_per_node: np.ndarray
    cp_per_node: np.ndarray
    data_size: np.ndarray
    """Ranks that hold replicas (or shards) of the same weights: dp·cp."""
    data_per_node: np.ndarray
    shard_size: np.ndarray
    """Ranks one weight is sharded over: dp·cp (FSDP, ZeRO) or those on one node (HSDP)."""
    shard_per_node: np.ndarray
    replicas: np.ndarray
    """HSDP replica count (data_size / shard_size); 1 for the other shardings."""
    pp_same_node: np.ndarray
    """Adjacent pipeline stages share a node."""


def layout(
    tp: np.ndarray, cp: np.ndarray, dp: np.ndarray, sharding: np.ndarray, gpus_per_node: np.ndarray
) -> Layout:
    """Place each configuration's groups on its nodes: tensor-parallel ranks innermost, then
    context-parallel, then data-parallel (Megatron-LM's rank order; ``sharding`` as codes of
    :class:`~trainscale.schema.Sharding`)."""
    gpn = gpus_per_node
    tp_per_node = np.minimum(tp, gpn)
    ranks_per_node_beyond_tp = np.maximum(gpn // tp, 1)
    cp_per_node = np.minimum(cp, ranks_per_node_beyond_tp)
    data_size = dp * cp
    data_per_node = np.minimum(data_size, ranks_per_node_beyond_tp)
    hsdp = sharding == Sharding.HSDP
    shard_size = np.where(hsdp, data_per_node, data_size)
    return Layout(
        tp_per_node=tp_per_node,
        cp_per_node=cp_per_node,
        data_size=data_size,
        data_per_node=data_per_node,
        shard_size=shard_size,
        shard_per_node=np.minimum(shard_size, data_per_node),
        replicas=data_size // shard_size,
        pp_same_node=tp * cp * dp < gpn,
    )
