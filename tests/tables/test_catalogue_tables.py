"""Tests of the catalogue and plan tables (hardware, models, best_plans) and render_table."""

from __future__ import annotations

import pandas as pd
import pytest

from trainscale.errors import TrainscaleError
from trainscale.tables import TABLES, render_table
from trainscale.tables.best_plans import BEST_PLAN_COLUMNS, best_plans
from trainscale.tables.hardware import HARDWARE_COLUMNS, hardware_table
from trainscale.tables.models import MODEL_COLUMNS, models_table


def test_hardware_table_columns_and_growth_over_the_row_above():
    table = hardware_table()
    assert tuple(table.columns) == HARDWARE_COLUMNS
    assert table["gpu"].iloc[0] == "v100-sxm-32gb"
    assert table["bf16_tflops_growth_x"].isna().iloc[0]
    ratio = table["bf16_tflops"] / table["bf16_tflops"].shift(1)
    assert table["bf16_tflops_growth_x"].iloc[1:].tolist() == pytest.approx(ratio.iloc[1:].tolist())
    h100 = table.set_index("gpu").loc["h100-sxm-80gb"]
    # DGX H100 (data/hardware.yaml): 989.4 TFLOP/s dense bf16, 400 Gb/s NIC per GPU, 700 W
    assert (h100["bf16_tflops"], h100["nic_gbit_per_gpu"], h100["tdp_w"]) == pytest.approx(
        (989.4, 400.0, 700.0)
    )


def test_models_table_columns_and_parameter_counts():
    table = models_table().set_index("model")
    assert (table.reset_index().columns.tolist()) == list(MODEL_COLUMNS)
    # Llama-2 7B has 6.74B parameters (Touvron et al. 2023, HF config)
    assert table.loc["llama2-7b", "params_b"] == pytest.approx(6.74, abs=0.01)
    assert table["params_b"].is_monotonic_increasing


def test_best_plans_picks_the_fastest_fitting_plan(best_sim):
    table = best_plans(best_sim)
    assert tuple(table.columns) == BEST_PLAN_COLUMNS
    for _, row in table.iterrows():
        rows = best_sim[
            (best_sim["model"] == row["model"])
            & (best_sim["num_gpus"] == row["num_gpus"])
            & best_sim["fits_memory"]
        ]
        assert row["tokens_per_s"] == rows["tokens_per_s"].max()
        assert row["plans_fitting"] == len(rows)
    assert table["model"].tolist()[0] == "llama2-7b"


def test_best_plans_leaves_out_counts_where_nothing_fits(best_sim):
    none_fit = best_sim.assign(fits_memory=best_sim["num_gpus"] != 64)
    assert set(best_plans(none_fit)["num_gpus"]) == {2048}


def test_render_table_writes_three_files(tmp_path):
    paths = render_table("models", tmp_path / "models")
    assert [p.suffix for p in paths] == [".csv", ".md", ".tex"]
    assert pd.read_csv(paths[0]).columns.tolist() == list(MODEL_COLUMNS)
    assert "\\toprule" in paths[2].read_text()


def test_render_table_names_unknown_tables_and_missing_inputs(tmp_path):
    with pytest.raises(TrainscaleError, match="unknown table 'nope'"):
        render_table("nope", tmp_path / "x")
    missing = r"missing input\(s\) \['validation', 'holdout', 'published'\]"
    with pytest.raises(TrainscaleError, match=missing):
        render_table("validation", tmp_path / "x", {})
    assert set(TABLES) == {
        "hardware",
        "models",
        "claims",
        "scaling_fits",
        "validation",
        "best_plans",
        "claim_sensitivity",
    }
