"""trainscale.dataset: conforming, deterministic Parquet, the hive dataset, published rows."""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from trainscale import __version__
from trainscale.dataset import dataset_frame, read_dataset, write_dataset, write_dataset_parts
from trainscale.io.parquet import config_ids, conform, read_parquet, sort_rows, write_parquet
from trainscale.paths import data_dir
from trainscale.published.accuracy import validate_published
from trainscale.published.measurements import load_published
from trainscale.published.rows import published_rows, validation_rows
from trainscale.schema import DATASET_COLUMNS, RESULT_COLUMNS, column, names
from trainscale.schema.results import VALIDATION_COLUMNS
from trainscale.sim.calibration import load_calibration
from trainscale.sim.catalogue import load_catalogue
from trainscale.sim.simulate import predict

CONFIGS = pd.DataFrame(
    {
        "model": ["llama2-7b", "llama2-7b", "llama2-13b"],
        "seq_len": [4096, 4096, 4096],
        "global_batch": [256, 256, 512],
        "micro_batch": [1, 2, 1],
        "gpu": ["h100-sxm-80gb", "h100-sxm-80gb", "a100-sxm-80gb"],
        "num_gpus": [16, 8, 32],
        "tp": [1, 1, 2],
        "pp": [1, 1, 1],
        "sharding": ["fsdp", "fsdp", "fsdp"],
        "recompute": ["none", "none", "full"],
        "precision": ["bf16", "bf16", "bf16"],
    }
)


@pytest.fixture(scope="module")
def sim() -> pd.DataFrame:
    return predict(CONFIGS)


#: The catalogues the published rows are resolved with: the shipped ones (the workflow's
#: published_measurements rule passes those it declares).
CATALOGUE = load_catalogue()
PARTS = {"hardware": CATALOGUE.hardware, "models": CATALOGUE.models,
         "frameworks": CATALOGUE.frameworks}  # fmt: skip


@pytest.fixture(scope="module")
def published():
    return load_published(
        hardware=CATALOGUE.hardware, models=CATALOGUE.models, frameworks=CATALOGUE.framework_keys
    )


# --------------------------------------------------------------------------------------------
# conform


def test_conform_gives_exactly_the_schema_columns_typed(sim: pd.DataFrame) -> None:
    frame = conform(sim.assign(extra=1), DATASET_COLUMNS, study="s")

    assert list(frame.columns) == names(DATASET_COLUMNS)
    assert str(frame["num_gpus"].dtype) == "Int64"
    assert frame["step_time_s"].dtype == np.float64
    assert str(frame["fits_memory"].dtype) == "boolean"
    assert isinstance(frame["gpu"].dtype, pd.StringDtype)
    assert frame["run_id"].isna().all()  # not in the input: null
    assert (frame["study"] == "s").all()


def test_conform_refuses_a_fraction_in_an_integer_column() -> None:
    with pytest.raises((TypeError, ValueError)):
        conform(pd.DataFrame({"num_gpus": [8.5]}), RESULT_COLUMNS)


def test_conform_of_nothing_is_an_empty_typed_table() -> None:
    frame = conform(pd.DataFrame(), RESULT_COLUMNS)

    assert frame.empty and list(frame.columns) == names(RESULT_COLUMNS)


# --------------------------------------------------------------------------------------------
# config_ids


def test_config_ids_are_readable_and_tell_rows_apart() -> None:
    frame = pd.DataFrame(
        {
            "model": ["llama2-7b", "", "llama2-7b"],
            "layers": [32, 2, 32], "hidden": [4096, 256, 4096],
            "gpu": ["h100-sxm-80gb", "a100-sxm-80gb", "h100-sxm-80gb"],
            "num_gpus": [2048, 8, 64], "sharding": ["fsdp", "ddp", "fsdp"],
            "tp": [1, 1, 2], "pp": [1, 1, 4], "cp": [1, 1, 2], "vpp": [1, 1, 2],
            "seq_len": [4096, 512, 8192], "global_batch": [2048, 8, 64],
            "micro_batch": [1, 1, 1], "recompute": ["none", "full", "none"],
            "precision": ["bf16", "bf16", "fp8"],
        }
    )  # fmt: skip

    assert config_ids(frame).tolist() == [
        "llama2-7b_h100-sxm-80gb_n2048_fsdp_tp1_pp1_s4096_gb2048_mb1",
        "l2-h256_a100-sxm-80gb_n8_ddp_tp1_pp1_s512_gb8_mb1_full",
        "llama2-7b_h100-sxm-80gb_n64_fsdp_tp2_pp4_cp2_vpp2_s8192_gb64_mb1_fp8",
    ]


# --------------------------------------------------------------------------------------------
# Single tables


