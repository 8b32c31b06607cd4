"""Collective cost model against hand-computed cases (NCCL tuning.cc constants, data/nccl.yaml)."""

from __future__ import annotations

import numpy as np
import pytest

from trainscale.system.collectives import (
    Network,
    allgather_time,
    allreduce_time,
    load_nccl_constants,
    p2p_time,
)

GB = 1e9


def _net(nvlink=370 * GB, nic=46 * GB, nvls=0.0, scale=1.0) -> Network:
    return Network(
        nvlink_bytes_per_s=np.float64(nvlink),
        nic_bytes_per_s=np.float64(nic),
        nvls_bytes_per_s=np.float64(nvls),
        latency_scale=scale,
        constants=load_nccl_constants(),
    )


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
    # 8 ranks in one node, 1 KiB: LL latency 6.6 + 7 x 0.6 = 10.8 us dominates.
    t = allgather_time(1024, 8, 8, _net())
    assert t == pytest.approx(10.8e-6 + (7 / 8) * 1024 / (0.25 * 370 * GB), rel=1e-12)


def test_single_rank_costs_nothing() -> None:
    assert allgather_time(2**30, 1, 1, _net()) == 0.0
    assert allreduce_time(2**30, 1, 1, _net()) == 0.0


def test_nvls_allreduce_inside_a_node() -> None:
    # NVLS: 23 us + S / algbw; bus bandwidth = algbw x 2(n-1)/n.
    size = 16 * 2**30
    t = allreduce_time(size, 8, 8, _net(nvls=275 * GB))
    assert t == pytest.approx(23e-6 + size / (275 * GB), rel=1e-12)
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
