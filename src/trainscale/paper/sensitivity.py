"""How firmly the calibration data determine the paper's claims.

A calibrated parameter can be *pinned down by measurements* or *decided by its prior* (the weak
Gaussian prior of :mod:`trainscale.calibrate.fit`). The two look the same in ``calibration.yaml``;
this module tells them apart, with the calibration's own method:

- :func:`profile` pins one fitted parameter at each of several values, refits all the others to
  ``data/published/measurements.csv`` and reports the fit's error next to every claim of the
  study. A flat error along the profile means the data cannot tell those values apart, so any
  claim that moves along it is set by the prior, not by measurements.
- :func:`claim_sensitivity` is the profile of ``nccl_latency_scale`` the workflow writes
  (``results/paper/claim_sensitivity.parquet``, printed as table ``claim_sensitivity``): the
  parameter the headline throughput drop hangs on and the published data barely constrain.
- :func:`prior_width_scan` refits with every prior's width multiplied by a factor and reports the
  leave-one-source-out error (each source predicted by a fit that never saw it) next to the
  claims: the out-of-sample check of how much the prior should weigh.

Neither changes ``data/calibration.yaml``. Results are deterministic (the fit is).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import pandas as pd

from trainscale.calibrate.fit import (
    fit_throughput,
    leave_one_source_out,
    round_calibration,
)
from trainscale.paper.setup import headline_claims
from trainscale.paper.values import CLAIMS
from trainscale.published.accuracy import collective_predictions, throughput_predictions
from trainscale.published.measurements import PublishedData
from trainscale.schema import (
    CLAIM_SENSITIVITY_COLUMNS,
    PRIOR_SCAN_COLUMNS,
    PROFILE_COLUMNS,
    names,
)
from trainscale.sim.calibration import Calibration, parameters_at_bounds
from trainscale.sim.catalogue import Catalogue

__all__ = [
    "LATENCY_SCALE_GRID",
    "PRIOR_SCALE_GRID",
    "claim_sensitivity",
    "prior_width_scan",
    "profile",
]

#: Values of ``nccl_latency_scale`` profiled by the workflow's ``claim_sensitivity`` table:
#: NCCL's tuning-table latencies from a fifth to three times their value (the parameter's bounds
#: are 0.1 and 3).
LATENCY_SCALE_GRID: tuple[float, ...] = (0.2, 0.5, 0.75, 1.0, 1.25, 1.5, 2.0, 3.0)

#: Prior widths scanned by ``trainscale calibrate --prior-scan`` when no list is given
#: (1 is the calibration's own; ``inf`` drops the prior).
PRIOR_SCALE_GRID: tuple[float, ...] = (0.5, 1.0, 2.0, 4.0, 8.0, math.inf)


def _refit(
    published: PublishedData, catalogue: Catalogue, **kw: object
) -> tuple[Calibration, pd.DataFrame]:
    fit = fit_throughput(published, catalogue=catalogue, **kw)  # type: ignore[arg-type]
    calibration = round_calibration(fit.calibration)
    rows, _ = throughput_predictions(published, calibration, catalogue)
    return calibration, rows


def profile(
    parameter: str,
    values: Sequence[float],
    published: PublishedData,
    *,
    catalogue: Catalogue,
) -> pd.DataFrame:
    """Pin ``parameter`` at each of ``values``, refit the rest, report error and claims.

    Returns one row per value with :data:`trainscale.schema.PROFILE_COLUMNS`: the fit's MAPE and
    median absolute percentage error of tokens/s per GPU over the published rows, the MAPE of
    nccl-tests bus bandwidth, the paper setup's claims (percent; the power drop is predicted, no
    power parameter is refitted) and the refitted calibration's id. Raises
    :class:`~trainscale.errors.TrainscaleError` for a parameter that is not fitted or a value
    outside its bounds. Costs one fit (a few seconds) per value.

    Every fit simulates under ``catalogue``.
    """
    rows = []
    for value in values:
        calibration, fitted = _refit(published, catalogue, pinned={parameter: float(value)})
        collectives = collective_predictions(published, calibration, catalogue)
        rows.append(
            {
                "parameter": parameter,
                "value": float(value),
                "throughput_mape_pct": float(fitted["ape_pct"].mean()),
                "throughput_median_ape_pct": float(fitted["ape_pct"].median()),
                "busbw_mape_pct": float(collectives["ape_pct"].mean())
                if not collectives.empty
                else float("nan"),
                **headline_claims(calibration, catalogue=catalogue),
                "calibration_id": calibration.calibration_id,
            }
        )
    return pd.DataFrame(rows, columns=names(PROFILE_COLUMNS))


def prior_width_scan(
    scales: Sequence[float], published: PublishedData, *, catalogue: Catalogue
) -> pd.DataFrame:
    """Refit with each prior width ``scale`` (1 = the calibration's; ``inf`` = no prior).

    Returns one row per scale with :data:`trainscale.schema.PRIOR_SCAN_COLUMNS`: in-sample MAPE; the
    leave-one-source-out MAPE and median error
    (:func:`trainscale.calibrate.fit.leave_one_source_out`);
    which fitted parameters end on a bound (comma-separated; such a parameter is held by its
    bound, not by the data); the claims; the calibration id. Costs one fit per source plus one
    per scale (about 30 s per scale here). ``scales``: e.g. :data:`PRIOR_SCALE_GRID`; every fit
    simulates under ``catalogue``.
    """
    rows = []
    for scale in scales:
        calibration, fitted = _refit(published, catalogue, prior_scale=float(scale))
        held_out = leave_one_source_out(published, catalogue=catalogue, prior_scale=float(scale))
        overall = held_out[held_out["source"] == "all"].iloc[0]
        rows.append(
            {
                "prior_scale": float(scale),
                "throughput_mape_pct": float(fitted["ape_pct"].mean()),
                "heldout_mape_pct": float(overall["mape_pct"]),
                "heldout_median_ape_pct": float(overall["median_ape_pct"]),
                "parameters_at_bounds": ", ".join(parameters_at_bounds(calibration)),
                **headline_claims(calibration, catalogue=catalogue),
                "calibration_id": calibration.calibration_id,
            }
        )
    return pd.DataFrame(rows, columns=names(PRIOR_SCAN_COLUMNS))


def claim_sensitivity(
    published: PublishedData, calibration: Calibration, *, catalogue: Catalogue
) -> pd.DataFrame:
    """Profile ``nccl_latency_scale`` over :data:`LATENCY_SCALE_GRID` plus its value in
    ``calibration`` (ascending), with whether the throughput-drop claim holds at each; every fit
    simulates under ``catalogue``.

    At 2,048 GPUs with one sequence per GPU, FSDP's per-layer AllGather and ReduceScatter run on
    rings of 2,047 steps whose time is mostly NCCL's per-step latency, so the headline drop moves
    with this parameter, which the published measurements barely constrain.

    Returns
    -------
    pandas.DataFrame
        :data:`trainscale.schema.CLAIM_SENSITIVITY_COLUMNS`: the columns of :func:`profile`
        (``value`` as ``nccl_latency_scale``), ``calibrated`` (the row of ``calibration``'s
        value), ``drop_claim_holds`` and ``reference_calibration_id`` (``calibration``'s id).
        Costs one fit per value (nine, about 5 s each).
    """
    calibrated = calibration.nccl_latency_scale
    values = sorted({*LATENCY_SCALE_GRID, calibrated})
    table = profile("nccl_latency_scale", values, published, catalogue=catalogue)
    table = table.rename(columns={"value": "nccl_latency_scale"})
    table["calibrated"] = table["nccl_latency_scale"] == calibrated
    drop_claim = next(c for c in CLAIMS if c.key == "throughput_drop_pct")
    table["drop_claim_holds"] = table["throughput_drop_pct"].map(drop_claim.holds)
    table["reference_calibration_id"] = calibration.calibration_id
    return table[names(CLAIM_SENSITIVITY_COLUMNS)]
