"""Tests of trainscale.fits.loglog: synthetic power laws with known slopes."""

from __future__ import annotations

import doctest

import numpy as np
import pandas as pd
import pytest
from scipy import stats

import trainscale.fits.loglog as loglog_module
from trainscale.errors import TrainscaleError
from trainscale.fits.loglog import fit_loglog
from trainscale.schema import LOGLOG_COLUMNS, names

GPUS = np.array([8, 16, 32, 64, 128, 256, 512, 1024, 2048])


def power_law(slope: float, *, scale: float, noise: float, rng, replicates: int = 1):
    """Rows of y = scale * num_gpus**slope * exp(noise * z), z ~ N(0, 1)."""
    n = np.repeat(GPUS, replicates)
    y = scale * n.astype(float) ** slope * np.exp(rng.normal(0.0, noise, n.size))
    return pd.DataFrame({"num_gpus": n, "y": y})


def test_recovers_known_slope_inside_ci():
    rng = np.random.default_rng(20250101)
    true_slope = -0.15  # per-GPU throughput falling ~10% per doubling
    df = power_law(true_slope, scale=3.0e4, noise=0.03, rng=rng, replicates=3)
    row = fit_loglog(df, y="y").iloc[0]
    assert row["n"] == 27
    assert row["slope_ci_low"] < true_slope < row["slope_ci_high"]
    assert row["slope"] == pytest.approx(true_slope, abs=0.01)
    assert row["slope_ci_high"] - row["slope_ci_low"] < 0.03
    assert row["intercept"] == pytest.approx(np.log2(3.0e4), abs=0.1)
    assert row["r2"] > 0.95
    true_pct = 100 * (2**true_slope - 1)  # -9.90 %
    assert row["pct_change_per_doubling_ci_low"] < true_pct < row["pct_change_per_doubling_ci_high"]
    assert row["pct_change_per_doubling"] == pytest.approx(100 * (2 ** row["slope"] - 1))
    assert row["note"] == ""


def test_noiseless_power_law_is_exact():
    df = pd.DataFrame({"num_gpus": GPUS, "y": 7.0 * GPUS.astype(float) ** 0.8})
    row = fit_loglog(df, y="y").iloc[0]
    assert row["slope"] == pytest.approx(0.8, abs=1e-12)
    assert row["intercept"] == pytest.approx(np.log2(7.0), abs=1e-12)
    assert row["r2"] == pytest.approx(1.0)
    assert row["slope_ci_high"] - row["slope_ci_low"] == pytest.approx(0.0, abs=1e-9)
    assert row["pct_change_per_doubling"] == pytest.approx(100 * (2**0.8 - 1))


def test_standard_error_is_hc3_with_student_t_interval():
    """Reference: the HC3 sandwich (X'X)^-1 X' diag(e_i^2 / (1 - h_i)^2) X (X'X)^-1
    (MacKinnon & White 1985), computed here with numpy, and a t interval on n - 2 dof."""
    rng = np.random.default_rng(7)
    n = np.repeat(GPUS, 2).astype(float)
    noise = rng.normal(0.0, 0.01, n.size) * np.log2(n)  # heteroskedastic: grows with N
    df = pd.DataFrame({"num_gpus": n, "y": 100.0 * n**0.9 * np.exp(noise)})
    row = fit_loglog(df, y="y").iloc[0]
    design = np.column_stack([np.ones(n.size), np.log2(n)])
    ly = np.log2(df["y"].to_numpy())
    bread = np.linalg.inv(design.T @ design)
    coef = bread @ design.T @ ly
    resid = ly - design @ coef
    hat = np.einsum("ij,jk,ik->i", design, bread, design)
    meat = design.T @ (design * (resid**2 / (1 - hat) ** 2)[:, None])
    se = np.sqrt(np.diag(bread @ meat @ bread))
    nonrobust_se = np.sqrt(np.diag(bread) * (resid @ resid) / (n.size - 2))
    assert se[1] != pytest.approx(nonrobust_se[1], rel=0.05)  # the check can tell them apart
    assert row["slope"] == pytest.approx(coef[1], rel=1e-10)
    assert row["slope_se"] == pytest.approx(se[1], rel=1e-8)
    half = stats.t.ppf(0.975, n.size - 2) * se[1]
    assert row["slope_ci_low"] == pytest.approx(coef[1] - half, rel=1e-8)
    assert row["slope_ci_high"] == pytest.approx(coef[1] + half, rel=1e-8)


def test_ci_coverage_over_seeded_replicates():
    """The 95% interval covers the true slope in 90-99% of 200 seeded data sets."""
    rng = np.random.default_rng(12345)
    true_slope = 0.85
    frames = []
    for replicate in range(200):
        frame = power_law(true_slope, scale=2.0e3, noise=0.05, rng=rng)
        frames.append(frame.assign(replicate=replicate))
    fits = fit_loglog(pd.concat(frames), y="y", by="replicate")
    assert len(fits) == 200
    covered = (fits["slope_ci_low"] <= true_slope) & (true_slope <= fits["slope_ci_high"])
    assert 0.90 <= covered.mean() <= 0.99
    assert fits["slope"].mean() == pytest.approx(true_slope, abs=0.005)


