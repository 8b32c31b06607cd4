"""Tests of trainscale.paper.claims.claims_table: the comparison, with fabricated reproduced
values (the claims and their tolerances: trainscale.paper.values)."""

from __future__ import annotations

import math

import pandas as pd
import pytest

from trainscale.errors import TrainscaleError
from trainscale.paper.claims import claim_ranges, claims_table
from trainscale.paper.doubling import steepest_doubling
from trainscale.paper.values import ASSUMPTIONS, CLAIMS, PREDICTED, REPRODUCED, Claim
from trainscale.schema import CLAIMS_TABLE_COLUMNS, names

# Values a reproduction might give; the paper's numbers are 37.22, 5.87, 59.67, 40.77 and 2-4.
INSIDE = {
    "throughput_drop_pct": 32.22,  # -5.00 points: on the edge, holds
    "power_drop_pct": 7.5,  # +1.63 points
    "mfu_a100_pct": 64.0,  # +4.33 points
    "mfu_h100_pct": 36.0,  # -4.77 points
    "best_degree_llama2_7b": 2.0,
    "best_degree_llama2_70b": 4.0,
}
OUTSIDE = {
    "throughput_drop_pct": 42.5,  # +5.28 points
    "power_drop_pct": 3.8,  # -2.07 points
    "mfu_a100_pct": 66.6,  # +6.93 points
    "mfu_h100_pct": 47.2,  # +6.43 points
    "best_degree_llama2_7b": 1.0,
    "best_degree_llama2_70b": 8.0,
}


def test_columns_and_one_row_per_claim():
    table = claims_table(INSIDE)
    assert list(table.columns) == ["key", *names(CLAIMS_TABLE_COLUMNS)]
    assert table["key"].tolist() == list(INSIDE)
    assert names(CLAIMS_TABLE_COLUMNS) == [
        "claim",
        "paper_value",
        "paper_range",
        "reproduced_value",
        "unit",
        "tolerance",
        "holds",
        "check",
        "setup",
        "assumptions",
        "reproduced_min",
        "reproduced_max",
        "range_over",
        "note",
    ]
    assert len(table) == len(CLAIMS) == 6
    # numbers and ranges in separate columns
    assert table["paper_value"].iloc[:4].tolist() == [37.22, 5.87, 59.67, 40.77]
    assert table["paper_value"].iloc[4:].isna().all()
    assert table["paper_range"].iloc[:4].isna().all()
    assert table["paper_range"].iloc[4:].tolist() == ["2–4", "2–4"]
    assert table["tolerance"].tolist() == [
        "±5 points",
        "±2 points",
        "±5 points",
        "±5 points",
        "within 2–4",
        "within 2–4",
    ]
    assert table["reproduced_value"].tolist() == list(INSIDE.values())
    assert table["holds"].dtype == bool


def test_holds_within_tolerance_and_range():
    assert claims_table(INSIDE)["holds"].tolist() == [True] * 6


def test_does_not_hold_outside_tolerance_and_range():
    assert claims_table(OUTSIDE)["holds"].tolist() == [False] * 6


def test_mixed_values_are_judged_one_by_one():
    values = {**INSIDE, "mfu_h100_pct": 47.2, "best_degree_llama2_70b": 3.0}
    assert claims_table(values)["holds"].tolist() == [True, True, True, False, True, True]


def test_a_missing_value_never_holds():
    assert not Claim(key="k", claim="c", paper_value=1.0, tolerance=1.0, unit="%", setup="s").holds(
        math.nan
    )


def test_every_claim_needs_a_value():
    values = dict(INSIDE)
    del values["power_drop_pct"]
    with pytest.raises(TrainscaleError, match="power_drop_pct"):
        claims_table(values)


def test_the_power_drop_says_it_is_a_prediction_and_what_it_rests_on():
    table = claims_table(INSIDE).set_index("claim")
    power = table.loc[next(c for c in table.index if c.startswith("Drop of GPU-board power"))]
    assert power["check"].startswith(PREDICTED)
    assert "power_comm_frac 0" in power["check"] and "2508.14318" in power["check"]
    assert "fitted to this value" not in power["check"]
    others = table.drop(index=power.name)
    assert (others["check"] == REPRODUCED).all()


