"""Tests of trainscale.ingest.accuracy: measured runs against the simulator
(results/sim_vs_measured.parquet)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from trainscale import predict
from trainscale.ingest.accuracy import _CONFIG, _reason, predict_measured
from trainscale.io.parquet import conform
from trainscale.schema import DATASET_COLUMNS, SIM_VS_MEASURED_COLUMNS, names
from trainscale.sim.calibration import load_calibration
from trainscale.sim.catalogue import load_catalogue

_COMMON = {
    "source": "measured", "study": "runs", "layers": 2, "hidden": 256, "heads": 4, "kv_heads": 4,
    "ffn": 1024, "vocab": 1000, "mlp": "swiglu", "seq_len": 256, "global_batch": 8,
    "micro_batch": 1, "tp": 1, "pp": 1, "sharding": "ddp", "recompute": "none",
    "precision": "bf16",
}  # fmt: skip


@pytest.fixture(scope="module")
def measured() -> pd.DataFrame:
    """One measured H100 run and one measured CPU run, in the dataset schema."""
    rows = [
        {**_COMMON, "run_id": "gpu_run", "config_id": "tiny_h100_n8", "gpu": "h100-sxm-80gb",
         "num_gpus": 8, "step_time_s": 0.05, "tokens_per_s_per_gpu": 5120.0},
        {**_COMMON, "run_id": "cpu_run", "config_id": "tiny_cpu_n1", "gpu": "cpu",
         "num_gpus": 1, "step_time_s": 2.0, "tokens_per_s_per_gpu": 1024.0},
    ]  # fmt: skip
    return conform(pd.DataFrame(rows), DATASET_COLUMNS)


def test_predict_measured_predicts_gpu_runs_and_explains_cpu_runs(measured):
    table = predict_measured(measured, load_calibration(), catalogue=load_catalogue())
    assert list(table.columns) == names(SIM_VS_MEASURED_COLUMNS)
    table = table.set_index("run_id")
    gpu_config = measured.set_index("run_id").loc[["gpu_run"], _CONFIG]
    direct = predict(gpu_config.dropna(axis=1).reset_index(drop=True))
    assert table.loc["gpu_run", "predicted_step_time_s"] == pytest.approx(
        direct["step_time_s"].iloc[0]
    )
    assert table.loc["gpu_run", "reason"] == ""
    assert table.loc["gpu_run", "calibration_id"] == direct["calibration_id"].iloc[0]
    assert np.isnan(table.loc["cpu_run", "predicted_step_time_s"])
    assert "unknown GPU 'cpu'" in table.loc["cpu_run", "reason"]
    assert table.loc["cpu_run", "calibration_id"] == ""
    assert table.loc["cpu_run", "measured_step_time_s"] == 2.0


def test_reasons_are_one_readable_line():
    rejects = pd.DataFrame(
        [(0, "seq_len, global_batch, micro_batch, gpu, layers", "missing column(s)")],
        columns=["row", "column", "reason"],
    )
    reason = _reason(rejects)
    assert reason.startswith("the run records no training configuration")
    assert "seq_len, global_batch, micro_batch and 2 more" in reason
    cpu = pd.DataFrame(
        [(0, "gpu", "unknown GPU 'cpu'; valid: a100-sxm-80gb, h100-sxm-80gb")],
        columns=["row", "column", "reason"],
    )
    assert "valid:" not in _reason(cpu)
    assert "a CPU run" in _reason(cpu)


def test_each_row_keeps_its_ingestion_warnings(measured):
    warned = measured.assign(warnings=["power.csv: power logged for 1 of the job's 8 GPUs", ""])
    table = predict_measured(warned, load_calibration(), catalogue=load_catalogue())
    assert table["warnings"].tolist() == ["power.csv: power logged for 1 of the job's 8 GPUs", ""]
    unset = predict_measured(
        measured.assign(warnings=pd.NA), load_calibration(), catalogue=load_catalogue()
    )
    assert unset["warnings"].tolist() == ["", ""]
