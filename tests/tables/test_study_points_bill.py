"""A study's bill: block puts time, energy per scope and cost to train into its points table."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from trainscale.sim.energy import PowerTerms, load_power_terms
from trainscale.sim.simulate import predict
from trainscale.study.load import load_study
from trainscale.tables.study_points import BILL_POINT_COLUMNS, bill_columns


@pytest.fixture(scope="module")
def rows(catalogue) -> pd.DataFrame:
    frame = pd.DataFrame([{
        "model": "llama2-7b", "seq_len": 4096, "global_batch": 1024, "micro_batch": 1,
        "gpu": "h100-sxm-80gb", "num_gpus": n, "tp": 1, "pp": 1, "sharding": "fsdp",
        "recompute": "none", "precision": "bf16",
    } for n in (64, 8)])  # fmt: skip
    return predict(frame, catalogue=catalogue)


def test_bill_columns_follow_the_rows_and_the_block(rows, catalogue):
    bill = {"train_tokens": "1T", "usd_per_gpu_hour": 2.0, "pue": 1.2}
    table = bill_columns(rows, bill, catalogue.hardware, load_power_terms())
    assert list(table.columns) == list(BILL_POINT_COLUMNS)
    np.testing.assert_allclose(table["train_days"], 1e12 / rows["tokens_per_s"] / 86_400)
    np.testing.assert_allclose(table["cost_usd"], 2.0 * table["gpu_hours"])
    assert (table["pue"] == 1.2).all()
    plain = bill_columns(rows, {"train_tokens": 1e12}, catalogue.hardware, PowerTerms())
    assert plain["cost_usd"].isna().all() and plain["energy_mwh_node_lo"].isna().all()
    assert (plain["pue"] == catalogue.hardware.facility.pue_default).all()


def test_the_shipped_scaleout_study_sets_a_bill(repo_root, catalogue):
    def study(name: str):
        return load_study(
            repo_root / "config" / "studies" / f"{name}.yaml",
            schema=repo_root / "workflow" / "schemas" / "study.schema.yaml",
            hardware=catalogue.hardware, models=catalogue.models,
        )  # fmt: skip

    assert study("fsdp_scaleout").bill == {"train_tokens": "1T", "usd_per_gpu_hour": 2.5}
    assert study("smoke").bill == {}
