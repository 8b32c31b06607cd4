"""The pilot errors stored with a calibration (trainscale.calibrate.stored)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml

from trainscale.calibrate.pilot_series import pilot_interval_model
from trainscale.calibrate.stored import BLOCK, StoredPilotErrors, read_stored
from trainscale.errors import InputFileError
from trainscale.paths import data_dir
from trainscale.sim.calibration import load_calibration


def test_the_shipped_block_is_the_table_of_the_pilot_errors_measured_with_it(
    shipped_pilot_errors: pd.DataFrame,
) -> None:
    """data/calibration.yaml's block is what the pilot errors measured on the published data
    with the shipped calibration give (golden pilot_errors), keyed by the shipped id."""
    document = yaml.safe_load((data_dir() / "calibration.yaml").read_text())
    shipped = load_calibration().calibration_id
    measured = StoredPilotErrors.of(shipped_pilot_errors, shipped)
    assert document[BLOCK] == measured.as_dict()
    assert document[BLOCK]["calibration_id"] == document["calibration_id"] == shipped
    assert read_stored(data_dir() / "calibration.yaml") == measured


@pytest.mark.parametrize("gpus", [[8], [8, 8, 64], [512, 16]])
def test_the_stored_table_gives_the_interval_model_of_the_measured_errors(
    shipped_pilot_errors: pd.DataFrame, gpus: list[int]
) -> None:
    stored = StoredPilotErrors.of(shipped_pilot_errors, "x")
    expected = pilot_interval_model(shipped_pilot_errors, np.array(gpus))
    assert stored.intervals(np.array(gpus)) == expected
    assert StoredPilotErrors.from_dict(stored.as_dict()) == stored


def test_a_missing_file_or_block_is_none_a_malformed_block_names_the_file(tmp_path: Path) -> None:
    assert read_stored(tmp_path / "none.yaml") is None
    path = tmp_path / "calibration.yaml"
    path.write_text("calibration_id: abc\nparameters: {}\n")
    assert read_stored(path) is None
    path.write_text(f"calibration_id: abc\n{BLOCK}:\n  calibration_id: abc\n  bins: []\n")
    with pytest.raises(InputFileError, match=rf"calibration.yaml.*{BLOCK}: malformed block"):
        read_stored(path)
