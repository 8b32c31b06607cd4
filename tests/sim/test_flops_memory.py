"""Model FLOPs, parameter counts, memory and the pipeline bubble against closed forms."""

from __future__ import annotations

import pandas as pd
import pytest

from trainscale import predict
from trainscale.sim.calibration import load_calibration
from trainscale.sim.model.flops import model_flops_per_token
from trainscale.sim.model.params import total_params
from trainscale.sim.model.shape import load_models


def test_llama2_7b_flops_per_token_within_one_percent_of_closed_form() -> None:
    # Closed form (PaLM appendix B): 6 N + 12 L h s, N = the 6.74e9 parameters of Llama-2 7B
    # minus the 32000 x 4096 input embedding, a lookup (Touvron et al. 2023; HF config).
    layers, hidden, seq = 32, 4096, 4096
    n_matmul = 6.738e9 - 32000 * 4096
    closed_form = 6 * n_matmul + 12 * layers * hidden * seq
    m = load_models()["llama2-7b"]
    ours = model_flops_per_token(m.transformer, seq)
    assert ours == pytest.approx(closed_form, rel=0.01)


@pytest.mark.parametrize(
    ("key", "billions"),
    [("llama2-7b", 6.74), ("llama2-13b", 13.0), ("llama2-70b", 69.0), ("llama3-8b", 8.03),
     ("llama3-70b", 70.6), ("llama3-405b", 405.8), ("gpt3-175b", 175.0)],
)  # fmt: skip
def test_parameter_counts_match_published_sizes(key: str, billions: float) -> None:
    m = load_models()[key]
    count = total_params(m.transformer, m.tied_embeddings)
    assert count / 1e9 == pytest.approx(billions, rel=0.02)


def _row(**overrides: object) -> dict:
    row = {
        "model": "llama2-7b", "seq_len": 4096, "global_batch": 64, "micro_batch": 1,
        "gpu": "h100-sxm-80gb", "num_gpus": 64, "tp": 1, "pp": 1, "sharding": "fsdp",
        "recompute": "none", "precision": "bf16",
    }  # fmt: skip
    row.update(overrides)
    return row


def test_zero3_shard_memory_by_hand() -> None:
    # FSDP (ZeRO-3) over 64 GPUs: model states 16 bytes x 6.738e9 / 64 per GPU, plus two gathered
    # bf16 blocks (weights and gradients), plus activations, logits and the runtime overhead.
    # Full recomputation keeps only block inputs: 2 bytes x h x tokens per block.
    result = predict(pd.DataFrame([_row(recompute="full")])).iloc[0]
    block = 2 * 4096 * 4096 + 2 * 4096 * 4096 + 3 * 4096 * 11008  # weights of one block
    params = 32 * block + 2 * 32000 * 4096  # blocks plus untied embedding and head
    tokens = 4096
    states = 16 * params / 64
    gathered = 2 * 2 * 2 * block
    act_full = 32 * 2 * 4096 * tokens
    per_token_block = 2 * (4 * 4096 + 2 * 4096 + 2 * 4096 + 3 * 11008)
    recompute_buffer = per_token_block * tokens
    logits = 6 * tokens * 32000
    overhead = 4 * 2**30
    expected = states + gathered + act_full + recompute_buffer + logits + overhead
    assert result["mem_gib_per_gpu"] * 2**30 == pytest.approx(expected, rel=0.005)


def test_sharded_data_parallelism_under_pipelining_holds_unsharded_state_as_zero1_does() -> None:
    # Without PP, ZeRO-2 shards the bf16 gradients: (2 + 14/d) bytes per parameter against
    # ZeRO-1's (4 + 12/d). Under PP the gradient sync waits for the last micro-batch, so both
    # hold 4 + 12/d.
    rows = [_row(sharding=s, pp=pp, num_gpus=64, global_batch=64, recompute="full")
            for pp in (1, 2) for s in ("zero1", "zero2")]  # fmt: skip
    mem = predict(pd.DataFrame(rows))["mem_gib_per_gpu"].to_numpy() * 2**30
    block = 2 * 4096 * 4096 + 2 * 4096 * 4096 + 3 * 4096 * 11008
    flat_params = 32 * block + 2 * 32000 * 4096
    assert mem[0] - mem[1] == pytest.approx((2 - 2 / 64) * flat_params, rel=1e-6)
    assert mem[2] == pytest.approx(mem[3], rel=1e-12)
    # FSDP under PyTorch's pipelining keeps the stage unsharded after each backward, too.
    fsdp = predict(pd.DataFrame([_row(sharding="fsdp", pp=2, num_gpus=64, global_batch=64,
                                      recompute="full")]))["mem_gib_per_gpu"].iloc[0]  # fmt: skip
    assert fsdp * 2**30 == pytest.approx(mem[2], rel=1e-12)


def test_one_f_one_b_bubble_fraction() -> None:
    # 1F1B: bubble / step = (p - 1) / (m + p - 1) for DDP (no per-micro-batch data-parallel
    # traffic) on one node so that every micro-batch slot takes the same time; without
    # stragglers, whose wait is not part of the pipeline schedule.
    calibration = load_calibration().with_values(straggler_cv=0.0)
    for pp, grad_accum in [(2, 8), (4, 16), (8, 8)]:
        row = _row(num_gpus=pp, pp=pp, global_batch=grad_accum, sharding="ddp",
                   gpu="a100-sxm-80gb", model="llama2-13b")  # fmt: skip
        r = predict(pd.DataFrame([row]), calibration=calibration).iloc[0]
        assert r["grad_accum"] == grad_accum
        assert r["bubble_s"] / r["step_time_s"] == pytest.approx(
            (pp - 1) / (grad_accum + pp - 1), rel=0.02
        )


def test_interleaving_shrinks_the_bubble() -> None:
    base = _row(num_gpus=4, pp=4, global_batch=16, sharding="ddp", model="llama2-13b")
    plain = predict(pd.DataFrame([base])).iloc[0]
    inter = predict(pd.DataFrame([{**base, "vpp": 2}])).iloc[0]
    assert inter["bubble_s"] == pytest.approx(plain["bubble_s"] / 2, rel=0.05)
