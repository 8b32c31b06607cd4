"""Tests of trainscale.tables.claim_sensitivity: results/paper/claim_sensitivity.parquet printed
(the profile itself: tests/calibrate/test_sensitivity.py)."""

from __future__ import annotations

import pandas as pd

from trainscale.io.parquet import write_parquet
from trainscale.schema import CLAIM_SENSITIVITY_COLUMNS, CLAIM_SENSITIVITY_TABLE_COLUMNS, names
from trainscale.tables import render_table


def test_the_table_prints_the_profile_and_names_the_calibration(tmp_path):
    values = [0.5, 1.0, 1.47, 2.0]
    profile = pd.DataFrame(
        {
            "nccl_latency_scale": values, "calibrated": [v == 1.47 for v in values],
            "throughput_mape_pct": 10.0, "busbw_mape_pct": 12.0,
            "throughput_drop_pct": [8.0, 22.0, 40.8, 52.3],
            "drop_claim_holds": [False, False, True, False], "power_drop_pct": 5.87,
            "mfu_a100_pct": 58.0, "mfu_h100_pct": 41.0,
            "calibration_id": ["a", "b", "c", "d"], "reference_calibration_id": "cal123",
        }
    )  # fmt: skip
    path = tmp_path / "claim_sensitivity.parquet"
    write_parquet(profile, path, CLAIM_SENSITIVITY_COLUMNS)

    csv, _, tex = render_table("claim_sensitivity", tmp_path / "t", {"sensitivity": str(path)})

    printed = pd.read_csv(csv)
    assert list(printed.columns) == names(CLAIM_SENSITIVITY_TABLE_COLUMNS)
    assert "calibration_id" not in printed.columns
    assert printed["calibrated"].tolist() == [False, False, True, False]
    assert "trainscale calibration cal123 marks the calibrated row" in tex.read_text()
    assert "(study: 37.22 %)" in tex.read_text()
