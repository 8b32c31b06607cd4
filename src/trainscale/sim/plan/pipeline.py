"""Pipeline parallelism: the stages' balance (what of the LM head the slowest stage carries),
the transfers at stage boundaries, and the 1F1B (or interleaved) bubble.

Arrays are float64 of shape ``(n,)``; times in seconds.
"""

from __future__ import annotations

import numpy as np

from trainscale.sim.plan.block_compute import BlockCompute
from trainscale.sim.plan.layout import Layout
from trainscale.sim.system.collectives import Network, p2p_time

__all__ = ["block_time", "boundary_bytes", "boundary_p2p", "bubble", "head_share"]


def block_time(comp: BlockCompute) -> np.ndarray:
    """Compute-stream time of one block, forward and backward, per micro-batch (seconds)."""
    return comp.fwd_dense_s + comp.fwd_memory_s + comp.bwd_dense_s + comp.bwd_memory_s


def head_share(
    model_layers: np.ndarray, pp: np.ndarray, comp: BlockCompute, layers: np.ndarray
) -> np.ndarray:
    """The share (0 to 1) of the LM head's work the slowest stage carries.

    The LM head runs on the last stage. Stages are balanced (the last one takes fewer blocks, as
    Llama 3 and torchtitan do): the slowest stage, of ``layers`` blocks out of the model's
    ``model_layers``, carries whatever of the head does not fit in the balance,
    max(0, (L·block + head)/pp - Ls·block); without pipelining, all of it.
    """
    block = block_time(comp)
    head_total = comp.head_dense_s + comp.head_memory_s
    return np.clip(
        (model_layers * block + head_total) / pp - layers * block, 0.0, head_total
    ) / np.where(head_total > 0, head_total, 1.0)


def boundary_bytes(
    tokens: np.ndarray, hidden: np.ndarray, tp: np.ndarray, sequence_parallel: np.ndarray
) -> np.ndarray:
    """Bytes of one stage-boundary transfer per micro-batch: the bf16 activations of ``tokens``
    tokens of width ``hidden``, ``2·tokens·hidden``; with sequence parallelism each rank sends
    only its 1/tp (Megatron-LM's scatter/gather optimisation, Narayanan et al. 2021 §4.1)."""
    return 2.0 * tokens * hidden / np.where(sequence_parallel, tp, 1)


def boundary_p2p(
    act_bytes: np.ndarray, pp: np.ndarray, vpp: np.ndarray, place: Layout, net: Network
) -> np.ndarray:
    """Stage-boundary transfers per micro-batch (seconds): ``act_bytes`` of activations forward
    and as many of gradients backward, ``vpp`` times when interleaved; none without
    pipelining."""
    p2p_one = np.where(pp > 1, p2p_time(act_bytes, place.pp_same_node, net), 0.0)
    return 2.0 * vpp * p2p_one


def bubble(pp: np.ndarray, vpp: np.ndarray, micro_batch_s: np.ndarray) -> np.ndarray:
    """The pipeline bubble of one step (seconds): ``(pp−1)/vpp`` slots of ``micro_batch_s``, the
    slowest stage's time for one micro-batch (1F1B; interleaved 1F1B when ``vpp`` > 1;
    Narayanan et al. 2021, arXiv 2104.04473, §2.2)."""
    return (pp - 1) / vpp * micro_batch_s
