"""A GPU power limit (``power_limit_w``) throttles the clock during dense compute.

Each test compares predictions that differ in the limit only, with the default calibration (so
the tests do not move when the stored calibration is refitted).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from trainscale import predict
from trainscale.errors import ConfigurationError
from trainscale.sim.calibration import Calibration
from trainscale.sim.catalogue import load_catalogue
from trainscale.sim.system.power import tensor_clock_ratio

CAL = Calibration.defaults(load_catalogue().framework_keys)

#: H100 SXM: TDP 700 W, idle 140 W (data/hardware.yaml).
TDP_W, IDLE_W = 700.0, 140.0


def _row(**overrides: object) -> dict:
    row = {
        "model": "llama3-8b", "seq_len": 8192, "global_batch": 64, "micro_batch": 2,
        "gpu": "h100-sxm-80gb", "num_gpus": 8, "tp": 1, "pp": 1, "sharding": "fsdp",
        "recompute": "selective", "precision": "bf16",
    }  # fmt: skip
    row.update(overrides)
    return row


def _predict(*rows: dict) -> pd.DataFrame:
    return predict(pd.DataFrame(list(rows)), calibration=CAL)


def test_clock_ratio_is_the_cube_root_of_the_allowed_dense_draw() -> None:
    dense_draw_w = IDLE_W + CAL.power_compute_frac * (TDP_W - IDLE_W)
    limit_w = 500.0
    expected = ((limit_w - IDLE_W) / (dense_draw_w - IDLE_W)) ** (1 / 3)
    ratio = tensor_clock_ratio(power_limit_w=limit_w, tdp_w=TDP_W, idle_w=IDLE_W, cal=CAL)
    assert ratio == pytest.approx(expected)
    assert 0.85 < float(ratio) < 1.0


def test_a_limit_above_the_dense_draw_changes_nothing() -> None:
    dense_draw_w = IDLE_W + CAL.power_compute_frac * (TDP_W - IDLE_W)
    for limit_w in (dense_draw_w, dense_draw_w + 1.0, TDP_W):
        ratio = tensor_clock_ratio(power_limit_w=limit_w, tdp_w=TDP_W, idle_w=IDLE_W, cal=CAL)
        assert ratio == pytest.approx(1.0)
    no_limit, at_tdp = _predict(_row(), _row(power_limit_w=TDP_W)).itertuples()
    assert no_limit.step_time_s == at_tdp.step_time_s
    assert no_limit.power_limit_w == TDP_W


def test_a_lower_limit_slows_dense_compute_only_and_caps_power() -> None:
    free, limited = _predict(_row(), _row(power_limit_w=500.0)).itertuples()
    ratio = float(tensor_clock_ratio(power_limit_w=500.0, tdp_w=TDP_W, idle_w=IDLE_W, cal=CAL))
    assert limited.step_time_s > free.step_time_s
    # Dense kernels take 1/ratio as long; memory-bound kernels keep their time, so the step
    # slows by less than the dense share would if everything scaled.
    assert limited.step_time_s < free.step_time_s / ratio
    assert limited.power_w_per_gpu <= 500.0
    assert limited.power_w_per_gpu < free.power_w_per_gpu
    # MFU stays against the nominal peak: it falls with the clock.
    assert limited.mfu == pytest.approx(free.mfu * free.step_time_s / limited.step_time_s)


def test_lower_limits_are_monotone() -> None:
    limits = [650.0, 600.0, 550.0, 500.0, 450.0, 400.0]
    out = _predict(*(_row(power_limit_w=w) for w in limits))
    assert np.all(np.diff(out["step_time_s"].to_numpy()) >= 0)
    assert np.all(out["power_w_per_gpu"].to_numpy() <= np.array(limits) + 1e-9)


@pytest.mark.parametrize("limit_w", [800.0, 140.0, 100.0, -5.0, "high"])
def test_a_limit_outside_idle_to_tdp_is_a_named_error(limit_w: object) -> None:
    with pytest.raises(ConfigurationError) as caught:
        _predict(_row(power_limit_w=limit_w))
    message = str(caught.value)
    assert "power_limit_w" in message
    assert "row 0" in message or "row 1" in message
