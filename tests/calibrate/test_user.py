"""trainscale calibrate --measurements: a user's own cluster (trainscale.calibrate.user)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pandas as pd
import pytest
import yaml

from trainscale.calibrate.measurements import MEASURED
from trainscale.calibrate.pilot_examples import scale_check
from trainscale.calibrate.stored import read_stored
from trainscale.calibrate.user import calibrate_user
from trainscale.cli import main
from trainscale.errors import InputFileError, TrainscaleError
from trainscale.paths import data_dir
from trainscale.published.measurements import load_published
from trainscale.sim.calibration import load_calibration
from trainscale.sim.catalogue import load_catalogue

TORCHTITAN = "torchtitan benchmarks (PyTorch team, Dec 2024)"
CATALOGUE = load_catalogue()
PUBLISHED = load_published(
    hardware=CATALOGUE.hardware, models=CATALOGUE.models, frameworks=CATALOGUE.framework_keys
)
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


def test_same_measurements_give_the_same_file_byte_for_byte(
    tmp_path: Path, shipped_pilot_errors: pd.DataFrame, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The command reads the pilot errors stored with the shipped calibration (its
    published_pilot_errors block) and no published measurement; the API given the pilot errors
    measured on the published data (golden pilot_errors) writes the same bytes."""
    import trainscale.published.measurements

    def unread(*args: object, **kwargs: object) -> None:
        raise AssertionError("the published measurements were read")

    monkeypatch.setattr(trainscale.published.measurements, "load_published", unread)
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
    assert stored["intervals"]["pilot"]["pilot_gpus"] == sorted(
        set(pd.read_csv(measurements)["num_gpus"])
    )
    assert "published_pilot_errors" not in stored  # a user calibration stores no such block
    assert stored["ladder"][0]["rung"] == "level"
    assert stored["residual_error"]["fitted_mape_pct"] < stored["residual_error"]["base_mape_pct"]
    # only what a cluster changes moved
    shipped = load_calibration().as_dict()
    moved = {k for k, v in mine.as_dict().items() if v != shipped[k]}
    assert moved and moved <= set(stored["refitted"])
    assert all(name.endswith("_pytorch") or "_offset_" not in name for name in moved)
    # the API, given the pilot errors measured afresh, gives the same file as the CLI
    third = tmp_path / "c.yaml"
    result = calibrate_user(measurements, third, **SHIPPED, pilot_errors=shipped_pilot_errors)
    assert third.read_bytes() == first.read_bytes() and result.notes == []


