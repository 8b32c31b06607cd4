"""A user calibration says what it moved, per stack and GPU, and which pairs a measured row ran."""

from __future__ import annotations

import pandas as pd

from trainscale.calibrate.moved import level_changes
from trainscale.commands.calibrate import moved_table
from trainscale.sim.calibration import load_calibration
from trainscale.sim.catalogue import load_catalogue

CATALOGUE = load_catalogue()


def test_pytorch_h100_pilots_move_pytorch_everywhere_and_megatron_nowhere() -> None:
    base = load_calibration()
    # what a refit of PyTorch pilots changes: the framework's GEMM offset
    calibrated = base.with_values(
        gemm_efficiency_offset_pytorch=base.value("gemm_efficiency_offset_pytorch") - 0.2
    )
    rows = pd.DataFrame([{
        "model": "llama3-8b", "seq_len": 8192, "global_batch": 32, "micro_batch": 1,
        "gpu": "h100-sxm-80gb", "num_gpus": 8, "tp": 1, "pp": 1, "sharding": "fsdp",
        "recompute": "none", "precision": "bf16", "framework": "pytorch",
        "measured_tokens_per_s_per_gpu": 6350.0,
    }])  # fmt: skip
    changes = level_changes(rows, base, calibrated, CATALOGUE).set_index(["framework", "gpu"])
    h100, b200 = changes.loc[("pytorch", "h100-sxm-80gb")], changes.loc[("pytorch", "b200")]
    assert h100["measured"] and h100["moved_pct"] < -1
    # a calibration without recorded levels moves the framework everywhere, and it is said
    assert not b200["measured"] and b200["moved_pct"] < -1
    assert changes.loc[("megatron", "h100-sxm-80gb"), "moved_pct"] == 0.0
    text = moved_table(changes.reset_index())
    assert "pytorch    b200" in text and "not measured: cluster-wide terms only" in text
    assert "megatron   h100-sxm-80gb" not in text
