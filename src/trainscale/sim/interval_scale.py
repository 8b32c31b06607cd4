"""How the model's error grows with the GPU count, measured on the held-out residuals.

The held-out error of the model grows with the scale of the run (``trainscale validate
--holdout``, per scale band: about 8 % MAPE up to 256 GPUs, 22 % from 257 to 1,024 and 42 % above),
because every term that only appears across nodes (the network collectives, the pipeline across
nodes, stragglers) is both larger and less tested there. An interval whose width does not grow
with the scale covers the small runs too often and the large ones too rarely: measured
source-out without this factor, 93.7 % of the rows up to 256 GPUs, 64.0 % from 257 to 1,024 and
76.9 % above (``docs/accuracy.md``). So the difficulty
``sigma(x)`` of :mod:`trainscale.sim.intervals` has a scale factor

    ``s_nodes = 1 + b · max(0, log2(num_gpus / REFERENCE_GPUS))``

with ``REFERENCE_GPUS = 8`` (one node: below it no inter-node term exists) and ``b`` **fitted**,
not chosen: the source-weighted least-squares line ``|r| = a + c · x`` of the absolute held-out
log errors ``|r|`` against ``x = max(0, log2(num_gpus / 8))`` (every source weighing the same, as
in the fit), ``b = max(c / a, 0)`` (the relative growth of the typical miss per doubling;
never negative: an interval does not narrow with scale). It is a spread model in the sense of
normalised (locally adaptive) split conformal prediction: the conformal quantile of
``|r| / sigma`` still sets the level, ``b`` only shapes the width along the scale.

The honest check refits ``b`` as it refits everything else: a source's rows are scored and
checked with the ``b`` fitted on the *other* sources' residuals
(:func:`trainscale.sim.intervals.source_out_coverage`).

The pilot-calibrated intervals (:mod:`trainscale.sim.pilot_intervals`) get the same kind of
factor from the errors of the pilot-calibrated predictions on the published scaling series.
There the absolute miss grows faster than linearly in the doublings from one node (the line
``|r| = a + c · x`` has a negative intercept; mean ``|r|`` per source 0.016–0.047 up to 256
GPUs, 0.21–0.26 above 1,024, ``docs/accuracy.md``), so the factor is the exponential
``g_nodes = exp(beta · x)`` with ``beta`` (:func:`growth_rate`) the source-weighted
least-squares slope of ``log(max(|r|, FLOOR))`` against ``x`` (the relative growth of the
typical miss per doubling; never negative). ``FLOOR`` (0.5 %) only keeps exact hits from
dominating the logarithm; on the shipped data the slope is 0.2618, 0.2638 and 0.2619 with
floors of 0.1 %, 0.5 % and 1 %.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

__all__ = ["REFERENCE_GPUS", "growth_factor", "growth_rate", "scale_factor", "scale_slope"]

#: GPUs of one node: the scale below which no inter-node term exists.
REFERENCE_GPUS = 8.0


def _doublings(num_gpus: np.ndarray) -> np.ndarray:
    return np.maximum(0.0, np.log2(np.asarray(num_gpus, np.float64) / REFERENCE_GPUS))


def scale_factor(num_gpus: np.ndarray, slope: float) -> np.ndarray:
    """``s_nodes`` per configuration (module docstring)."""
    return 1.0 + slope * _doublings(num_gpus)


def scale_slope(rows: pd.DataFrame) -> float:
    """``b`` fitted on held-out residual rows (``predicted_tokens_per_s_per_gpu``,
    ``observed_tokens_per_s_per_gpu``, ``num_gpus``, ``citation``), 6 significant digits; 0
    with fewer than two distinct scales or a non-positive intercept."""
    x = _doublings(rows["num_gpus"].to_numpy(np.float64))
    if len(np.unique(x)) < 2:
        return 0.0
    r = np.abs(
        np.log(
            rows["predicted_tokens_per_s_per_gpu"].to_numpy(np.float64)
            / rows["observed_tokens_per_s_per_gpu"].to_numpy(np.float64)
        )
    )
    citations = rows["citation"]
    root = np.sqrt(1.0 / citations.map(citations.value_counts()).to_numpy(np.float64))
    design = np.column_stack([np.ones_like(x), x]) * root[:, None]
    (a, c), *_ = np.linalg.lstsq(design, r * root, rcond=None)
    if a <= 0.0:
        return 0.0
    return float(f"{max(c / a, 0.0):.6g}")


#: Smallest absolute log error :func:`growth_rate` takes the logarithm of (module docstring).
FLOOR = 0.005


def growth_factor(num_gpus: np.ndarray, rate: float) -> np.ndarray:
    """``g_nodes = exp(rate · x)`` per configuration (module docstring)."""
    return np.exp(rate * _doublings(num_gpus))


def growth_rate(num_gpus: np.ndarray, log_error: np.ndarray, source: np.ndarray) -> float:
    """``beta`` (module docstring) fitted on one row per error: its target GPU count, its
    ``log(observed / predicted)`` and its source (every source weighs the same); 6 significant
    digits, 0 with fewer than two distinct scales."""
    x = _doublings(num_gpus)
    if len(np.unique(x)) < 2:
        return 0.0
    y = np.log(np.maximum(np.abs(np.asarray(log_error, np.float64)), FLOOR))
    _, inverse, counts = np.unique(np.asarray(source).astype(str), return_inverse=True,
                                   return_counts=True)  # fmt: skip
    root = np.sqrt(1.0 / counts[inverse])
    design = np.column_stack([np.ones_like(x), x]) * root[:, None]
    (_, slope), *_ = np.linalg.lstsq(design, y * root, rcond=None)
    return float(f"{max(float(slope), 0.0):.6g}")
