"""An NCCL-like cost model of collectives, vectorised over configurations.

For each collective NCCL picks the fastest (algorithm, protocol) pair by its own cost model,
``time = latency + bytes / bandwidth``; this module does the same with NCCL's latency table
(``data/nccl.yaml``) and the calibrated link efficiencies:

- **ring** (AllGather, ReduceScatter, AllReduce): latency = base + (steps − inter-node steps) ×
  NVLink hop + inter-node steps × network hop; AllGather and ReduceScatter take n−1 steps with
  nNodes−1 crossing the network, AllReduce 2(n−1) steps with 2·nNodes crossings. Bus bandwidth is
  the slower of NVLink and the NICs used by the group's ranks on one node (NCCL runs one ring
  channel per NIC): ``busbw = min(η_nvl·B_nvl, g·η_nic·B_nic)``.
- **tree** (AllReduce across nodes): latency = base + 2·((g−1)·NVLink hop + log2(nNodes)·network
  hop); bandwidth: an intra-node reduce-scatter/all-gather pipelined with a double binary tree over
  the nodes, ``t = S·max(2(g−1)/(g·B_intra), 2(N−1)/(N·g·B_nic))`` / 0.92.
- **NVLS** (AllReduce inside one NVSwitch node with NVLink SHARP) and **NVLSTree** (NVLS inside the
  node, tree across nodes).
- **point-to-point** (pipeline and context-parallel send/recv): one hop, one link.

Sizes follow nccl-tests: ``size_bytes`` is the whole buffer (the gathered output for AllGather,
the input for ReduceScatter). Groups are described by ``n`` ranks of which ``g`` share a node.
Every function returns seconds and accepts scalars or arrays that broadcast together.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from pathlib import Path

import numpy as np
from numpy.typing import ArrayLike

from trainscale.paths import data_dir
from trainscale.yamlio import load_yaml, require_keys

__all__ = [
    "NcclConstants",
    "Network",
    "allgather_time",
    "allreduce_time",
    "load_nccl_constants",
    "p2p_time",
    "reducescatter_time",
]

_PROTOCOLS = ("LL", "LL128", "Simple")


@dataclass(frozen=True, slots=True, kw_only=True)
class NcclConstants:
    """NCCL's tuning constants (microseconds and bandwidth fractions)."""

    bandwidth_factor: dict[str, float]
    base_latency_us: dict[str, dict[str, float]]
    hop_latency_us: dict[str, dict]
    tree_bandwidth_factor: float


@cache
def _load(path: Path) -> NcclConstants:
    data = load_yaml(path)
    require_keys(
        path, "top level", data,
        ("bandwidth_factor", "base_latency_us", "hop_latency_us", "tree_bandwidth_factor"),
    )  # fmt: skip
    return NcclConstants(
        bandwidth_factor={k: float(v) for k, v in data["bandwidth_factor"].items()},
        base_latency_us=data["base_latency_us"],
        hop_latency_us=data["hop_latency_us"],
        tree_bandwidth_factor=float(data["tree_bandwidth_factor"]),
    )


def load_nccl_constants(path: str | Path | None = None) -> NcclConstants:
    """Load (and cache) ``data/nccl.yaml``."""
    return _load(Path(path) if path is not None else data_dir() / "nccl.yaml")


@dataclass(frozen=True, slots=True, kw_only=True)
class Network:
    """Achieved link speeds of each configuration (arrays of shape ``(n,)`` or scalars).

    Bandwidths in bytes/s per GPU per direction, already multiplied by their efficiencies.
    """

    nvlink_bytes_per_s: np.ndarray
    """NCCL ring bus bandwidth inside a node."""
    nic_bytes_per_s: np.ndarray
    """Achieved bandwidth of one GPU's share of the scale-out NICs."""
    nvls_bytes_per_s: np.ndarray
    """NVLS AllReduce algorithm bandwidth inside a node; 0 where the GPU has no NVLS."""
    latency_scale: float
    constants: NcclConstants
    congestion_per_doubling: float = 0.0
    """Fractional loss of NIC bandwidth per doubling of the nodes a collective spans (routing
    collisions and congestion in multi-tier fabrics): η(N) = η·(1 − c·log2 N), at least half."""

    def nic_at(self, nodes: np.ndarray) -> np.ndarray:
        """Achieved per-GPU NIC bandwidth for a collective spanning ``nodes`` nodes."""
        loss = self.congestion_per_doubling * np.log2(np.maximum(nodes, 1.0))
        return self.nic_bytes_per_s * np.maximum(1.0 - loss, 0.5)


def _split(n: ArrayLike, g: ArrayLike) -> np.ndarray:
    """Return (ranks per node, nodes) of a group of ``n`` ranks with ``g`` per node."""
    g = np.minimum(np.asarray(g, dtype=np.float64), n)
    g = np.maximum(g, 1.0)
    nodes = np.ceil(np.asarray(n, dtype=np.float64) / g)
    return g, nodes


