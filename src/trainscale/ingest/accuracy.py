"""Measured runs against the simulator: ``results/sim_vs_measured.parquet``.

Every measured row of the dataset (``source == "measured"``: one per job of a run under
``data/runs``) gets the simulator's prediction for the same configuration
(:func:`predict_measured`). A run the simulator cannot represent — a CPU run, a GPU that is not
in the catalogue, a manifest that records no training configuration — keeps its measured values
and says why it has no prediction. Figure ``sim_vs_measured`` draws this table.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from trainscale.errors import ConfigurationError
from trainscale.schema import (
    CONFIGURATION_COLUMNS,
    REJECT_COLUMNS,
    SIM_VS_MEASURED_COLUMNS,
    names,
)
from trainscale.sim.calibration import Calibration
from trainscale.sim.catalogue import Catalogue
from trainscale.sim.simulate import predict_with_rejects

__all__ = ["METRICS", "predict_measured"]

#: Metrics compared (columns of the result table).
METRICS: tuple[str, ...] = ("step_time_s", "tokens_per_s_per_gpu")

_CONFIG = [c.name for c in CONFIGURATION_COLUMNS]


def _configuration(row: pd.Series) -> dict[str, object]:
    """The row's configuration columns that have a value (the simulator fills the rest)."""
    out = {}
    for name in _CONFIG:
        value = row.get(name)
        if value is None or value is pd.NA or (isinstance(value, float) and np.isnan(value)):
            continue
        if isinstance(value, str) and not value:
            continue
        out[name] = value
    return out


def _text(value: object) -> str:
    """A string cell as text: ``""`` for a missing value."""
    return (
        ""
        if value is None or value is pd.NA or (isinstance(value, float) and np.isnan(value))
        else str(value)
    )


def _reason(rejects: pd.DataFrame) -> str:
    """Why a measured row has no prediction, in a line: the configuration columns the run does
    not record (named up to three), or the first problem the validator found, without its list
    of valid values."""
    if rejects.empty:
        return "not predictable"
    missing = [
        name.strip()
        for p in rejects.drop_duplicates("column").itertuples()
        if str(p.reason).startswith("missing column")
        for name in str(p.column).split(",")
        if name.strip()
    ]
    if missing:
        more = f" and {len(missing) - 3} more" if len(missing) > 3 else ""
        return (
            "the run records no training configuration to simulate (lacks "
            + ", ".join(missing[:3])
            + more
            + ")"
        )
    problem = next(rejects.itertuples())
    message = str(problem.reason).split("; valid:")[0].split("; allowed")[0]
    if "unknown GPU 'cpu'" in message:
        message += " (a CPU run: the simulator models the catalogue's GPUs only)"
    return f"{problem.column}: {message}"


def predict_measured(
    measured: pd.DataFrame, calibration: Calibration, *, catalogue: Catalogue
) -> pd.DataFrame:
    """The measured rows with the simulator's prediction for the same configuration.

    Parameters
    ----------
    measured : pandas.DataFrame
        Measured rows in the dataset schema (:func:`trainscale.dataset.read_dataset` with
        ``sources=("measured",)``), in the order the result keeps.
    calibration : Calibration
        The calibration to predict with.
    catalogue : Catalogue
        The catalogues to predict with.

    Returns
    -------
    pandas.DataFrame
        :data:`trainscale.schema.SIM_VS_MEASURED_COLUMNS`, one row per measured row: ``run_id``,
        ``config_id``, ``gpu``, ``num_gpus``, ``calibration_id`` and ``simulator_version`` of the
        prediction (``""`` without one), ``reason`` (why there is no prediction, ``""``
        otherwise), and each metric of :data:`METRICS` as ``measured_<metric>`` and
        ``predicted_<metric>`` (NaN where there is no prediction), then ``warnings``: the
        measured row's own ``warnings`` (what the ingester warned about its logs, e.g. GPUs
        missing from the power log; ``""`` when none), so that a comparison with a warned
        measurement is never read without its warning.
    """
    rows = []
    for _, row in measured.iterrows():
        out = {
            "run_id": str(row.get("run_id") or ""),
            "config_id": str(row.get("config_id") or ""),
            "gpu": str(row.get("gpu") or ""),
            "num_gpus": row.get("num_gpus"),
            "calibration_id": "",
            "simulator_version": "",
            "reason": "",
            "warnings": _text(row.get("warnings")),
        }
        for metric in METRICS:
            out[f"measured_{metric}"] = pd.to_numeric(row.get(metric), errors="coerce")
            out[f"predicted_{metric}"] = np.nan
        try:
            result, rejects = predict_with_rejects(
                pd.DataFrame([_configuration(row)]),
                catalogue=catalogue,
                calibration=calibration,
                origin=f"run {out['run_id']}",
            )
        except ConfigurationError as error:  # e.g. a manifest that leaves columns out
            result = pd.DataFrame()
            rejects = pd.DataFrame(error.problems, columns=names(REJECT_COLUMNS))
        if len(result):
            for metric in METRICS:
                out[f"predicted_{metric}"] = float(result[metric].iloc[0])
            out["calibration_id"] = str(result["calibration_id"].iloc[0])
            out["simulator_version"] = str(result["simulator_version"].iloc[0])
        else:
            out["reason"] = _reason(rejects)
        rows.append(out)
    return pd.DataFrame(rows, columns=names(SIM_VS_MEASURED_COLUMNS))