def test_parquet_round_trip_keeps_values_units_and_no_pandas_metadata(
    sim: pd.DataFrame, tmp_path: Path
) -> None:
    path = tmp_path / "sim.parquet"

    write_parquet(sim, path, RESULT_COLUMNS, {"study": "test"})

    back = read_parquet(path, RESULT_COLUMNS)
    assert back["num_gpus"].dtype == np.int64  # the types pandas.read_parquet gives
    pd.testing.assert_frame_equal(conform(back, RESULT_COLUMNS), conform(sim, RESULT_COLUMNS))
    schema = pq.read_schema(path)
    assert schema.metadata == {b"study": b"test"}
    assert schema.field("power_w_per_gpu").metadata == {
        b"unit": b"W",
        b"description": column("power_w_per_gpu").description.encode(),
    }
    assert pq.ParquetFile(path).metadata.row_group(0).column(0).compression == "ZSTD"


def test_the_same_rows_give_the_same_bytes(sim: pd.DataFrame, tmp_path: Path) -> None:
    write_parquet(sim, tmp_path / "a.parquet", RESULT_COLUMNS)
    write_parquet(sim.copy(), tmp_path / "b.parquet", RESULT_COLUMNS)

    assert (tmp_path / "a.parquet").read_bytes() == (tmp_path / "b.parquet").read_bytes()


