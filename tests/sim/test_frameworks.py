"""Framework profiles: each documented behaviour moves the step the way the framework's docs say.

Every test compares two predictions that differ in one behaviour only (the calibration is the
defaults, so the tests do not move when the stored calibration is refitted).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from trainscale import predict
from trainscale.errors import ConfigurationError
from trainscale.schema.choices import DEFAULT_FRAMEWORK
from trainscale.sim.calibration import Calibration
from trainscale.sim.catalogue import load_catalogue
from trainscale.sim.configs import build_configs
from trainscale.sim.frameworks import OVERRIDE_COLUMNS, load_frameworks
from trainscale.sim.network import calibrated_network
from trainscale.sim.system.collectives import allgather_time

FRAMEWORKS = load_catalogue().framework_keys
"""The shipped framework list (the profile keys of ``data/frameworks.yaml``)."""

CAL = Calibration.defaults(FRAMEWORKS)
CATALOGUE = load_catalogue()


def _row(**overrides: object) -> dict:
    row = {
        "model": "llama2-7b", "seq_len": 4096, "global_batch": 512, "micro_batch": 1,
        "gpu": "h100-sxm-80gb", "num_gpus": 256, "tp": 1, "pp": 1, "sharding": "fsdp",
        "recompute": "none", "precision": "bf16",
    }  # fmt: skip
    row.update(overrides)
    return row


def _predict(*rows: dict) -> pd.DataFrame:
    return predict(pd.DataFrame(list(rows)), calibration=CAL)


def test_every_profile_behaviour_has_a_source() -> None:
    profiles = load_frameworks()
    assert tuple(profiles) == FRAMEWORKS
    for profile in profiles.values():
        for behaviour in ("overlap_grad_reduce", "overlap_param_gather", "tp_comm_overlap",
                          "fused_kernels", "shard_granularity", "fp8_recipe",
                          "repeat_kv", "cp_comm_type", "pipeline_defers_grad_sync",
                          "ddp_bucket_params"):  # fmt: skip
            assert len(profile.sources[behaviour]) > 20, (profile.key, behaviour)


def test_default_framework_is_pytorch_and_is_written_out() -> None:
    out = _predict(_row())
    assert DEFAULT_FRAMEWORK == "pytorch"
    assert out["framework"].iloc[0] == "pytorch"
    assert out["shard_granularity"].iloc[0] == "layer"
    assert bool(out["overlap_grad_reduce"].iloc[0])


def test_zero3_per_tensor_all_gathers_are_latency_bound_at_1024_ranks() -> None:
    """DeepSpeed ZeRO-3 gathers each of a Llama block's 7 weight matrices separately (its two
    RMSNorm weights stay whole, below the persistence threshold): at 1,024 ranks the ring's
    latency, paid 7 times, dominates the bytes, so the gather time is several times that of one
    flat per-layer gather of the same bytes."""
    fsdp, zero3 = _predict(
        _row(num_gpus=1024, global_batch=1024, framework="pytorch"),
        _row(num_gpus=1024, global_batch=1024, framework="deepspeed"),
    ).itertuples()
    assert zero3.shard_granularity == "tensor" and fsdp.shard_granularity == "layer"
    assert zero3.allgather_s > 3.0 * fsdp.allgather_s
    assert zero3.tokens_per_s_per_gpu < 0.8 * fsdp.tokens_per_s_per_gpu
    # The same effect from the collective model alone: one tensor's gather is latency, not bytes.
    configs, _, _ = build_configs(
        pd.DataFrame([_row(num_gpus=1024, global_batch=1024)]), hardware=CATALOGUE.hardware,
        models=CATALOGUE.models, frameworks=CATALOGUE.frameworks,
    )  # fmt: skip
    net = calibrated_network(configs.system, CAL, CATALOGUE.nccl)
    layer_bytes = 2 * 202e6  # one Llama-2 7B block in bf16
    whole = allgather_time(layer_bytes, 1024, 8, net)
    per_tensor = allgather_time(layer_bytes / 7, 1024, 8, net)
    bandwidth_only = layer_bytes / 7 / (8 * net.nic_bytes_per_s)
    assert per_tensor > 5 * bandwidth_only
    assert 7 * per_tensor > 3 * whole


def _gpt_175b(**overrides: object) -> dict:
    """GPT-3 175B as Narayanan et al. ran it under ZeRO-3 (tp 1, 384 GPUs, micro-batch 4)."""
    shape = {"model": "", "layers": 96, "hidden": 12288, "heads": 96, "kv_heads": 96,
             "ffn": 49152, "vocab": 51200, "mlp": "gelu"}  # fmt: skip
    return _row(**{**shape, "seq_len": 2048, "global_batch": 1536, "micro_batch": 4,
                   "gpu": "a100-sxm-80gb", "num_gpus": 384, "framework": "deepspeed",
                   **overrides})  # fmt: skip


def _tensor_gathers(*rows: dict) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    from trainscale.sim.model.work import block_work
    from trainscale.sim.plan.data_parallel import per_tensor_gathers

    configs, _, _ = build_configs(
        pd.DataFrame(list(rows)), hardware=CATALOGUE.hardware, models=CATALOGUE.models,
        frameworks=CATALOGUE.frameworks,
    )  # fmt: skip
    return per_tensor_gathers(
        block_work(configs.model, configs.plan, configs.stack), np.ones(len(rows), dtype=bool)
    )


def test_zero3_keeps_tensors_below_its_persistence_threshold_whole() -> None:
    """stage3_param_persistence_threshold (1e5 elements): a GPT block's biases and LayerNorms
    are never gathered, its 4 weight matrices are; a Llama block's 7 matrices, not its norms."""
    tensors, _, _ = _tensor_gathers(_gpt_175b(), _row(model="llama2-7b"))
    assert list(tensors) == [4.0, 7.0]


