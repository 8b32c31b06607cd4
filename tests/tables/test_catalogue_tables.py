"""Tests of the catalogue and plan tables (hardware, models, best_plans) and render_table."""

from __future__ import annotations

import pandas as pd
import pytest

from trainscale.errors import TrainscaleError
from trainscale.report.best_plans import NO_DATA_PARALLEL, best_plans
from trainscale.schema import (
    BEST_PLAN_COLUMNS,
    CLAIMS_TABLE_COLUMNS,
    HARDWARE_COLUMNS,
    MODEL_COLUMNS,
    names,
)
from trainscale.study.report import within_usable_memory
from trainscale.tables import TABLES, render_table
from trainscale.tables.hardware import hardware_table
from trainscale.tables.models import models_table


def test_hardware_table_columns_and_growth_over_the_v100(catalogue):
    table = hardware_table(catalogue.hardware)
    assert list(table.columns) == names(HARDWARE_COLUMNS)
    assert table["gpu"].iloc[0] == "v100-sxm-32gb"
    # growth columns compare every GPU with the V100, not with whatever row is above
    assert table["bf16_tflops_x_v100"].iloc[0] == 1.0
    ratio = table["bf16_tflops"] / table["bf16_tflops"].iloc[0]
    assert table["bf16_tflops_x_v100"].tolist() == pytest.approx(ratio.tolist())
    h100 = table.set_index("gpu").loc["h100-sxm-80gb"]
    # DGX H100 (data/hardware.yaml): 989.4 TFLOP/s dense bf16, 400 Gb/s NIC per GPU, 700 W
    assert (h100["bf16_tflops"], h100["nic_gbit_per_s_per_gpu"], h100["tdp_w"]) == pytest.approx(
        (989.4, 400.0, 700.0)
    )


def test_table_columns_name_their_unit_words_unambiguously():
    """No printed column says "gbps" (GB/s for HBM and NVLink but Gb/s for the NIC in the
    catalogue): bytes are "gbytes", bits "gbit" (user trial item 17)."""
    for columns in (HARDWARE_COLUMNS, BEST_PLAN_COLUMNS, MODEL_COLUMNS, CLAIMS_TABLE_COLUMNS):
        assert not [c for c in names(columns) if "gbps" in c]
    assert {"hbm_gbytes_per_s", "nvlink_gbytes_per_s", "nic_gbit_per_s_per_gpu"} <= set(
        names(HARDWARE_COLUMNS)
    )
    growth = [c for c in names(HARDWARE_COLUMNS) if c.endswith("_x_v100")]
    assert len(growth) == 5


def test_models_table_columns_and_parameter_counts(catalogue):
    table = models_table(catalogue.models).set_index("model")
    assert (table.reset_index().columns.tolist()) == names(MODEL_COLUMNS)
    # Llama-2 7B has 6.74B parameters (Touvron et al. 2023, HF config)
    assert table.loc["llama2-7b", "params_b"] == pytest.approx(6.74, abs=0.01)
    assert table["params_b"].is_monotonic_increasing


def test_best_plans_picks_the_fastest_fitting_plan(best_sim, catalogue):
    table = best_plans(best_sim, models=catalogue.models)
    assert list(table.columns) == names(BEST_PLAN_COLUMNS)
    for _, row in table.iterrows():
        # fitting within the usable memory (a plan kept only within the memory margin is not
        # a best plan)
        rows = best_sim[
            (best_sim["model"] == row["model"])
            & (best_sim["num_gpus"] == row["num_gpus"])
            & within_usable_memory(best_sim)
        ]
        assert row["tokens_per_s"] == rows["tokens_per_s"].max()
        assert row["plans_fitting"] == len(rows)
    assert table["model"].tolist()[0] == "llama2-7b"


def test_best_plans_never_calls_a_single_replica_ddp(best_sim, catalogue):
    table = best_plans(best_sim, models=catalogue.models)
    assert "calibration_id" not in table.columns  # one id for all rows: in the caption
    assert NO_DATA_PARALLEL not in set(table["sharding"])  # every best plan here has dp > 1
    single = best_plans(best_sim.assign(dp=1, sharding="ddp"), models=catalogue.models)
    assert set(single["sharding"]) == {NO_DATA_PARALLEL}


def test_best_plans_caption_explains_plans_fitting_and_the_calibration(
    best_sim, catalogue, tmp_path
):
    from trainscale.tables.best_plans import render

    _, _, tex = render(tmp_path / "best_plans", best_sim, models=catalogue.models)
    text = " ".join(tex.read_text().split())
    assert r"plans\_fitting: how many swept plans fit in memory" in text
    assert "FSDP plans only" in text
    assert str(best_sim["calibration_id"].iloc[0]) in text


def test_best_plans_leaves_out_counts_where_nothing_fits(best_sim, catalogue):
    none_fit = best_sim.assign(fits_memory=best_sim["num_gpus"] != 64)
    assert set(best_plans(none_fit, models=catalogue.models)["num_gpus"]) == {2048}


def test_render_table_writes_three_files(tmp_path, catalogue):
    paths = render_table("models", tmp_path / "models", catalogues={"models": catalogue.models})
    assert [p.suffix for p in paths] == [".csv", ".md", ".tex"]
    assert pd.read_csv(paths[0]).columns.tolist() == names(MODEL_COLUMNS)
    assert "\\toprule" in paths[2].read_text()


def test_render_table_names_unknown_tables_and_missing_inputs(tmp_path):
    with pytest.raises(TrainscaleError, match="unknown table 'nope'"):
        render_table("nope", tmp_path / "x")
    missing = r"missing input\(s\) \['validation', 'holdout', 'published', 'sim_vs_measured'\]"
    with pytest.raises(TrainscaleError, match=missing):
        render_table("validation", tmp_path / "x", {})
    # the catalogues are the caller's: a table never loads the shipped ones itself
    with pytest.raises(TrainscaleError, match=r"table models: missing catalogue\(s\) \['models'\]"):
        render_table("models", tmp_path / "x")
    assert set(TABLES) == {
        "hardware",
        "models",
        "claims",
        "scaling_fits",
        "validation",
        "best_plans",
        "claim_sensitivity",
        "pilots",
    }


def test_no_schema_column_or_catalogue_key_says_gbps() -> None:
    """One unit word per unit: GB/s is ``gbytes_per_s`` and Gb/s ``gbit_per_s``, never "gbps"."""
    import re
    from pathlib import Path

    from trainscale import schema

    tables = [v for k, v in vars(schema).items() if k.endswith("_COLUMNS") and isinstance(v, tuple)]
    names = {getattr(c, "name", c) for table in tables for c in table}
    assert names and not [n for n in names if "gbps" in str(n)]
    catalogue = Path(__file__).resolve().parents[2] / "data" / "hardware.yaml"
    keys = re.findall(r"^\s*([a-z_0-9]+):", catalogue.read_text(), flags=re.M)
    assert "hbm_gbytes_per_s" in keys and not [k for k in keys if "gbps" in k]
