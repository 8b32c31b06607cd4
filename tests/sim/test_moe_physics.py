"""The physics of expert parallelism pinned with published numbers: the all-to-all on one node
against two (DGX H100 link bandwidths), the routing load, expert memory of a documented plan, and
the dense predictions left exactly as they were."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from trainscale import predict
from trainscale.schema import MOE_DISPATCHERS, MOE_ROUTINGS
from trainscale.sim.calibration import Calibration, load_calibration
from trainscale.sim.catalogue import load_catalogue
from trainscale.sim.network import default_network
from trainscale.sim.plan.routing import routing_load
from trainscale.sim.system.alltoall import dispatch_time, remote_nodes

CAL = load_calibration()
NET, PER_NODE = default_network("h100-sxm-80gb", CAL, catalogue=load_catalogue())
#: DGX H100 (data/hardware.yaml, its sources): NVLink 4 at 450 GB/s per direction per GPU, one
#: ConnectX-7 NDR 400 Gb/s (50 GB/s) NIC per GPU, 8 GPUs per node.
NVLINK, NIC = 450e9, 50e9


def _one_dispatch(ep: int, dispatcher: str = "alltoall", k: int = 8) -> float:
    # Qwen3-235B-A22B's hidden 4,096, top-8, 16 sequences of 4,096 tokens per rank (tp 2):
    # 32,768 x 8 x 4,096 x 2 bytes = 2.1 GB per rank, where latency is below 0.2 %.
    return float(
        dispatch_time(
            np.array([MOE_DISPATCHERS.index(dispatcher)]), routed_tokens=np.array([32768.0]),
            hidden=np.array([4096]), k=np.array([k]), load=np.array([1.0]), ep=np.array([ep]),
            etp=np.array([1]), gpus_per_node=np.array([PER_NODE]), net=NET, efficiency=1.0,
        )[0]
    )  # fmt: skip


def test_one_node_against_two_node_all_to_all_follows_the_link_bandwidths() -> None:
    """EP 8 on one DGX H100 sends 7/8 of its buffer over NVLink; EP 16 on two sends 8/16 of it
    through the NIC (and 7/16 over NVLink, concurrently): the time ratio is
    (8/16 / B_nic) / (7/8 / B_nvlink), the two achieved link rates' ratio times 4/7; with the
    line rates (450 and 50 GB/s) and the calibrated efficiencies."""
    ratio = _one_dispatch(16) / _one_dispatch(8)
    nvlink = CAL.nvlink_efficiency * NVLINK
    nic = float(NET.nic_at(np.array([2.0]))[0])
    assert nic == pytest.approx(CAL.nic_efficiency * NIC * (1 - CAL.congestion_per_doubling))
    assert ratio == pytest.approx((0.5 / nic) / (0.875 / nvlink), rel=0.01)
    assert 4.0 < ratio < 6.0  # ~ (0.5/50)/(0.875/450) = 5.1 at line rate


def test_deepep_sends_one_copy_per_remote_node() -> None:
    """DeepEP's NIC bytes do not grow with k beyond the nodes: with 8 experts over 4 nodes a
    token reaches 3·(1 − (3/4)^8) = 2.70 remote nodes on average, against 8·24/32 = 6 of the 8
    copies an all-to-all sends through the NIC; the allgather dispatcher's bytes ignore k."""
    assert remote_nodes(4, 8) == pytest.approx(3 * (1 - 0.75**8))
    assert _one_dispatch(32, "deepep") < _one_dispatch(32, "alltoall") / 2
    assert _one_dispatch(32, "allgather", k=2) == pytest.approx(_one_dispatch(32, "allgather", k=8))


def test_the_busiest_rank_under_each_routing() -> None:
    codes = np.array([MOE_ROUTINGS.index(r) for r in ("balanced", "capacity", "dropless")])
    load = routing_load(
        codes, np.array([1.0, 1.25, 1.0]), experts=np.full(3, 128), ep=np.full(3, 8),
        rows_per_rank=np.full(3, 1e12), cv=0.2,
    )  # fmt: skip
    # dropless: 1 + cv/sqrt(E/ep)·z_8, z_8 = Blom's 1.42 (the expert spread alone at 1e12 rows)
    assert load[:2].tolist() == [1.0, 1.25]
    assert load[2] == pytest.approx(1 + 0.2 / 4 * 1.4236, rel=1e-3)


#: Mixtral 8x22B as MoE Parallel Folding ran it (arXiv 2504.14960 Table 3; moe-README.md source
#: A): 128 H100, TP 2, PP 8, EP 8, ETP 1, Megatron-Core distributed optimizer, GBS 256, seq 4096.
FOLDING = {
    "model": "mixtral-8x22b", "gpu": "h100-sxm-80gb", "num_gpus": 128, "tp": 2, "pp": 8,
    "ep": 8, "etp": 1, "seq_len": 4096, "global_batch": 256, "micro_batch": 1,
    "sharding": "zero1", "recompute": "full", "precision": "bf16", "framework": "megatron",
}  # fmt: skip


