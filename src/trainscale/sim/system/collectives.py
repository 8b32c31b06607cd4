"""An NCCL-like cost model of collectives, vectorised over configurations.

Each collective is timed for every algorithm and protocol NCCL has for it, and the fastest is
taken (NCCL's tuner makes the same choice from its own estimates, src/graph/tuning.cc
``ncclTopoGetAlgoTime``), unless ``algorithm=`` forces one (``NCCL_ALGO``). A time is

    t = λ·latency(algorithm, protocol, nodes, ranks)  +  bytes / bandwidth  +  pipeline fill

- **latency**: NCCL's table (``data/nccl.yaml``, tuning.cc ``ncclTopoTuneModel``): ring =
  base + (steps − inter-node steps)·max(NVLink hop, net post overhead) + inter-node steps·net
  hop, AllReduce 2(n−1) steps of which 2(N−1) cross the network, AllGather/ReduceScatter n−1 and
  N−1; tree = base + 2·((g−1)·NVLink hop + log2 N·net hop); NVLS = NVLS hop; NVLSTree =
  NVLS hop + 2·log2 N·net hop. λ = ``latency_scale`` (calibrated).
- **bandwidth**: ring bus bandwidth is the slower of NVLink and the node's NICs (one ring channel
  pair per NIC): ``min(B_nvl, g·B_nic(N))``; tree the same × 0.92; NVLS inside a node
  ``B_nvls``; NVLSTree ``min(B_nvls, g·B_nic(N))``. ``B_nic(N)`` loses ``congestion_per_doubling``
  per doubling of the nodes (routing collisions in multi-tier fabrics). Ring and tree run on
  fewer channels for small messages (enqueue.cc ``topoGetAlgoInfo``: one channel per 32 KiB with
  Simple), so their bandwidth scales with the channels used.
- **pipeline fill** (the tree family, every protocol): data moves in chunks (tree 512 KiB,
  NVLSTree 64 KiB, enqueue.cc ``calcCollChunking``); the last hop of a pipeline of D hops starts
  only after ``fill_chunks`` chunks crossed each earlier hop, which costs
  ``D · fill_chunks · chunk / β_channel`` with β_channel = the hop's bandwidth / channels. Tree
  depth is 2·log2 N network hops (up and down the double binary tree) plus 2(g−1) NVLink hops
  (the intra-node chain); NVLSTree 2·log2 N network hops plus the two NVLS hops. This term is why
  16–256 MiB AllReduce loses bandwidth as the nodes grow from 4 to 512 while the plateau barely
  moves; rings instead pay latency linear in the ranks.
- **AllToAll**: every rank sends (n−1)/n of its buffer, (n−g)/n through its NIC and (g−1)/n over
  NVLink, concurrently; latency one ring base + net hop.
- **point-to-point** (pipeline and context-parallel send/recv): one hop, one link.

NCCL also has NVLS AllGather/ReduceScatter on Hopper, but only inside one node with registered
buffers or across nodes with CollNet (tuning.cc; enqueue.cc ``NCCL_CTA_POLICY_EFFICIENCY``), which
nccl-tests and the training stacks modelled here do not use: AllGather and ReduceScatter are rings.

Sizes follow nccl-tests: ``size_bytes`` is the whole buffer (the gathered output for AllGather,
the input for ReduceScatter). Groups are described by ``n`` ranks of which ``g`` share a node.
Every function returns seconds and accepts scalars or arrays that broadcast together.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from functools import cache
from pathlib import Path

import numpy as np
from numpy.typing import ArrayLike

from trainscale.io.schema import check_document
from trainscale.io.yaml import load_yaml, require_keys
from trainscale.paths import data_dir, schema_file

__all__ = [
    "ALGORITHMS",
    "NcclConstants",
    "Network",
    "allgather_time",
    "allreduce_time",
    "alltoall_time",
    "load_nccl_constants",
    "p2p_time",
    "reducescatter_time",
]

_PROTOCOLS = ("LL", "LL128", "Simple")
#: AllReduce algorithms (NCCL_ALGO names, lower case); "" lets the model choose.
ALGORITHMS = ("ring", "tree", "nvls", "nvlstree")


@dataclass(frozen=True, slots=True, kw_only=True)
class NcclConstants:
    """NCCL's tuning constants (microseconds, bandwidth fractions, bytes)."""

    bandwidth_factor: dict[str, float]
    base_latency_us: dict[str, dict[str, float]]
    hop_latency_us: dict[str, dict]
    tree_bandwidth_factor: float
    net_overhead_us: dict[str, float]
    channels: float
    channel_threshold_bytes: float
    chunk_bytes: dict


