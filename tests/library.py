"""What the library gives for a study of an executed workflow copy: the reference the workflow's
own results are compared with (tests/workflow, tests/slurm); and a user's pilot measurements
that calibrations with measured levels are fitted to (tests/calibrate, tests/sim)."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from trainscale.calibrate.measurements import MEASURED
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


def pytorch_h100_pilots(tmp_path: Path) -> Path:
    """``tmp_path/pilots.csv``: two measured Llama-3 8B runs on 8 H100s under PyTorch FSDP (6,350
    and 6,300 tokens/s per GPU), the pilots of a user calibration whose only measured level is
    (pytorch, h100-sxm-80gb)."""
    path = tmp_path / "pilots.csv"
    pd.DataFrame([
        {"model": "llama3-8b", "num_gpus": 8, "global_batch": 32, MEASURED: 6350.0},
        {"model": "llama3-8b", "num_gpus": 8, "global_batch": 64, MEASURED: 6300.0},
    ]).assign(
        seq_len=8192, micro_batch=1, gpu="h100-sxm-80gb", tp=1, pp=1, sharding="fsdp",
        recompute="none", precision="bf16", framework="pytorch",
    ).to_csv(path, index=False)  # fmt: skip
    return path
