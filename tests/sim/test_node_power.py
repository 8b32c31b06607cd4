"""Power at each scope (GPU board, node, facility) of documented DGX H100 configurations against
the figures of the catalogue's sources (data/hardware.yaml, reference notes section 5)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from trainscale.errors import ConfigurationError
from trainscale.sim.catalogue import Catalogue
from trainscale.sim.energy import PowerTerms, load_power_terms, with_node_power
from trainscale.sim.energy.node import switch_ports_per_nic
from trainscale.sim.simulate import predict

#: Llama-2-70B on one DGX H100, tensor parallel 8: GEMM-bound, the kind of "computationally
#: intensive workload" Newkirk et al. metered on 8 x H100 nodes.
_DGX_H100 = {
    "model": "llama2-70b", "seq_len": 4096, "global_batch": 64, "micro_batch": 1,
    "gpu": "h100-sxm-80gb", "num_gpus": 8, "tp": 8, "pp": 1, "sharding": "ddp",
    "recompute": "none", "precision": "bf16", "framework": "megatron",
}  # fmt: skip
#: DGX H100 rating, W (reference S20).
_RATED_W = 10_200.0
#: Newkirk et al. 2025 (reference S68, published CSV row 320): compute-intensive workloads at
#: about 76 % of the node rating.
_NEWKIRK_FRACTION = 0.76
#: Latif et al. 2024 (reference S67, published CSV row 319): largest node power observed.
_LATIF_MAX_W = 8_400.0


@pytest.fixture(scope="module")
def dgx(catalogue: Catalogue) -> pd.DataFrame:
    """The configuration on 8, 64 and 2,048 GPUs (tp 4 pp 4 on the two larger), shipped terms."""
    big = {**_DGX_H100, "tp": 4, "pp": 4, "global_batch": 1024, "sharding": "zero1"}
    rows = pd.DataFrame([_DGX_H100, {**big, "num_gpus": 64}, {**big, "num_gpus": 2048}])
    return with_node_power(predict(rows, catalogue=catalogue), catalogue.hardware,
                           load_power_terms())  # fmt: skip


def test_gpu_board_scope_is_the_phase_model_between_idle_and_tdp(dgx, catalogue):
    gpu = catalogue.hardware.gpus["h100-sxm-80gb"]
    power = dgx["power_w_per_gpu"].to_numpy()
    assert np.all((power > gpu.idle_w) & (power <= gpu.tdp_w))
    # GPU-board energy is GPU power only: GPUs x board power / tokens/s
    expected = power * dgx["num_gpus"] / dgx["tokens_per_s"]
    np.testing.assert_allclose(dgx["energy_j_per_token"], expected, rtol=1e-12)


def test_node_scope_is_gpus_plus_host_within_the_sources(dgx, catalogue):
    host = catalogue.hardware.systems["dgx-h100"].host_power
    scale = load_power_terms().host_power_scale
    node = dgx["node_power_w"].to_numpy()
    np.testing.assert_allclose(node, 8 * dgx["power_w_per_gpu"] + dgx["host_power_w"])
    assert np.all(dgx["host_power_w"] >= scale * host.idle_w)
    assert np.all(dgx["host_power_w"] <= scale * host.max_w)
    # a GEMM-bound node: within 10 % of Newkirk's 76 % of the rating, below Latif's maximum
    assert node[0] == pytest.approx(_NEWKIRK_FRACTION * _RATED_W, rel=0.10)
    assert np.all(node < _LATIF_MAX_W)
    nodes = dgx["num_gpus"] / 8
    np.testing.assert_allclose(dgx["energy_j_per_token_node"], node * nodes / dgx["tokens_per_s"])


def test_facility_scope_adds_switches_and_pue(dgx, catalogue):
    switch = catalogue.hardware.switch_power
    # one node: no switch; 8 nodes (64 NICs): one level; 256 nodes (2,048 NICs): two levels
    expected = [0.0, 8 * switch.w_per_port, 8 * 3 * switch.w_per_port]
    np.testing.assert_allclose(dgx["switch_power_w_per_node"], expected)
    pue = catalogue.hardware.facility.pue_default
    np.testing.assert_allclose(
        dgx["facility_power_w_per_node"],
        (dgx["node_power_w"] + dgx["switch_power_w_per_node"]) * pue,
    )
    # switches at 2,048 GPUs: 3-5 % of IT power (reference notes section 5.3)
    share = dgx["switch_power_w_per_node"].iloc[2] / (
        dgx["node_power_w"].iloc[2] + dgx["switch_power_w_per_node"].iloc[2]
    )
    assert 0.03 <= share <= 0.05


def test_pue_column_overrides_the_default_and_is_checked(dgx, catalogue):
    mine = with_node_power(dgx.assign(pue=[1.1, np.nan, 1.2]), catalogue.hardware, PowerTerms())
    it = mine["node_power_w"] + mine["switch_power_w_per_node"]
    default = catalogue.hardware.facility.pue_default
    np.testing.assert_allclose(mine["facility_power_w_per_node"], it * [1.1, default, 1.2])
    with pytest.raises(ConfigurationError, match="pue"):
        with_node_power(dgx.assign(pue=0.9), catalogue.hardware, PowerTerms())


def test_host_power_follows_gpu_activity_and_scale(dgx, catalogue):
    host = catalogue.hardware.systems["dgx-h100"].host_power
    bare = with_node_power(dgx, catalogue.hardware, PowerTerms())
    expected = host.idle_w + (host.max_w - host.idle_w) * bare["gpu_activity"]
    np.testing.assert_allclose(bare["host_power_w"], expected)
    doubled = with_node_power(dgx, catalogue.hardware, PowerTerms(host_power_scale=2.0))
    np.testing.assert_allclose(doubled["host_power_w"], 2 * bare["host_power_w"])


def test_intervals_come_from_the_terms(dgx, catalogue):
    bare = with_node_power(dgx, catalogue.hardware, PowerTerms())
    assert bare["node_power_w_lo"].isna().all()
    terms = PowerTerms(node_power_log_sigma=0.1, energy_log_sigma=0.2)
    mine = with_node_power(dgx, catalogue.hardware, terms)
    factor = np.exp(1.2815515655446004 * 0.1)
    np.testing.assert_allclose(mine["node_power_w_hi"], mine["node_power_w"] * factor)
    np.testing.assert_allclose(mine["node_power_w_lo"], mine["node_power_w"] / factor)
    assert np.all(mine["energy_j_per_token_facility_lo"] < mine["energy_j_per_token_facility"])


def test_switch_levels_of_a_fat_tree():
    np.testing.assert_array_equal(
        switch_ports_per_nic(np.array([8, 64, 65, 2048, 2049]), 64), [1, 1, 3, 3, 5]
    )