@cache
def _load(path: Path) -> NcclConstants:
    data = load_yaml(path)
    check_document(data, path, schema_file("nccl"))
    require_keys(
        path, "top level", data,
        ("bandwidth_factor", "base_latency_us", "hop_latency_us", "tree_bandwidth_factor",
         "net_overhead_us", "channels", "channel_threshold_bytes", "chunk_bytes"),
    )  # fmt: skip
    return NcclConstants(
        bandwidth_factor={k: float(v) for k, v in data["bandwidth_factor"].items()},
        base_latency_us=data["base_latency_us"],
        hop_latency_us=data["hop_latency_us"],
        tree_bandwidth_factor=float(data["tree_bandwidth_factor"]),
        net_overhead_us={k: float(v) for k, v in data["net_overhead_us"].items()},
        channels=float(data["channels"]),
        channel_threshold_bytes=float(data["channel_threshold_bytes"]),
        chunk_bytes=data["chunk_bytes"],
    )


def load_nccl_constants(path: str | Path | None = None) -> NcclConstants:
    """Load (and cache) NCCL's constants ``path`` (default: the shipped ``data/nccl.yaml``),
    checked against ``workflow/schemas/nccl.schema.yaml``."""
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
    fill_chunks: float = 0.0
    """Chunks each hop of a tree or NVLSTree pipeline holds before the next hop runs at full
    rate (pipeline fill; 0 turns the fill off)."""

    def take(self, index: np.ndarray) -> Network:
        """The network of the configurations selected by ``index`` (per-row arrays sliced)."""

        def part(value: object) -> object:
            array = np.asarray(value)
            return array[index] if array.ndim else value

        return replace(
            self,
            nvlink_bytes_per_s=part(self.nvlink_bytes_per_s),
            nic_bytes_per_s=part(self.nic_bytes_per_s),
            nvls_bytes_per_s=part(self.nvls_bytes_per_s),
        )

    def nic_at(self, nodes: np.ndarray) -> np.ndarray:
        """Achieved per-GPU NIC bandwidth for a collective spanning ``nodes`` nodes."""
        loss = self.congestion_per_doubling * np.log2(np.maximum(nodes, 1.0))
        return self.nic_bytes_per_s * np.maximum(1.0 - loss, 0.5)


def _split(n: ArrayLike, g: ArrayLike) -> tuple[np.ndarray, np.ndarray]:
    """Return (ranks per node, nodes) of a group of ``n`` ranks with ``g`` per node."""
    g = np.minimum(np.asarray(g, dtype=np.float64), n)
    g = np.maximum(g, 1.0)
    nodes = np.ceil(np.asarray(n, dtype=np.float64) / g)
    return g, nodes


def _channel_fraction(net: Network, size: np.ndarray) -> np.ndarray:
    """Fraction of the channels ring and tree use for a message (enqueue.cc topoGetAlgoInfo)."""
    c = net.constants
    # Continuous in size (NCCL steps one channel at a time), so that time never falls with size.
    used = np.clip(size / c.channel_threshold_bytes, 1.0, c.channels)
    return used / c.channels


def _ring_busbw(net: Network, g: np.ndarray, nodes: np.ndarray) -> np.ndarray:
    intra = np.where(g > 1, net.nvlink_bytes_per_s, np.inf)
    inter = np.where(nodes > 1, g * net.nic_at(nodes), np.inf)
    return np.minimum(intra, inter)