def test_a_base_whose_stored_pilot_errors_are_another_calibrations_measures_them_and_says_so(
    tmp_path: Path,
    known_pilot_errors: pd.DataFrame,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Stored pilot errors of another calibration id (hand-edited values, a stale block) are never
    used: the command measures them on the published data (known_pilot_errors: here the golden
    rows of that measurement) and notes it on stderr; the file is the same as from the stored
    block."""
    import trainscale.calibrate.stored

    shipped = read_stored(data_dir() / "calibration.yaml")
    assert shipped is not None and shipped.calibration_id == load_calibration().calibration_id
    stale = replace(shipped, calibration_id="000000000000", lower=(0.0,) * len(shipped.lower))
    monkeypatch.setattr(trainscale.calibrate.stored, "read_stored", lambda path: stale)
    measurements = _measurements(tmp_path)
    measured, from_block = tmp_path / "measured.yaml", tmp_path / "block.yaml"
    assert main(["calibrate", "--measurements", str(measurements), "-o", str(measured)]) == 0
    error = capsys.readouterr().err
    base = load_calibration().calibration_id
    assert f"note: the base calibration {base} has no stored pilot errors" in error
    assert "those of calibration 000000000000" in error
    calibrate_user(measurements, from_block, **SHIPPED, stored=shipped)
    assert measured.read_bytes() == from_block.read_bytes()
    # without a block and without published measurements there is nothing to measure on
    with pytest.raises(TrainscaleError, match="no stored pilot errors for the base calibration"):
        calibrate_user(measurements, **{**SHIPPED, "published": None}, stored=stale)


def test_predict_uses_the_user_calibration(
    tmp_path: Path, shipped_pilot_errors: pd.DataFrame
) -> None:
    measurements = _measurements(tmp_path)
    mine = tmp_path / "mine.yaml"
    calibrate_user(measurements, mine, **SHIPPED, pilot_errors=shipped_pilot_errors)
    configs = tmp_path / "configs.csv"
    pd.read_csv(measurements).drop(columns=MEASURED).to_csv(configs, index=False)
    out = tmp_path / "out.csv"
    assert main(["predict", str(configs), "-o", str(out), "--calibration", str(mine)]) == 0
    result = pd.read_csv(out)
    assert (result["calibration_id"] == load_calibration(mine).calibration_id).all()
    assert result["tokens_per_s_per_gpu_lo"].notna().all()
    # the pilot interval: narrower at the measured GPU counts than 64 times beyond them
    far = pd.read_csv(configs).assign(
        num_gpus=lambda t: t["num_gpus"] * 64, global_batch=lambda t: t["global_batch"] * 64
    )
    far.to_csv(configs, index=False)
    assert main(["predict", str(configs), "-o", str(out), "--calibration", str(mine)]) == 0
    wide = pd.read_csv(out)
    ratio = lambda t: t["tokens_per_s_per_gpu_hi"] / t["tokens_per_s_per_gpu_lo"]  # noqa: E731
    assert (ratio(wide) > ratio(result)).all()


def test_missing_columns_are_named_with_what_is_allowed(tmp_path: Path) -> None:
    path = tmp_path / "bad.csv"
    pd.read_csv(_measurements(tmp_path)).drop(columns=[MEASURED, "tp"]).to_csv(path, index=False)
    with pytest.raises(InputFileError, match=rf"bad\.csv.*missing column\(s\) tp, {MEASURED};"):
        calibrate_user(path, **SHIPPED)


def test_one_and_two_rows_are_calibrated_an_empty_table_is_refused(
    tmp_path: Path, shipped_pilot_errors: pd.DataFrame
) -> None:
    for rows in (1, 2):
        path = tmp_path / f"few{rows}.csv"
        pd.read_csv(_measurements(tmp_path)).head(rows).to_csv(path, index=False)
        result = calibrate_user(path, **SHIPPED, pilot_errors=shipped_pilot_errors)
        assert result.refitted == ["gemm_efficiency_offset_pytorch"]
        assert result.report.chosen == "level"
    path = tmp_path / "none.csv"
    pd.read_csv(_measurements(tmp_path)).head(0).to_csv(path, index=False)
    with pytest.raises(InputFileError, match=r"none\.csv: no measured row"):
        calibrate_user(path, **SHIPPED, pilot_errors=shipped_pilot_errors)


def test_hundreds_of_rows_choose_from_the_whole_ladder(
    tmp_path: Path, shipped_pilot_errors: pd.DataFrame
) -> None:
    """Every usable llm-foundry row (8-512 GPUs, several layouts): the ladder has all three
    rungs, each scored on the 512-GPU rows; the report says what was chosen."""
    rows = PUBLISHED.throughput
    rows = rows[rows["citation"].str.startswith("MosaicML")]
    table = rows.rename(columns={"observed_tokens_per_s_per_gpu": MEASURED})
    result = calibrate_user(
        tmp_path / "foundry.csv", **SHIPPED, table=table, pilot_errors=shipped_pilot_errors
    )
    ladder = result.report.ladder
    assert len(table) > 200 and list(ladder["rung"]) == ["level", "network", "layout"]
    assert ladder["llso_mape_pct"].notna().all() and ladder["chosen"].sum() == 1
    assert result.report.largest_gpus == 512
    assert result.report.chosen == ladder.loc[ladder["chosen"], "rung"].item()


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


def test_worked_example_torchtitan_8_gpus_predict_its_largest_runs(
    shipped_pilot_errors: pd.DataFrame,
) -> None:
    """docs/simulator/calibration.md: torchtitan's benchmarks as an unseen cluster (base fitted
    without them), calibrated on their 8-GPU runs (7 rows), predicting their 512-GPU runs (6 rows),
    the shipped calibration's error beside."""
    rows, summary = scale_check(
        TORCHTITAN, published=PUBLISHED, shipped=load_calibration(), catalogue=CATALOGUE,
        pilot_gpus=(8, 8), errors=shipped_pilot_errors,
    )  # fmt: skip
    assert summary["rows_fitted"] == 7 and summary["rows_predicted"] == 6
    assert (rows["num_gpus"] == 512).all()
    assert summary["chosen"] == "level"
    assert summary["pilot_mape_pct"] < summary["base_mape_pct"]
    assert summary["pilot_mape_pct"] < summary["shipped_mape_pct"]
    assert ((rows["pilot_lo"] < rows["pilot_predicted"]) &
            (rows["pilot_predicted"] < rows["pilot_hi"])).all()  # fmt: skip