def test_zero3_regathers_under_full_recomputation_beyond_its_reuse_distance() -> None:
    """stage3_max_reuse_distance (1e9 elements): in GPT-3 175B the QKV, projection and MLP-in
    weights are reused after more than 1e9 elements (the later submodules twice), so full
    recomputation gathers them a third time; the MLP-out weight, reused at once, is kept, and a
    Llama-2 7B block (202M elements) keeps everything."""
    _, regathered, share = _tensor_gathers(_gpt_175b(), _row(model="llama2-7b"))
    assert list(regathered) == [3.0, 0.0]
    np.testing.assert_allclose(share, [8.0 / 12.0, 0.0], rtol=1e-6)
    # Selective recomputation reruns attention only, which holds no parameters: no third gather.
    full, selective, small_full, small_selective = _predict(
        _gpt_175b(recompute="full"), _gpt_175b(recompute="selective"),
        _row(model="llama2-7b", framework="deepspeed", recompute="full"),
        _row(model="llama2-7b", framework="deepspeed", recompute="selective"),
    ).itertuples()  # fmt: skip
    assert full.allgather_s > 1.25 * selective.allgather_s
    assert small_full.allgather_s == pytest.approx(small_selective.allgather_s, rel=1e-12)


def test_gradient_all_reduce_without_overlap_adds_its_time_to_the_step() -> None:
    base = _row(sharding="ddp", model="llama2-1b", num_gpus=64, global_batch=64)
    overlapped, serial = _predict(
        {**base, "overlap_grad_reduce": True}, {**base, "overlap_grad_reduce": False}
    ).itertuples()
    assert serial.allreduce_s == pytest.approx(overlapped.allreduce_s, rel=1e-9)
    assert serial.exposed_comm_s - serial.straggler_s == pytest.approx(serial.allreduce_s, rel=1e-6)
    assert serial.step_time_s - overlapped.step_time_s > 0.5 * serial.allreduce_s


def test_deepspeed_ddp_reduces_after_backward_megatron_and_pytorch_overlap() -> None:
    base = _row(sharding="ddp", model="llama2-1b", num_gpus=64, global_batch=64)
    out = _predict(*({**base, "framework": f} for f in FRAMEWORKS))
    by = out.set_index("framework")
    assert not by.loc["deepspeed", "overlap_grad_reduce"]
    assert by.loc["megatron", "overlap_grad_reduce"] and by.loc["pytorch", "overlap_grad_reduce"]
    assert by.loc["deepspeed", "exposed_comm_s"] > 2 * by.loc["pytorch", "exposed_comm_s"]


