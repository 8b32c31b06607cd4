"""Reading and checking the measurements of ``trainscale calibrate --measurements``
(trainscale.calibrate.measurements): tables, ingested Parquet, run folders, several paths."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from trainscale.calibrate.measurements import (
    MEASURED,
    MeasurementChecks,
    read_measurements,
    refitted_on_bounds,
)
from trainscale.errors import ConfigurationError, InputFileError, TrainscaleError
from trainscale.ingest.runs import ingest_run, write_ingested
from trainscale.paths import data_dir
from trainscale.published.measurements import load_published
from trainscale.sim.calibration import load_calibration
from trainscale.sim.catalogue import load_catalogue
from trainscale.sim.configs import build_configs
from trainscale.sim.parameters import parameter_spec
from trainscale.sim.simulate import predict_arrays

CATALOGUE = load_catalogue()
BASE = load_calibration()
PUBLISHED = load_published(
    hardware=CATALOGUE.hardware, models=CATALOGUE.models, frameworks=CATALOGUE.framework_keys
)
RUN = data_dir() / "runs" / "megatron_golden_345m"
#: The configuration columns a user's table would carry.
KEEP = [
    "model", "layers", "hidden", "heads", "kv_heads", "ffn", "vocab", "mlp", "seq_len",
    "global_batch", "micro_batch", "gpu", "num_gpus", "tp", "pp", "sharding", "recompute",
    "precision", "framework", "attention_kernel", "system", "gpus_per_node",
    "nic_gbit_per_s_per_gpu", "cp", "vpp", "sequence_parallel",
]  # fmt: skip


def ingest(run_dir: Path) -> pd.DataFrame:
    """What trainscale calibrate passes: trainscale ingest's reader on the shipped catalogues."""
    return ingest_run(run_dir, hardware=CATALOGUE.hardware, models=CATALOGUE.models)[0]


def foundry(n: int | None = None) -> pd.DataFrame:
    """llm-foundry's published rows (data/published/measurements.csv, 'MosaicML ...'; H100 first),
    the first ``n``, as a measurement table ('measured' 15 % slower than published)."""
    rows = PUBLISHED.throughput
    rows = rows[rows["citation"].str.startswith("MosaicML")]
    rows = rows.sort_values("gpu", key=lambda g: g != "h100-sxm-80gb", kind="stable")
    rows = rows if n is None else rows.head(n)
    keep = [c for c in KEEP if c in rows.columns]
    table = rows[keep].assign(**{MEASURED: 0.85 * rows["observed_tokens_per_s_per_gpu"]})
    return table.reset_index(drop=True)


def write(table: pd.DataFrame, path: Path) -> Path:
    if path.suffix == ".parquet":
        table.to_parquet(path, index=False)
    else:
        table.to_csv(path, index=False)
    return path


def predicted(table: pd.DataFrame) -> dict[str, np.ndarray]:
    configs, _, _ = build_configs(
        table, hardware=CATALOGUE.hardware, models=CATALOGUE.models,
        frameworks=CATALOGUE.frameworks,
    )  # fmt: skip
    return predict_arrays(configs, load_calibration(), CATALOGUE)


@pytest.mark.parametrize("rows", [1, 2, None])
def test_one_two_and_hundreds_of_rows_are_read(tmp_path: Path, rows: int | None) -> None:
    table = foundry(rows)
    found = read_measurements(write(table, tmp_path / "m.csv"), catalogue=CATALOGUE, base=BASE)
    assert len(found.table) == len(table) and (rows is not None or len(table) > 100)
    np.testing.assert_allclose(found.table[MEASURED], table[MEASURED])
    assert list(found.origins["row"]) == list(range(len(table)))
    assert found.warnings == []


def test_several_files_keep_their_own_row_numbers(tmp_path: Path) -> None:
    table = foundry(8)
    first = write(table.head(5), tmp_path / "a.csv")
    second = write(table.tail(3), tmp_path / "b.parquet")
    found = read_measurements([first, second], catalogue=CATALOGUE, base=BASE)
    assert len(found.table) == 8 and found.files == [first, second]
    assert found.where(6) == f"{second} row 1"
    bad = table.tail(3).reset_index(drop=True)
    bad.loc[2, MEASURED] = -1
    write(bad, second)
    with pytest.raises(InputFileError, match=r"b\.parquet: .*not a positive number in row\(s\) 2"):
        read_measurements([first, second], catalogue=CATALOGUE, base=BASE)


def test_a_run_folder_is_ingested_on_the_fly(tmp_path: Path) -> None:
    found = read_measurements(RUN, catalogue=CATALOGUE, base=BASE, ingest=ingest)
    assert len(found.table) == 1 and found.files == [RUN]
    expected = ingest(RUN)["tokens_per_s_per_gpu"].item()
    assert found.table[MEASURED].item() == pytest.approx(expected)
    with pytest.raises(InputFileError, match="is a run folder; reading it needs the ingester"):
        read_measurements(RUN, catalogue=CATALOGUE, base=BASE)


