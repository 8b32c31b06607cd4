"""Every presentation table has its columns in trainscale.schema: each table builder returns
exactly its schema's columns, in order and of their dtype, and each registered table's CSV
prints exactly them."""

from __future__ import annotations

import pandas as pd
import pytest
from pandas.api import types

from trainscale.io.parquet import write_parquet
from trainscale.paper.claims import claims_table
from trainscale.paper.values import CLAIMS
from trainscale.schema import (
    BEST_PLAN_COLUMNS,
    CLAIM_COLUMNS,
    CLAIM_SENSITIVITY_COLUMNS,
    CLAIM_SENSITIVITY_TABLE_COLUMNS,
    CLAIMS_TABLE_COLUMNS,
    HARDWARE_COLUMNS,
    MODEL_COLUMNS,
    SCALING_FIT_COLUMNS,
    STUDY_FIT_COLUMNS,
    VALIDATION_TABLE_COLUMNS,
    Column,
    names,
)
from trainscale.study.report import ReportSpec, select_rows
from trainscale.tables import TABLES, render_table
from trainscale.tables.best_plans import best_plans
from trainscale.tables.hardware import hardware_table
from trainscale.tables.models import models_table
from trainscale.tables.scaling_fits import scaling_fits
from trainscale.tables.study_fits import study_fits
from trainscale.tables.validation import validation_table

#: Registered table → the columns it prints (trainscale.schema).
TABLE_COLUMNS: dict[str, tuple[Column, ...]] = {
    "hardware": HARDWARE_COLUMNS,
    "models": MODEL_COLUMNS,
    "claims": CLAIMS_TABLE_COLUMNS,
    "scaling_fits": SCALING_FIT_COLUMNS,
    "validation": VALIDATION_TABLE_COLUMNS,
    "best_plans": BEST_PLAN_COLUMNS,
    "claim_sensitivity": CLAIM_SENSITIVITY_TABLE_COLUMNS,
}

_DTYPE_CHECKS = {
    "int64": types.is_integer_dtype,
    "float64": types.is_float_dtype,
    "bool": types.is_bool_dtype,
    "string": types.is_string_dtype,
}


def _assert_columns(table: pd.DataFrame, columns: tuple[Column, ...], *, leading=()) -> None:
    """``table`` has ``leading`` then exactly ``columns``, in order, each of its schema dtype."""
    assert list(table.columns) == [*leading, *names(columns)]
    for column in columns:
        assert _DTYPE_CHECKS[column.dtype](table[column.name]), (column.name, column.dtype)


def test_every_registered_table_has_its_columns_in_the_schema() -> None:
    assert set(TABLE_COLUMNS) == set(TABLES)


def test_catalogue_tables(catalogue) -> None:
    _assert_columns(hardware_table(catalogue.hardware), HARDWARE_COLUMNS)
    _assert_columns(models_table(catalogue.models), MODEL_COLUMNS)


def test_best_plans(best_sim, catalogue) -> None:
    _assert_columns(best_plans(best_sim, models=catalogue.models), BEST_PLAN_COLUMNS)


def test_scaling_fits(scaleout_sim, catalogue) -> None:
    dataset = scaleout_sim.assign(source="sim", study="fsdp_scaleout")
    table = scaling_fits(dataset, models=catalogue.models)
    assert len(table)
    _assert_columns(table, SCALING_FIT_COLUMNS)
    empty = scaling_fits(dataset.iloc[0:0], models=catalogue.models)
    assert list(empty.columns) == names(SCALING_FIT_COLUMNS)


def test_validation(validation_rows, holdout_rows) -> None:
    _assert_columns(validation_table(validation_rows, holdout_rows), VALIDATION_TABLE_COLUMNS)


@pytest.mark.parametrize("facet", [None, "recompute"])
def test_study_fits_after_the_study_columns(scaleout_sim, facet) -> None:
    spec = ReportSpec(
        x="num_gpus",
        series=("model",),
        facet=facet,
        best_of=(),
        metrics=("tokens_per_s_per_gpu",),
        levels={"model": ("llama2-7b", "llama2-70b"), "recompute": ("none", "full")},
    )
    table = study_fits(select_rows(scaleout_sim, spec), spec)
    assert len(table)
    columns = tuple(c for c in STUDY_FIT_COLUMNS if c.name != "facet" or facet)
    _assert_columns(table, columns, leading=[*([facet] if facet else []), "model"])


def test_every_registered_table_prints_its_schema_columns(
    tmp_path, repo_root, catalogue, validation_rows, holdout_rows, best_sim, scaleout_sim
) -> None:
    claims = claims_table({claim.key: 1.0 for claim in CLAIMS})
    write_parquet(claims.assign(calibration_id="c", simulator_version="v"), tmp_path / "claims.pq",
                  CLAIM_COLUMNS)  # fmt: skip
    sensitivity = pd.DataFrame(
        {
            "nccl_latency_scale": [1.0], "calibrated": [True], "throughput_mape_pct": 1.0,
            "busbw_mape_pct": 1.0, "throughput_drop_pct": 1.0, "drop_claim_holds": False,
            "power_drop_pct": 1.0, "mfu_a100_pct": 1.0, "mfu_h100_pct": 1.0,
            "calibration_id": "a", "reference_calibration_id": "b",
        }
    )  # fmt: skip
    write_parquet(sensitivity, tmp_path / "sensitivity.pq", CLAIM_SENSITIVITY_COLUMNS)
    frames = {
        "validation": validation_rows,
        "holdout": holdout_rows,
        "best": best_sim,
        "dataset": scaleout_sim.assign(source="sim", study="fsdp_scaleout"),
    }
    for name, frame in frames.items():
        frame.to_parquet(tmp_path / f"{name}.pq")
    inputs = {
        "claims": {"claims": tmp_path / "claims.pq"},
        "claim_sensitivity": {"sensitivity": tmp_path / "sensitivity.pq"},
        "best_plans": {"sim": tmp_path / "best.pq"},
        "validation": {
            "validation": tmp_path / "validation.pq",
            "holdout": tmp_path / "holdout.pq",
            "published": repo_root / "data" / "published" / "measurements.csv",
        },
    }
    for name, columns in TABLE_COLUMNS.items():
        if name == "scaling_fits":  # its input is a dataset folder: printed from a frame here
            from trainscale.tables.scaling_fits import render

            csv, *_ = render(tmp_path / name, pd.read_parquet(tmp_path / "dataset.pq"),
                             models=catalogue.models)  # fmt: skip
        else:
            files = {key: str(path) for key, path in inputs.get(name, {}).items()}
            parts = {key: getattr(catalogue, key) for key in TABLES[name].catalogue_files()}
            csv, *_ = render_table(name, tmp_path / name, files, parts)
        assert pd.read_csv(csv, nrows=0).columns.tolist() == names(columns), name
