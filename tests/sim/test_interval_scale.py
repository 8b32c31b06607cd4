"""The scale factor of the interval width (trainscale.sim.interval_scale)."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from trainscale.sim.interval_scale import REFERENCE_GPUS, scale_factor, scale_slope


def _rows(gpus: list[int], misses: list[float], citations: list[str]) -> pd.DataFrame:
    """Residual rows whose absolute log error is ``misses``."""
    return pd.DataFrame({
        "num_gpus": gpus, "citation": citations, "observed_tokens_per_s_per_gpu": 100.0,
        "predicted_tokens_per_s_per_gpu": 100.0 * np.exp(misses),
    })  # fmt: skip


def test_the_slope_is_the_relative_growth_of_the_miss_per_doubling() -> None:
    # |r| = 0.05 (1 + 0.2 x), x doublings above one node, alternating signs
    gpus = [8, 16, 64, 256, 1024, 4096]
    x = np.log2(np.array(gpus) / REFERENCE_GPUS)
    misses = 0.05 * (1 + 0.2 * x) * np.array([1, -1, 1, -1, 1, -1])
    assert scale_slope(_rows(gpus, list(misses), list("ABCDEF"))) == pytest.approx(0.2, rel=1e-5)


def test_every_source_weighs_the_same() -> None:
    # source A: 20 rows at one node missing by 0.05; source B: one row at 1,024 GPUs (7 doublings)
    # missing by 0.05 (1 + 0.1 * 7); with equal source weights the line goes through both means
    gpus = [8] * 20 + [1024]
    misses = [0.05] * 20 + [0.05 * 1.7]
    assert scale_slope(_rows(gpus, misses, ["A"] * 20 + ["B"])) == pytest.approx(0.1, rel=1e-5)


def test_the_slope_is_never_negative_and_zero_on_one_scale() -> None:
    shrinking = _rows([8, 64, 512], [0.3, 0.2, 0.1], ["A", "B", "C"])
    assert scale_slope(shrinking) == 0.0
    assert scale_slope(_rows([64, 64], [0.1, 0.3], ["A", "B"])) == 0.0
    assert scale_slope(_rows([4, 8], [0.1, 0.3], ["A", "B"])) == 0.0  # both at or below a node


def test_the_factor_is_one_up_to_a_node_and_grows_with_each_doubling() -> None:
    factors = scale_factor(np.array([1, 8, 16, 1024]), 0.25)
    assert factors[:2].tolist() == [1.0, 1.0]
    assert factors[2] == pytest.approx(1.25)
    assert factors[3] == pytest.approx(1.0 + 0.25 * math.log2(1024 / 8))


def test_the_shipped_interval_widens_with_the_gpu_count_by_the_stored_slope() -> None:
    from trainscale.sim.calibration import load_calibration

    intervals = load_calibration().intervals
    assert intervals.scale_slope > 0.0
    keys = ("h100-sxm-80gb",)
    frameworks = load_calibration().frameworks
    framework = np.full(2, frameworks.index("pytorch"))
    gpus = np.array([8.0, 64.0])  # both within the largest PyTorch run: no PER_DOUBLING term
    _, upper = intervals.log_factors(
        framework, gpus, np.zeros(2, np.int64), keys, framework_keys=frameworks
    )
    assert upper[1] / upper[0] == pytest.approx(1.0 + 3.0 * intervals.scale_slope)


def test_the_growth_rate_is_the_log_growth_of_the_miss_per_doubling() -> None:
    from trainscale.sim.interval_scale import growth_factor, growth_rate

    # |r| = 0.02 exp(0.3 x), alternating signs; source A has 20 rows at one scale, B one row
    gpus = np.array([8, 16, 64, 256, 1024, 4096])
    x = np.log2(gpus / REFERENCE_GPUS)
    error = 0.02 * np.exp(0.3 * x) * np.array([1, -1, 1, -1, 1, -1])
    assert growth_rate(gpus, error, np.array(list("ABCDEF"))) == pytest.approx(0.3, rel=1e-5)
    many = np.r_[np.full(20, 8), 1024]
    misses = np.r_[np.full(20, 0.02), 0.02 * np.exp(0.1 * 7)]
    assert growth_rate(many, misses, np.array(["A"] * 20 + ["B"])) == pytest.approx(0.1, rel=1e-5)
    assert growth_rate(np.array([8, 512]), np.array([0.3, 0.1]), np.array(["A", "B"])) == 0.0
    assert growth_rate(np.array([64, 64]), np.array([0.1, 0.3]), np.array(["A", "B"])) == 0.0
    assert growth_factor(np.array([4, 8, 32]), 0.5).tolist() == pytest.approx([1, 1, np.e])


def test_the_shipped_pilot_interval_at_one_distance_widens_with_the_target_gpu_count() -> None:
    from trainscale.calibrate.stored import read_stored
    from trainscale.paths import data_dir

    stored = read_stored(data_dir() / "calibration.yaml")
    assert stored is not None and stored.growth_rate > 0.0
    small, large = stored.intervals([32]), stored.intervals([2048])
    lo_s, hi_s = small.log_factors(np.array([128]))  # two doublings from each pilot
    lo_l, hi_l = large.log_factors(np.array([8192]))
    growth = math.exp(stored.growth_rate * 6)  # 8,192 is six doublings above 128
    assert hi_l[0] / hi_s[0] == pytest.approx(growth) and lo_l[0] / lo_s[0] == pytest.approx(growth)
