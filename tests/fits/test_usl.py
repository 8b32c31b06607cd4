"""Tests of trainscale.fits.usl: synthetic USL data with known sigma, kappa and x1."""

from __future__ import annotations

import dataclasses
import doctest

import numpy as np
import pandas as pd
import pytest
from scipy import optimize

import trainscale.fits.usl_fit as usl_fit_module
from trainscale.errors import TrainscaleError
from trainscale.fits.usl_fit import UslFit, fit_usl
from trainscale.fits.usl_law import usl_model
from trainscale.fits.usl_table import fit_usl_table, usl_curve
from trainscale.schema import USL_COLUMNS, names

GPUS = np.array([8, 16, 32, 64, 128, 256, 512, 1024, 2048], dtype=float)
X1, SIGMA, KAPPA = 5000.0, 0.02, 1e-4
N_STAR = np.sqrt((1 - SIGMA) / KAPPA)  # 98.99 GPUs


def noisy(rng, *, x1=X1, sigma=SIGMA, kappa=KAPPA, noise=0.02, n=GPUS):
    """USL throughput at ``n`` times log-normal noise (relative SD ``noise``)."""
    return usl_model(n, x1, sigma, kappa) * np.exp(rng.normal(0.0, noise, n.size))


def test_model_values():
    # X(1) = x1; X(N) = x1 N / (1 + sigma (N-1) + kappa N (N-1)), by hand for N = 10.
    assert usl_model(1, 3.0, 0.5, 0.1) == pytest.approx(3.0)
    assert usl_model(10, 3.0, 0.5, 0.1) == pytest.approx(30.0 / (1 + 4.5 + 9.0))
    assert usl_model(GPUS, 2.0, 0.0, 0.0) == pytest.approx(2.0 * GPUS)


def test_noiseless_data_recovered_exactly():
    fit = fit_usl(GPUS, usl_model(GPUS, X1, SIGMA, KAPPA))
    assert fit.converged
    assert fit.x1 == pytest.approx(X1, rel=1e-8)
    assert fit.sigma == pytest.approx(SIGMA, rel=1e-7)
    assert fit.kappa == pytest.approx(KAPPA, rel=1e-7)
    assert fit.n_star == pytest.approx(N_STAR, rel=1e-7)
    assert fit.r2 == pytest.approx(1.0)


# One fixed data set: 3 replicates per count, 2% noise. Any one seed misses a given 95% interval
# with 5% probability (seed 0 misses sigma's); the coverage test below is the statistical check.
REPLICATED = np.repeat(GPUS, 3)
RECOVERY_SEED = 1


def test_recovers_known_parameters_inside_cis():
    fit = fit_usl(REPLICATED, noisy(np.random.default_rng(RECOVERY_SEED), n=REPLICATED))
    assert fit.converged and fit.n == 27 and fit.dof == 24
    assert fit.x1_ci_low < X1 < fit.x1_ci_high
    assert fit.sigma_ci_low < SIGMA < fit.sigma_ci_high
    assert fit.kappa_ci_low < KAPPA < fit.kappa_ci_high
    assert fit.n_star_ci_low < N_STAR < fit.n_star_ci_high
    assert fit.x1 == pytest.approx(X1, rel=0.05)
    assert fit.sigma == pytest.approx(SIGMA, rel=0.1)
    assert fit.kappa == pytest.approx(KAPPA, rel=0.05)
    assert fit.n_star == pytest.approx(N_STAR, rel=0.03)
    assert fit.residual_sd_log == pytest.approx(0.02, rel=0.6)
    assert fit.note == ""


def test_standard_errors_match_curve_fit():
    """Reference: scipy.optimize.curve_fit on ln X with its own finite-difference Jacobian,
    started at our estimate; pcov = s² (JᵀJ)⁻¹ must agree with our analytic-Jacobian one."""
    ns, x = GPUS, noisy(np.random.default_rng(5))
    fit = fit_usl(ns, x)

    def log_model(n, ln_x1, sigma, kappa):
        return np.log(usl_model(n, np.exp(ln_x1), sigma, kappa))

    popt, pcov = optimize.curve_fit(log_model, ns, np.log(x), p0=fit.theta, method="lm")
    assert popt == pytest.approx(fit.theta, rel=1e-5)
    assert np.sqrt(np.diag(pcov)) == pytest.approx(np.sqrt(np.diag(fit.cov)), rel=1e-3)
    assert fit.x1_se == pytest.approx(fit.x1 * np.sqrt(pcov[0, 0]), rel=1e-3)


def test_ci_coverage_over_seeded_replicates():
    """The 95% intervals of sigma, kappa and N* cover the truth in 90-99% of 200 data sets."""
    rng = np.random.default_rng(99)
    hits = np.zeros(4)
    replicates = 200
    for _ in range(replicates):
        fit = fit_usl(GPUS, noisy(rng))
        assert fit.converged
        hits += [
            fit.x1_ci_low <= X1 <= fit.x1_ci_high,
            fit.sigma_ci_low <= SIGMA <= fit.sigma_ci_high,
            fit.kappa_ci_low <= KAPPA <= fit.kappa_ci_high,
            fit.n_star_ci_low <= N_STAR <= fit.n_star_ci_high,
        ]
    coverage = hits / replicates
    assert np.all((coverage >= 0.90) & (coverage <= 0.99)), coverage