def test_the_model_parallel_claims_say_they_compare_fsdp_plans_only():
    table = claims_table(INSIDE)
    degree = table[table["unit"] == "tp*pp"]
    assert degree["claim"].str.contains("best FSDP plan").all()
    assert degree["setup"].str.contains("FSDP plans only").all()
    assert degree["setup"].str.contains("best_plans").all()


def test_claim_rows_carry_the_calibration_and_version(monkeypatch, catalogue):
    from trainscale.paper import claims
    from trainscale.schema import CLAIM_COLUMNS, names
    from trainscale.sim.calibration import load_calibration
    from trainscale.version import __version__

    monkeypatch.setattr(claims, "reproduce_claims", lambda calibration, catalogue: INSIDE)
    monkeypatch.setattr(claims, "batch_alternatives", lambda calibration, catalogue: {4096: 9.0})
    monkeypatch.setattr(claims, "drop_note", lambda calibration, catalogue, batches: "where")
    calibration = load_calibration()
    rows = claims.claim_rows(calibration, catalogue=catalogue, sensitivity=SENSITIVITY)
    assert list(rows.columns) == names(CLAIM_COLUMNS)
    assert (rows["calibration_id"] == calibration.calibration_id).all()
    assert (rows["simulator_version"] == __version__).all()
    assert rows["holds"].all()


# A fabricated nccl_latency_scale profile (results/paper/claim_sensitivity.parquet's columns
# the ranges read).
SENSITIVITY = pd.DataFrame(
    {
        "nccl_latency_scale": [0.2, 1.0, 3.0],
        "throughput_drop_pct": [8.0, 32.0, 60.0],
        "power_drop_pct": [2.0, 7.0, 7.5],
        "mfu_a100_pct": [63.0, 64.0, 64.5],
        "mfu_h100_pct": [35.0, 36.0, 36.5],
    }
)


def test_every_claim_names_its_assumptions():
    table = claims_table(INSIDE)
    assert table["assumptions"].str.len().gt(0).all()
    drop = table.set_index("key").loc["throughput_drop_pct", "assumptions"]
    assert "global batch 2,048 sequences" in drop
    assert "fernandez-h100" in drop
    a100 = table.set_index("key").loc["mfu_a100_pct", "assumptions"]
    assert "DGX A100" in a100 and "fernandez-h100" not in a100
    # every name a claim lists is defined once, in ASSUMPTIONS
    assert all(name in ASSUMPTIONS for c in CLAIMS for name in c.assumptions)


def test_ranges_bracket_the_reproduced_value_and_say_what_they_span():
    ranges = claim_ranges(INSIDE, SENSITIVITY, {4096: 9.0, 8192: 9.5})
    table = claims_table(INSIDE, ranges=ranges)
    assert (table["reproduced_min"] <= table["reproduced_value"]).all()
    assert (table["reproduced_value"] <= table["reproduced_max"]).all()
    by_key = table.set_index("key")
    # the drop spans the latency profile and the global-batch alternatives
    assert by_key.loc["throughput_drop_pct", "reproduced_min"] == 8.0
    assert by_key.loc["throughput_drop_pct", "reproduced_max"] == 60.0
    assert "global batch 2,048, 4,096, 8,192" in by_key.loc["throughput_drop_pct", "range_over"]
    # the reproduced value counts even when outside the profile's rows
    assert by_key.loc["power_drop_pct", "reproduced_max"] == 7.5
    assert by_key.loc["mfu_a100_pct", "reproduced_min"] == 63.0
    # no alternative simulated: a point range, said so
    assert by_key.loc["best_degree_llama2_7b", "reproduced_min"] == 2.0
    assert by_key.loc["best_degree_llama2_7b", "range_over"] == "no alternative simulated"


def test_steepest_doubling_finds_the_cliff():
    frame = pd.DataFrame(
        {"num_gpus": [1024, 128, 256, 2048], "tokens_per_s_per_gpu": [90.0, 100.0, 96.0, 60.0]}
    )
    steep = steepest_doubling(frame, "tokens_per_s_per_gpu")
    assert (steep.n_from, steep.n_to) == (1024, 2048)
    assert steep.drop_pct == pytest.approx(100 * (1 - 60 / 90))
    assert steep.text == "1,024→2,048 GPUs: −33.33 %"
    assert steepest_doubling(frame.iloc[:1], "tokens_per_s_per_gpu") is None