def test_one_row_per_series_and_metric_sorted():
    rng = np.random.default_rng(3)
    parts = []
    for gpu, slope in (("h100", -0.3), ("a100", -0.1)):
        part = power_law(slope, scale=1e3, noise=0.01, rng=rng).assign(gpu=gpu, model="7b")
        parts.append(part.assign(power_w_per_gpu=500.0 * part["num_gpus"] ** -0.01))
    df = pd.concat(parts, ignore_index=True)
    fits = fit_loglog(df, y=["y", "power_w_per_gpu"], by=["model", "gpu"])
    assert list(fits.columns) == ["model", "gpu", *names(LOGLOG_COLUMNS)]
    assert list(zip(fits["gpu"], fits["metric"], strict=True)) == [
        ("a100", "y"),
        ("a100", "power_w_per_gpu"),
        ("h100", "y"),
        ("h100", "power_w_per_gpu"),
    ]
    slopes = fits.set_index(["gpu", "metric"])["slope"]
    assert slopes[("a100", "y")] == pytest.approx(-0.1, abs=0.02)
    assert slopes[("h100", "y")] == pytest.approx(-0.3, abs=0.02)
    assert slopes[("h100", "power_w_per_gpu")] == pytest.approx(-0.01, abs=1e-9)
    assert fits["n"].dtype == np.int64


@pytest.mark.filterwarnings("error")
def test_two_points_give_slope_but_nan_ci_and_note():
    df = pd.DataFrame({"num_gpus": [8, 16], "y": [100.0, 180.0]})
    row = fit_loglog(df, y="y").iloc[0]
    assert row["slope"] == pytest.approx(np.log2(1.8))
    assert np.isnan(row["slope_se"])
    assert np.isnan(row["slope_ci_low"]) and np.isnan(row["slope_ci_high"])
    assert np.isnan(row["pct_change_per_doubling_ci_low"])
    assert "HC3 undefined" in row["note"] and "n = 2" in row["note"]


@pytest.mark.filterwarnings("error")
def test_three_points_with_leverage_one_give_nan_ci_and_note():
    # Two of the three points share x: the third one alone decides the slope (leverage 1).
    df = pd.DataFrame({"num_gpus": [8, 16, 16], "y": [100.0, 170.0, 190.0]})
    row = fit_loglog(df, y="y").iloc[0]
    assert row["slope"] == pytest.approx(np.log2(np.sqrt(170.0 * 190.0) / 100.0))
    assert np.isnan(row["slope_ci_low"])
    assert "leverage 1" in row["note"]


@pytest.mark.filterwarnings("error")
def test_three_distinct_points_have_a_finite_wide_ci():
    df = pd.DataFrame({"num_gpus": [8, 16, 32], "y": [100.0, 185.0, 350.0]})
    row = fit_loglog(df, y="y").iloc[0]
    assert np.isfinite(row["slope_ci_low"]) and np.isfinite(row["slope_ci_high"])
    assert row["slope_ci_low"] < row["slope"] < row["slope_ci_high"]
    assert row["note"] == ""


@pytest.mark.filterwarnings("error")
def test_single_gpu_count_gives_nan_slope_and_note():
    df = pd.DataFrame({"num_gpus": [64, 64, 64], "y": [1.0, 1.1, 0.9]})
    row = fit_loglog(df, y="y").iloc[0]
    assert np.isnan(row["slope"]) and np.isnan(row["r2"])
    assert "2 distinct num_gpus" in row["note"]


def test_missing_values_are_dropped_and_noted():
    df = pd.DataFrame({"num_gpus": [8, 16, 32, 64], "y": [1.0, 2.0, np.nan, 8.0]})
    row = fit_loglog(df, y="y").iloc[0]
    assert row["n"] == 3
    assert row["slope"] == pytest.approx(1.0)
    assert "1 row(s) with missing" in row["note"]


def test_bad_input_is_a_trainscale_error():
    with pytest.raises(TrainscaleError, match="'y' must be positive"):
        fit_loglog(pd.DataFrame({"num_gpus": [8, 16], "y": [1.0, -2.0]}), y="y")
    with pytest.raises(TrainscaleError, match=r"series \(gpu=h100\)"):
        fit_loglog(pd.DataFrame({"gpu": ["h100"], "num_gpus": [0], "y": [1.0]}), y="y", by="gpu")
    with pytest.raises(TrainscaleError, match="missing column"):
        fit_loglog(pd.DataFrame({"num_gpus": [8]}), y="tokens_per_s")


def test_docstring_example_runs():
    result = doctest.testmod(loglog_module)
    assert result.attempted > 0
    assert result.failed == 0
