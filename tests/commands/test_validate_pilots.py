"""`trainscale validate --pilots` (trainscale.commands.validate, trainscale.tables.pilots)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from trainscale.calibrate.pilot_series import PILOT_COLUMNS
from trainscale.cli import main
from trainscale.tables.pilots import summary


def _fabricated(published, *, catalogue, shipped, bases=None, calibrated=None) -> pd.DataFrame:
    """Two sources, two series each; the pilot-calibrated prediction 5 % off, the base 10 %,
    weak scaling 20 %; source b far outside what source a shows."""
    n = 24
    rows = pd.DataFrame(
        {
            "series": np.repeat(["a | 1", "a | 2", "b | 1", "b | 2"], n // 4),
            "citation": np.repeat(["a", "b"], n // 2), "csv_row": np.arange(n),
            "framework": "pytorch", "model_name": "m", "gpu": "h100-sxm-80gb",
            "num_gpus": np.tile([16, 32, 64, 128, 256, 512], 4), "pilot_gpus": 8,
            "observed_tokens_per_s_per_gpu": 100.0,
        }
    )  # fmt: skip
    rows["log2_distance"] = np.log2(rows["num_gpus"] / 8)
    off = np.where(rows["citation"] == "a", 1.05, 3.0)
    rows["pilot_predicted_tokens_per_s_per_gpu"] = 100.0 * off
    rows["base_predicted_tokens_per_s_per_gpu"] = 110.0
    rows["weak_scaling_tokens_per_s_per_gpu"] = 120.0
    for kind in ("pilot", "base"):
        rows[f"{kind}_ape_pct"] = (rows[f"{kind}_predicted_tokens_per_s_per_gpu"] - 100.0).abs()
    rows["weak_scaling_ape_pct"] = 20.0
    rows["shipped_lower_log_factor"], rows["shipped_upper_log_factor"] = -0.2, 0.2
    return rows[list(PILOT_COLUMNS)]


def test_validate_pilots_prints_series_sources_overall_and_gates(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    import trainscale.calibrate.pilot_series

    monkeypatch.setattr(trainscale.calibrate.pilot_series, "pilot_errors", _fabricated)
    out = tmp_path / "rows.csv"
    assert main(["validate", "--pilots", "-o", str(out), "--max-mape", "50"]) == 1
    text = capsys.readouterr().out
    assert text.startswith("pilot calibration on 4 published scaling series (2 sources")
    order = [text.index(s) for s in ("\na | 1 ", "\nper source", "\nb   ", "\noverall", "\nall ")]
    assert order == sorted(order)
    # a: 5 %, b: 200 %: mean 102.5 % > base 10 % and weak scaling 20 %
    assert (
        "pilot-calibrated 102.50 % vs base 10.00 % and weak scaling 20.00 %: does not beat" in text
    )
    assert "exceeds --max-mape 50.00 %" in text
    # per scale band of the predicted row: 16-256 GPUs (5 per series) and 512 (1 per series)
    band = text[text.index("\nper scale band") : text.index("\nper framework")]
    assert "≤ 256 GPUs        20" in band and "257–1,024 GPUs     4" in band
    assert "> 1,024 GPUs" not in band
    # the evidence by distance: pooled, b's 200 % outweighs a's 5 % against the shipped 10 %
    evidence = text[text.index("\nwhere the pilots' level helps") : text.index("\nreach: ")]
    assert "0.5-1.5       4        2" in evidence and evidence.count(" no ") >= 4
    assert "reach: 0.5 doublings" in text and "what differs" in text
    rows = pd.read_csv(out)
    # b's 3x errors are outside an interval fitted on a's rows alone, and a's are inside b's
    assert not rows.loc[rows["citation"] == "b", "covered"].any()
    table = summary(rows, by="citation")
    assert list(table["citation"]) == ["a", "b", "all"]
    assert table["covered_pct"].iloc[-1] == pytest.approx(100 * rows["covered"].mean())


def test_validate_pilots_and_holdout_are_separate_reports(capsys) -> None:
    assert main(["validate", "--pilots", "--holdout"]) != 0
    assert "--pilots and --holdout are separate reports" in capsys.readouterr().err
