"""Tests of the collective figures' numbers (collective_bandwidth, collective_scaling)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from trainscale.figures._common import network_for
from trainscale.figures.collective_bandwidth import COLLECTIVES, bandwidth_curves
from trainscale.figures.collective_scaling import collective_times, layer_bytes
from trainscale.published.accuracy import CollectiveRows
from trainscale.published.measurements import load_published
from trainscale.sim.calibration import load_calibration
from trainscale.sim.catalogue import load_catalogue
from trainscale.sim.configs import build_configs
from trainscale.sim.model.shape import load_models
from trainscale.sim.simulate import _network
from trainscale.sim.system.collectives import allgather_time


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


def _predict_network(num_gpus: int):
    """The network ``trainscale predict`` builds for a Llama-2 7B FSDP configuration on H100."""
    row = {
        "model": "llama2-7b", "seq_len": 4096, "global_batch": 2048, "micro_batch": 1,
        "gpu": "h100-sxm-80gb", "num_gpus": num_gpus, "tp": 1, "pp": 1, "sharding": "fsdp",
        "recompute": "none", "precision": "bf16",
    }  # fmt: skip
    catalogue = load_catalogue()
    configs, _, _ = build_configs(
        pd.DataFrame([row]), hardware=catalogue.hardware, models=catalogue.models,
        frameworks=catalogue.frameworks,
    )  # fmt: skip
    return _network(configs, load_calibration(), catalogue.nccl).take(np.array([0]))


def test_collective_figures_use_predicts_network_at_256_nodes():
    """The figures' bus bandwidth is the one ``predict`` would give the same setup, fabric
    congestion included (user trial item 28)."""
    cal = load_calibration()
    assert cal.congestion_per_doubling > 0  # otherwise this test could not tell the two apart
    nodes, per_node = 256, 8
    n = float(nodes * per_node)
    net = _predict_network(int(n))
    sizes = np.array([2.0**20, 2.0**26, 2.0**30])
    curves = bandwidth_curves(node_counts=(nodes,), sizes_bytes=sizes, calibration=cal)
    for key, (_, time_fn, factor) in COLLECTIVES.items():
        rows = curves[curves["collective"] == key]
        expected = sizes / np.asarray(time_fn(sizes, n, per_node, net)).ravel() * factor(n) / 1e9
        assert rows["busbw_gbps"].to_numpy() == pytest.approx(expected, rel=1e-12), key
    figure_net, figure_per_node = network_for("h100-sxm-80gb", cal)
    assert figure_per_node == per_node
    assert figure_net.congestion_per_doubling == net.congestion_per_doubling
    assert figure_net.fill_chunks == net.fill_chunks
    assert float(figure_net.nic_at(np.float64(nodes))) == pytest.approx(
        float(net.nic_at(np.float64(nodes))[0]), rel=1e-12
    )
    times = collective_times(("llama2-7b",), gpu_counts=(int(n),), calibration=cal)
    gather = times[times["series"] == "allgather"]["time_s"].iloc[0]
    assert gather == pytest.approx(
        float(allgather_time(layer_bytes("llama2-7b"), n, per_node, net)[0]), rel=1e-12
    )


def test_published_collective_rows_use_predicts_network():
    cal = load_calibration()
    catalogue = load_catalogue()
    published = load_published(hardware=catalogue.hardware, models=catalogue.models)
    rows = CollectiveRows.of(published.collectives, catalogue)
    net = rows.network(cal)
    assert net.congestion_per_doubling == cal.congestion_per_doubling
    assert net.fill_chunks == cal.nccl_fill_chunks


def test_collective_bandwidth_fits_its_axes_to_the_published_points():
    from trainscale.figures.collective_bandwidth import _view_limits

    points = pd.DataFrame(
        {"size_bytes": [2.0**20, 2.0**30], "observed_busbw_gbps": [3.0, 400.0],
         "predicted_busbw_gbps": [3.2, 380.0]}
    )  # fmt: skip
    (x0, x1), (y0, y1) = _view_limits(points)
    assert (x0, x1) == (2.0**16, 2.0**34)
    assert (y0, y1) == (1.0, 2e3)  # 3.3 decades, not 7
    assert _view_limits(points.iloc[:0]) == ((2.0**10, 2.0**34), (1e-3, 2e3))
