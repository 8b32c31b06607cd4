"""trainscale.sim.throughput: the throughput a fit reads is predict_arrays' own, bit for bit."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from tests.library import pytorch_h100_pilots
from trainscale.calibrate.user import calibrate_user
from trainscale.published.measurements import PublishedData
from trainscale.sim.calibration import Calibration, load_calibration
from trainscale.sim.catalogue import Catalogue
from trainscale.sim.configs import Configs, build_configs
from trainscale.sim.simulate import predict_arrays
from trainscale.sim.throughput import throughput_per_gpu


def _published_configs(published: PublishedData, catalogue: Catalogue) -> Configs:
    """Every published throughput row the simulator represents (dense and mixture-of-experts,
    every framework, GPU and parallelism the published data hold)."""
    table = pd.concat([published.throughput, published.moe], ignore_index=True)
    configs, valid, _ = build_configs(
        table, hardware=catalogue.hardware, models=catalogue.models,
        frameworks=catalogue.frameworks, skip_invalid=True,
    )  # fmt: skip
    assert valid.sum() > 250
    return configs


def _same(c: Configs, cal: Calibration, catalogue: Catalogue) -> None:
    fast = throughput_per_gpu(c, cal, catalogue)
    full = predict_arrays(c, cal, catalogue)["tokens_per_s_per_gpu"]
    assert fast.dtype == full.dtype == np.float64
    assert fast.tobytes() == full.tobytes()


def test_the_shipped_calibration_gives_predict_arrays_bytes(
    published: PublishedData, catalogue: Catalogue, shipped_calibration: Calibration
) -> None:
    configs = _published_configs(published, catalogue)
    _same(configs, shipped_calibration, catalogue)
    _same(configs, Calibration.defaults(catalogue.framework_keys), catalogue)


def test_a_calibration_with_measured_levels_gives_predict_arrays_bytes(
    tmp_path: Path,
    published: PublishedData,
    catalogue: Catalogue,
    shipped_pilot_errors: pd.DataFrame,
) -> None:
    # PyTorch pilots on H100 only: every other (framework, GPU) pair keeps the shipped level
    pilots = pytorch_h100_pilots(tmp_path)
    mine = tmp_path / "mine.yaml"
    calibrate_user(
        pilots, mine, base=load_calibration(), published=published, catalogue=catalogue,
        pilot_errors=shipped_pilot_errors,
    )  # fmt: skip
    levels = load_calibration(mine)
    assert levels.intervals.pilot.measured_levels  # the split path is the one taken
    _same(_published_configs(published, catalogue), levels, catalogue)
