"""Collective cost model against hand-computed cases (NCCL tuning.cc constants, data/nccl.yaml)."""

from __future__ import annotations

import numpy as np
import pytest

from trainscale.sim.system.collectives import (
    Network,
    allgather_time,
    allreduce_time,
    alltoall_time,
    load_nccl_constants,
    p2p_time,
)

GB = 1e9


def _net(nvlink=370 * GB, nic=46 * GB, nvls=0.0, scale=1.0, fill=0.0, congestion=0.0) -> Network:
    return Network(
        nvlink_bytes_per_s=np.float64(nvlink),
        nic_bytes_per_s=np.float64(nic),
        nvls_bytes_per_s=np.float64(nvls),
        latency_scale=scale,
        constants=load_nccl_constants(),
        fill_chunks=fill,
        congestion_per_doubling=congestion,
    )


def _h100(**kw) -> Network:
    """DGX H100-like links with the fill and congestion the collective fit finds (about)."""
    return _net(nvlink=356 * GB, nic=45.8 * GB, nvls=267 * GB, scale=1.4, fill=1.9,
                congestion=0.014, **kw)  # fmt: skip


def _busbw(size, n, g, net, **kw):
    return size / allreduce_time(size, n, g, net, **kw) * 2 * (n - 1) / n / GB


def test_ring_allgather_two_nodes_by_hand() -> None:
    # 16 ranks on 2 nodes of 8: bus bandwidth min(370, 8 x 46) = 368 GB/s. Simple protocol:
    # latency 8.4 + (15 - 1) x 3.4 + 1 x 14.0 = 70 us; bandwidth term 15/16 x 1 GiB / 368 GB/s.
    size = 2**30
    simple = 70.0e-6 + (15 / 16) * size / (368 * GB)
    ll128 = (14.0 + 14 * 1.9 + 4.0) * 1e-6 + (15 / 16) * size / (0.92 * 368 * GB)
    expected = min(simple, ll128)
    assert allgather_time(size, 16, 8, _net()) == pytest.approx(expected, rel=1e-12)
    assert expected == pytest.approx(simple)  # large messages choose Simple


def test_small_message_is_latency_bound_and_picks_ll() -> None:
    # 8 ranks in one node, 1 KiB: LL latency 6.6 + 7 x 0.6 = 10.8 us dominates; the message runs
    # on one of the 16 channels (enqueue.cc: one channel per 32 KiB).
    t = allgather_time(1024, 8, 8, _net())
    assert t == pytest.approx(10.8e-6 + (7 / 8) * 1024 / (0.25 * 370 * GB / 16), rel=1e-12)


def test_single_rank_costs_nothing() -> None:
    assert allgather_time(2**30, 1, 1, _net()) == 0.0
    assert allreduce_time(2**30, 1, 1, _net()) == 0.0


def test_nvls_allreduce_inside_a_node() -> None:
    # NVLS: 25 us (tuning.cc hwLat NVLINK NVLS) + S / algbw; bus bandwidth = algbw x 2(n-1)/n.
    size = 16 * 2**30
    t = allreduce_time(size, 8, 8, _net(nvls=275 * GB))
    assert t == pytest.approx(25e-6 + size / (275 * GB), rel=1e-12)
    assert size / t * 2 * 7 / 8 / GB == pytest.approx(481, rel=0.01)


def test_allreduce_grows_with_message_and_latency_scale() -> None:
    net = _net()
    sizes = np.array([1e3, 1e6, 1e9])
    times = allreduce_time(sizes, 64, 8, net)
    assert np.all(np.diff(times) > 0)
    assert np.all(allreduce_time(sizes, 64, 8, _net(scale=2.0)) > times)


def test_p2p_uses_the_link_it_crosses() -> None:
    size = 2**30
    intra = p2p_time(size, True, _net())
    inter = p2p_time(size, False, _net())
    assert intra == pytest.approx((8.4 + 3.4) * 1e-6 + size / (370 * GB))
    assert inter == pytest.approx((8.4 + 14.0) * 1e-6 + size / (46 * GB))


def test_mid_size_busbw_falls_with_nodes_and_recovers_at_large_sizes() -> None:
    net = _h100()
    nodes = np.array([4, 16, 64, 512])
    mid = _busbw(16 * 2**20, 8 * nodes, 8, net)
    large = _busbw(16 * 2**30, 8 * nodes, 8, net)
    assert np.all(np.diff(mid) < 0)
    assert mid[-1] < 0.5 * mid[0]  # 16 MiB loses more than half from 4 to 512 nodes
    assert large[-1] > 0.85 * large[0]  # the plateau barely moves
    assert np.all(large > 2.5 * mid)


def test_forced_algorithm_is_used() -> None:
    net = _h100()
    size, n = 64 * 2**20, 512
    free = allreduce_time(size, n, 8, net)
    forced = {a: allreduce_time(size, n, 8, net, algorithm=a) for a in ("ring", "tree", "nvlstree")}
    assert free == pytest.approx(min(forced.values()))
    assert forced["ring"] > forced["nvlstree"]  # 512 ranks: ring latency is linear in ranks
    # NVLSTree by hand: latency 1.4 x (25 + 2 x 6 x 20.9) us + bandwidth + fill.
    nic = 8 * 45.8 * GB * (1 - 0.014 * 6)
    chunk = 65536.0
    fill = 1.9 * chunk * 16 * (2 * 6 / nic + 2 / (267 * GB))
    bw = min(267 * GB * 2 * 7 / 8, nic)
    expected = 1.4e-6 * (25 + 12 * 20.9) + 2 * 511 / 512 * size / bw + fill
    assert forced["nvlstree"] == pytest.approx(expected, rel=1e-9)
    # Per row: each row gets its own algorithm.
    rows = allreduce_time(size, n, 8, net, algorithm=np.array(["ring", "nvlstree"], dtype=object))
    assert rows == pytest.approx([float(forced["ring"]), float(forced["nvlstree"])])


def test_ring_allgather_latency_grows_linearly_with_ranks() -> None:
    net = _h100()
    ranks = np.array([64, 128, 256, 512, 1024])
    t = allgather_time(1024, ranks, 8, net)  # tiny message: latency only
    steps = np.diff(t) / np.diff(ranks)
    assert steps == pytest.approx(np.full(4, steps[0]), rel=0.02)


def test_per_tensor_allgathers_at_1024_ranks_are_latency_bound() -> None:
    net = _h100()
    size = 4 * 2**20  # one 2M-parameter tensor in bf16, gathered
    t = allgather_time(size, 1024, 8, net)
    bandwidth_only = (1023 / 1024) * size / min(356 * GB, 8 * 45.8 * GB)
    assert t > 10 * bandwidth_only


@pytest.mark.parametrize("n", [8, 16, 64, 1024, 4096])
def test_time_is_monotone_in_size(n: int) -> None:
    net = _h100()
    sizes = 2.0 ** np.arange(10, 35, 0.25)
    for algorithm in ("", "ring", "tree", "nvlstree"):
        t = allreduce_time(sizes, n, 8, net, algorithm=algorithm)
        assert np.all(np.diff(t) >= 0), algorithm
    assert np.all(np.diff(allgather_time(sizes, n, 8, net)) >= 0)
    assert np.all(np.diff(alltoall_time(sizes, n, 8, net)) >= 0)


def test_alltoall_sends_the_off_node_share_through_the_nic() -> None:
    net = _net()
    size = 2**30
    t = alltoall_time(size, 16, 8, net)
    assert t == pytest.approx((8.4 + 14.0) * 1e-6 + size * 8 / 16 / (46 * GB), rel=1e-12)
