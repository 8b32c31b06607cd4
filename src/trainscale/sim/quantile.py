"""The interval level and the weighted quantile every interval of the simulator is built from.

:mod:`trainscale.sim.intervals` (conformal intervals from held-out errors),
:mod:`trainscale.sim.pilot_intervals` (intervals by distance from a user's pilots) and
:mod:`trainscale.sim.support` (widening outside the calibration data) share these values, so
they live here, below all three.
"""

from __future__ import annotations

import numpy as np

__all__ = ["LEVEL", "PER_DOUBLING", "weighted_quantile"]

LEVEL = 0.8
"""The nominal coverage of every prediction interval: 80 %."""
PER_DOUBLING = 0.25
"""Widening per doubling of GPUs beyond the calibration data's largest run: ``1 + 0.25·d``
(:mod:`trainscale.sim.intervals` gives the reason for the value)."""


def weighted_quantile(scores: np.ndarray, weights: np.ndarray, level: float) -> float:
    """Smallest score whose cumulative normalised weight reaches ``level`` (``level >= 1``: the
    largest score)."""
    order = np.argsort(scores, kind="mergesort")
    values, w = scores[order], weights[order]
    cumulative = np.cumsum(w) / w.sum()
    index = int(np.searchsorted(cumulative, min(level, 1.0) - 1e-12, side="left"))
    return float(values[min(index, len(values) - 1)])
