"""Fine-tuning: LoRA removes exactly the frozen weights' weight-gradient GEMMs, optimizer state and
gradient traffic; forward and input-gradient GEMMs stay; full fine-tuning is pretraining's work."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from trainscale.errors import ConfigurationError
from trainscale.sim.calibration import load_calibration
from trainscale.sim.configs import build_configs
from trainscale.sim.model.finetune import adapter_gemms, trainable_share
from trainscale.sim.model.work import block_work
from trainscale.sim.plan.block_compute import block_compute
from trainscale.sim.plan.efficiency import efficiencies
from trainscale.sim.simulate import predict
from trainscale.sim.system.compute import gemm_time

#: The MLPerf Training llama2_70b_lora configuration of the metered Dell run
#: (data/published/power-measurements.csv lines 12-17).
_MLPERF_LORA = {
    "model": "llama2-70b", "seq_len": 8192, "global_batch": 8, "micro_batch": 1,
    "gpu": "h100-sxm-80gb", "num_gpus": 64, "tp": 4, "pp": 1, "cp": 2, "sharding": "zero1",
    "recompute": "none", "precision": "fp8", "framework": "megatron",
    "system": "dell-xe9680-h100",
}  # fmt: skip


@pytest.fixture(scope="module")
def modes(catalogue):
    rows = pd.DataFrame([{**_MLPERF_LORA, "finetune": m} for m in ("none", "lora", "full")])
    c, valid, _ = build_configs(rows, hardware=catalogue.hardware, models=catalogue.models,
                                frameworks=catalogue.frameworks)  # fmt: skip
    assert list(valid) == [0, 1, 2]
    return c


def test_lora_drops_weight_gradient_gemms_and_keeps_forward_and_input_gradient(modes):
    cal = load_calibration()
    w = block_work(modes.model, modes.plan, modes.stack)
    eff = efficiencies(modes.stack.framework, modes.plan.fp8, modes.system, cal)
    comp = block_compute(
        modes.plan, modes.system, modes.model.hidden, modes.model.heads, w, cal, eff
    )
    kw = {"peak": modes.system.peak_flops_per_s * eff.clock_ratio, "eta_max": eff.gemm_max,
          "d0": modes.system.gemm_half_efficiency_dim * cal.gemm_size_scale,
          "hbm_bw": modes.system.hbm_bytes_per_s, "exponent": cal.gemm_size_exponent}  # fmt: skip
    base = sum(gemm_time(m, n, k, **kw) for m, n, k in w.gemms)
    adapters = sum(gemm_time(m, n, k, **kw) for m, n, k in adapter_gemms(modes.plan.lora_rank, w))
    none, lora, full = 0, 1, 2
    # pretraining and full fine-tuning: forward, then input- and weight-gradient GEMMs (2x)
    assert comp.gemm_fwd_s[none] == comp.gemm_fwd_s[full] == base[none]
    assert comp.gemm_bwd_s[none] == comp.gemm_bwd_s[full] == 2.0 * base[none]
    # LoRA: the frozen GEMMs' forward and input gradient stay, their weight gradient goes;
    # the adapters run forward, input and weight gradient
    assert comp.gemm_fwd_s[lora] == pytest.approx(base[lora] + adapters[lora])
    assert comp.gemm_bwd_s[lora] == pytest.approx(base[lora] + 2.0 * adapters[lora])
    assert adapters[lora] < 0.05 * base[lora]  # rank 16 on 8,192-wide projections
    # LoRA takes away a third of the block's GEMM time (the weight gradients), no more: forward
    # and input gradient stay, 2/3 of pretraining's, plus the adapters' few percent
    gemms = comp.gemm_fwd_s + comp.gemm_bwd_s
    assert 2.0 / 3.0 < gemms[lora] / gemms[none] < 2.0 / 3.0 + 0.05
    # the LM head: forward and input gradient only
    assert comp.head_dense_s[lora] == pytest.approx(comp.head_dense_s[none] * 2.0 / 3.0)


def test_lora_keeps_no_optimizer_state_and_sends_adapter_gradients_only(modes, catalogue):
    w = block_work(modes.model, modes.plan, modes.stack)
    share = trainable_share(modes.plan.finetune, modes.plan.lora_rank, w)
    assert share[0] == share[2] == 1.0
    # rank 16 on one tp-4 rank's QKV (8,192 -> 2,048 + 2 x 256) and output (2,048 -> 8,192) of
    # Llama-2-70B's block (2 h^2 + 2 h kv + 3 h ffn weights, a quarter per rank)
    h, kv, ffn, r = 8192.0, 1024.0, 28672.0, 16.0
    adapters = r * (h + h / 4 + 2 * kv / 4) + r * (h / 4 + h)
    block = (2 * h * h + 2 * h * kv + 3 * h * ffn) / 4
    assert share[1] == pytest.approx(adapters / block, rel=1e-9)
    rows = pd.DataFrame([{**_MLPERF_LORA, "finetune": m} for m in ("none", "lora", "full")])
    out = predict(rows, catalogue=catalogue)
    assert out["mem_gib_per_gpu"][1] < out["mem_gib_per_gpu"][0] - 20  # no Adam state
    assert out["exposed_comm_s"][1] < out["exposed_comm_s"][0]  # no weight-gradient reduction
    assert out["tokens_per_s_per_gpu"][0] == out["tokens_per_s_per_gpu"][2]
    assert out["tokens_per_s_per_gpu"][1] > out["tokens_per_s_per_gpu"][0]


def test_finetune_column_is_checked(catalogue):
    bad = pd.DataFrame([{**_MLPERF_LORA, "finetune": "qlora"}])
    with pytest.raises(ConfigurationError, match=r"finetune.*allowed: none, lora, full"):
        predict(bad, catalogue=catalogue)
    with pytest.raises(ConfigurationError, match="lora_rank"):
        predict(bad.assign(finetune="lora", lora_rank=0), catalogue=catalogue)
    empty = predict(pd.DataFrame([{**_MLPERF_LORA, "finetune": ""}]), catalogue=catalogue)
    none = predict(pd.DataFrame([_MLPERF_LORA]), catalogue=catalogue)
    assert np.array_equal(empty["tokens_per_s_per_gpu"], none["tokens_per_s_per_gpu"])