def test_a_folder_of_run_folders_and_tables_is_read_in_name_order(tmp_path: Path) -> None:
    folder = tmp_path / "pilots"
    folder.mkdir()
    shutil.copytree(RUN, folder / RUN.name)
    write(foundry(2), folder / "a.csv")
    (folder / "notes.txt").write_text("ignored")
    found = read_measurements(folder, catalogue=CATALOGUE, base=BASE, ingest=ingest)
    assert found.files == [folder / "a.csv", folder / RUN.name] and len(found.table) == 3


def test_ingested_parquet_is_read_and_other_sources_are_refused(tmp_path: Path) -> None:
    out = tmp_path / "ingested.parquet"
    write_ingested(RUN, out, hardware=CATALOGUE.hardware, models=CATALOGUE.models)
    found = read_measurements(out, catalogue=CATALOGUE, base=BASE)
    assert found.table[MEASURED].item() == pytest.approx(
        pd.read_parquet(out)["tokens_per_s_per_gpu"].item()
    )
    mixed = pd.concat([pd.read_parquet(out)] * 2, ignore_index=True)
    mixed.loc[1, "source"] = "sim"
    write(mixed, out)
    with pytest.raises(InputFileError, match=r"row\(s\) 1 \(row 0 is the first row\) have source "
                       "sim; only rows with source 'measured'"):  # fmt: skip
        read_measurements(out, catalogue=CATALOGUE, base=BASE)


@pytest.mark.parametrize("suffix", [".csv", ".parquet"])
def test_header_only_tables_are_a_named_error(tmp_path: Path, suffix: str) -> None:
    path = write(foundry(3).head(0), tmp_path / f"header{suffix}")
    with pytest.raises(InputFileError, match=r"header\.\w+: no measured row \(the table is empty"):
        read_measurements(path, catalogue=CATALOGUE, base=BASE)


def test_a_folder_with_nothing_to_read_is_not_called_no_such_file(tmp_path: Path) -> None:
    with pytest.raises(InputFileError, match=r"is a folder with no run\.yaml") as error:
        read_measurements(tmp_path, catalogue=CATALOGUE, base=BASE)
    assert "no such file" not in str(error.value)
    with pytest.raises(InputFileError, match=r"missing\.csv: no such file or folder"):
        read_measurements(tmp_path / "missing.csv", catalogue=CATALOGUE, base=BASE)


@pytest.mark.parametrize("value", [0.0, -3.0, float("nan"), float("inf")])
def test_measurements_must_be_finite_positive(tmp_path: Path, value: float) -> None:
    table = foundry(4)
    table.loc[2, MEASURED] = value
    with pytest.raises(InputFileError, match=r"m\.csv: .*not a positive number in row\(s\) 2 "):
        read_measurements(write(table, tmp_path / "m.csv"), catalogue=CATALOGUE, base=BASE)


def test_a_measurement_implying_mfu_above_100_pct_is_refused(tmp_path: Path) -> None:
    table = foundry(4)
    mfu = predicted(table)["mfu"] * table[MEASURED] / predicted(table)["tokens_per_s_per_gpu"]
    table.loc[1, MEASURED] *= 2.0 / mfu[1]  # MFU 200 %
    with pytest.raises(ConfigurationError, match=r"m\.csv: 1 invalid value.*\n  row 1, column "
                       rf"'{MEASURED}': .* implies MFU 200 %"):  # fmt: skip
        read_measurements(write(table, tmp_path / "m.csv"), catalogue=CATALOGUE, base=BASE)


def test_a_measurement_far_above_the_prediction_is_refused(tmp_path: Path) -> None:
    table = foundry(None)
    sim = predicted(table)
    row = int(np.argmin(sim["mfu"]))
    table = table.iloc[[row]].reset_index(drop=True)
    table.loc[0, MEASURED] = 3.5 * sim["tokens_per_s_per_gpu"][row]
    assert 3.5 * sim["mfu"][row] < 1  # below the MFU bound: only the prediction check catches it
    with pytest.raises(ConfigurationError, match=r"row 0, .* is 3\.5 x the simulator's predic"):
        read_measurements(write(table, tmp_path / "m.csv"), catalogue=CATALOGUE, base=BASE)
    loose = MeasurementChecks(max_over_prediction=4.0)
    assert len(
        read_measurements(tmp_path / "m.csv", catalogue=CATALOGUE, base=BASE, checks=loose).table
    )


