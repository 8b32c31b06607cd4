"""Simulating a study's configuration table (one chunk, or one block for the memory filter).

In the configuration table ``micro_batch`` is a nullable integer: null stands for ``"auto"``,
resolved per row by :func:`trainscale.study.micro_batch.resolve_micro_batch` when the rows are
simulated (so a large sweep resolves in parallel jobs). :func:`predict_configurations` is that
one step, resolve then predict; :func:`simulate_configurations` is what a simulate job runs.
"""

from __future__ import annotations

import pandas as pd

from trainscale.sim.calibration import Calibration
from trainscale.sim.catalogue import Catalogue
from trainscale.sim.simulate import predict
from trainscale.study.micro_batch import resolve_micro_batch
from trainscale.study.spec import AUTO, Filters

__all__ = ["predict_configurations", "simulate_configurations"]


def predict_configurations(
    configurations: pd.DataFrame, *, catalogue: Catalogue, calibration: Calibration
) -> pd.DataFrame:
    """Predict every row of a (non-empty) configuration table; return :func:`trainscale.predict`'s
    table (one row per configuration, same order; times in s, memory in GiB per GPU).

    ``micro_batch`` null is read as ``"auto"`` and resolved first. ``configurations`` is not
    changed.
    """
    frame = configurations.copy()
    if "micro_batch" in frame.columns:
        micro = frame["micro_batch"].astype(object)
        frame["micro_batch"] = micro.where(micro.notna(), AUTO)
    return predict(
        resolve_micro_batch(frame, catalogue=catalogue, calibration=calibration),
        catalogue=catalogue,
        calibration=calibration,
    )


def simulate_configurations(
    configurations: pd.DataFrame,
    filters: Filters,
    *,
    catalogue: Catalogue,
    calibration: Calibration,
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Simulate a (chunk of a) configuration table under ``catalogue`` and ``calibration``;
    return ``(results, dropped)``.

    ``micro_batch`` null (``"auto"``) is resolved first. ``results`` has the columns of
    :func:`trainscale.predict`; with ``filters.fits_memory`` the rows that do not fit are moved
    to ``dropped`` (same columns), otherwise ``dropped`` is empty.
    """
    frame = configurations.reset_index(drop=True).copy()
    if frame.empty:
        return frame, frame
    results = predict_configurations(frame, catalogue=catalogue, calibration=calibration)
    if not filters.fits_memory:
        return results, results.iloc[0:0]
    fits = results["fits_memory"].to_numpy(dtype=bool)
    return results[fits].reset_index(drop=True), results[~fits].reset_index(drop=True)