def test_zero2_under_pipelining_gathers_and_reduces_once_per_step() -> None:
    """PyTorch pipelining defers FSDP2's gradient sync and resharding to the last micro-batch:
    doubling the micro-batches leaves the data-parallel traffic unchanged under PP, doubles it
    without, and the one reduce-scatter after the last backward is exposed whole."""
    base = _row(sharding="zero2", model="llama2-7b", num_gpus=64, micro_batch=1)
    piped = _predict(
        {**base, "pp": 4, "global_batch": 64}, {**base, "pp": 4, "global_batch": 128}
    )  # fmt: skip
    flat = _predict({**base, "global_batch": 64}, {**base, "global_batch": 128})
    assert list(piped["grad_accum"]) == [4, 8] and list(flat["grad_accum"]) == [1, 2]
    for column in ("allgather_s", "reducescatter_s"):
        assert piped[column].iloc[1] == pytest.approx(piped[column].iloc[0], rel=1e-12)
        assert flat[column].iloc[1] == pytest.approx(2 * flat[column].iloc[0], rel=1e-9)
    one = piped.iloc[0]
    assert one.exposed_comm_s - one.straggler_s > one.reducescatter_s


def test_fsdp_under_pytorch_pipelining_gathers_every_backward_and_the_warm_up_forwards() -> None:
    """Resharded after forward, FSDP gathers in every backward, but a forward that follows a
    backward finds the parameters unsharded: m + min(pp, m) gathers of the stage per step under
    PyTorch's pipelining, against 2m for a stack that syncs every micro-batch (megatron here)."""
    base = _row(sharding="fsdp", model="llama2-7b", num_gpus=64, micro_batch=1, pp=4)
    out = _predict(*(
        {**base, "framework": f, "global_batch": b}
        for f in ("pytorch", "megatron") for b in (64, 128)
    ))  # fmt: skip
    assert list(out["grad_accum"]) == [4, 8, 4, 8]
    torch_4, torch_8, megatron_4, megatron_8 = out["allgather_s"]
    # m = pp = 4: every forward is a warm-up forward, so both gather 2m times; at m = 8 PyTorch
    # adds 4 backward gathers of the blocks (no forward ones), megatron 4 of each.
    assert torch_4 == pytest.approx(megatron_4, rel=1e-12)
    assert megatron_8 == pytest.approx(2 * megatron_4, rel=1e-9)
    assert 0 < torch_8 - torch_4 < 0.5 * (megatron_8 - megatron_4)
    rs = out["reducescatter_s"].to_numpy()
    assert rs[1] == pytest.approx(rs[0], rel=1e-12) and rs[3] == pytest.approx(2 * rs[2], rel=1e-9)


def test_param_gather_prefetch_hides_fsdp_gathers() -> None:
    prefetched, serial = _predict(
        _row(overlap_param_gather=True), _row(overlap_param_gather=False)
    ).itertuples()
    assert serial.allgather_s == pytest.approx(prefetched.allgather_s, rel=1e-9)
    assert serial.exposed_comm_s > prefetched.exposed_comm_s + 0.5 * serial.allgather_s


def test_zero1_param_gather_overlap_hides_the_step_gather() -> None:
    base = _row(sharding="zero1", model="llama2-1b", num_gpus=64, global_batch=128, micro_batch=2)
    overlapped, serial = _predict(
        {**base, "overlap_param_gather": True}, {**base, "overlap_param_gather": False}
    ).itertuples()
    assert serial.exposed_comm_s > overlapped.exposed_comm_s


def test_tp_comm_overlap_hides_tensor_parallel_collectives() -> None:
    base = _row(model="llama2-70b", num_gpus=64, global_batch=64, tp=8, pp=1)
    plain, overlapped = _predict(
        {**base, "tp_comm_overlap": False}, {**base, "tp_comm_overlap": True}
    ).itertuples()
    tp_busy = plain.allgather_s + plain.reducescatter_s  # TP and FSDP collectives
    assert overlapped.exposed_comm_s < plain.exposed_comm_s
    assert overlapped.step_time_s < plain.step_time_s
    # at least one of tp chunks stays exposed: the overlap cannot hide everything
    assert plain.exposed_comm_s - overlapped.exposed_comm_s < tp_busy


def test_fp8_sequence_parallel_gathers_move_one_byte_per_element() -> None:
    """Transformer Engine and torchao's Float8 TP all-gather the FP8 cast; the reduce-scatters
    of GEMM outputs stay bf16."""
    base = _row(model="llama2-70b", sharding="ddp", num_gpus=8, tp=8, global_batch=8,
                gpu="h100-sxm-80gb")  # fmt: skip
    bf16, fp8 = _predict({**base, "precision": "bf16"}, {**base, "precision": "fp8"}).itertuples()
    assert fp8.reducescatter_s == pytest.approx(bf16.reducescatter_s, rel=1e-12)
    assert 0.45 * bf16.allgather_s < fp8.allgather_s < 0.75 * bf16.allgather_s


