"""Every table has its columns in trainscale.schema: each presentation table builder returns
exactly its schema's columns, in order and of their dtype, and each registered table's CSV
prints exactly them; so do the tables the ingesters, the fits and the accuracy summaries return
or write (the calibration profile and prior scan are checked in tests/calibrate, where they are
computed anyway)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from trainscale.commands.trace import trace_table
from trainscale.fits import fit_loglog, fit_usl, fit_usl_table, marginal_returns, usl_marginal
from trainscale.fits.usl_fit import UslFit
from trainscale.ingest.nccltests import parse_nccl_tests
from trainscale.ingest.runs import ingest_run, write_ingested
from trainscale.ingest.steplog import parse_step_log
from trainscale.io.parquet import write_parquet
from trainscale.paper.claims import claims_table
from trainscale.paper.values import CLAIMS
from trainscale.published.holdout import accuracy, collective_accuracy
from trainscale.report.best_plans import best_plans
from trainscale.schema import (
    ACCURACY_COLUMNS,
    BEST_PLAN_COLUMNS,
    CLAIM_COLUMNS,
    CLAIM_SENSITIVITY_COLUMNS,
    CLAIM_SENSITIVITY_TABLE_COLUMNS,
    CLAIMS_TABLE_COLUMNS,
    COLLECTIVE_ACCURACY_COLUMNS,
    CONFIGURATION_COLUMNS,
    HARDWARE_COLUMNS,
    LOGLOG_COLUMNS,
    MARGINAL_COLUMNS,
    MODEL_COLUMNS,
    NCCL_COLUMNS,
    REJECT_COLUMNS,
    SCALING_FIT_COLUMNS,
    STEP_COLUMNS,
    STEP_TABLE_COLUMNS,
    STUDY_FIT_COLUMNS,
    TRACE_COLUMNS,
    USL_COLUMNS,
    USL_MARGINAL_COLUMNS,
    VALIDATION_TABLE_COLUMNS,
    Column,
    names,
)
from trainscale.schema.presentation import PILOTS_TABLE_COLUMNS
from trainscale.sim.simulate import predict_with_rejects
from trainscale.study.report import ReportSpec, select_rows
from trainscale.tables import TABLES, render_table
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
    "pilots": PILOTS_TABLE_COLUMNS,
}


def test_every_registered_table_has_its_columns_in_the_schema() -> None:
    assert set(TABLE_COLUMNS) == set(TABLES)


def test_catalogue_tables(catalogue, assert_columns) -> None:
    assert_columns(hardware_table(catalogue.hardware), HARDWARE_COLUMNS)
    assert_columns(models_table(catalogue.models), MODEL_COLUMNS)


def test_best_plans(best_sim, catalogue, assert_columns) -> None:
    assert_columns(best_plans(best_sim, models=catalogue.models), BEST_PLAN_COLUMNS)


def test_scaling_fits(scaleout_sim, catalogue, assert_columns) -> None:
    dataset = scaleout_sim.assign(source="sim", study="fsdp_scaleout")
    table = scaling_fits(dataset, models=catalogue.models)
    assert len(table)
    assert_columns(table, SCALING_FIT_COLUMNS)
    empty = scaling_fits(dataset.iloc[0:0], models=catalogue.models)
    assert list(empty.columns) == names(SCALING_FIT_COLUMNS)


def test_validation(validation_rows, holdout_rows, assert_columns) -> None:
    assert_columns(validation_table(validation_rows, holdout_rows), VALIDATION_TABLE_COLUMNS)


@pytest.mark.parametrize("facet", [None, "recompute"])
def test_study_fits_after_the_study_columns(scaleout_sim, facet, assert_columns) -> None:
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
    assert_columns(table, columns, leading=[*([facet] if facet else []), "model"])


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
    pd.DataFrame(
        {
            "citation": ["a", "b"], "series": ["a | 1", "b | 1"], "num_gpus": [16, 64],
            "pilot_gpus": 8, "pilot_ape_pct": 1.0, "base_ape_pct": 2.0,
            "weak_scaling_ape_pct": 3.0, "covered": [True, False], "calibration_id": "c",
        }
    ).to_parquet(tmp_path / "pilots.pq")  # fmt: skip
    frames = {
        "validation": validation_rows,
        "holdout": holdout_rows,
        "best": best_sim,
        "dataset": scaleout_sim.assign(source="sim", study="fsdp_scaleout"),
        "measured": pd.DataFrame({"run_id": ["r"], "config_id": ["c"], "warnings": ["w"]}),
    }
    for name, frame in frames.items():
        frame.to_parquet(tmp_path / f"{name}.pq")
    inputs = {
        "claims": {"claims": tmp_path / "claims.pq"},
        "claim_sensitivity": {"sensitivity": tmp_path / "sensitivity.pq"},
        "best_plans": {"sim": tmp_path / "best.pq"},
        "pilots": {"pilots": tmp_path / "pilots.pq"},
        "validation": {
            "validation": tmp_path / "validation.pq",
            "holdout": tmp_path / "holdout.pq",
            "published": repo_root / "data" / "published" / "measurements.csv",
            "sim_vs_measured": tmp_path / "measured.pq",  # a warned row: no column added
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


# --------------------------------------------------------------------------------------------
# The tables the ingesters, the fits and the accuracy summaries return or write.

#: An nccl-tests stdout table: one AllReduce size on 8 ranks of one node.
NCCL_OUTPUT = "\n".join(
    [
        "# Collective test starting: all_reduce_perf",
        *(
            f"#  Rank {r:2d} Group  0 Pid {12345 + r:6d} on     node01 device {r:2d} "
            f"[0000:{0x18 + r:02x}:00] NVIDIA H100 80GB HBM3"
            for r in range(8)
        ),
        "#       size         count      type   redop    root     time   algbw   busbw #wrong"
        "     time   algbw   busbw #wrong",
        "#        (B)    (elements)                               (us)  (GB/s)  (GB/s)"
        "            (us)  (GB/s)  (GB/s)",
        "     1048576        262144     float     sum      -1    20.50   51.15   89.51      0"
        "    20.31   51.63   90.35      0",
        "# Collective test concluded: all_reduce_perf",
    ]
)


def test_step_tables(tmp_path, repo_root, catalogue, assert_columns) -> None:
    """A step log's steps, a run's per-step table and ``results/measured/<run>_steps.parquet``."""
    run = repo_root / "data" / "runs" / "megatron_golden_345m"
    (golden,) = run.glob("*.json")
    assert_columns(parse_step_log(golden).steps, STEP_COLUMNS)
    shipped = {"hardware": catalogue.hardware, "models": catalogue.models}
    _, steps = ingest_run(run, **shipped)
    assert len(steps)
    assert_columns(steps, STEP_TABLE_COLUMNS)
    write_ingested(run, tmp_path / "run.parquet", tmp_path / "steps.parquet", **shipped)
    assert_columns(pd.read_parquet(tmp_path / "steps.parquet"), STEP_TABLE_COLUMNS)


def test_nccl_tests_results(tmp_path, assert_columns) -> None:
    path = tmp_path / "nccl.log"
    path.write_text(NCCL_OUTPUT)
    assert_columns(parse_nccl_tests(path).results, NCCL_COLUMNS)


def test_trace_table(repo_root, assert_columns) -> None:
    traces = sorted((repo_root / "data" / "runs" / "hta_samples" / "traces").glob("*filter*"))
    if not traces:
        pytest.skip("the HTA sample traces are not shipped")
    assert_columns(trace_table(traces), TRACE_COLUMNS)


def test_rejects_after_the_input_columns(catalogue, shipped_calibration, assert_columns) -> None:
    frame = pd.DataFrame(
        [{"model": "llama2-7b", "seq_len": 4096, "global_batch": 64, "micro_batch": 1,
          "gpu": "no-such-gpu", "num_gpus": 8, "tp": 1, "pp": 1, "sharding": "fsdp",
          "recompute": "none", "precision": "bf16"}]
    )  # fmt: skip
    _, rejects = predict_with_rejects(frame, catalogue=catalogue, calibration=shipped_calibration)
    assert len(rejects)
    assert_columns(rejects, REJECT_COLUMNS, leading=list(frame.columns))
    assert set(names(REJECT_COLUMNS)).isdisjoint(names(CONFIGURATION_COLUMNS))


def test_fits(assert_columns) -> None:
    gpus = [8, 16, 32, 64]
    frame = pd.DataFrame(
        {
            "series": ["a"] * 4 + ["b"] * 4,
            "num_gpus": gpus * 2,
            "tokens_per_s": [100.0, 190, 370, 700, 90, 170, 300, 500],
            "power_w_per_gpu": [500.0, 510, 520, 530, 500, 505, 510, 515],
        }
    )
    by = ["series"]
    assert_columns(fit_loglog(frame, y="tokens_per_s", by="series"), LOGLOG_COLUMNS, leading=by)
    assert_columns(fit_usl_table(frame, by="series"), USL_COLUMNS, leading=by)
    assert [f.name for f in UslFit.__dataclass_fields__.values() if f.name != "cov_theta"] == (
        names(USL_COLUMNS)[1:]
    )
    marginal = marginal_returns(frame, by="series", usl=True)
    assert_columns(marginal, MARGINAL_COLUMNS, leading=by)
    fit = fit_usl(np.array(gpus, dtype=float), frame["tokens_per_s"].to_numpy()[:4])
    assert_columns(usl_marginal(fit, gpus, watts_per_added_gpu=500.0), USL_MARGINAL_COLUMNS)


def test_accuracy_summaries(assert_columns) -> None:
    held_out = pd.DataFrame(
        {
            "csv_row": [2, 3, 4],
            "citation": ["A", "A", "B"],
            "framework": ["megatron", "megatron", "pytorch"],
            "ape_pct": [1.0, 2.0, 3.0],
        }
    )
    in_sample = held_out.assign(
        observed_tokens_per_s_per_gpu=[1.0, 2.0, 3.0], predicted_tokens_per_s_per_gpu=1.5
    ).drop(columns="framework")
    assert_columns(accuracy(held_out, in_sample), ACCURACY_COLUMNS, leading=["source"])
    by_framework = accuracy(held_out, in_sample, by="framework")
    assert_columns(by_framework, ACCURACY_COLUMNS, leading=["framework"])
    collectives = pd.DataFrame(
        {
            "citation": ["A", "NCCL GitHub issues (user reports)"],
            "size_bytes": [2**25, 2**26],
            "ape_pct": [1.0, 2.0],
        }
    )
    assert_columns(collective_accuracy(collectives), COLLECTIVE_ACCURACY_COLUMNS)
    assert_columns(collective_accuracy(collectives.iloc[0:0]), COLLECTIVE_ACCURACY_COLUMNS)
