"""The MoE stage of the calibration: it moves only the MoE parameters, leaves every dense
prediction alone, leaves each MoE source out in turn, and gives MoE rows their own intervals
and out-of-support flags."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pandas as pd
import pytest

from trainscale.calibrate import moe as stage
from trainscale.sim.parameters import SHARED_PARAMETERS
from trainscale.sim.simulate import predict

MOE = {p.name for p in SHARED_PARAMETERS if p.group == "moe"}


@pytest.fixture(scope="module")
def fit(published, shipped_calibration, catalogue):
    return stage.fit_moe(published.moe, shipped_calibration, catalogue=catalogue)


def test_the_stage_fits_the_moe_parameters_only(fit, shipped_calibration) -> None:
    assert {p.name for p in stage.moe_parameters()} == MOE
    before, after = shipped_calibration.as_dict(), fit.calibration.as_dict()
    assert {k for k in before if before[k] != after[k]} <= MOE
    # the shipped file holds this fit (calibrate -o data/calibration.yaml)
    assert {k: after[k] for k in MOE} == {k: before[k] for k in MOE}
    assert len(fit.rows) == 53 and fit.rows["ape_pct"].notna().all()


def test_dense_predictions_do_not_depend_on_the_moe_parameters(
    published, shipped_calibration, catalogue
) -> None:
    priors = replace(shipped_calibration, **{p.name: p.default for p in stage.moe_parameters()})
    rows = published.throughput
    shipped = predict(rows, catalogue=catalogue, calibration=shipped_calibration)
    at_priors = predict(rows, catalogue=catalogue, calibration=priors)
    assert np.array_equal(shipped["tokens_per_s_per_gpu"], at_priors["tokens_per_s_per_gpu"])


def test_each_moe_source_is_predicted_by_a_fit_without_it(
    published, shipped_calibration, catalogue, monkeypatch
) -> None:
    seen: list[set[str]] = []
    fit_moe = stage.fit_moe

    def recording(rows: pd.DataFrame, base, **kw):
        seen.append(set(rows["citation"]))
        return fit_moe(rows, base, **kw)

    monkeypatch.setattr(stage, "fit_moe", recording)
    held = stage.held_out_moe(published.moe, shipped_calibration, catalogue=catalogue)
    sources = sorted(published.moe["citation"].unique())
    assert len(seen) == len(sources) == 5
    for source, used in zip(sources, seen, strict=True):
        assert source not in used and len(used) == 4
    assert set(held["citation"]) == set(sources)


def test_an_moe_run_no_moe_row_covers_says_so(shipped_calibration, catalogue) -> None:
    assert shipped_calibration.moe_intervals is not None
    row = {"model": "qwen3-235b-a22b", "gpu": "a100-sxm-80gb", "num_gpus": 256, "seq_len": 4096,
           "global_batch": 2048, "micro_batch": 1, "tp": 2, "pp": 8, "ep": 8,
           "sharding": "zero1", "recompute": "full", "precision": "bf16",
           "framework": "deepspeed"}  # fmt: skip
    dense = {**row, "model": "llama3-70b", "ep": 1, "tp": 8, "pp": 4}
    out = predict(pd.DataFrame([row, dense]), catalogue=catalogue, calibration=shipped_calibration)
    flags = out["extrapolation"].fillna("")
    assert "gpu:a100-sxm-80gb" in flags[0] and "framework:deepspeed" in flags[0]
    assert "gpu:" not in flags[1]  # the dense rows' facts: A100 and DeepSpeed have dense rows
    without = replace(shipped_calibration, moe_intervals=None)
    plain = predict(pd.DataFrame([dense]), catalogue=catalogue, calibration=without)
    assert plain["tokens_per_s_per_gpu_lo"][0] == out["tokens_per_s_per_gpu_lo"][1]