def test_conflicting_duplicates_name_both_rows_even_across_files(tmp_path: Path) -> None:
    table = foundry(5)
    twin = table.iloc[[3]].assign(**{MEASURED: 1.3 * table.loc[3, MEASURED]})
    path = write(pd.concat([table, twin], ignore_index=True), tmp_path / "m.csv")
    with pytest.raises(InputFileError, match=rf"conflicting .*{path} row 3 .* and {path} row 5 "
                       r"\([\d,.]+\) differ by 30\.0 %"):  # fmt: skip
        read_measurements(path, catalogue=CATALOGUE, base=BASE)
    other = write(twin, tmp_path / "other.csv")
    with pytest.raises(InputFileError, match=rf"{tmp_path / 'm.csv'} row 3 .* {other} row 0"):
        read_measurements([write(table, tmp_path / "m.csv"), other], catalogue=CATALOGUE, base=BASE)


def test_agreeing_duplicates_warn_also_when_named_by_model_or_by_shape(tmp_path: Path) -> None:
    columns = ["layers", "hidden", "heads", "kv_heads", "ffn", "vocab", "mlp"]
    named = foundry(1).drop(columns=columns).assign(model="llama2-7b")
    named[MEASURED] = 0.5 * predicted(named)["tokens_per_s_per_gpu"]
    llama = CATALOGUE.models["llama2-7b"]
    shape = {c: getattr(llama, c) for c in columns}
    twin = named.drop(columns="model").assign(**shape)
    twin[MEASURED] *= 1.02
    found = read_measurements(
        [write(named, tmp_path / "a.csv"), write(twin, tmp_path / "b.csv")],
        catalogue=CATALOGUE,
        base=BASE,
    )
    assert len(found.table) == 2
    assert found.warnings == [
        f"the same configuration is measured more than once ({tmp_path / 'a.csv'} row 0, "
        f"{tmp_path / 'b.csv'} row 0; within 10 %): each counts as one row of the fit"
    ]


def test_refitted_parameters_on_their_bounds_are_named() -> None:
    from dataclasses import replace

    spec = parameter_spec("gemm_efficiency_offset_pytorch")
    calibration = replace(load_calibration(), **{spec.name: spec.lower})
    assert refitted_on_bounds(calibration, [spec.name]) == [
        f"{spec.name} ({spec.lower:.6g}, its lower bound {spec.lower:g})"
    ]
    assert refitted_on_bounds(calibration, []) == []  # not refitted: not the refit's doing
    assert refitted_on_bounds(load_calibration(), [spec.name]) == []


_BASE = foundry(6)
#: What each example of the property test ended in (the test after it checks both happen).
OUTCOMES: list[str] = []


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    rows=st.lists(st.integers(0, len(_BASE) - 1), min_size=0, max_size=8),
    factors=st.lists(
        st.one_of(
            st.floats(allow_nan=True, allow_infinity=True, width=32),
            st.sampled_from([0.0, -1.0, 1.0, 1.05, 1.3, 3.5, 1e3, 1e-9]),
        ),
        min_size=8, max_size=8,
    ),
    gpus=st.lists(st.sampled_from([1, 3, 8, 16, 2**21]), min_size=8, max_size=8),
    suffix=st.sampled_from([".csv", ".parquet"]),
)  # fmt: skip
# one undamaged table always runs, so the property is never checked on refusals alone
@example(rows=[0, 1, 2], factors=[1.0] * 8, gpus=[8] * 8, suffix=".csv")
def test_measurement_tables_give_an_error_or_finite_positive_rows(
    tmp_path: Path, rows: list[int], factors: list[float], gpus: list[int], suffix: str
) -> None:
    """Any table of llm-foundry rows with damaged measurements and GPU counts: either a
    TrainscaleError (never another exception), or every row read with a finite positive
    measurement at most 3x the prediction."""
    table = _BASE.iloc[rows].reset_index(drop=True)
    table[MEASURED] = table[MEASURED] * np.asarray(factors[: len(table)], dtype=np.float64)
    if len(table):
        table["num_gpus"] = np.where(np.asarray(gpus[: len(table)]) == 8, 8, table["num_gpus"])
        table.loc[0, "num_gpus"] = gpus[0]
    path = write(table, tmp_path / f"h{suffix}")
    try:
        found = read_measurements(path, catalogue=CATALOGUE, base=BASE)
    except TrainscaleError:
        OUTCOMES.append("error")
        return
    OUTCOMES.append("read")
    measured = found.table[MEASURED].to_numpy(np.float64)
    assert len(measured) == len(table) > 0
    assert np.isfinite(measured).all() and (measured > 0).all()
    assert (measured <= 3 * predicted(found.table)["tokens_per_s_per_gpu"] * (1 + 1e-12)).all()


def test_the_property_test_reached_both_outcomes() -> None:
    """The examples above were not all refused (nor all read): the property is not vacuous."""
    if not OUTCOMES:
        pytest.skip("run with the property test")
    assert {"error", "read"} <= set(OUTCOMES)
