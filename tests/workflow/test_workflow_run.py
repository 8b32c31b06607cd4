"""A real run of the smoke study (``--cores 2`` in a copy of the workflow): what it writes."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow.parquet as pq
import pytest

from tests.library import library_results
from trainscale import __version__
from trainscale.dataset import read_dataset
from trainscale.io.parquet import conform, read_parquet
from trainscale.schema import DATASET_COLUMNS, RESULT_COLUMNS, names
from trainscale.schema.results import VALIDATION_COLUMNS
from trainscale.sim.calibration import load_calibration

pytestmark = pytest.mark.workflow

#: Grid of config/studies/smoke.yaml without the tp 4 rows (max_model_parallel 2), grid order.
SMOKE_ROWS = [(n, tp) for n in (8, 16, 32, 64) for tp in (1, 2)]


def test_study_results_hold_every_kept_row_in_grid_order(smoke_run: Path) -> None:
    sim = read_parquet(smoke_run / "results/sim/smoke.parquet", RESULT_COLUMNS)

    assert list(sim.columns) == names(RESULT_COLUMNS)
    assert list(zip(sim["num_gpus"], sim["tp"], strict=True)) == SMOKE_ROWS
    assert (sim["global_batch"] == 1_048_576 // 4096).all()
    assert sim["micro_batch"].notna().all() and (sim["micro_batch"] >= 1).all()
    assert (sim["global_batch"] % (sim["dp"] * sim["micro_batch"]) == 0).all()
    assert np.isfinite(sim["tokens_per_s_per_gpu"].to_numpy(float)).all()
    assert (sim["tokens_per_s_per_gpu"] > 0).all()
    assert set(sim["source"]) == {"sim"}
    assert set(sim["simulator_version"]) == {__version__}
    calibration = load_calibration(smoke_run / "data" / "calibration.yaml")
    assert set(sim["calibration_id"]) == {calibration.calibration_id}


def test_results_equal_the_library_called_directly(smoke_run: Path, repo_root: Path) -> None:
    expected = library_results(smoke_run, repo_root)  # with the files the run read
    sim = read_parquet(smoke_run / "results/sim/smoke.parquet", RESULT_COLUMNS)

    pd.testing.assert_frame_equal(conform(sim, RESULT_COLUMNS), conform(expected, RESULT_COLUMNS))


def test_rows_dropped_by_a_filter_are_listed_with_their_reason(smoke_run: Path) -> None:
    rejects = pd.read_parquet(smoke_run / "results/studies/smoke/rejects.parquet")
    configurations = sorted((smoke_run / "results/studies/smoke/configurations").glob("*.parquet"))
    counts = json.loads((smoke_run / "results/studies/smoke/chunk_counts.json").read_text())

    assert list(rejects["row"]) == [2, 5, 8, 11]  # the tp 4 rows of the 4 x 3 grid
    assert (rejects["tp"] == 4).all()
    assert set(rejects["column"]) == {"filters.max_model_parallel"}
    assert set(rejects["reason"]) == {"tp·pp·cp = 4·1·1 = 4 exceeds max_model_parallel 2"}
    # one configuration file per simulate job: the 8 surviving rows at rows_per_job 4
    assert [p.name for p in configurations] == ["0.parquet", "1.parquet"]
    assert [pq.read_metadata(p).num_rows for p in configurations] == [4, 4]
    assert counts["chunks"] == 2 and counts["rows"] == 8 and counts["grid_rows"] == 12


def test_chunk_files_are_removed_after_the_run(smoke_run: Path) -> None:
    chunks = smoke_run / "results/studies/smoke/chunks"

    assert not chunks.exists() or not list(chunks.iterdir())
    assert pq.read_metadata(smoke_run / "results/sim/smoke.parquet").num_rows == 8


def test_dataset_holds_every_source_with_units_and_provenance(smoke_run: Path) -> None:
    dataset = smoke_run / "results/dataset"
    parts = sorted(p.relative_to(dataset).as_posix() for p in dataset.rglob("*.parquet"))
    frame = read_dataset(dataset)
    published = read_parquet(smoke_run / "results/published.parquet", DATASET_COLUMNS)
    sim_part = pq.ParquetFile(dataset / "source=sim/study=smoke/part-0.parquet")
    metadata = sim_part.schema_arrow.metadata

    assert parts == [
        "source=published/study=published/part-0.parquet",
        "source=sim/study=smoke/part-0.parquet",
    ]
    assert list(frame.columns) == names(DATASET_COLUMNS)
    assert (frame["source"] == "sim").sum() == len(SMOKE_ROWS)
    assert (frame["source"] == "published").sum() == len(published) > 0
    assert frame["config_id"].notna().all()
    assert sim_part.metadata.row_group(0).column(0).compression == "ZSTD"
    assert sim_part.schema_arrow.field("step_time_s").metadata[b"unit"] == b"s"
    calibration = load_calibration(smoke_run / "data" / "calibration.yaml")
    assert metadata[b"calibration_id"].decode() == calibration.calibration_id
    assert metadata[b"simulator_version"].decode() == __version__


def test_validation_has_one_row_per_published_line(smoke_run: Path) -> None:
    with open(smoke_run / "data/published/measurements.csv", newline="") as handle:
        lines = len(list(csv.DictReader(handle)))
    validation = read_parquet(smoke_run / "results/validation.parquet", VALIDATION_COLUMNS)
    predicted = validation[validation["status"] == "predicted"]
    rejected = validation[validation["status"] == "rejected"]

    assert sorted(validation["csv_row"]) == list(range(2, lines + 2))
    assert len(predicted) + len(rejected) == lines
    error = 100 * (predicted["predicted"] - predicted["observed"]) / predicted["observed"]
    np.testing.assert_allclose(predicted["error_pct"], error)
    assert rejected["reason"].notna().all() and rejected["predicted"].isna().all()
    # the CSV's own mixture-of-experts lines (Megatron-Bridge) are predicted, not rejected
    assert (predicted["kind"] == "moe_throughput").sum() == 9


def test_every_job_wrote_its_log_and_benchmark(smoke_run: Path) -> None:
    jobs = ["study_configurations/smoke", "simulate_study/smoke", "dataset/dataset"]
    jobs += [f"simulate_chunk/smoke/{i}" for i in range(2)]
    jobs += ["published_measurements/published", "published_validation/validation"]
    for job in jobs:
        log = smoke_run / "results/logs" / f"{job}.log"
        benchmark = smoke_run / "results/benchmarks" / f"{job}.tsv"
        assert log.read_text().strip(), f"empty log {log}"
        assert benchmark.read_text().startswith("s\th:m:s\tmax_rss"), benchmark
    log = (smoke_run / "results/logs/study_configurations/smoke.log").read_text()
    assert "12 grid rows -> 8 configurations, 4 rows dropped" in log
