"""Property tests of the simulator (hypothesis): invariants that hold for every configuration."""

from __future__ import annotations

import pandas as pd
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from trainscale import predict
from trainscale.sim.system.hardware import load_hardware

MODELS = ["llama2-1b", "llama2-7b", "llama2-13b", "llama2-70b", "llama3-8b", "mpt-7b"]
GPUS = ["v100-sxm-32gb", "a100-sxm-40gb", "a100-sxm-80gb", "h100-sxm-80gb", "h200-sxm-141gb",
        "b200"]  # fmt: skip
#: (idle, TDP) watts of each GPU, for the power limits drawn below.
POWER_RANGE_W = {k: (g.idle_w, g.tdp_w) for k, g in load_hardware().gpus.items()}


@st.composite
def configurations(draw: st.DrawFn) -> dict:
    """Valid configurations: degrees that divide heads and GPUs, batches that divide."""
    model = draw(st.sampled_from(MODELS))
    tp = draw(st.sampled_from([1, 2, 4, 8]))
    pp = draw(st.sampled_from([1, 2, 4]))
    cp = draw(st.sampled_from([1, 2]))
    dp = draw(st.sampled_from([1, 2, 4, 8, 16, 64, 256]))
    micro = draw(st.sampled_from([1, 2, 4]))
    accum = draw(st.sampled_from([1, 2, 4, 8]))
    gpu = draw(st.sampled_from(GPUS))
    precision = (
        "fp8"
        if gpu in ("h100-sxm-80gb", "h200-sxm-141gb", "b200") and draw(st.booleans())
        else "bf16"
    )
    idle_w, tdp_w = POWER_RANGE_W[gpu]
    limit = draw(st.sampled_from([None, 0.3, 0.6, 0.9, 1.0]))
    return {
        "power_limit_w": 0.0 if limit is None else idle_w + limit * (tdp_w - idle_w),
        "model": model, "seq_len": draw(st.sampled_from([512, 2048, 4096, 8192])),
        "global_batch": dp * micro * accum, "micro_batch": micro, "gpu": gpu,
        "num_gpus": tp * pp * cp * dp, "tp": tp, "pp": pp, "cp": cp,
        "vpp": 2 if pp > 1 and accum % pp == 0 and draw(st.booleans()) else 1,
        "sharding": draw(st.sampled_from(["ddp", "zero1", "zero2", "fsdp", "hsdp"]))
        if dp > 1 else draw(st.sampled_from(["ddp", "fsdp"])),
        "recompute": draw(st.sampled_from(["none", "selective", "full"])),
        "precision": precision,
    }  # fmt: skip


#: 80 examples a property keeps the suite in its ten-minute budget; HYPOTHESIS_PROFILE=explore
#: draws fresh ones.
SETTINGS = settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@SETTINGS
@given(configurations())
def test_exposed_communication_never_exceeds_total(config: dict) -> None:
    r = predict(pd.DataFrame([config])).iloc[0]
    assert 0.0 <= r["exposed_comm_s"] <= r["comm_s"] * (1 + 1e-9) + 1e-12
    step = r["compute_s"] + r["exposed_comm_s"] + r["bubble_s"] + r["host_stall_s"]
    assert abs(step - r["step_time_s"]) <= 1e-9 * r["step_time_s"]


@SETTINGS
@given(configurations())
def test_mfu_is_a_fraction(config: dict) -> None:
    r = predict(pd.DataFrame([config])).iloc[0]
    assert 0.0 < r["mfu"] <= 1.0
    assert r["mfu"] <= r["hfu"] <= 1.0 + 1e-12


@SETTINGS
@given(configurations(), st.sampled_from([100.0, 200.0, 400.0]), st.sampled_from([1.5, 2.0, 8.0]))
def test_a_faster_nic_never_slows_a_step(config: dict, nic: float, factor: float) -> None:
    slow = predict(pd.DataFrame([{**config, "nic_gbit_per_s_per_gpu": nic}])).iloc[0]
    fast = predict(pd.DataFrame([{**config, "nic_gbit_per_s_per_gpu": nic * factor}])).iloc[0]
    assert fast["step_time_s"] <= slow["step_time_s"] * (1 + 1e-12)


@SETTINGS
@given(configurations())
def test_more_micro_batch_never_uses_less_activation_memory(config: dict) -> None:
    bigger = {**config, "micro_batch": config["micro_batch"] * 2,
              "global_batch": config["global_batch"] * 2}  # fmt: skip
    a = predict(pd.DataFrame([config])).iloc[0]
    b = predict(pd.DataFrame([bigger])).iloc[0]
    assert b["mem_gib_per_gpu"] >= a["mem_gib_per_gpu"]


@SETTINGS
@given(
    st.sampled_from(MODELS), st.sampled_from(GPUS), st.sampled_from(["ddp", "fsdp", "zero1"]),
    st.sampled_from(["none", "full"]), st.integers(1, 4),
)  # fmt: skip
def test_one_gpu_without_parallelism_has_no_communication(
    model: str, gpu: str, sharding: str, recompute: str, accum: int
) -> None:
    config = {
        "model": model, "seq_len": 2048, "global_batch": accum, "micro_batch": 1, "gpu": gpu,
        "num_gpus": 1, "tp": 1, "pp": 1, "sharding": sharding, "recompute": recompute,
        "precision": "bf16",
    }  # fmt: skip
    r = predict(pd.DataFrame([config])).iloc[0]
    assert r["comm_s"] == 0.0
    assert r["exposed_comm_s"] == 0.0
    assert r["bubble_s"] == 0.0


@SETTINGS
@given(configurations())
def test_power_between_idle_and_the_limit_and_energy_consistent(config: dict) -> None:
    r = predict(pd.DataFrame([config])).iloc[0]
    idle_w, tdp_w = POWER_RANGE_W[config["gpu"]]
    limit_w = config["power_limit_w"] or tdp_w
    assert r["power_limit_w"] == limit_w
    assert idle_w <= r["power_w_per_gpu"] <= limit_w
    energy = r["power_w_per_gpu"] * r["num_gpus"] / r["tokens_per_s"]
    assert abs(energy - r["energy_j_per_token"]) <= 1e-9 * energy
