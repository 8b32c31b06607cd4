"""Expert-parallel token dispatch and combine: the time of one, vectorised over configurations.

Per mixture-of-experts block a GPU sends each of its ``T_r`` routed tokens (``hidden`` bf16
values, 2 bytes each) to the ``k`` experts the router picked (dispatch) and gets the ``k``
results back (combine), in forward and again, as gradients, in backward: four exchanges per
block. Megatron-Core's token dispatchers (``--moe-token-dispatcher-type``,
``megatron/core/transformer/moe/token_dispatcher.py``) and DeepEP
(https://github.com/deepseek-ai/DeepEP) move them three ways (``moe_dispatcher``):

- ``alltoall``: one all-to-all over the ``ep`` ranks of the expert-parallel group, each rank
  sending ``T_r·k·h·2`` bytes (:func:`~trainscale.sim.system.collectives.alltoall_time`: what
  goes to ranks of the same node over NVLink, the rest through the rank's NIC share, at once),
  then, with expert tensor parallelism ``etp`` > 1, an AllGather of the received tokens over the
  ``etp`` ranks that share each expert (combine: the matching ReduceScatter);
- ``allgather``: every rank gathers the ``T_r`` tokens of all ``ep·etp`` ranks of the expert
  group (a ring AllGather of ``T_r·h·2·ep·etp`` bytes) and keeps those of its experts; combine is
  the ReduceScatter of the same size. Its bytes do not grow with ``k``;
- ``deepep``: DeepEP's normal kernels send a token once to each remote node that holds one of its
  experts (RDMA through the NIC) and forward it over NVLink to the experts' GPUs there: NIC bytes
  ``T_r·h·2·(N−1)·(1 − (1 − 1/N)^k)`` for an expert group spanning ``N`` nodes (the expected
  remote nodes among ``k`` experts picked uniformly), NVLink bytes ``T_r·k·h·2·(g−1)/g``,
  concurrently.

Where the group fits in one node everything crosses NVLink. The expert-parallel group's ranks
sit ``etp`` apart (Megatron-Core orders the expert grid ``etp``, ``ep``, ``edp``, ``pp``,
innermost first, arXiv 2504.14960 Sec 3), so a node holds ``min(ep, gpus_per_node / etp)`` of
them. ``load`` (≥ 1) multiplies the bytes the busiest rank receives (routing imbalance, capacity
padding: :mod:`trainscale.sim.plan.routing`). Bandwidths are the calibrated network's times
``efficiency`` (the calibration's ``alltoall_efficiency``); latency one NCCL ring base plus a hop.
Every function returns seconds and takes arrays of shape ``(n,)`` that broadcast.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
from numpy.typing import ArrayLike

from trainscale.schema import MOE_DISPATCHERS
from trainscale.sim.system.collectives import Network, allgather_time, alltoall_time

__all__ = ["dispatch_time", "ep_ranks_per_node", "remote_nodes"]


def ep_ranks_per_node(ep: ArrayLike, etp: ArrayLike, gpus_per_node: ArrayLike) -> np.ndarray:
    """Ranks of one expert-parallel group on a node: ``min(ep, max(gpus_per_node // etp, 1))``."""
    ep = np.asarray(ep, dtype=np.float64)
    per_node = np.maximum(np.asarray(gpus_per_node) // np.asarray(etp), 1)
    return np.minimum(ep, per_node.astype(np.float64))


def remote_nodes(nodes: ArrayLike, k: ArrayLike) -> np.ndarray:
    """Expected distinct remote nodes among ``k`` experts picked uniformly over ``nodes`` nodes
    (one of them the sender's): ``(N − 1)·(1 − (1 − 1/N)^k)``."""
    nodes = np.maximum(np.asarray(nodes, dtype=np.float64), 1.0)
    return (nodes - 1.0) * (1.0 - (1.0 - 1.0 / nodes) ** np.asarray(k, dtype=np.float64))


def _deepep_time(
    token_bytes: np.ndarray, k: np.ndarray, g: np.ndarray, nodes: np.ndarray, net: Network
) -> np.ndarray:
    """DeepEP's dispatch (or combine) of ``token_bytes`` per routed token set (module
    docstring)."""
    c = net.constants
    nic = token_bytes * remote_nodes(nodes, k) / net.nic_at(nodes)
    nvl = token_bytes * k * (g - 1.0) / np.maximum(g, 1.0) / net.nvlink_bytes_per_s
    hop = np.where(nodes > 1, c.hop_latency_us["net"]["ring"]["Simple"],
                   c.hop_latency_us["nvlink"]["ring"]["Simple"])  # fmt: skip
    latency = (c.base_latency_us["ring"]["Simple"] + hop) * 1e-6 * net.latency_scale
    return latency + np.maximum(nic, nvl)


def dispatch_time(
    dispatcher: ArrayLike,
    *,
    routed_tokens: ArrayLike,
    hidden: ArrayLike,
    k: ArrayLike,
    load: ArrayLike,
    ep: ArrayLike,
    etp: ArrayLike,
    gpus_per_node: ArrayLike,
    net: Network,
    efficiency: float,
) -> np.ndarray:
    """Seconds of one dispatch (or one combine) of one MoE block on one GPU: ``routed_tokens``
    tokens of ``hidden`` bf16 values to ``k`` experts each, by ``dispatcher`` (codes of
    :data:`~trainscale.schema.MOE_DISPATCHERS`), over ``ep`` ranks ``etp`` apart; ``load`` the
    busiest rank's bytes over the mean (module docstring)."""
    dispatcher = np.asarray(dispatcher)
    fast = replace(
        net,
        nvlink_bytes_per_s=efficiency * np.asarray(net.nvlink_bytes_per_s),
        nic_bytes_per_s=efficiency * np.asarray(net.nic_bytes_per_s),
    )
    shape = np.broadcast(dispatcher, routed_tokens, hidden, k, load, ep, etp, gpus_per_node).shape
    ep, etp, gpn, k, load = (
        np.broadcast_to(np.asarray(a, dtype=np.float64), shape)
        for a in (ep, etp, gpus_per_node, k, load)
    )
    token_bytes = np.broadcast_to(
        2.0 * np.asarray(routed_tokens, dtype=np.float64) * np.asarray(hidden), shape
    )
    out = np.zeros(shape)
    for code, how in enumerate(_BY_DISPATCHER):
        rows = np.flatnonzero(np.broadcast_to(dispatcher, shape) == code)
        if rows.size:
            out[rows] = how(token_bytes[rows], k[rows], load[rows], ep[rows], etp[rows],
                            gpn[rows], fast.take(rows))  # fmt: skip
    return out


def _etp_gather(copies: np.ndarray, etp: np.ndarray, gpn: np.ndarray, net: Network) -> np.ndarray:
    """The AllGather of the received tokens over the ``etp`` ranks sharing each expert."""
    return allgather_time(copies * etp, etp, np.minimum(etp, gpn), net)


def _by_alltoall(token_bytes, k, load, ep, etp, gpn, net: Network) -> np.ndarray:
    """One all-to-all over the ``ep`` ranks, then the expert tensor-parallel gather."""
    copies = token_bytes * k * load
    return alltoall_time(copies, ep, ep_ranks_per_node(ep, etp, gpn), net) + _etp_gather(
        copies, etp, gpn, net
    )


def _by_allgather(token_bytes, k, load, ep, etp, gpn, net: Network) -> np.ndarray:
    """Every rank gathers the tokens of the ``ep·etp`` ranks of the expert group."""
    group = ep * etp
    return allgather_time(token_bytes * group, group, np.minimum(group, gpn), net)


def _by_deepep(token_bytes, k, load, ep, etp, gpn, net: Network) -> np.ndarray:
    """DeepEP's normal kernels, then the expert tensor-parallel gather."""
    g = ep_ranks_per_node(ep, etp, gpn)
    deepep = np.where(ep > 1, _deepep_time(token_bytes * load, k, g, np.ceil(ep / g), net), 0.0)
    return deepep + _etp_gather(token_bytes * k * load, etp, gpn, net)


#: Each dispatcher's time, in the order of :data:`~trainscale.schema.MOE_DISPATCHERS`.
_DISPATCHERS = {"alltoall": _by_alltoall, "allgather": _by_allgather, "deepep": _by_deepep}
_BY_DISPATCHER = tuple(_DISPATCHERS[name] for name in MOE_DISPATCHERS)
