"""trainscale.paper.sensitivity and `trainscale calibrate --profile/--prior-scan`: how firmly
the
published data determine the parameters and the paper's claims."""

from __future__ import annotations

import math
from pathlib import Path

import pandas as pd
import pytest
import yaml

from trainscale.cli import main
from trainscale.errors import TrainscaleError
from trainscale.paper import sensitivity
from trainscale.paper.sensitivity import prior_width_scan, profile
from trainscale.paper.setup import throughput_drop_pct
from trainscale.paths import data_dir
from trainscale.published.measurements import PublishedData
from trainscale.schema import (
    CLAIM_SENSITIVITY_COLUMNS,
    PRIOR_SCAN_COLUMNS,
    PROFILE_COLUMNS,
    names,
)
from trainscale.sim.calibration import load_calibration

# latency_profile (conftest.py): the profile of nccl_latency_scale at the calibrated value, at
# twice NCCL's table and at half of it


def test_profile_at_the_calibrated_value_reproduces_the_calibration(
    latency_profile: pd.DataFrame, catalogue, assert_columns
) -> None:
    stored = yaml.safe_load((data_dir() / "calibration.yaml").read_text())
    at_calibrated = latency_profile.iloc[0]
    assert_columns(latency_profile, PROFILE_COLUMNS)
    assert at_calibrated["throughput_mape_pct"] == pytest.approx(
        stored["residual_error"]["throughput_mape_pct"], abs=0.01
    )
    assert at_calibrated["throughput_drop_pct"] == pytest.approx(
        throughput_drop_pct(load_calibration(), catalogue=catalogue), abs=0.01
    )


def test_more_ring_latency_deepens_the_drop_but_not_the_128_gpu_mfu(
    latency_profile: pd.DataFrame,
) -> None:
    calibrated, doubled = latency_profile.iloc[0], latency_profile.iloc[1]
    assert doubled["value"] == 2.0
    assert doubled["calibration_id"] != calibrated["calibration_id"]
    # At 2,048 GPUs FSDP's rings are latency-bound and exposed; at 128 GPUs they stay hidden.
    assert doubled["throughput_drop_pct"] > calibrated["throughput_drop_pct"] + 10.0
    assert abs(doubled["mfu_h100_pct"] - calibrated["mfu_h100_pct"]) < 1.0
    # The throughput rows can barely tell the latencies apart; the nccl-tests scans (the paper's
    # own among them) can: half NCCL's latency misses the bus bandwidths badly.
    assert abs(doubled["throughput_mape_pct"] - calibrated["throughput_mape_pct"]) < 0.5
    halved = latency_profile.iloc[2]
    assert halved["busbw_mape_pct"] > calibrated["busbw_mape_pct"] + 10.0


@pytest.mark.parametrize(
    ("name", "value", "message"),
    [
        ("hbm_efficiency", 0.8, "not a fitted throughput parameter; valid: gemm_size_scale"),
        ("latency", 1.0, "cannot pin 'latency'"),
        ("nccl_latency_scale", 9.0, r"outside its bounds \[0.1, 3\]"),
    ],
)
def test_bad_pins_are_errors_naming_the_parameter(
    name: str, value: float, message: str, published: PublishedData, catalogue
) -> None:
    with pytest.raises(TrainscaleError, match=message):
        profile(name, [value], published, catalogue=catalogue)


def test_prior_scan_matches_leave_one_source_out(catalogue, unpriored_scan, assert_columns) -> None:
    # unpriored_scan (conftest.py): two sources' throughput rows, no collective row, and on them
    # prior_width_scan([math.inf], …) and leave_one_source_out(…, prior_scale=math.inf)
    with pytest.raises(TrainscaleError, match="prior_scale must be > 0"):
        prior_width_scan([0.0], unpriored_scan.data, catalogue=catalogue)
    scan, held_out = unpriored_scan.scan, unpriored_scan.held_out
    assert_columns(scan, PRIOR_SCAN_COLUMNS)
    assert list(scan["prior_scale"]) == [math.inf]
    assert scan["heldout_mape_pct"].iloc[0] == pytest.approx(
        held_out.loc[held_out["source"] == "all", "mape_pct"].iloc[0]
    )


def test_cli_profile_prints_and_writes_the_table(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    table = tmp_path / "profile.csv"
    assert main(["calibrate", "--profile", "straggler_cv=0.05", "--table", str(table)]) == 0
    assert "straggler_cv" in capsys.readouterr().out
    written = pd.read_csv(table)
    assert list(written["value"]) == [0.05]


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--profile", "nccl_latency_scale"], "expected NAME=V1,V2"),
        (["--profile", "nccl_latency_scale=fast"], "'fast' is not a number"),
        (["--prior-scan", "1,x"], "'x' is not a number"),
        (["--table", "out.csv"], "--table needs --profile or --prior-scan"),
    ],
)
def test_cli_bad_sensitivity_arguments(
    argv: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["calibrate", *argv]) == 2
    assert message in capsys.readouterr().err


def test_claim_sensitivity_marks_the_calibrated_row_and_the_claim(monkeypatch, catalogue) -> None:
    calibrated = load_calibration().nccl_latency_scale
    seen = {}

    def fake_profile(parameter, values, published, *, catalogue):
        seen["values"] = list(values)
        seen["catalogue"] = catalogue
        return pd.DataFrame(
            {
                "parameter": parameter, "value": values,
                "throughput_mape_pct": 9.0, "throughput_median_ape_pct": 4.0,
                "busbw_mape_pct": 13.0,
                "throughput_drop_pct": [10.0 * v + 20.0 for v in values],
                "power_drop_pct": 5.87, "mfu_a100_pct": 55.0, "mfu_h100_pct": 38.0,
                "calibration_id": "x",
            }
        )  # fmt: skip

    monkeypatch.setattr(sensitivity, "profile", fake_profile)
    table = sensitivity.claim_sensitivity(None, load_calibration(), catalogue=catalogue)
    assert seen["values"] == sorted(seen["values"]) and calibrated in seen["values"]
    assert seen["catalogue"] is catalogue
    assert list(table.columns) == names(CLAIM_SENSITIVITY_COLUMNS)
    assert (table["reference_calibration_id"] == load_calibration().calibration_id).all()
    assert table["calibrated"].sum() == 1
    assert table.loc[table["calibrated"], "nccl_latency_scale"].iloc[0] == calibrated
    # drop = 10 v + 20 holds within 37.22 ± 5 for v in [1.222, 2.222].
    holds = dict(zip(table["nccl_latency_scale"], table["drop_claim_holds"], strict=True))
    assert holds[1.25] and holds[2.0] and not holds[1.0] and not holds[3.0]