def test_bootstrap_n_star_interval_is_seeded_and_covers_truth():
    x = noisy(np.random.default_rng(11))
    first = fit_usl(GPUS, x, n_star_ci="bootstrap", rng=np.random.default_rng(1), n_boot=200)
    again = fit_usl(GPUS, x, n_star_ci="bootstrap", rng=np.random.default_rng(1), n_boot=200)
    other = fit_usl(GPUS, x, n_star_ci="bootstrap", rng=np.random.default_rng(2), n_boot=200)
    delta = fit_usl(GPUS, x)
    assert first == again
    assert (first.n_star_ci_low, first.n_star_ci_high) != (
        other.n_star_ci_low,
        other.n_star_ci_high,
    )
    assert first.n_star_ci_method == "bootstrap"
    assert first.n_star_ci_low < N_STAR < first.n_star_ci_high
    # Both methods describe the same sampling spread: similar widths.
    boot_width = first.n_star_ci_high - first.n_star_ci_low
    delta_width = delta.n_star_ci_high - delta.n_star_ci_low
    assert boot_width == pytest.approx(delta_width, rel=0.3)
    with pytest.raises(TrainscaleError, match="needs rng"):
        fit_usl(GPUS, x, n_star_ci="bootstrap")


def test_kappa_zero_gives_infinite_n_star():
    fit = fit_usl(GPUS, usl_model(GPUS, X1, 0.05, 0.0))
    assert fit.kappa == 0.0
    assert fit.n_star == np.inf
    assert fit.n_star_ci_high == np.inf
    assert "kappa at its bound 0" in fit.note
    assert fit.sigma == pytest.approx(0.05, rel=1e-6)


def test_no_peak_in_the_data_means_no_upper_n_star_bound():
    """With kappa = 0 in truth, the N* interval's upper end is inf in (nearly) every data set."""
    rng = np.random.default_rng(17)
    upper = [fit_usl(GPUS, noisy(rng, sigma=0.05, kappa=0.0)).n_star_ci_high for _ in range(40)]
    assert np.mean(np.isinf(upper)) >= 0.9


@pytest.mark.filterwarnings("error")
def test_too_few_gpu_counts_give_nan_and_note():
    fit = fit_usl([8, 16, 16, 8], [100.0, 190.0, 185.0, 101.0])
    assert not fit.converged
    assert np.isnan(fit.sigma) and np.isnan(fit.n_star) and np.isnan(fit.x1_ci_low)
    assert fit.n == 4
    assert "at least 3 distinct GPU counts" in fit.note


@pytest.mark.filterwarnings("error")
def test_three_points_fit_exactly_without_intervals():
    n = np.array([8.0, 64.0, 512.0])
    fit = fit_usl(n, usl_model(n, 1000.0, 0.03, 2e-5))
    assert fit.converged
    assert fit.predict(n) == pytest.approx(usl_model(n, 1000.0, 0.03, 2e-5), rel=1e-6)
    assert np.isnan(fit.sigma_se) and np.isnan(fit.n_star_ci_low)
    assert "exact fit" in fit.note


def test_missing_points_dropped_and_bad_values_rejected():
    x = usl_model(GPUS, X1, SIGMA, KAPPA)
    x[3] = np.nan
    fit = fit_usl(GPUS, x)
    assert fit.n == 8 and "1 point(s) with missing" in fit.note
    assert fit.kappa == pytest.approx(KAPPA, rel=1e-6)
    with pytest.raises(TrainscaleError, match="positive"):
        fit_usl(GPUS, -x)
    with pytest.raises(TrainscaleError, match="differ in length"):
        fit_usl(GPUS, x[:4])
    with pytest.raises(TrainscaleError, match=">= 1"):
        fit_usl([0.5, 2, 4, 8], [1.0, 2, 3, 4])


def test_fit_is_frozen_and_flattens():
    fit = fit_usl(GPUS, usl_model(GPUS, X1, SIGMA, KAPPA))
    with pytest.raises(dataclasses.FrozenInstanceError):
        fit.sigma = 0.5  # type: ignore[misc]
    assert list(fit.to_dict()) == names(USL_COLUMNS)[1:]
    assert fit.cov.shape == (3, 3)