def test_fp8_current_scaling_costs_more_casts_than_delayed() -> None:
    base = _row(precision="fp8", num_gpus=8, global_batch=8)
    delayed, current = _predict(
        {**base, "fp8_recipe": "delayed"}, {**base, "fp8_recipe": "current"}
    ).itertuples()
    assert current.step_time_s > delayed.step_time_s
    assert current.fp8_recipe == "current" and delayed.fp8_recipe == "delayed"


def test_fused_kernels_cut_the_memory_bound_time_of_a_llama_block_only() -> None:
    """Transformer Engine's LayerNormLinear with Megatron's rope and SwiGLU fusions (the megatron
    profile) or torch.compile: one HBM pass per norm, rotary and SwiGLU, and FP8 inputs written
    by the norm. A GPT block is already counted fused, so the flag does not move it."""
    llama = _row(num_gpus=8, global_batch=8)
    eager, fused = _predict(
        {**llama, "fused_kernels": False}, {**llama, "fused_kernels": True}
    ).itertuples()
    assert eager.compute_s > 1.05 * fused.compute_s
    assert eager.allgather_s == pytest.approx(fused.allgather_s, rel=1e-12)
    fp8 = {**llama, "precision": "fp8"}
    eager8, fused8 = _predict(
        {**fp8, "fused_kernels": False}, {**fp8, "fused_kernels": True}
    ).itertuples()
    assert eager8.compute_s - fused8.compute_s > eager.compute_s - fused.compute_s
    gpt = _row(model="gpt3-175b", num_gpus=64, tp=8, pp=8, global_batch=64, recompute="full")
    gpt_eager, gpt_fused = _predict(
        {**gpt, "fused_kernels": False}, {**gpt, "fused_kernels": True}
    ).itertuples()
    assert gpt_eager.step_time_s == pytest.approx(gpt_fused.step_time_s, rel=1e-12)
    megatron, pytorch = _predict(
        {**llama, "framework": "megatron"}, {**llama, "framework": "pytorch"}
    ).itertuples()
    assert bool(megatron.fused_kernels) and not bool(pytorch.fused_kernels)


def _long_context(**overrides: object) -> dict:
    """Llama 3 8B (32 heads, 8 KV heads) at 131,072 tokens on 32 GPUs: cp 4 across 4 nodes
    (tp 8 fills each node), full recomputation."""
    return _row(**{"model": "llama3-8b", "seq_len": 131072, "global_batch": 1, "num_gpus": 32,
                   "tp": 8, "cp": 4, "recompute": "full", **overrides})  # fmt: skip


def test_all_gather_context_parallelism_exposes_what_the_local_chunk_cannot_hide() -> None:
    """PyTorch's allgather rotation waits for the whole K/V after the local chunk's attention; a
    ring hides each send behind one chunk's attention. The same bytes, so the gather exposes
    more; both are busy for the same volume order."""
    ring, gather = _predict(
        _long_context(cp_comm_type="p2p", repeat_kv=True),
        _long_context(cp_comm_type="all_gather", repeat_kv=True),
    ).itertuples()
    assert (ring.cp_comm_type, gather.cp_comm_type) == ("p2p", "all_gather")
    assert gather.exposed_comm_s > ring.exposed_comm_s
    assert gather.step_time_s > ring.step_time_s


def test_repeat_kv_multiplies_the_context_parallel_bytes_by_heads_over_kv_heads() -> None:
    """torchtitan repeats K/V before SDPA: its context parallelism moves 32 heads of K/V where a
    GQA kernel's moves 8 (tp 8: 4 against 1 per rank), so every exchange carries 4x the bytes
    (the gather, which the local chunk cannot hide, then lengthens the step)."""
    gqa, repeated = _predict(
        _long_context(cp_comm_type="all_gather", repeat_kv=False),
        _long_context(cp_comm_type="all_gather", repeat_kv=True),
    ).itertuples()
    assert repeated.p2p_s > 3.0 * gqa.p2p_s
    assert repeated.step_time_s > gqa.step_time_s