def _ring_time(
    net: Network,
    size: np.ndarray,
    g: np.ndarray,
    nodes: np.ndarray,
    steps: np.ndarray,
    inter_steps: np.ndarray,
    bytes_factor: np.ndarray,
) -> np.ndarray:
    c = net.constants
    busbw = _ring_busbw(net, g, nodes) * _channel_fraction(net, size)
    multi = nodes > 1
    best = np.full(np.broadcast(size, g, nodes, steps).shape, np.inf)
    for protocol in _PROTOCOLS:
        intra_hop = c.hop_latency_us["nvlink"]["ring"][protocol]
        intra_hop = np.where(multi, max(intra_hop, c.net_overhead_us[protocol]), intra_hop)
        latency_us = (
            c.base_latency_us["ring"][protocol]
            + (steps - inter_steps) * intra_hop
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
    size = np.asarray(size_bytes, dtype=np.float64)
    g, nodes = _split(n, g)
    inter = np.where(nodes > 1, nodes - 1, 0.0)
    t = _ring_time(net, size, g, nodes, n - 1, inter, (n - 1) / n)
    return np.where(n > 1, t, 0.0)


def reducescatter_time(
    size_bytes: ArrayLike, n: ArrayLike, g: ArrayLike, net: Network
) -> np.ndarray:
    """Ring ReduceScatter of a ``size_bytes`` input over ``n`` ranks; seconds."""
    return allgather_time(size_bytes, n, g, net)


def _nvlstree_chunk(net: Network, size: np.ndarray, g: np.ndarray, nodes: np.ndarray) -> np.ndarray:
    """NVLSTree chunk (enqueue.cc calcCollChunking; nvls.cc ncclNvlsTuning on Hopper)."""
    c = net.constants
    chunk = np.where(nodes >= 4, c.chunk_bytes["nvlstree"], 2 * c.chunk_bytes["nvlstree"])
    concurrent = c.channels * g  # channels x NVLS heads (one head per GPU/NIC pair)
    chunk = np.where((size < 4 * concurrent * chunk) & (chunk > 65536), 65536.0, chunk)
    return np.where((size < concurrent * chunk) & (chunk > 32768), 32768.0, chunk)


def allreduce_time(
    size_bytes: ArrayLike,
    n: ArrayLike,
    g: ArrayLike,
    net: Network,
    *,
    algorithm: str | np.ndarray = "",
) -> np.ndarray:
    """AllReduce of ``size_bytes``: the fastest of ring, tree, NVLS and NVLSTree; seconds.

    ``algorithm`` forces one of :data:`ALGORITHMS` (scalar or per row; "" = choose), as
    ``NCCL_ALGO`` does; where the forced algorithm cannot run (NVLS without NVLink SHARP, NVLSTree
    or tree on one node) the model falls back to its own choice.
    """
    c = net.constants
    n = np.asarray(n, dtype=np.float64)
    size = np.asarray(size_bytes, dtype=np.float64)
    g, nodes = _split(n, g)
    forced = np.asarray(algorithm, dtype=object)
    shape = np.broadcast(size, n, g, forced).shape
    forced = np.broadcast_to(forced, shape)
    scale = 1e-6 * net.latency_scale
    multi = nodes > 1
    log_nodes = np.log2(np.maximum(nodes, 1))
    nic = g * net.nic_at(nodes)
    # Between two nodes a tree exchanges each half once per direction, so the NICs carry half the
    # ring's bytes (tuning.cc: tree uses bwIntra, NVLSTree doubles bwInter, for nNodes <= 2).
    tree_nic = np.where(nodes <= 2, 2 * nic, nic)
    nvl = np.where(g > 1, net.nvlink_bytes_per_s, np.inf)
    channels = c.channels
    fill = net.fill_chunks

    times: dict[str, np.ndarray] = {}
    inter = np.where(multi, 2 * (nodes - 1), 0.0)
    times["ring"] = _ring_time(net, size, g, nodes, 2 * (n - 1), inter, 2 * (n - 1) / n)

    # Tree: intra-node chain + double binary tree across nodes (tuning.cc, enqueue.cc).
    tree_bw = c.tree_bandwidth_factor * np.minimum(nvl, tree_nic) * _channel_fraction(net, size)
    tree = np.full(shape, np.inf)
    for protocol in _PROTOCOLS:
        chunk = np.minimum(c.chunk_bytes["tree"][protocol], size / channels)
        tree_fill = fill * chunk * channels * (2 * log_nodes / nic + 2 * (g - 1) / nvl)
        tree_fill = tree_fill / c.bandwidth_factor[protocol]
        latency_us = c.base_latency_us["tree"][protocol] + 2 * (
            (g - 1) * c.hop_latency_us["nvlink"]["tree"][protocol]
            + log_nodes * c.hop_latency_us["net"]["tree"][protocol]
        )
        per_byte = 2 * (n - 1) / n / (c.bandwidth_factor[protocol] * tree_bw)
        t = latency_us * scale + size * per_byte + tree_fill
        tree = np.minimum(tree, t)
    times["tree"] = np.where(multi, tree, np.inf)

    has_nvls = (np.asarray(net.nvls_bytes_per_s) > 0) & (g > 1)
    nvls_bw = np.where(has_nvls, net.nvls_bytes_per_s, 1.0)
    times["nvls"] = np.where(
        has_nvls & ~multi, c.hop_latency_us["nvlink"]["nvls"] * scale + size / nvls_bw, np.inf
    )
    # NVLSTree: NVLS inside each node, a tree of the nodes' NICs between them.
    chunk = np.minimum(_nvlstree_chunk(net, size, g, nodes), size / (channels * g))
    nvlstree_fill = fill * chunk * channels * (2 * log_nodes / nic + 2 / nvls_bw)
    # as bus bandwidth; 0 (and unused) where a node holds one rank
    nvlstree_bw = np.maximum(np.minimum(nvls_bw * 2 * (g - 1) / g, tree_nic), 1e-30)
    nvlstree = (
        (c.hop_latency_us["nvlink"]["nvls"] + 2 * log_nodes * c.hop_latency_us["net"]["nvlstree"])
        * scale
        + 2 * (n - 1) / n * size / nvlstree_bw
        + nvlstree_fill
    )
    times["nvlstree"] = np.where(has_nvls & multi, nvlstree, np.inf)

    best = np.minimum.reduce([np.broadcast_to(times[a], shape) for a in ALGORITHMS])
    for name in ALGORITHMS:
        chosen = (forced == name) & np.isfinite(times[name])
        best = np.where(chosen, times[name], best)
    return np.where(n > 1, best, 0.0)


def alltoall_time(size_bytes: ArrayLike, n: ArrayLike, g: ArrayLike, net: Network) -> np.ndarray:
    """AllToAll of a ``size_bytes`` buffer per rank over ``n`` ranks, ``g`` per node; seconds.

    NCCL runs it as n−1 concurrent send/recv pairs: (n−g)/n of the buffer leaves through the
    rank's NIC share, (g−1)/n over NVLink.
    """
    c = net.constants
    n = np.asarray(n, dtype=np.float64)
    size = np.asarray(size_bytes, dtype=np.float64)
    g, nodes = _split(n, g)
    net_part = size * (n - g) / n / net.nic_at(nodes)
    nvl_part = size * (g - 1) / n / net.nvlink_bytes_per_s
    hop = np.where(
        nodes > 1,
        c.hop_latency_us["net"]["ring"]["Simple"],
        c.hop_latency_us["nvlink"]["ring"]["Simple"],
    )
    latency = (c.base_latency_us["ring"]["Simple"] + hop) * 1e-6 * net.latency_scale
    return np.where(n > 1, latency + np.maximum(net_part, nvl_part), 0.0)


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
