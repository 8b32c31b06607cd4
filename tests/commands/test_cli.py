"""The `trainscale` command line: predict a table, explain one configuration, validate."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from tests.commands.conftest import three_sources
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
    # rows count from 0, as in pandas and the rejects tables, and the message says so
    assert "(row 0 is the first data row, line 2 of the CSV)" in err
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
                     "W per GPU", "W per node", "calibration"):  # fmt: skip
        assert fragment in text


def test_one_configuration_takes_its_framework_and_system(
    capsys: pytest.CaptureFixture[str],
) -> None:
    base = ["predict", "--model", "llama3-8b", "--gpu", "h100-sxm-80gb", "--num-gpus", "8",
            "--seq-len", "8192", "--global-batch", "128", "--precision", "fp8"]  # fmt: skip
    assert main([*base, "--framework", "megatron", "--system", "fernandez-h100"]) == 0
    megatron = capsys.readouterr().out
    assert "stack: megatron on fernandez-h100" in megatron and "fused kernels yes" in megatron
    assert main(base) == 0
    pytorch = capsys.readouterr().out
    assert "stack: pytorch on dgx-h100" in pytorch and "fused kernels no" in pytorch
    # the framework is checked against the catalogue's profiles, not a list in the code
    assert main([*base, "--framework", "jax"]) == 2
    refused = capsys.readouterr().err
    assert "unknown framework 'jax'" in refused and "valid: megatron, deepspeed, pytorch" in refused


def test_validate_prints_sources_and_overall(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["validate", "--max-mape", "20"]) == 0
    text = capsys.readouterr().out
    assert "MosaicML llm-foundry" in text and "all" in text and "could not be predicted" in text
    assert text.startswith("tokens/s per GPU, predicted vs published, in sample")
    assert "messages of 16 MiB and more" in text and "too coarse to score" in text


def _fabricated_held_out(published, *, catalogue, prior_scale=1.0) -> pd.DataFrame:
    """Held-out rows 50 % above every published value (instead of a minute of refits)."""
    from trainscale.published.accuracy import validate_published
    from trainscale.sim.calibration import load_calibration

    rows = validate_published(load_calibration(), published, catalogue=catalogue)["throughput"]
    rows = rows.copy()
    rows["predicted_tokens_per_s_per_gpu"] = 1.5 * rows["observed_tokens_per_s_per_gpu"]
    rows["error_pct"] = 50.0
    rows["ape_pct"] = 50.0
    return rows


def test_validate_holdout_leads_with_held_out_per_source_then_framework_then_all(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    import trainscale.calibrate.fit

    monkeypatch.setattr(trainscale.calibrate.fit, "held_out_predictions", _fabricated_held_out)
    out = tmp_path / "rows.csv"
    # in sample the MAPE is below 20 %; held out (fabricated) it is 50 %: --max-mape judges that
    assert main(["validate", "--max-mape", "20"]) == 0
    capsys.readouterr()
    assert main(["validate", "--holdout", "--max-mape", "20", "-o", str(out)]) == 1
    text = capsys.readouterr().out
    lines = text.splitlines()
    assert lines[0].startswith("tokens/s per GPU, held out: each source predicted by a fit")
    assert "held-out MAPE %" in lines[1] and lines[1].endswith("in-sample MAPE %")
    order = [text.index(s) for s in ("held out", "\nper framework", "\noverall", "nccl-tests")]
    assert order == sorted(order)
    assert "\npytorch " in text
    assert "overall held-out MAPE 50.00 % exceeds --max-mape 20.00 %" in text
    assert "80 % prediction intervals, source-out" in text
    rows = pd.read_csv(out)
    assert {
        "held_out_predicted_tokens_per_s_per_gpu",
        "held_out_error_pct",
        "held_out_ape_pct",
    } <= (set(rows.columns))
    assert (rows["held_out_ape_pct"] == 50.0).all()
    assert (
        rows["predicted_tokens_per_s_per_gpu"] != rows["held_out_predicted_tokens_per_s_per_gpu"]
    ).all()


def test_held_out_predictions_on_three_sources_leave_each_source_out(
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    published,
    shipped_calibration,
    catalogue,
    three_sources_held_out,
) -> None:
    """The real refits, on a subset of three small sources (a few seconds each): golden
    three_sources_held_out (tests/data/regenerate.py)."""
    import trainscale.calibrate.fit
    import trainscale.published.accuracy
    import trainscale.published.measurements
    from trainscale.published.holdout import accuracy, holdout_rows

    subset = three_sources(published)
    held = three_sources_held_out
    rows = holdout_rows(held, calibration_id="cal", simulator_version="v")
    assert rows["csv_row"].tolist() == sorted(subset.throughput["csv_row"])
    assert rows["citation"].nunique() == 3
    assert rows["framework"].notna().all()
    in_sample = trainscale.published.accuracy.validate_published(
        shipped_calibration, subset, catalogue=catalogue
    )["throughput"]
    merged = rows.merge(in_sample, on="csv_row", suffixes=("", "_in"))
    # a fit without the source predicts it differently from the fit on everything
    assert (
        merged["predicted_tokens_per_s_per_gpu"] != merged["predicted_tokens_per_s_per_gpu_in"]
    ).all()
    table = accuracy(rows, in_sample)
    assert table["source"].tolist()[-1] == "all" and table["rows"].iloc[-1] == len(rows)

    # `trainscale validate` loads the shipped measurements: give it the subset, and the rows
    # held out above instead of refitting
    monkeypatch.setattr(
        trainscale.published.measurements, "load_published", lambda *args, **kw: subset
    )
    monkeypatch.setattr(trainscale.calibrate.fit, "held_out_predictions", lambda *args, **kw: held)
    assert main(["validate", "--holdout"]) == 0
    text = capsys.readouterr().out
    assert "3 fits" in text and "Shoeybi" in text
    assert "\nper scale band\n" in text and "≤ 256 GPUs" in text


def test_console_script_is_installed() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "trainscale.cli", "--version"], capture_output=True, text=True
    )
    assert done.returncode == 0 and "trainscale" in done.stdout
