"""data/calibration.yaml: reproducible by `trainscale calibrate`, within bounds, hashed."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from trainscale.calibrate.fit import calibrate
from trainscale.errors import InputFileError
from trainscale.paths import data_dir
from trainscale.sim.calibration import PARAMETERS, Calibration, load_calibration


def test_stored_values_are_within_bounds_and_hash_matches() -> None:
    stored = yaml.safe_load((data_dir() / "calibration.yaml").read_text())
    calibration = load_calibration()
    assert stored["calibration_id"] == calibration.calibration_id
    for spec in PARAMETERS:
        entry = stored["parameters"][spec.name]
        assert spec.lower <= entry["value"] <= spec.upper
        assert entry["description"] and entry["unit"]
    assert stored["not_represented"], "rows the simulator cannot represent are listed"


def test_calibrate_reproduces_the_stored_file(tmp_path: Path, published, catalogue) -> None:
    out = tmp_path / "calibration.yaml"
    calibrate(out, published, catalogue=catalogue)
    assert out.read_text() == (data_dir() / "calibration.yaml").read_text()


def test_out_of_bounds_value_is_rejected_with_file_and_key(tmp_path: Path) -> None:
    bad = tmp_path / "calibration.yaml"
    bad.write_text("parameters:\n  nic_efficiency:\n    value: 3.0\n")
    with pytest.raises(InputFileError, match=r"parameters\.nic_efficiency\.value: 3\.0 outside"):
        load_calibration(bad)


def test_the_id_changes_with_any_value() -> None:
    base = Calibration.defaults()
    assert base.calibration_id != base.with_values(nic_efficiency=0.9).calibration_id
