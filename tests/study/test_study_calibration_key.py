"""A study's ``calibration:`` key: a calibration file, or ``{measurements: [...]}`` (the paths
the workflow's rule calibrate_study calibrates the study on)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import yaml

from trainscale.errors import InputFileError
from trainscale.paths import schema_file
from trainscale.sim.catalogue import load_catalogue
from trainscale.study.load import load_study

CATALOGUE = load_catalogue()
STUDY = {
    "description": "Llama-2 7B, FSDP, H100, 8-64 GPUs.",
    "fixed": {
        "model": "llama2-7b", "seq_len": 4096, "global_batch": 256, "micro_batch": 1,
        "gpu": "h100-sxm-80gb", "tp": 1, "pp": 1, "sharding": "fsdp", "recompute": "none",
        "precision": "bf16",
    },
    "sweep": {"num_gpus": [8, 16, 32, 64]},
}  # fmt: skip


def _load(tmp_path: Path, calibration: object) -> object:
    path = tmp_path / "study.yaml"
    path.write_text(yaml.safe_dump({**STUDY, "calibration": calibration}, sort_keys=False))
    cwd = Path.cwd()
    os.chdir(tmp_path)  # paths are relative to the working directory, as in the workflow
    try:
        return load_study(
            path, schema=schema_file("study"), hardware=CATALOGUE.hardware,
            models=CATALOGUE.models,
        )  # fmt: skip
    finally:
        os.chdir(cwd)


def test_measurements_are_kept_as_paths(tmp_path: Path) -> None:
    (tmp_path / "pilots.csv").write_text("x\n")
    (tmp_path / "runs").mkdir()
    study = _load(tmp_path, {"measurements": ["pilots.csv", "runs"]})
    assert study.calibration is None
    assert study.calibration_measurements == ("pilots.csv", "runs")


@pytest.mark.parametrize(
    ("calibration", "message"),
    [
        ({"measurements": ["none.csv"]}, "measurements: no such file or folder 'none.csv'"),
        ({"measurements": []}, "key 'calibration.measurements': [] should be non-empty"),
        ({"files": ["a.csv"]}, "key 'calibration.files': unknown key; allowed: measurements"),
        ("mine.txt", "does not match"),
    ],
)
def test_a_bad_calibration_key_is_named(tmp_path: Path, calibration: object, message: str) -> None:
    with pytest.raises(InputFileError, match="key 'calibration") as error:
        _load(tmp_path, calibration)
    assert message in str(error.value)