def test_recomputation_repeats_the_context_parallel_exchange() -> None:
    """Full recomputation reruns the forward attention, and with it the K/V exchange."""
    none, full = _predict(
        _long_context(recompute="none", cp_comm_type="all_gather"),
        _long_context(recompute="full", cp_comm_type="all_gather"),
    ).itertuples()
    assert full.p2p_s > 1.2 * none.p2p_s


def test_context_parallel_profiles_follow_their_frameworks() -> None:
    """Transformer Engine's p2p ring with GQA K/V for Megatron; PyTorch's allgather rotation of
    torchtitan's repeated K/V for pytorch."""
    megatron, pytorch = _predict(
        _long_context(framework="megatron"), _long_context(framework="pytorch")
    ).itertuples()
    assert (megatron.cp_comm_type, bool(megatron.repeat_kv)) == ("p2p", False)
    assert (pytorch.cp_comm_type, bool(pytorch.repeat_kv)) == ("all_gather", True)


def test_an_override_beats_its_profile() -> None:
    out = _predict(
        _row(framework="deepspeed"),
        _row(framework="deepspeed", shard_granularity="layer"),
        _row(framework="pytorch"),
    )
    assert list(out["shard_granularity"]) == ["tensor", "layer", "layer"]
    np.testing.assert_allclose(out["allgather_s"].iloc[1], out["allgather_s"].iloc[2], rtol=1e-9)
    cp = _predict(
        _long_context(framework="pytorch", cp_comm_type="p2p", repeat_kv=False),
        _long_context(framework="megatron"),
    )
    assert list(cp["cp_comm_type"]) == ["p2p", "p2p"]
    np.testing.assert_allclose(cp["p2p_s"].iloc[0], cp["p2p_s"].iloc[1], rtol=1e-9)


def test_framework_offsets_move_only_their_framework() -> None:
    cal = CAL.with_values(gemm_efficiency_offset_megatron=-0.2)
    frame = pd.DataFrame([_row(framework=f) for f in FRAMEWORKS])
    base, shifted = predict(frame, calibration=CAL), predict(frame, calibration=cal)
    ratio = (shifted["step_time_s"] / base["step_time_s"]).to_numpy()
    assert ratio[0] > 1.05
    np.testing.assert_allclose(ratio[1:], 1.0)


def test_unknown_framework_is_a_named_error() -> None:
    with pytest.raises(ConfigurationError, match=r"unknown framework 'jax'; valid: megatron"):
        _predict(_row(framework="jax"))
    # a stack a profile lists among its aliases is named with the profile to write instead
    with pytest.raises(ConfigurationError, match=r"'torchtitan'.*torchtitan runs on the 'pytorch'"):
        _predict(_row(framework="torchtitan"))


@pytest.mark.parametrize(
    ("overrides", "column", "message"),
    [
        ({"sharding": "ddp", "model": "llama2-1b", "shard_granularity": "tensor"},
         "shard_granularity", "applies to sharded parameters"),
        ({"fp8_recipe": "delayed"}, "fp8_recipe", "needs precision fp8"),
        ({"sharding": "ddp", "model": "llama2-1b", "overlap_param_gather": True},
         "overlap_param_gather", "ddp gathers no parameters"),
        ({"tp_comm_overlap": True}, "tp_comm_overlap", "needs tp > 1"),
        ({"overlap_grad_reduce": "sometimes"}, "overlap_grad_reduce", "allowed: true, false"),
        ({"fp8_recipe": "mxfp8", "precision": "fp8"}, "fp8_recipe", "allowed: delayed"),
        ({"cp_comm_type": "ring"}, "cp_comm_type", "allowed: p2p, all_gather"),
        ({"repeat_kv": "yes please"}, "repeat_kv", "allowed: true, false"),
        ({"framework": "deepspeed", "sharding": "zero2", "pp": 4}, "sharding",
         "the deepspeed profile runs pipeline parallelism (pp > 1) only with ddp, zero1"),
    ],
)  # fmt: skip
def test_contradictory_or_invalid_overrides_are_named_errors(
    overrides: dict, column: str, message: str
) -> None:
    with pytest.raises(ConfigurationError) as error:
        _predict(_row(**overrides))
    assert f"column '{column}'" in str(error.value)
    assert message in str(error.value)


def test_override_columns_are_configuration_columns() -> None:
    from trainscale.schema import CONFIGURATION_COLUMNS

    names = {c.name for c in CONFIGURATION_COLUMNS}
    assert {"framework", "system", *OVERRIDE_COLUMNS} <= names
