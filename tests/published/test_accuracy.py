"""Accuracy against the published measurements, and that every row is accounted for."""

from __future__ import annotations

import pandas as pd
import pytest
import yaml

from trainscale.paths import data_dir
from trainscale.published.accuracy import validate_published
from trainscale.published.summary import summarise


@pytest.fixture(scope="module")
def tables(shipped_calibration, published, catalogue) -> dict[str, pd.DataFrame]:
    return validate_published(shipped_calibration, published, catalogue=catalogue)


def test_recorded_residual_error_is_what_the_stored_calibration_gives(tables: dict) -> None:
    """data/calibration.yaml states its in-sample error per source; the simulator reproduces it
    (the README's accuracy table is measured by ``trainscale validate --holdout``)."""
    stored = yaml.safe_load((data_dir() / "calibration.yaml").read_text())["residual_error"]
    summary = summarise(tables["throughput"]).set_index("source")["mape_pct"]
    assert summary["all"] == pytest.approx(stored["throughput_mape_pct"], abs=0.01)
    for source, mape in stored["per_source_mape_pct"].items():
        assert summary[source] == pytest.approx(mape, abs=0.01), source


def test_every_published_row_is_predicted_or_rejected_with_a_reason(
    tables: dict, published
) -> None:
    raw = pd.read_csv(data_dir() / "published" / "measurements.csv", dtype=str)
    lines = set(range(2, len(raw) + 2))
    moe = published.moe[published.moe["data_file"] == "measurements.csv"]
    predicted = set(tables["throughput"]["csv_row"]) | set(tables["collectives"]["csv_row"])
    predicted |= set(moe["csv_row"])  # the MoE rows: trainscale.published.moe, apart
    rejected = set(tables["rejects"]["csv_row"])
    assert predicted | rejected == lines
    assert not predicted & rejected
    assert tables["rejects"]["reason"].str.len().min() > 10


def test_throughput_rows_cover_every_row_with_a_throughput_figure(tables: dict, published) -> None:
    metrics = {"tokens_per_s_per_GPU", "achieved_TFLOPs_per_GPU", "TFLOPs_per_GPU",
               "step_time_ms"}  # fmt: skip
    raw = pd.read_csv(data_dir() / "published" / "measurements.csv", dtype=str)
    with_figure = raw[raw["metric"].isin(metrics)]
    moe = published.moe[published.moe["data_file"] == "measurements.csv"]
    rows = set(tables["throughput"]["csv_row"]) | set(moe["csv_row"])
    for index, row in with_figure.iterrows():
        if index + 2 not in rows:
            reason = tables["rejects"].set_index("csv_row").loc[index + 2, "reason"]
            assert reason, f"line {index + 2} ({row['source']}) neither predicted nor explained"


def test_observed_values_are_converted_with_the_source_convention(tables: dict) -> None:
    rows = tables["throughput"]
    foundry = rows[rows["citation"].str.contains("llm-foundry")]
    assert (foundry["observed_tokens_per_s_per_gpu"] == foundry["published_value"]).all()
    # Narayanan Table 1, GPT-1.7B: 137 TFLOP/s with eq. (3), 96 l h^2 (1 + s/6h + V/16lh)
    first = rows[(rows["csv_row"] == 2)].iloc[0]
    flops = 96 * 24 * 2304**2 * (1 + 2048 / (6 * 2304) + 51200 / (16 * 24 * 2304))
    assert first["observed_tokens_per_s_per_gpu"] == pytest.approx(137e12 / flops, rel=1e-9)
