"""The `trainscale` command line: predict a table, explain one configuration, validate."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from trainscale.cli import main

ROW = {
    "model": "llama2-7b", "seq_len": 4096, "global_batch": 256, "micro_batch": 2,
    "gpu": "h100-sxm-80gb", "num_gpus": 128, "tp": 1, "pp": 1, "sharding": "fsdp",
    "recompute": "none", "precision": "bf16",
}  # fmt: skip


def test_predict_table_csv_to_parquet(tmp_path: Path) -> None:
    configs = tmp_path / "configs.csv"
    pd.DataFrame([{**ROW, "name": "a"}, {**ROW, "name": "b", "num_gpus": 64}]).to_csv(
        configs, index=False
    )
    out = tmp_path / "out.parquet"
    assert main(["predict", str(configs), "-o", str(out)]) == 0
    result = pd.read_parquet(out)
    assert list(result["name"]) == ["a", "b"]
    assert {"step_time_s", "mfu", "power_w_per_gpu", "calibration_id"} <= set(result.columns)


def test_invalid_row_is_an_error_naming_file_row_and_column(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    configs = tmp_path / "configs.csv"
    pd.DataFrame([ROW, {**ROW, "gpu": "h300"}]).to_csv(configs, index=False)
    assert main(["predict", str(configs), "-o", str(tmp_path / "out.csv")]) == 2
    err = capsys.readouterr().err
    assert "configs.csv" in err and "row 1, column 'gpu'" in err and "valid: a100-sxm-40gb" in err
    assert not (tmp_path / "out.csv").exists()


def test_skip_invalid_writes_rejects(tmp_path: Path) -> None:
    configs = tmp_path / "configs.csv"
    pd.DataFrame([ROW, {**ROW, "tp": 3}]).to_csv(configs, index=False)
    out = tmp_path / "out.csv"
    assert main(["predict", str(configs), "-o", str(out), "--skip-invalid"]) == 0
    assert len(pd.read_csv(out)) == 1
    rejects = pd.read_csv(tmp_path / "out.rejects.csv")
    assert rejects.loc[0, "column"] == "tp" and "does not divide heads" in rejects.loc[0, "reason"]


def test_one_configuration_breakdown(capsys: pytest.CaptureFixture[str]) -> None:
    args = ["predict", "--model", "llama2-7b", "--gpu", "h100-sxm-80gb", "--num-gpus", "2048",
            "--sharding", "fsdp", "--global-batch", "2048"]  # fmt: skip
    assert main(args) == 0
    text = capsys.readouterr().out
    for fragment in ("step time", "exposed comm", "allgather", "MFU", "memory per GPU",
                     "power per GPU", "calibration"):  # fmt: skip
        assert fragment in text


def test_validate_prints_sources_and_overall(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["validate", "--max-mape", "12"]) == 0
    text = capsys.readouterr().out
    assert "MosaicML llm-foundry" in text and "all" in text and "could not be predicted" in text


def test_console_script_is_installed() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "trainscale.cli", "--version"], capture_output=True, text=True
    )
    assert done.returncode == 0 and "trainscale" in done.stdout
