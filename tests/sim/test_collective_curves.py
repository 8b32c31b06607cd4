"""Tests of trainscale.sim.collective_curves: the table the collective figures draw
(results/collectives.parquet)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from trainscale.errors import TrainscaleError
from trainscale.published.accuracy import CollectiveRows
from trainscale.published.measurements import load_published
from trainscale.schema import COLLECTIVE_CURVE_COLUMNS, names
from trainscale.sim.calibration import load_calibration
from trainscale.sim.catalogue import load_catalogue
from trainscale.sim.collective_curves import (
    BUSBW_FACTORS,
    NODE_COUNTS,
    SIZES_BYTES,
    collective_curves,
    layer_bytes,
)
from trainscale.sim.configs import build_configs
from trainscale.sim.model.shape import load_models
from trainscale.sim.network import calibrated_network, default_network
from trainscale.sim.system.collectives import allgather_time, allreduce_time, reducescatter_time

H100 = "h100-sxm-80gb"


@pytest.fixture(scope="module")
def curves() -> pd.DataFrame:
    models = load_models()
    return collective_curves(
        load_calibration(),
        catalogue=load_catalogue(),
        gpus=[H100, "gh200-96gb"],
        models={key: models[key] for key in ("llama2-7b", "llama2-70b")},
    )


def test_columns_rows_and_provenance(curves):
    assert list(curves.columns) == names(COLLECTIVE_CURVE_COLUMNS)
    sizes = len(SIZES_BYTES) + 2
    assert len(curves) == 2 * 3 * 2 * len(NODE_COUNTS) * sizes  # GPUs, collectives, terms
    assert set(curves["term"]) == {"total", "bandwidth"}
    assert set(curves["model"]) == {"", "llama2-7b", "llama2-70b"}
    assert (curves["calibration_id"] == load_calibration().calibration_id).all()
    gh200 = curves[curves["gpu"] == "gh200-96gb"]
    assert (gh200["num_gpus"] == gh200["num_nodes"] * gh200["gpus_per_node"]).all()
    assert set(gh200["gpus_per_node"]) == {4}


def test_bus_bandwidth_follows_the_nccl_tests_definition(curves):
    rows = curves[(curves["gpu"] == H100) & (curves["num_nodes"] == 4)]
    n = 32
    for collective, factor in (("allreduce", 2 * (n - 1) / n), ("allgather", (n - 1) / n)):
        mine = rows[rows["collective"] == collective]
        expected = mine["size_bytes"] / mine["time_s"] * factor / 1e9
        assert mine["busbw_gbytes_per_s"].to_numpy() == pytest.approx(expected.to_numpy())
        assert mine["num_gpus"].unique().tolist() == [n]


def test_bus_bandwidth_grows_with_message_size_and_stays_under_nvlink(curves):
    sweep = curves[(curves["gpu"] == H100) & (curves["model"] == "") & (curves["term"] == "total")]
    for _, rows in sweep[sweep["num_nodes"].isin([1, 64])].groupby(["collective", "num_nodes"]):
        busbw = rows.sort_values("size_bytes")["busbw_gbytes_per_s"].to_numpy()
        assert np.all(np.diff(busbw) >= -1e-9)
        assert busbw.max() <= 900.0  # H100 NVLink: 450 GB/s per direction; NVLS at most 2x


def test_layer_bytes_are_the_block_matrices_in_bf16():
    m = load_models()["llama2-7b"]
    matrices = 4 * m.hidden**2 + 3 * m.hidden * m.ffn  # MHA: q, k, v, o; SwiGLU: 3 matrices
    assert layer_bytes(m) == 2.0 * matrices


def test_the_bandwidth_term_is_the_collective_without_latency(curves):
    layer = curves[
        (curves["gpu"] == H100)
        & (curves["model"] == "llama2-7b")
        & (curves["collective"] == "allgather")
    ]
    wide = layer.pivot_table(index="num_gpus", columns="term", values="time_s")
    latency = wide["total"] - wide["bandwidth"]
    assert (latency >= 0).all()
    # the ring's latency grows with its length while its bandwidth term saturates
    assert latency.is_monotonic_increasing
    assert latency.loc[4096] > wide.loc[4096, "bandwidth"]


def _predict_network(num_gpus: int):
    """The network ``trainscale predict`` builds for a Llama-2 7B FSDP configuration on H100."""
    row = {
        "model": "llama2-7b", "seq_len": 4096, "global_batch": 2048, "micro_batch": 1,
        "gpu": H100, "num_gpus": num_gpus, "tp": 1, "pp": 1, "sharding": "fsdp",
        "recompute": "none", "precision": "bf16",
    }  # fmt: skip
    catalogue = load_catalogue()
    configs, _, _ = build_configs(
        pd.DataFrame([row]), hardware=catalogue.hardware, models=catalogue.models,
        frameworks=catalogue.frameworks,
    )  # fmt: skip
    return calibrated_network(configs.system, load_calibration(), catalogue.nccl).take(
        np.array([0])
    )


def test_the_curves_use_predicts_network_at_256_nodes():
    """The table's bus bandwidth is the one ``predict`` would give the same setup, fabric
    congestion included (user trial item 28)."""
    cal = load_calibration()
    assert cal.congestion_per_doubling > 0  # otherwise this test could not tell the two apart
    nodes, per_node = 256, 8
    n = float(nodes * per_node)
    net = _predict_network(int(n))
    sizes = np.array([2.0**20, 2.0**26, 2.0**30])
    models = load_models()
    curves = collective_curves(
        cal, catalogue=load_catalogue(), gpus=[H100], models={"llama2-7b": models["llama2-7b"]},
        sizes_bytes=sizes,
        node_counts=(nodes,),
    )  # fmt: skip
    total = curves[curves["term"] == "total"]
    for key, time_fn in (
        ("allreduce", allreduce_time),
        ("allgather", allgather_time),
        ("reducescatter", reducescatter_time),
    ):
        rows = total[(total["collective"] == key) & (total["model"] == "")]
        expected = sizes / np.asarray(time_fn(sizes, n, per_node, net)).ravel()
        expected *= BUSBW_FACTORS[key](n) / 1e9
        assert rows["busbw_gbytes_per_s"].to_numpy() == pytest.approx(expected, rel=1e-12), key
    built, built_per_node = default_network(H100, cal, catalogue=load_catalogue())
    assert built_per_node == per_node
    assert built.congestion_per_doubling == net.congestion_per_doubling
    assert built.fill_chunks == net.fill_chunks
    assert float(built.nic_at(np.float64(nodes))) == pytest.approx(
        float(net.nic_at(np.float64(nodes))[0]), rel=1e-12
    )
    gather = total[(total["collective"] == "allgather") & (total["model"] == "llama2-7b")]
    assert gather["time_s"].iloc[0] == pytest.approx(
        float(allgather_time(layer_bytes(models["llama2-7b"]), n, per_node, net)[0]), rel=1e-12
    )


def test_published_collective_rows_use_predicts_network():
    cal = load_calibration()
    catalogue = load_catalogue()
    published = load_published(
        hardware=catalogue.hardware, models=catalogue.models, frameworks=catalogue.framework_keys
    )
    rows = CollectiveRows.of(published.collectives, catalogue)
    net = rows.network(cal)
    assert net.congestion_per_doubling == cal.congestion_per_doubling
    assert net.fill_chunks == cal.nccl_fill_chunks


def test_an_unknown_gpu_is_named():
    with pytest.raises(TrainscaleError, match="unknown GPU 'tpu'"):
        collective_curves(load_calibration(), catalogue=load_catalogue(), gpus=["tpu"], models={})
