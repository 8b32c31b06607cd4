"""A study calibrated on its own pilots: ``calibration: {measurements: [...]}`` makes the rule
calibrate_study ingest and calibrate them into results/calibration/<study>.yaml, which the
study is then simulated with (rules/studies.smk, rules/common.smk)."""

from __future__ import annotations

import pandas as pd
import pytest
import yaml

from tests.workflow._user_studies import PILOT, pilot_study
from trainscale.sim.calibration import load_calibration

pytestmark = pytest.mark.workflow

NAME = PILOT


def test_a_study_is_simulated_with_the_calibration_of_its_own_pilots(user_studies_run) -> None:
    """The study calibrated on :data:`tests.workflow._user_studies.PILOT_MEASUREMENTS`, built in
    the shared run of the users' studies (fixture user_studies_run)."""
    workdir = user_studies_run.check()
    figure = f"reports/studies/{NAME}/scaling.svg"
    mine = load_calibration(workdir / "results" / "calibration" / f"{NAME}.yaml")
    shipped = load_calibration(workdir / "data" / "calibration.yaml")
    assert mine.calibration_id != shipped.calibration_id
    stored = yaml.safe_load((workdir / "results" / "calibration" / f"{NAME}.yaml").read_text())
    files = [f["file"] for f in stored["measurements"]["files"]]
    assert files == ["pilots/foundry.csv", "data/runs/megatron_golden_345m"]
    assert [f["rows"] for f in stored["measurements"]["files"]] == [8, 1]
    simulated = pd.read_parquet(workdir / "results" / "sim" / f"{NAME}.parquet")
    assert set(simulated["calibration_id"]) == {mine.calibration_id}
    log = (workdir / "results" / "logs" / "calibrate_study" / f"{NAME}.log").read_text()
    assert "shipped (no refit)" in log and "leave-largest-scale-out" in log
    # the figure draws the pilots and names the study's own calibration
    pilots = pd.read_parquet(workdir / "results" / "calibration" / f"{NAME}.pilots.parquet")
    assert len(pilots) == 9 and (pilots["measured_tokens_per_s_per_gpu"] > 0).all()
    text = " ".join((workdir / figure).read_text().split())
    assert "measured pilot runs" in text
    assert f"calibration {mine.calibration_id}" in text and "own 9 measured pilot runs" in text


def test_a_missing_measurement_path_stops_the_run_at_start_up(workflow_copy, run_snakemake) -> None:
    workdir = workflow_copy(studies=(NAME,))
    pilot_study(workdir, ["pilots/none.csv"])

    done = run_snakemake(workdir, "--dry-run")

    output = done.stdout + done.stderr
    assert done.returncode != 0
    assert "key 'calibration': measurements: no such file or folder 'pilots/none.csv'" in output
    assert not (workdir / "results").exists()
