"""The block's compute-stream time: backward GEMMs and FlashAttention's backward against the
forward, and what each recomputation mode executes again."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from trainscale.sim.calibration import load_calibration
from trainscale.sim.configs import build_configs
from trainscale.sim.model.work import block_work
from trainscale.sim.plan.block_compute import ATTENTION_BACKWARD_RATIO, block_compute
from trainscale.sim.plan.efficiency import efficiencies

#: Llama-2-7B pretraining on one H100 node (bf16, FSDP), one row per recomputation mode.
_ROW = {
    "model": "llama2-7b", "seq_len": 4096, "global_batch": 64, "micro_batch": 1,
    "gpu": "h100-sxm-80gb", "num_gpus": 8, "tp": 1, "pp": 1, "cp": 1, "sharding": "fsdp",
    "precision": "bf16", "framework": "pytorch",
}  # fmt: skip


@pytest.fixture(scope="module")
def modes(catalogue):
    rows = pd.DataFrame([{**_ROW, "recompute": r} for r in ("none", "selective", "full")])
    c, valid, _ = build_configs(rows, hardware=catalogue.hardware, models=catalogue.models,
                                frameworks=catalogue.frameworks)  # fmt: skip
    assert list(valid) == [0, 1, 2]
    cal = load_calibration()
    eff = efficiencies(c.stack.framework, c.plan.fp8, c.system, cal)
    w = block_work(c.model, c.plan, c.stack)
    return block_compute(c.plan, c.system, c.model.hidden, c.model.heads, w, cal, eff)


def test_flash_attention_backward_is_two_and_a_half_forwards():
    # FlashAttention-2 (Dao 2023, arXiv 2307.08691, the backward pass): five matrix
    # multiplications against the forward's two, 2.5x its FLOPs.
    assert ATTENTION_BACKWARD_RATIO == 5 / 2


def test_backward_gemms_take_twice_the_forward_and_recomputation_adds_what_it_reruns(modes):
    none, selective, full = 0, 1, 2
    c = modes
    # Input and weight gradients: 2x the forward GEMM FLOPs, 6 FLOPs per parameter and token with
    # the forward's 2 (Narayanan et al. 2021, arXiv 2104.04473, appendix on floating-point
    # operations).
    np.testing.assert_array_equal(c.gemm_bwd_s, 2.0 * c.gemm_fwd_s)
    plain = c.gemm_bwd_s + ATTENTION_BACKWARD_RATIO * c.attention_fwd_s
    assert c.bwd_dense_s[none] == pytest.approx(plain[none], rel=1e-12)
    # Selective recomputation reruns the attention core only (Korthikanti et al. 2022, arXiv
    # 2205.05198, selective activation recomputation); full recomputation reruns the whole
    # forward, memory-bound kernels included.
    assert c.bwd_dense_s[selective] == pytest.approx(
        plain[selective] + c.attention_fwd_s[selective], rel=1e-12
    )
    assert c.bwd_dense_s[full] == pytest.approx(plain[full] + c.fwd_dense_s[full], rel=1e-12)
    assert c.bwd_memory_s[none] == pytest.approx(2.0 * c.fwd_memory_s[none], rel=1e-12)
    assert c.bwd_memory_s[full] == pytest.approx(3.0 * c.fwd_memory_s[full], rel=1e-12)
