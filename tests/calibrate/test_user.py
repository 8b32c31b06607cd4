"""trainscale calibrate --measurements: a user's own cluster (trainscale.calibrate.user)."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest
import yaml

from trainscale.calibrate.user import MEASURED, calibrate_user, worked_example
from trainscale.cli import main
from trainscale.errors import InputFileError
from trainscale.published.measurements import load_published
from trainscale.sim.calibration import load_calibration
from trainscale.sim.catalogue import load_catalogue

SHOEYBI = "Shoeybi et al. 2019, Megatron-LM (v1)"
CATALOGUE = load_catalogue()
PUBLISHED = load_published(hardware=CATALOGUE.hardware, models=CATALOGUE.models)
#: What trainscale calibrate --measurements passes: the shipped calibration, published
#: measurements and catalogue.
SHIPPED = {"base": load_calibration(), "published": PUBLISHED, "catalogue": CATALOGUE}


def _measurements(tmp_path: Path, name: str = "runs.csv") -> Path:
    """Eight llm-foundry configurations at 8-64 GPUs, 'measured' 15 % slower than published."""
    rows = PUBLISHED.throughput
    rows = rows[rows["citation"].str.startswith("MosaicML") & (rows["num_gpus"] <= 64)]
    rows = rows[rows["gpu"] == "h100-sxm-80gb"].head(8)
    keep = [c for c in rows.columns if c in {
        "model", "layers", "hidden", "heads", "kv_heads", "ffn", "vocab", "mlp", "seq_len",
        "global_batch", "micro_batch", "gpu", "num_gpus", "tp", "pp", "sharding", "recompute",
        "precision", "framework", "attention_kernel", "system", "gpus_per_node",
        "nic_gbit_per_s_per_gpu", "cp", "vpp", "sequence_parallel",
    }]  # fmt: skip
    table = rows[keep].assign(**{MEASURED: 0.85 * rows["observed_tokens_per_s_per_gpu"]})
    path = tmp_path / name
    table.to_csv(path, index=False)
    return path


def test_same_measurements_give_the_same_file_byte_for_byte(tmp_path: Path) -> None:
    measurements = _measurements(tmp_path)
    first, second = tmp_path / "a.yaml", tmp_path / "b.yaml"
    assert main(["calibrate", "--measurements", str(measurements), "-o", str(first)]) == 0
    assert main(["calibrate", "--measurements", str(measurements), "-o", str(second)]) == 0
    assert first.read_bytes() == second.read_bytes()
    stored = yaml.safe_load(first.read_text())
    mine = load_calibration(first)
    assert stored["calibration_id"] == mine.calibration_id != load_calibration().calibration_id
    assert stored["measurements"]["rows"] == 8 and len(stored["measurements"]["sha256"]) == 64
    assert stored["intervals"]["note"].startswith("user calibration")
    assert stored["residual_error"]["fitted_mape_pct"] < stored["residual_error"]["base_mape_pct"]
    # only what a cluster changes moved
    shipped = load_calibration().as_dict()
    moved = {k for k, v in mine.as_dict().items() if v != shipped[k]}
    assert moved and moved <= set(stored["refitted"])
    assert all(name.endswith("_pytorch") or "_offset_" not in name for name in moved)


def test_predict_uses_the_user_calibration(tmp_path: Path) -> None:
    measurements = _measurements(tmp_path)
    mine = tmp_path / "mine.yaml"
    calibrate_user(measurements, mine, **SHIPPED)
    configs = tmp_path / "configs.csv"
    pd.read_csv(measurements).drop(columns=MEASURED).to_csv(configs, index=False)
    out = tmp_path / "out.csv"
    assert main(["predict", str(configs), "-o", str(out), "--calibration", str(mine)]) == 0
    result = pd.read_csv(out)
    assert (result["calibration_id"] == load_calibration(mine).calibration_id).all()
    assert result["tokens_per_s_per_gpu_lo"].notna().all()


def test_missing_columns_are_named_with_what_is_allowed(tmp_path: Path) -> None:
    path = tmp_path / "bad.csv"
    pd.read_csv(_measurements(tmp_path)).drop(columns=[MEASURED, "tp"]).to_csv(path, index=False)
    with pytest.raises(InputFileError, match=rf"bad\.csv.*missing column\(s\) tp, {MEASURED};"):
        calibrate_user(path, **SHIPPED)


def test_fewer_rows_than_parameters_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "few.csv"
    pd.read_csv(_measurements(tmp_path)).head(2).to_csv(path, index=False)
    with pytest.raises(InputFileError, match=r"few\.csv: 2 row\(s\), fewer than the \d+ param"):
        calibrate_user(path, **SHIPPED)


def test_configurations_the_simulator_cannot_represent_are_named(tmp_path: Path) -> None:
    path = tmp_path / "odd.csv"
    table = pd.read_csv(_measurements(tmp_path))
    table.loc[2, "gpu"] = "tpu-v5"
    table.loc[5, "tp"] = 3
    table.to_csv(path, index=False)
    with pytest.raises(InputFileError, match=r"odd\.csv: the simulator cannot represent row\(s\) "
                       r"2, 5 \(row 0 is the first data row, line 2 of the CSV\): "
                       r"row 2 \(gpu\): unknown GPU"):  # fmt: skip
        calibrate_user(path, **SHIPPED)


def test_measurements_must_be_positive_numbers(tmp_path: Path) -> None:
    path = tmp_path / "neg.csv"
    table = pd.read_csv(_measurements(tmp_path))
    table.loc[1, MEASURED] = -5
    table.to_csv(path, index=False)
    with pytest.raises(InputFileError, match=r"not a positive number in row\(s\) 1 \(row 0"):
        calibrate_user(path, **SHIPPED)


def test_worked_example_own_calibration_beats_the_unseen_one() -> None:
    """Shoeybi et al. 2019 as an unseen cluster: calibrate on its 1-64 GPU runs (6 rows), predict
    its 128-512 GPU runs (4 rows)."""
    rows, summary = worked_example(
        SHOEYBI, published=PUBLISHED, shipped=load_calibration(), catalogue=CATALOGUE
    )
    assert summary["rows_fitted"] == 6 and summary["rows_predicted"] == 4
    assert summary["user_mape_pct"] < summary["base_mape_pct"]
    assert (rows["num_gpus"] > 64).all()