def test_expert_memory_per_gpu_of_a_documented_plan() -> None:
    """The plan above: 56 layers over PP 8 is 7 MoE blocks per stage; EP 8 puts 1 of the 8
    experts (3 x 6,144 x 16,384 = 302 M weights, data/models.yaml's config.json shape) on each
    GPU, ETP 1 keeps it whole: 7 x 302 M = 2.11 B expert weights per GPU. Expert data
    parallelism is 128 / (8 x 8 x 1) = 2 (the paper's "expert-DP"), so Megatron's distributed
    optimizer holds 6 + 12/2 = 12 bytes per weight (docs/source/api-guide/dist_optimizer.md):
    25.4 GB of expert state. Full recomputation stores no routed rows; what remains is one
    block's dispatch buffers, 3 x T_r·k·h·2 bytes (T_r = 4,096 / TP 2)."""
    from trainscale.sim.configs import build_configs
    from trainscale.sim.model.memory import memory_terms
    from trainscale.sim.network import calibrated_network  # noqa: F401  (the predict path)
    from trainscale.sim.plan.layout import layout
    from trainscale.sim.workload import workload

    cat = load_catalogue()
    c, _, _ = build_configs(pd.DataFrame([FOLDING]), hardware=cat.hardware, models=cat.models,
                            frameworks=cat.frameworks)  # fmt: skip
    work = workload(c)
    place = layout(c.plan.tp, c.plan.cp, c.plan.dp, c.plan.sharding, c.system.gpus_per_node)
    experts = memory_terms(c.model, c.plan, c.stack, c.system, work, place, CAL).experts[0]
    weights = 7 * 3 * 6144 * 16384
    buffers = 3 * (4096 / 2) * 2 * 6144 * 2
    assert weights == pytest.approx(2.114e9, rel=1e-3)
    assert experts == pytest.approx(12 * weights + buffers, rel=1e-9)
    row = predict(pd.DataFrame([FOLDING])).iloc[0]
    assert row["fits_memory"] and row["mem_gib_per_gpu"] > experts / 2**30


def test_moe_routing_and_dispatcher_change_the_prediction() -> None:
    rows = [FOLDING | {"recompute": "none"} | change for change in (
        {"moe_routing": "balanced"}, {}, {"moe_routing": "capacity", "capacity_factor": 1.5},
        {"moe_dispatcher": "allgather"},
    )]  # fmt: skip
    result = predict(pd.DataFrame(rows))
    balanced, dropless, capacity, allgather = result["step_time_s"]
    assert balanced < dropless and balanced < capacity
    assert allgather != dropless


def test_moe_parameters_at_their_priors_leave_the_calibration_id() -> None:
    """The MoE parameters change no dense prediction: at their priors they are not part of the
    id (the shipped dense calibration keeps its id); once fitted they are."""
    moved = CAL.with_values(alltoall_efficiency=0.9)
    assert moved.calibration_id != CAL.calibration_id
    defaults = Calibration.defaults(load_catalogue().framework_keys)
    assert "moe_gemm_half_rows" in defaults.as_dict()


@pytest.mark.parametrize("key", ["deepseek-v3", "deepseek-v2", "kimi-k2", "qwen3-235b-a22b",
                                 "gpt-oss-120b", "mixtral-8x22b"])  # fmt: skip
def test_the_average_block_holds_the_catalogue_counts(key: str) -> None:
    """On one GPU (tp, ep, etp 1) the average block's weights are the catalogue's block counts
    (:mod:`trainscale.sim.model.counts`) averaged over the model's dense and MoE blocks: the
    step-time model does not count the weights a second way."""
    from trainscale.sim.configs import build_configs
    from trainscale.sim.model.counts import block_params
    from trainscale.sim.workload import workload

    cat = load_catalogue()
    m = cat.models[key]
    row = {"model": key, "gpu": "b200", "num_gpus": 1, "tp": 1, "pp": 1, "seq_len": 4096,
           "global_batch": 1, "micro_batch": 1, "sharding": "ddp", "recompute": "none",
           "precision": "bf16"}  # fmt: skip
    c, _, _ = build_configs(pd.DataFrame([row]), hardware=cat.hardware, models=cat.models,
                            frameworks=cat.frameworks)  # fmt: skip
    work = workload(c)
    per_block = (work.layer_param_bytes[0] + work.moe.expert_param_bytes[0]) / 2.0
    dense = m.moe.dense_layers if m.moe else m.layers
    expected = (dense * block_params(m, moe_block=False)
                + (m.layers - dense) * block_params(m, moe_block=True)) / m.layers  # fmt: skip
    assert per_block == pytest.approx(expected, rel=1e-9)


def test_a2a_overlap_hides_the_exchange_behind_another_micro_batch() -> None:
    """Megatron-LM --overlap-moe-expert-parallel-comm: with more than one micro-batch only what
    exceeds the block's compute stays exposed; with one there is nothing to overlap with."""
    qwen = FOLDING | {"model": "qwen3-235b-a22b", "num_gpus": 256, "ep": 32, "pp": 8,
                      "global_batch": 2048, "recompute": "selective"}  # fmt: skip
    rows = [
        qwen,
        qwen | {"moe_a2a_overlap": True},
        qwen | {"global_batch": 16},
        qwen | {"global_batch": 16, "moe_a2a_overlap": True},
    ]
    off, on, one_off, one_on = (r for _, r in predict(pd.DataFrame(rows)).iterrows())
    assert on["alltoall_s"] == pytest.approx(off["alltoall_s"])
    assert on["exposed_alltoall_s"] < 0.5 * off["exposed_alltoall_s"]
    assert on["step_time_s"] < off["step_time_s"]
    assert one_on["exposed_alltoall_s"] == one_off["exposed_alltoall_s"] == one_off["alltoall_s"]
