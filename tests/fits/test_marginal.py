"""Tests of trainscale.fits.marginal: hand-computed secants and the USL derivative."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from trainscale.errors import TrainscaleError
from trainscale.fits.marginal import _grad_dx_dn, marginal_returns, usl_marginal
from trainscale.fits.usl_fit import fit_usl
from trainscale.fits.usl_law import usl_model
from trainscale.schema import MARGINAL_COLUMNS, USL_MARGINAL_COLUMNS, names

GPUS = np.array([8, 16, 32, 64, 128, 256, 512, 1024, 2048], dtype=float)
X1, SIGMA, KAPPA = 5000.0, 0.02, 1e-4


def true_dx_dn(n):
    """dX/dN of the USL, by hand: x1 (1 - sigma - kappa N²) / D²."""
    d = 1 + SIGMA * (n - 1) + KAPPA * n * (n - 1)
    return X1 * (1 - SIGMA - KAPPA * n**2) / d**2


def test_hand_computed_secants():
    df = pd.DataFrame(
        {
            "num_gpus": [32, 8, 16],
            "tokens_per_s": [300.0, 100.0, 180.0],
            "power_w_per_gpu": [380.0, 400.0, 390.0],
        }
    )
    out = marginal_returns(df)
    assert list(out.columns) == names(MARGINAL_COLUMNS)
    assert out[["n_from", "n_to"]].to_numpy().tolist() == [[8, 16], [16, 32]]
    # Total power: 8*400 = 3.2 kW, 16*390 = 6.24 kW, 32*380 = 12.16 kW.
    assert out["power_kw_from"].tolist() == pytest.approx([3.2, 6.24])
    assert out["power_kw_to"].tolist() == pytest.approx([6.24, 12.16])
    assert out["added_tokens_per_s_per_gpu"].tolist() == pytest.approx([80 / 8, 120 / 16])
    assert out["added_tokens_per_s_per_kw"].tolist() == pytest.approx([80 / 3.04, 120 / 5.92])
    assert out["usl_added_tokens_per_s_per_gpu"].isna().all()  # usl=False
    assert (out["note"] == "").all()


def test_replicates_are_averaged_per_series():
    df = pd.DataFrame(
        {
            "gpu": ["h100"] * 4 + ["a100"] * 2,
            "num_gpus": [8, 8, 16, 16, 8, 16],
            "tokens_per_s": [100.0, 110.0, 190.0, 200.0, 50.0, 90.0],
            "power_w_per_gpu": [400.0] * 6,
        }
    )
    out = marginal_returns(df, by="gpu")
    assert out["gpu"].tolist() == ["a100", "h100"]
    h100 = out[out["gpu"] == "h100"].iloc[0]
    assert h100["tokens_per_s_from"] == pytest.approx(105.0)
    assert h100["added_tokens_per_s_per_gpu"] == pytest.approx((195.0 - 105.0) / 8)
    assert "replicates" in h100["note"]
    assert out[out["gpu"] == "a100"].iloc[0]["note"] == ""


def test_power_that_does_not_rise_gives_nan_and_note():
    df = pd.DataFrame(
        {"num_gpus": [8, 16], "tokens_per_s": [100.0, 150.0], "power_w_per_gpu": [400.0, 200.0]}
    )
    row = marginal_returns(df).iloc[0]
    assert np.isnan(row["added_tokens_per_s_per_kw"])
    assert row["added_tokens_per_s_per_gpu"] == pytest.approx(50 / 8)
    assert "did not rise" in row["note"]


def test_without_power_column_per_kw_is_nan():
    df = pd.DataFrame({"num_gpus": [8, 16, 32], "tokens_per_s": [1.0, 2.0, 3.0]})
    out = marginal_returns(df, power=None)
    assert out["added_tokens_per_s_per_kw"].isna().all()
    assert out["added_tokens_per_s_per_gpu"].tolist() == pytest.approx([1 / 8, 1 / 16])


def test_bad_input_is_a_trainscale_error():
    df = pd.DataFrame({"num_gpus": [8, 16], "tokens_per_s": [1.0, 2.0], "power_w_per_gpu": [0, 1]})
    with pytest.raises(TrainscaleError, match="'power_w_per_gpu' must be positive"):
        marginal_returns(df)
    with pytest.raises(TrainscaleError, match="missing column"):
        marginal_returns(df.drop(columns="tokens_per_s"))


def test_usl_secants_match_the_fit_and_cover_the_truth():
    rng = np.random.default_rng(4)
    n = np.repeat(GPUS, 3)
    df = pd.DataFrame(
        {
            "num_gpus": n,
            "tokens_per_s": usl_model(n, X1, SIGMA, KAPPA) * np.exp(rng.normal(0, 0.02, n.size)),
            "power_w_per_gpu": 700.0,
        }
    )
    out = marginal_returns(df, usl=True)
    fit = fit_usl(df["num_gpus"], df["tokens_per_s"])
    x_hat = fit.predict(GPUS)
    assert out["usl_added_tokens_per_s_per_gpu"].to_numpy() == pytest.approx(
        np.diff(x_hat) / np.diff(GPUS)
    )
    truth = np.diff(usl_model(GPUS, X1, SIGMA, KAPPA)) / np.diff(GPUS)
    low = out["usl_added_tokens_per_s_per_gpu_ci_low"].to_numpy()
    high = out["usl_added_tokens_per_s_per_gpu_ci_high"].to_numpy()
    assert np.mean((low < truth) & (truth < high)) >= 0.75
    assert (low < out["usl_added_tokens_per_s_per_gpu"]).all()
    # Per kW: the same secant over the added power (0.7 kW per added GPU here).
    assert out["usl_added_tokens_per_s_per_kw"].to_numpy() == pytest.approx(
        out["usl_added_tokens_per_s_per_gpu"].to_numpy() / 0.7
    )
    # Beyond N* (~99 GPUs) adding GPUs loses throughput, in the data and in the fit.
    beyond = out["n_from"] >= 128
    assert (out.loc[beyond, "added_tokens_per_s_per_gpu"] < 0).all()
    assert (out.loc[beyond, "usl_added_tokens_per_s_per_gpu_ci_high"] < 0).all()


def test_usl_secant_needs_enough_points():
    df = pd.DataFrame({"num_gpus": [8, 16], "tokens_per_s": [1.0, 2.0], "power_w_per_gpu": 1.0})
    row = marginal_returns(df, usl=True).iloc[0]
    assert np.isnan(row["usl_added_tokens_per_s_per_gpu"])
    assert "USL: USL undefined" in row["note"]


def test_derivative_gradient_matches_finite_differences():
    theta = np.array([np.log(X1), SIGMA, KAPPA])
    n = np.array([8.0, 99.0, 700.0])
    value, grad = _grad_dx_dn(n, theta)
    assert value == pytest.approx(true_dx_dn(n))
    for j, step in enumerate((1e-6, 1e-7, 1e-10)):
        up, down = theta.copy(), theta.copy()
        up[j] += step
        down[j] -= step
        numeric = (_grad_dx_dn(n, up)[0] - _grad_dx_dn(n, down)[0]) / (2 * step)
        assert grad[:, j] == pytest.approx(numeric, rel=1e-5)


def test_usl_marginal_curve():
    fit = fit_usl(
        GPUS,
        usl_model(GPUS, X1, SIGMA, KAPPA)
        * np.exp(np.random.default_rng(6).normal(0, 0.02, GPUS.size)),
    )
    grid = np.array([8.0, 32.0, fit.n_star, 512.0])
    out = usl_marginal(fit, grid, watts_per_added_gpu=500.0)
    assert list(out.columns) == names(USL_MARGINAL_COLUMNS)
    value = out["marginal_tokens_per_s_per_gpu"].to_numpy()
    # Against a central difference of the fitted curve itself.
    numeric = (fit.predict(grid + 1e-3) - fit.predict(grid - 1e-3)) / 2e-3
    assert value == pytest.approx(numeric, rel=1e-5, abs=1e-6)
    assert value[2] == pytest.approx(0.0, abs=1e-8)  # zero at N*
    assert value[0] > value[1] > 0 > value[3]
    low = out["marginal_tokens_per_s_per_gpu_ci_low"].to_numpy()
    high = out["marginal_tokens_per_s_per_gpu_ci_high"].to_numpy()
    assert np.all(low < value) and np.all(value < high)
    truth = true_dx_dn(np.array([8.0, 32.0, 512.0]))
    assert np.all((low[[0, 1, 3]] < truth) & (truth < high[[0, 1, 3]]))
    assert out["marginal_tokens_per_s_per_kw"].to_numpy() == pytest.approx(value / 0.5)
    assert usl_marginal(fit, grid)["marginal_tokens_per_s_per_kw"].isna().all()
    with pytest.raises(TrainscaleError, match="positive"):
        usl_marginal(fit, grid, watts_per_added_gpu=0.0)
