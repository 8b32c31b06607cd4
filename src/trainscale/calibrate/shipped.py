"""The shipped calibration, every stage: ``trainscale calibrate -o data/calibration.yaml``.

:func:`calibrate` fits the throughput parameters
(:func:`~trainscale.calibrate.fit.fit_throughput`; the GPU-board power fractions are set from
their sources, not fitted), fits the prediction intervals on the
leave-one-source-out predictions (:func:`~trainscale.calibrate.fit.held_out_predictions`), fits
the node-power terms in a separate stage (:mod:`trainscale.calibrate.power`) and the
mixture-of-experts parameters in another (:mod:`trainscale.calibrate.moe`), measures the pilot
errors every user calibration on this file needs (:mod:`trainscale.calibrate.stored`) and writes
the file. It sits above the modules whose results it gathers, so none of them imports it.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pandas as pd

from trainscale.calibrate.fit import (
    FittedCalibration,
    fit_throughput,
    held_out_predictions,
    line_ranges,
    round_calibration,
)
from trainscale.calibrate.moe import calibrate_moe
from trainscale.calibrate.pilot_series import pilot_errors as measure_pilot_errors
from trainscale.calibrate.power import calibrate_power, power_block
from trainscale.calibrate.stored import BLOCK, StoredPilotErrors
from trainscale.paths import data_dir
from trainscale.published.accuracy import (
    collective_predictions,
    throughput_predictions,
)
from trainscale.published.measurements import PublishedData
from trainscale.published.power_rows import PowerRows
from trainscale.published.summary import summarise
from trainscale.sim.calibration import Calibration, dump_calibration
from trainscale.sim.catalogue import Catalogue
from trainscale.sim.intervals import fit_intervals

__all__ = ["calibrate"]


def calibrate(
    output: Path | None,
    published: PublishedData,
    *,
    catalogue: Catalogue,
    held_out: pd.DataFrame | None = None,
    power_rows: PowerRows | None = None,
    pilot_errors: pd.DataFrame | None = None,
) -> FittedCalibration:
    """Run the whole calibration on ``published``, simulating under ``catalogue``, and write
    ``output`` (None: ``data/calibration.yaml``). ``power_rows``: the metered power rows
    (:func:`~trainscale.published.power_rows.load_power_rows`) the separate power stage fits
    the file's ``power`` block on; None: no power block.

    ``held_out``: the leave-one-source-out predictions the intervals are fitted on (default:
    :func:`held_out_predictions` of ``published``, one refit per source). ``pilot_errors``: the
    errors of pilot-calibrated predictions on the published scaling series with the fitted
    calibration, stored in the file for every user calibration on it (default:
    :func:`trainscale.calibrate.pilot_series.pilot_errors`, one base fit per source;
    :mod:`trainscale.calibrate.stored`).
    """
    fit = fit_throughput(published, catalogue=catalogue)
    if held_out is None:
        held_out = held_out_predictions(published, catalogue=catalogue)
    final = replace(
        round_calibration(fit.calibration),
        intervals=fit_intervals(held_out, framework_keys=catalogue.framework_keys),
    )
    # the MoE stage: the MoE parameters on the MoE rows, the dense ones held (never moved by it)
    final, moe = calibrate_moe(published.moe, final, catalogue=catalogue)
    throughput, sim_rejects = throughput_predictions(published, final, catalogue)
    collectives = collective_predictions(published, final, catalogue)
    fit = FittedCalibration(
        final, throughput, collectives, published.rejects, sim_rejects, fit.cost
    )
    summary = summarise(throughput)
    provenance = {
        "method": "bounded robust least squares (scipy least_squares on soft-L1 residuals, scale "
        "0.1) on log(predicted/observed) of tokens/s per GPU and of nccl-tests bus bandwidth, "
        "every source weighted the same whatever its row count, with a Gaussian prior on each "
        "parameter (its default; standard deviation half its bound range, 0.1 for the "
        "per-framework offsets); the GPU-board power fractions are set from their sources, not "
        "fitted (the paper's 5.87 % power-per-GPU drop is a prediction checked against it); the "
        "metered node-power rows calibrate the power block (a separate stage)",
        "command": "trainscale calibrate -o data/calibration.yaml",
        "data": "data/published/measurements.csv",
        "fitted_on": {
            "throughput_csv_lines": line_ranges(throughput["csv_row"]),
            "collective_csv_lines": line_ranges(collectives.get("csv_row", [])),
        },
        "residual_error": {
            "throughput_mape_pct": round(float(throughput["ape_pct"].mean()), 2),
            "throughput_median_ape_pct": round(float(throughput["ape_pct"].median()), 2),
            "busbw_mape_pct": round(float(collectives["ape_pct"].mean()), 2)
            if not collectives.empty
            else None,
            "per_source_mape_pct": {
                str(s): round(float(m), 2)
                for s, m in zip(summary["source"], summary["mape_pct"], strict=True)
            },
        },
        "not_represented": [
            {"csv_row": int(r.csv_row), "reason": str(r.reason)}
            for r in published.rejects.itertuples()
        ]
        + [{"csv_row": int(r.csv_row), "reason": str(r.reason)} for r in sim_rejects.itertuples()],
    }
    if pilot_errors is None:
        pilot_errors = measure_pilot_errors(published, catalogue=catalogue, shipped=final)
    stored = StoredPilotErrors.of(pilot_errors, final.calibration_id)
    power = _power_stage(final, catalogue, power_rows)
    blocks = ({"power": power} if power is not None else {}) | {"moe": moe}
    blocks |= {BLOCK: stored.as_dict()}
    dump_calibration(final, output or data_dir() / "calibration.yaml", provenance, blocks)
    return fit


def _power_stage(
    calibration: Calibration, catalogue: Catalogue, rows: PowerRows | None
) -> dict | None:
    """The ``power`` block (:mod:`trainscale.calibrate.power`) fitted on the metered ``rows``
    (``data/published/power-measurements.csv``); None without rows."""
    if rows is None:
        return None
    return power_block(calibrate_power(rows, calibration, catalogue),
                       "data/published/power-measurements.csv")  # fmt: skip
