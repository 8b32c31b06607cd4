"""What the library gives for a study of an executed workflow copy: the reference the workflow's
own results are compared with (tests/workflow, tests/slurm)."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from trainscale.sim.calibration import load_calibration
from trainscale.sim.catalogue import load_catalogue
from trainscale.study.expand import expand_study
from trainscale.study.load import load_study
from trainscale.study.simulate import simulate_configurations


def library_results(workdir: Path, repo_root: Path, study: str = "smoke") -> pd.DataFrame:
    """The study ``study`` of the workflow copy ``workdir`` simulated by the library directly,
    with the files the run read (its ``data/`` catalogues and calibration)."""
    catalogue = load_catalogue(workdir / "data")
    calibration = load_calibration(workdir / "data" / "calibration.yaml")
    spec = load_study(
        workdir / f"config/studies/{study}.yaml",
        schema=repo_root / "workflow/schemas/study.schema.yaml",
        hardware=catalogue.hardware,
        models=catalogue.models,
    )
    configurations, _ = expand_study(spec, catalogue=catalogue, calibration=calibration)
    expected, _ = simulate_configurations(
        configurations, spec.filters, catalogue=catalogue, calibration=calibration
    )
    return expected