def test_table_fits_each_series():
    rng = np.random.default_rng(8)
    truths = {"a100": (0.01, 2e-5), "h100": (0.04, 3e-4)}
    df = pd.concat(
        [
            pd.DataFrame(
                {"gpu": gpu, "num_gpus": GPUS, "tokens_per_s": noisy(rng, sigma=s, kappa=k)}
            )
            for gpu, (s, k) in reversed(truths.items())
        ],
        ignore_index=True,
    )
    table = fit_usl_table(df, by="gpu")
    assert list(table.columns) == ["gpu", *names(USL_COLUMNS)]
    assert table["gpu"].tolist() == ["a100", "h100"]
    assert (table["metric"] == "tokens_per_s").all()
    for _, row in table.iterrows():
        sigma, kappa = truths[row["gpu"]]
        assert row["kappa_ci_low"] < kappa < row["kappa_ci_high"]
        assert row["n_star"] == pytest.approx(np.sqrt((1 - sigma) / kappa), rel=0.1)
        alone = fit_usl(GPUS, df.loc[df["gpu"] == row["gpu"], "tokens_per_s"])
        assert row["kappa"] == pytest.approx(alone.kappa, rel=1e-12)
    assert table["converged"].dtype == bool


def test_table_names_the_bad_series():
    df = pd.DataFrame({"gpu": ["v100"] * 3, "num_gpus": [8, 16, 32], "tokens_per_s": [1, 0, 2]})
    with pytest.raises(TrainscaleError, match=r"series \(gpu=v100\)"):
        fit_usl_table(df, by=["gpu"])


def test_curve_band_contains_fit_and_truth():
    fit = fit_usl(REPLICATED, noisy(np.random.default_rng(RECOVERY_SEED), n=REPLICATED))
    grid = np.array([8.0, 32.0, 100.0, 512.0, 2048.0])
    curve = usl_curve(fit, grid)
    assert list(curve.columns) == ["n", "x", "x_ci_low", "x_ci_high"]
    assert curve["x"].to_numpy() == pytest.approx(fit.predict(grid))
    assert (curve["x_ci_low"] < curve["x"]).all() and (curve["x"] < curve["x_ci_high"]).all()
    truth = usl_model(grid, X1, SIGMA, KAPPA)
    assert ((curve["x_ci_low"] < truth) & (truth < curve["x_ci_high"])).all()
    wider = usl_curve(fit, grid, level=0.99)
    assert (wider["x_ci_high"] > curve["x_ci_high"]).all()


def test_curve_of_undetermined_fit_is_nan():
    fit = fit_usl([8, 16], [1.0, 2.0])
    assert isinstance(fit, UslFit)
    curve = usl_curve(fit, [8, 16])
    assert curve["n"].tolist() == [8.0, 16.0]
    assert curve[["x", "x_ci_low", "x_ci_high"]].isna().all().all()


def test_docstring_example_runs():
    result = doctest.testmod(usl_fit_module)
    assert result.attempted > 0
    assert result.failed == 0


def test_r2_is_that_of_per_gpu_throughput():
    """User trial item 16: every USL row showed r² 1.000, because whole-job throughput grows
    with the GPU count whatever the fit. R² is now that of ln(X / N), the per-GPU throughput."""
    rng = np.random.default_rng(3)
    flat = usl_model(GPUS, X1, 0.0, 0.0) * np.exp(rng.normal(0.0, 0.02, GPUS.size))
    fit = fit_usl(GPUS, flat)  # nothing to explain but noise: per-GPU throughput is flat
    per_gpu = np.log(flat / GPUS)
    resid = np.log(flat) - np.log(fit.predict(GPUS))
    by_hand = 1.0 - np.sum(resid**2) / np.sum((per_gpu - per_gpu.mean()) ** 2)
    assert fit.r2 == pytest.approx(by_hand, rel=1e-9)
    assert fit.r2 < 0.9
    falling = fit_usl(GPUS, noisy(np.random.default_rng(3)))  # sigma, kappa > 0: explained
    assert falling.r2 > 0.99


def test_n_star_interval_does_not_reach_below_one_gpu():
    """User trial item 16: a delta interval read `n_star 2509 [0.001267, ∞]`; a peak cannot be
    below 1 GPU, so the lower end is clipped there, like sigma's and kappa's at their bounds."""
    ns = np.array([64.0, 128.0, 256.0, 512.0])
    x = usl_model(ns, 1000.0, 0.0, 2e-7) * np.exp(np.random.default_rng(0).normal(0, 0.03, 4))
    fit = fit_usl(ns, x)
    assert np.isfinite(fit.n_star) and fit.n_star > 512
    assert fit.n_star_ci_low == 1.0 and fit.n_star_ci_high == np.inf
    boot = fit_usl(ns, x, n_star_ci="bootstrap", rng=np.random.default_rng(1), n_boot=200)
    assert boot.n_star_ci_low >= 1.0


def test_delta_method_se_is_the_root_of_the_diagonal_of_g_cov_gt():
    from trainscale.fits._series import delta_method_se

    rng = np.random.default_rng(5)
    grad = rng.normal(size=(4, 3))
    half = rng.normal(size=(3, 3))
    cov = half @ half.T
    expected = np.sqrt(np.diag(grad @ cov @ grad.T))
    np.testing.assert_allclose(delta_method_se(grad, cov), expected, rtol=1e-12)
    assert np.isnan(delta_method_se(grad, np.full((3, 3), np.nan))).all()
