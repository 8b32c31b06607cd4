"""``trainscale calibrate --measurements`` on bad and on several inputs, through the command line
(reliability-3.md S14 and traceback 4, user-trial-3.md item 20).

Only the command line and the published data are used, so each check also runs against an older
checkout (``PYTHONPATH=<checkout>/src pytest ...``): on ad53e5e every refusal below failed (a
traceback, exit 0, or "no such file" for a folder)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pandas as pd
import pytest
import yaml

from trainscale.cli import main
from trainscale.paths import data_dir
from trainscale.published.measurements import load_published
from trainscale.sim.catalogue import load_catalogue

MEASURED = "measured_tokens_per_s_per_gpu"
RUN = data_dir() / "runs" / "megatron_golden_345m"
CATALOGUE = load_catalogue()
KEEP = [
    "model", "layers", "hidden", "heads", "kv_heads", "ffn", "vocab", "mlp", "seq_len",
    "global_batch", "micro_batch", "gpu", "num_gpus", "tp", "pp", "sharding", "recompute",
    "precision", "framework", "attention_kernel", "system", "gpus_per_node",
    "nic_gbit_per_s_per_gpu", "cp", "vpp", "sequence_parallel",
]  # fmt: skip


def _pilots(factor: float = 0.85) -> pd.DataFrame:
    """Eight llm-foundry H100 rows at 8-64 GPUs (data/published/measurements.csv rows whose
    citation starts 'MosaicML'), 'measured' at ``factor`` x the published tokens/s per GPU."""
    rows = load_published(
        hardware=CATALOGUE.hardware, models=CATALOGUE.models, frameworks=CATALOGUE.framework_keys
    ).throughput
    rows = rows[rows["citation"].str.startswith("MosaicML") & (rows["num_gpus"] <= 64)]
    rows = rows[rows["gpu"] == "h100-sxm-80gb"].head(8)
    table = rows[[c for c in KEEP if c in rows.columns]]
    return table.assign(**{MEASURED: factor * rows["observed_tokens_per_s_per_gpu"]})


def _calibrate(capsys: pytest.CaptureFixture[str], *paths: Path, out: Path) -> tuple[int, str]:
    status = main(["calibrate", "--measurements", *map(str, paths), "-o", str(out)])
    captured = capsys.readouterr()
    return status, captured.out + captured.err


def test_a_header_only_table_is_a_named_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "header.csv"
    _pilots().head(0).to_csv(path, index=False)
    status, text = _calibrate(capsys, path, out=tmp_path / "mine.yaml")
    assert status == 2 and f"{path}: no measured row" in text
    assert not (tmp_path / "mine.yaml").exists()


def test_a_measurement_implying_mfu_of_200_pct_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """S14: tokens/s of the whole job given as per GPU (x 8 on an 8-GPU row)."""
    table = _pilots().reset_index(drop=True)
    row = int(table.index[table["num_gpus"] == 8][0])
    table.loc[row, MEASURED] *= 8
    path = tmp_path / "job.csv"
    table.to_csv(path, index=False)
    status, text = _calibrate(capsys, path, out=tmp_path / "mine.yaml")
    assert status == 2, text
    assert f"row {row}, column '{MEASURED}':" in text and "implies MFU" in text
    assert not (tmp_path / "mine.yaml").exists()


def test_conflicting_duplicate_configurations_are_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    table = _pilots().reset_index(drop=True)
    twin = table.iloc[[2]].assign(**{MEASURED: 0.6 * table.loc[2, MEASURED]})
    path = tmp_path / "twice.csv"
    pd.concat([table, twin], ignore_index=True).to_csv(path, index=False)
    status, text = _calibrate(capsys, path, out=tmp_path / "mine.yaml")
    assert status == 2, text
    assert "conflicting measurements of the same configuration" in text
    assert f"{path} row 2" in text and f"{path} row 8" in text


def test_a_folder_is_never_reported_as_no_such_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    status, text = _calibrate(capsys, tmp_path, out=tmp_path / "mine.yaml")
    assert status == 2 and "no such file" not in text and "is a folder with no run.yaml" in text


def test_several_paths_a_folder_of_ingested_runs_errors_side_by_side_and_bound_warnings(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], known_pilot_errors: pd.DataFrame
) -> None:
    """A CSV, a folder holding a Parquet file written by trainscale ingest, and a run folder;
    measured at 0.3 x published (a slow stack), which drives the level offset to its bound."""
    table = tmp_path / "pilots.csv"
    _pilots(0.3).to_csv(table, index=False)
    ingested = tmp_path / "ingested"
    ingested.mkdir()
    assert main(["ingest", str(RUN), "-o", str(ingested / "golden.parquet")]) == 0
    run = tmp_path / "runs" / RUN.name
    shutil.copytree(RUN, run)
    capsys.readouterr()
    status, text = _calibrate(capsys, table, ingested, run.parent, out=tmp_path / "mine.yaml")
    assert status == 0, text
    assert f"refitted on 10 rows of {table}, {ingested / 'golden.parquet'}, {run}:" in text
    assert "shipped (no refit)" in text and "leave-largest-scale-out (fit < 64 GPUs" in text
    assert "warning: the same configuration is measured more than once" in text
    assert (
        "warning: refitted parameter gemm_efficiency_offset_pytorch (-0.4, its lower bound -0.4)"
        in text
    )
    stored = yaml.safe_load((tmp_path / "mine.yaml").read_text())
    assert stored["command"].endswith(f"--measurements {table} {ingested} {run.parent}")
    files = stored["measurements"]["files"]
    assert [f["rows"] for f in files] == [8, 1, 1] and all(len(f["sha256"]) == 64 for f in files)