def test_unmeasured_levels_keep_the_shipped_level_and_interval_and_say_so(
    tmp_path: Path, shipped_pilot_errors: pd.DataFrame
) -> None:
    # PyTorch pilots on H100, about 15 % slower than the shipped prediction; the refit is the
    # PyTorch level alone (no cluster-wide term, which would move every pair)
    pilots = tmp_path / "pilots.csv"
    pd.DataFrame([
        {"model": "llama3-8b", "num_gpus": 8, "global_batch": 32, "recompute": "none",
         MEASURED: 6350.0},
        {"model": "llama3-8b", "num_gpus": 16, "global_batch": 64, "recompute": "none",
         MEASURED: 6050.0},
        {"model": "llama3-70b", "num_gpus": 32, "global_batch": 64, "recompute": "full",
         MEASURED: 690.0},
    ]).assign(
        seq_len=8192, micro_batch=1, gpu="h100-sxm-80gb", tp=1, pp=1, sharding="fsdp",
        precision="bf16", framework="pytorch",
    ).to_csv(pilots, index=False)  # fmt: skip
    mine = tmp_path / "mine.yaml"
    result = calibrate_user(pilots, mine, **SHIPPED, pilot_errors=shipped_pilot_errors)
    assert result.refitted == ["gemm_efficiency_offset_pytorch"]
    assert yaml.safe_load(mine.read_text())["intervals"]["pilot"]["levels"]["measured"] == [
        ["pytorch", "h100-sxm-80gb"]
    ]
    big = {"model": "llama3-70b", "seq_len": 8192, "global_batch": 512, "micro_batch": 1,
           "num_gpus": 1024, "tp": 4, "pp": 1, "sharding": "fsdp", "precision": "bf16"}  # fmt: skip
    rows = pd.DataFrame([
        {**big, "framework": "megatron", "gpu": "h100-sxm-80gb", "recompute": "none"},
        {**big, "framework": "pytorch", "gpu": "b200", "recompute": "full"},
        {**big, "framework": "pytorch", "gpu": "h100-sxm-80gb", "recompute": "full"},
    ])  # fmt: skip
    shipped = main_predict(rows, None)
    calibrated = main_predict(rows, load_calibration(mine))
    width = lambda t: t["tokens_per_s_per_gpu_hi"] / t["tokens_per_s_per_gpu_lo"]  # noqa: E731
    for i, pair in ((0, "megatron/h100-sxm-80gb"), (1, "pytorch/b200")):
        assert f"unmeasured_level:{pair}" in calibrated["extrapolation"].iloc[i]
        assert calibrated["tokens_per_s_per_gpu"].iloc[i] == shipped["tokens_per_s_per_gpu"].iloc[i]
        assert width(calibrated).iloc[i] <= 1.25 * width(shipped).iloc[i]
    # the pilots' own framework and GPU move, unflagged
    assert calibrated["tokens_per_s_per_gpu"].iloc[2] < shipped["tokens_per_s_per_gpu"].iloc[2]
    assert "unmeasured_level" not in calibrated["extrapolation"].iloc[2]


def main_predict(rows: pd.DataFrame, calibration) -> pd.DataFrame:
    from trainscale import predict

    return predict(rows, calibration=calibration)
