"""Tests of trainscale.report.plots."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import pytest

from trainscale.fits.usl_fit import fit_usl
from trainscale.fits.usl_law import usl_model
from trainscale.report.plots import plot_usl

GPUS = np.array([8, 16, 32, 64, 128, 256, 512, 1024, 2048], dtype=float)


def test_plot_usl_draws_points_curve_and_band_on_given_axes():
    x = usl_model(GPUS, 5000.0, 0.02, 1e-4) * np.exp(np.random.default_rng(0).normal(0, 0.02, 9))
    fit = fit_usl(GPUS, x)
    _, (left, right) = plt.subplots(1, 2)
    assert plot_usl(fit, GPUS, x, ax=right, label="a100", grid_points=50) is right
    assert not left.lines and not left.collections
    assert len(right.lines) == 1
    line_x, line_y = right.lines[0].get_data()
    assert len(line_x) == 50
    assert np.asarray(line_y) == pytest.approx(fit.predict(np.asarray(line_x)))
    assert line_x[0] == pytest.approx(8.0) and line_x[-1] == pytest.approx(2048.0)
    assert len(right.collections) == 2  # points + band
    assert right.get_xscale() == "log" and right.get_yscale() == "log"
    assert right.get_legend_handles_labels()[1] == ["a100"]  # only the points are labelled
    band = right.collections[1].get_paths()[0].vertices[:, 1]
    assert band.min() < fit.predict(8.0) and band.max() > fit.predict(fit.n_star)


def test_plot_usl_defaults_to_current_axes_without_band():
    x = usl_model(GPUS, 100.0, 0.1, 0.0)
    fit = fit_usl(GPUS, x)
    _, ax = plt.subplots()
    assert plot_usl(fit, GPUS, x, band=False) is ax
    assert len(ax.collections) == 1  # points only
