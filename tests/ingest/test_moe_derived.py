"""Measured rows of a mixture-of-experts model: MFU over the active weights, never a dense count;
the expert-parallel degrees derived as the simulator derives them."""

from __future__ import annotations

import math

import pytest

from trainscale.ingest.derived import add_derived_metrics, flops_per_token
from trainscale.sim.catalogue import load_catalogue
from trainscale.sim.model.counts import model_flops_per_token

CATALOGUE = load_catalogue()
CFG = {
    "model": "mixtral-8x7b", "seq_len": 4096, "gpu": "h100-sxm-80gb", "num_gpus": 64, "tp": 1,
    "pp": 4, "ep": 8, "global_batch": 256, "micro_batch": 1, "precision": "bf16",
    "recompute": "none",
}  # fmt: skip


def test_a_moe_runs_mfu_counts_its_active_weights() -> None:
    models = CATALOGUE.models
    # 82.93 GFLOP per token (data/published/moe-README.md), not the dense count of its shape
    assert flops_per_token(CFG, models, hardware=False) == pytest.approx(82.93e9, rel=5e-4)
    assert flops_per_token(CFG, models, hardware=True) is None
    assert flops_per_token(CFG | {"ffn": 14336}, models, hardware=False) is None
    row = {"tokens_per_s": 5281.7 * 64}
    add_derived_metrics(
        row, CFG, (CATALOGUE.hardware, models), logged_mfu=math.nan, energy_per_step=math.nan
    )
    peak = CATALOGUE.hardware.gpus["h100-sxm-80gb"].bf16_flops_per_s
    flops = model_flops_per_token(models["mixtral-8x7b"], 4096)
    assert row["mfu"] == pytest.approx(5281.7 * flops / peak)
    assert "hfu" not in row
    # Megatron-LM's 438 TFLOPS of the MoE README at that rate: MFU 438 / 989.4
    assert row["mfu"] == pytest.approx(438e12 / peak, rel=1e-3)
    assert (row["ep"], row["etp"], row["edp"], row["dp"]) == (8, 1, 2, 16)