def test_a_failed_write_leaves_neither_the_file_nor_a_temporary(
    sim: pd.DataFrame, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def fail(table, where, **kwargs) -> None:
        Path(where).write_bytes(b"PAR1 half")
        raise OSError("disk full")

    monkeypatch.setattr(pq, "write_table", fail)

    with pytest.raises(OSError, match="disk full"):
        write_parquet(sim, tmp_path / "out.parquet", RESULT_COLUMNS)

    assert list(tmp_path.iterdir()) == []


# --------------------------------------------------------------------------------------------
# The dataset


def test_dataset_frame_labels_sources_and_sorts(sim: pd.DataFrame, published) -> None:
    pub = published_rows(published, **PARTS)

    frame = dataset_frame({"b": sim, "a": sim.iloc[:1]}, pub, [])

    assert frame.groupby(["source", "study"]).size().to_dict() == {
        ("published", "published"): len(pub),
        ("sim", "a"): 1,
        ("sim", "b"): 3,
    }
    assert frame["config_id"].notna().all()
    partitions = list(zip(frame["source"], frame["study"], strict=True))
    assert partitions == sorted(partitions)
    # a study's rows keep their (grid) order; published rows are sorted by config_id
    assert frame.loc[frame["study"] == "b", "config_id"].tolist() == config_ids(sim).tolist()
    published_ids = frame.loc[frame["source"] == "published", "config_id"].tolist()
    assert published_ids == sorted(published_ids)


def test_published_and_measured_rows_in_any_order_give_the_same_bytes(
    sim: pd.DataFrame, published, tmp_path: Path
) -> None:
    pub = published_rows(published, **PARTS)
    measured = sim.assign(run_id=["r1", "r2", "r3"])

    first = write_dataset(dataset_frame({}, pub, [measured]), tmp_path / "one")
    second = write_dataset(
        dataset_frame({}, pub.iloc[::-1], [measured.iloc[2:], measured.iloc[:2]]), tmp_path / "two"
    )

    assert [p.read_bytes() for p in first] == [p.read_bytes() for p in second]


def test_a_study_keeps_its_row_order_and_streamed_parts_give_the_same_bytes(
    sim: pd.DataFrame, tmp_path: Path
) -> None:
    reversed_ = sim.iloc[::-1].reset_index(drop=True)
    whole = write_dataset(dataset_frame({"s": reversed_}), tmp_path / "one")
    table = pa.Table.from_pandas(conform(reversed_, RESULT_COLUMNS), preserve_index=False)
    streamed = write_dataset_parts(
        {
            ("sim", "s"): lambda columns=None: table.select(
                columns or table.column_names
            ).to_batches(max_chunksize=1)
        },
        tmp_path / "two",
    )  # one row per batch: the row groups do not depend on the batches

    assert [p.read_bytes() for p in whole] == [p.read_bytes() for p in streamed]
    back = read_dataset(tmp_path / "one")
    assert pq.read_table(whole[0])["config_id"].to_pylist() == config_ids(reversed_).tolist()
    assert len(back) == len(sim)


def test_dataset_is_hive_partitioned_with_provenance(
    sim: pd.DataFrame, published, tmp_path: Path
) -> None:
    frame = dataset_frame({"smoke": sim}, published_rows(published, **PARTS))

    files = write_dataset(frame, tmp_path / "dataset")

    assert [p.relative_to(tmp_path / "dataset").as_posix() for p in files] == [
        "source=published/study=published/part-0.parquet",
        "source=sim/study=smoke/part-0.parquet",
    ]
    sim_file = pq.ParquetFile(files[1])
    assert "source" not in sim_file.schema_arrow.names  # in the path, not in the file
    metadata = sim_file.schema_arrow.metadata
    assert metadata[b"calibration_id"].decode() == load_calibration().calibration_id
    assert metadata[b"simulator_version"].decode() == __version__
    assert metadata[b"rows"] == b"3"
    back = read_dataset(tmp_path / "dataset")
    assert back["n_steps"].dtype == np.float64  # null everywhere: NaN, not pd.NA
    # read back sorted by source, study, config_id, then every column
    expected = sort_rows(frame, first=("source", "study", "config_id"))
    pd.testing.assert_frame_equal(conform(back), expected)


def test_reading_some_partitions_leaves_the_others_unread(
    sim: pd.DataFrame, published, tmp_path: Path
) -> None:
    write_dataset(
        dataset_frame({"smoke": sim}, published_rows(published, **PARTS)), tmp_path / "dataset"
    )
    only_published = read_dataset(tmp_path / "dataset", sources=("published",))
    assert set(only_published["source"]) == {"published"} and len(only_published) > 0
    only_smoke = read_dataset(tmp_path / "dataset", studies=("smoke",))
    assert set(only_smoke["study"]) == {"smoke"} and len(only_smoke) == len(sim)
    nothing = read_dataset(tmp_path / "dataset", sources=("measured",))
    assert nothing.empty


def test_rewriting_the_dataset_removes_stale_partitions(sim: pd.DataFrame, tmp_path: Path) -> None:
    write_dataset(dataset_frame({"old": sim}), tmp_path / "dataset")

    write_dataset(dataset_frame({"new": sim}), tmp_path / "dataset")

    assert set(read_dataset(tmp_path / "dataset")["study"]) == {"new"}
    assert [p.name for p in tmp_path.iterdir()] == ["dataset"]  # no temporary folder left


# --------------------------------------------------------------------------------------------
# Published measurements and validation


def _csv_lines() -> int:
    with open(data_dir() / "published" / "measurements.csv", newline="") as handle:
        return len(list(csv.DictReader(handle)))


def test_published_rows_convert_the_published_number_to_tokens_per_gpu(published) -> None:
    rows = published_rows(published, **PARTS)
    first = rows.iloc[0]  # CSV line 2: Narayanan et al. 2021, Table 1, GPT-1.7B on 32 A100s

    # Narayanan et al. 2021 (arXiv 2104.04473), eq. (3) per token:
    # 96 l h^2 (1 + s/(6h) + V/(16 l h)) FLOPs, with l 24, h 2304, s 2048, V 51200.
    flops_per_token = 96 * 24 * 2304**2 * (1 + 2048 / (6 * 2304) + 51200 / (16 * 24 * 2304))
    assert first["published_metric"] == "achieved_TFLOPs_per_GPU"
    assert first["published_value"] == 137.0
    assert first["tokens_per_s_per_gpu"] == pytest.approx(137e12 / flops_per_token)
    assert first["tokens_per_s"] == pytest.approx(32 * 137e12 / flops_per_token)
    assert len(rows) == len(published.throughput)
    assert set(rows["source"]) == {"published"} and rows["citation"].notna().all()


def test_published_rows_resolve_catalogue_shapes_and_default_networks(published) -> None:
    rows = published_rows(published, **PARTS)
    llama = rows[rows["model"] == "llama2-7b"]

    assert not llama.empty
    assert (llama["layers"] == 32).all() and (llama["hidden"] == 4096).all()
    assert rows["nic_gbit_per_s_per_gpu"].gt(0).all()  # the GPU's default system where not stated
    assert (rows["dp"] * rows["tp"] * rows["pp"] * rows["cp"] == rows["num_gpus"]).all()
    assert rows["step_time_s"].notna().sum() == (rows["published_metric"] == "step_time_ms").sum()


def test_validation_has_every_published_line_once(published) -> None:
    calibration = load_calibration()

    rows = validation_rows(
        validate_published(calibration, published, catalogue=CATALOGUE),
        calibration_id=calibration.calibration_id,
        simulator_version=__version__,
    )

    assert list(rows.columns) == names(VALIDATION_COLUMNS)
    assert rows["csv_row"].tolist() == list(range(2, _csv_lines() + 2))
    predicted = rows[rows["status"] == "predicted"]
    np.testing.assert_allclose(
        predicted["error_pct"],
        100 * (predicted["predicted"] - predicted["observed"]) / predicted["observed"],
    )
    assert set(predicted["kind"]) == {"throughput", "moe_throughput", "collective"}
    assert set(predicted.loc[predicted["kind"] == "collective", "unit"]) == {"GB/s"}
    rejected = rows[rows["status"] == "rejected"]
    assert rejected["reason"].notna().all() and rejected["predicted"].isna().all()
    assert set(rows["calibration_id"]) == {calibration.calibration_id}
