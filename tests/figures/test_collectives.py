"""Tests of the collective figures' numbers (collective_bandwidth, collective_scaling)."""

from __future__ import annotations

import numpy as np
import pytest

from trainscale.figures.collective_bandwidth import bandwidth_curves
from trainscale.figures.collective_scaling import collective_times, layer_bytes
from trainscale.model.shape import load_models


def test_bus_bandwidth_follows_the_nccl_tests_definition():
    curves = bandwidth_curves(node_counts=(4,), sizes_bytes=np.array([2.0**20, 2.0**30]))
    n = 32
    for collective, factor in (("allreduce", 2 * (n - 1) / n), ("allgather", (n - 1) / n)):
        rows = curves[curves["collective"] == collective]
        expected = rows["size_bytes"] / rows["time_s"] * factor / 1e9
        assert rows["busbw_gbps"].to_numpy() == pytest.approx(expected.to_numpy())
        assert rows["num_gpus"].unique().tolist() == [n]


def test_bus_bandwidth_grows_with_message_size_and_stays_under_nvlink():
    curves = bandwidth_curves(node_counts=(1, 64))
    for _, rows in curves.groupby(["collective", "nodes"]):
        busbw = rows.sort_values("size_bytes")["busbw_gbps"].to_numpy()
        assert np.all(np.diff(busbw) >= -1e-9)
        assert busbw.max() <= 900.0  # H100 NVLink: 450 GB/s per direction; NVLS at most 2x


def test_layer_bytes_are_the_block_matrices_in_bf16():
    m = load_models()["llama2-7b"]
    matrices = 4 * m.hidden**2 + 3 * m.hidden * m.ffn  # MHA: q, k, v, o; SwiGLU: 3 matrices
    assert layer_bytes("llama2-7b") == 2.0 * matrices


def test_allgather_splits_into_bandwidth_and_latency_terms():
    times = collective_times(("llama2-7b",), gpu_counts=(8, 512, 4096))
    wide = times.pivot_table(index="num_gpus", columns="series", values="time_s")
    total = wide["allgather_bandwidth_term"] + wide["allgather_latency_term"]
    assert total.to_numpy() == pytest.approx(wide["allgather"].to_numpy())
    assert (wide["allgather_latency_term"] >= 0).all()
    # the ring's latency grows with its length while its bandwidth term saturates
    assert wide["allgather_latency_term"].is_monotonic_increasing
    assert wide.loc[4096, "allgather_latency_term"] > wide.loc[4096, "allgather_bandwidth_term"]
