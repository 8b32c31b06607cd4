"""``trainscale plan``: one command searches the plans a study would, and its rows are the study
points table's for the same grid."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest
import yaml

from trainscale.cli import main
from trainscale.commands.plan_search import plan_knees, plan_points
from trainscale.errors import TrainscaleError
from trainscale.names import Names
from trainscale.sim.calibration import load_calibration
from trainscale.sim.catalogue import load_catalogue
from trainscale.study.expand import expand_study
from trainscale.study.load import load_study
from trainscale.study.plan import PlanRequest, parse_batch_tokens
from trainscale.study.report import report_spec, select_rows
from trainscale.study.simulate import simulate_configurations
from trainscale.tables.study_points import study_points

CATALOGUE = load_catalogue()
CALIBRATION = load_calibration()
SEARCH = {
    "tp": (4, 8), "pp": (1, 2), "vpp": (1,), "cp": (1,), "sharding": ("zero1", "fsdp"),
    "recompute": ("none", "full"), "micro_batch": (1, "auto"),
}  # fmt: skip
REQUEST = PlanRequest(
    model="llama3-70b", gpus=("h100-sxm-80gb", "b200"), num_gpus=(256, 512, 1024),
    seq_len=8192, global_batch_tokens=4 * 2**20, framework="megatron", search=SEARCH,
)  # fmt: skip


def test_parse_batch_tokens_reads_binary_suffixes() -> None:
    assert parse_batch_tokens("4M") == 4 * 2**20 == 512 * 8192
    assert parse_batch_tokens("16m") == 2048 * 8192
    assert parse_batch_tokens("1536") == 1536
    with pytest.raises(TrainscaleError, match="K, M or G"):
        parse_batch_tokens("4X")


def test_plan_rows_equal_the_study_points_of_the_same_grid(tmp_path: Path) -> None:
    study_file = tmp_path / "same_grid.yaml"
    study_file.write_text(yaml.safe_dump({
        "description": "the plan search of the test, as a study file",
        "fixed": {"model": "llama3-70b", "seq_len": 8192, "precision": "bf16",
                  "framework": "megatron"},
        "sweep": {"gpu": ["h100-sxm-80gb", "b200"], "num_gpus": [256, 512, 1024],
                  **{k: list(v) for k, v in SEARCH.items()}},
        "derive": {"global_batch_tokens": 4 * 2**20},
        "filters": {"fits_memory": True, "max_tp_per_node": True},
        "report": {"x": "num_gpus", "series": ["gpu"],
                   "best_of": ["tp", "pp", "sharding", "recompute", "micro_batch"]},
    }))  # fmt: skip
    schema = Path(__file__).parents[2] / "workflow" / "schemas" / "study.schema.yaml"
    study = load_study(study_file, schema=schema, hardware=CATALOGUE.hardware,
                       models=CATALOGUE.models)  # fmt: skip
    configurations, _ = expand_study(study, catalogue=CATALOGUE, calibration=CALIBRATION)
    simulated, _ = simulate_configurations(
        configurations, study.filters, catalogue=CATALOGUE, calibration=CALIBRATION
    )
    spec = report_spec(study, Names.of(CATALOGUE.hardware, CATALOGUE.models))
    hbm = {key: gpu.hbm_bytes for key, gpu in CATALOGUE.hardware.gpus.items()}
    expected = study_points(select_rows(simulated, spec), simulated, spec, hbm)
    got = plan_points(REQUEST, catalogue=CATALOGUE, calibration=CALIBRATION).points
    assert len(got) == 6
    pd.testing.assert_frame_equal(got, expected)


def test_the_command_prints_winners_knees_and_writes_the_points(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "plan.csv"
    status = main([
        "plan", "--model", "llama3-70b", "--gpu", "h100-sxm-80gb", "b200",
        "--num-gpus", "256", "512", "1024", "--global-batch-tokens", "4M",
        "--tp", "4", "8", "--pp", "1", "2", "--vpp", "1", "--cp", "1",
        "--sharding", "zero1", "fsdp", "--recompute", "none", "full",
        "--micro-batch", "1", "auto", "-o", str(out),
    ])  # fmt: skip
    assert status == 0
    text = capsys.readouterr().out
    assert "H100 80GB" in text and "B200" in text
    assert "knee (h100-sxm-80gb)" in text and "knee (b200)" in text
    written = pd.read_csv(out)
    expected = plan_points(REQUEST, catalogue=CATALOGUE, calibration=CALIBRATION).points
    assert list(written.columns) == list(expected.columns)
    assert written["plan"].tolist() == expected["plan"].tolist()


def test_an_unknown_model_is_a_named_error(capsys: pytest.CaptureFixture[str]) -> None:
    status = main(["plan", "--model", "llama3-70", "--gpu", "h100-sxm-80gb", "--num-gpus",
                   "8", "16", "--global-batch", "64"])  # fmt: skip
    assert status == 2
    assert "did you mean 'llama3-70b'" in capsys.readouterr().err


def test_knees_name_the_plan_and_batch_at_the_knee() -> None:
    result = plan_points(REQUEST, catalogue=CATALOGUE, calibration=CALIBRATION)
    knees = plan_knees(result)
    assert list(knees["gpu"]) == ["h100-sxm-80gb", "b200"]
    found = knees.dropna(subset=["knee_x"])
    for row in found.itertuples(index=False):
        assert row.knee_plan and row.knee_global_batch == 512
        assert row.knee_cause in ("exposed collective", "pipeline bubble")
