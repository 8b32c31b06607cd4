"""trainscale.sim.quantile: the weighted quantile every interval is built from."""

from __future__ import annotations

import numpy as np

from trainscale.sim.quantile import weighted_quantile


def test_equal_weights_give_the_ordinary_quantile():
    scores = np.array([5.0, 1.0, 4.0, 2.0, 3.0])
    assert weighted_quantile(scores, np.ones(5), 0.8) == 4.0
    assert weighted_quantile(scores, np.ones(5), 1.0) == 5.0


def test_a_heavy_row_pulls_the_quantile_to_it():
    # one source of one row weighs as much as a source of four rows (DESIGN.md: every source
    # weighs the same in a fit)
    scores = np.array([1.0, 1.0, 1.0, 1.0, 9.0])
    weights = np.array([0.25, 0.25, 0.25, 0.25, 1.0])
    assert weighted_quantile(scores, weights, 0.6) == 9.0
    assert weighted_quantile(scores, weights, 0.5) == 1.0