def _ring_busbw(net: Network, g: ArrayLike, nodes: ArrayLike) -> np.ndarray:
    intra = np.where(g > 1, net.nvlink_bytes_per_s, np.inf)
    inter = np.where(nodes > 1, g * net.nic_at(nodes), np.inf)
    return np.minimum(intra, inter)


def _ring_time(
    net: Network,
    size: ArrayLike,
    n: ArrayLike,
    g: ArrayLike,
    nodes: ArrayLike,
    steps: ArrayLike,
    inter_steps: ArrayLike,
    bytes_factor: ArrayLike,
) -> np.ndarray:
    c = net.constants
    busbw = _ring_busbw(net, g, nodes)
    best = np.full(np.broadcast(size, n, g).shape, np.inf)
    for protocol in _PROTOCOLS:
        latency_us = (
            c.base_latency_us["ring"][protocol]
            + (steps - inter_steps) * c.hop_latency_us["nvlink"]["ring"][protocol]
            + inter_steps * c.hop_latency_us["net"]["ring"][protocol]
        )
        bandwidth = c.bandwidth_factor[protocol] * busbw
        best = np.minimum(
            best, latency_us * 1e-6 * net.latency_scale + bytes_factor * size / bandwidth
        )
    return best


def allgather_time(size_bytes: ArrayLike, n: ArrayLike, g: ArrayLike, net: Network) -> np.ndarray:
    """Ring AllGather of a ``size_bytes`` output over ``n`` ranks, ``g`` per node; seconds."""
    n = np.asarray(n, dtype=np.float64)
    g, nodes = _split(n, g)
    inter = np.where(nodes > 1, nodes - 1, 0.0)
    t = _ring_time(net, size_bytes, n, g, nodes, n - 1, inter, (n - 1) / n)
    return np.where(n > 1, t, 0.0)


def reducescatter_time(
    size_bytes: ArrayLike, n: ArrayLike, g: ArrayLike, net: Network
) -> np.ndarray:
    """Ring ReduceScatter of a ``size_bytes`` input over ``n`` ranks; seconds."""
    return allgather_time(size_bytes, n, g, net)


def allreduce_time(size_bytes: ArrayLike, n: ArrayLike, g: ArrayLike, net: Network) -> np.ndarray:
    """AllReduce of ``size_bytes``: the fastest of ring, tree, NVLS and NVLSTree; seconds."""
    c = net.constants
    n = np.asarray(n, dtype=np.float64)
    size = np.asarray(size_bytes, dtype=np.float64)
    g, nodes = _split(n, g)
    inter = np.where(nodes > 1, 2 * nodes, 0.0)
    best = _ring_time(net, size, n, g, nodes, 2 * (n - 1), inter, 2 * (n - 1) / n)

    scale = 1e-6 * net.latency_scale
    intra_bw = np.where(g > 1, net.nvlink_bytes_per_s, np.inf)
    nic_term = 2 * (nodes - 1) / np.maximum(nodes, 1) / (g * net.nic_at(nodes))
    multi = nodes > 1
    log_nodes = np.log2(np.maximum(nodes, 1))
    for protocol in _PROTOCOLS:
        latency_us = c.base_latency_us["tree"][protocol] + 2 * (
            (g - 1) * c.hop_latency_us["nvlink"]["tree"][protocol]
            + log_nodes * c.hop_latency_us["net"]["tree"][protocol]
        )
        per_byte = np.maximum(2 * (g - 1) / g / intra_bw, nic_term) / (
            c.tree_bandwidth_factor * c.bandwidth_factor[protocol]
        )
        tree = latency_us * scale + size * per_byte
        best = np.where(multi, np.minimum(best, tree), best)

    has_nvls = (np.asarray(net.nvls_bytes_per_s) > 0) & (g > 1)
    nvls_bw = np.where(has_nvls, net.nvls_bytes_per_s, 1.0)
    nvls_single = c.hop_latency_us["nvlink"]["nvls"] * scale + size / nvls_bw
    nvls_tree = (
        c.hop_latency_us["nvlink"]["nvls"] + 2 * log_nodes * c.hop_latency_us["net"]["nvlstree"]
    ) * scale + size * np.maximum(1 / nvls_bw, nic_term)
    nvls = np.where(multi, nvls_tree, nvls_single)
    best = np.where(has_nvls, np.minimum(best, nvls), best)
    return np.where(n > 1, best, 0.0)


def p2p_time(size_bytes: ArrayLike, same_node: ArrayLike, net: Network) -> np.ndarray:
    """One send/recv of ``size_bytes`` between two ranks over NVLink or one NIC; seconds."""
    c = net.constants
    link = np.where(same_node, "nvlink", "net")
    hop = np.where(
        link == "nvlink",
        c.hop_latency_us["nvlink"]["ring"]["Simple"],
        c.hop_latency_us["net"]["ring"]["Simple"],
    )
    latency = (c.base_latency_us["ring"]["Simple"] + hop) * 1e-6 * net.latency_scale
    bandwidth = np.where(same_node, net.nvlink_bytes_per_s, net.nic_bytes_per_s)
    return latency + np.asarray(size_bytes, dtype=np.float64) / bandwidth
