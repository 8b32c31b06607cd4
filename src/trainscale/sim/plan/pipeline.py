"""Pipeline parallelism: the stages' balance (what of the LM head the slowest stage carries),
the transfers at stage boundaries, and the 1F1B (or interleaved) bubble.

Arrays are float64 of shape ``(n,)``; times in seconds.
"""

from __future__ import annotations

import numpy as np

from trainscale.sim.configs import Configs
from trainscale.sim.model.work import BlockWork
from trainscale.sim.plan.block_compute import BlockCompute
from trainscale.sim.plan.layout import Layout
from trainscale.sim.system.collectives import Network, p2p_time

__all__ = ["block_time", "boundary_p2p", "bubble", "head_share"]


def block_time(comp: BlockCompute) -> np.ndarray:
    """Compute-stream time of one block, forward and backward, per micro-batch (seconds)."""
    return comp.fwd_dense_s + comp.fwd_memory_s + comp.bwd_dense_s + comp.bwd_memory_s


def head_share(c: Configs, comp: BlockCompute, layers: np.ndarray) -> np.ndarray:
    """The share (0 to 1) of the LM head's work the slowest stage carries.

    The LM head runs on the last stage. Stages are balanced (the last one takes fewer blocks, as
    Llama 3 and torchtitan do): the slowest stage, of ``layers`` blocks, carries whatever of the
    head does not fit in the balance, max(0, (L·block + head)/pp - Ls·block); without
    pipelining, all of it.
    """
    block = block_time(comp)
    head_total = comp.head_dense_s + comp.head_memory_s
    return np.clip(
        (c.model.layers * block + head_total) / c.plan.pp - layers * block, 0.0, head_total
    ) / np.where(head_total > 0, head_total, 1.0)


def boundary_p2p(c: Configs, w: BlockWork, place: Layout, net: Network) -> np.ndarray:
    """Stage-boundary transfers per micro-batch (seconds): activations forward, gradients
    backward, ``vpp`` times when interleaved; with sequence parallelism only 1/tp of the tensor
    crosses (scatter/gather)."""
    act_bytes = 2.0 * w.tokens * c.model.hidden / np.where(c.plan.sequence_parallel, c.plan.tp, 1)
    p2p_one = np.where(c.plan.pp > 1, p2p_time(act_bytes, place.pp_same_node, net), 0.0)
    return 2.0 * c.plan.vpp * p2p_one


def bubble(c: Configs, micro_batch_s: np.ndarray) -> np.ndarray:
    """The pipeline bubble of one step (seconds): ``(pp−1)/vpp`` slots of ``micro_batch_s``, the
    slowest stage's time for one micro-batch (1F1B; interleaved 1F1B when ``vpp`` > 1)."""
    return (c.plan.pp - 1) / c.plan.vpp * micro_batch_s
