"""Measured runs against the simulator: ``results/sim_vs_measured.parquet``.

Every measured row of the dataset (``source == "measured"``: one per job of a run under
``data/runs``) gets the simulator's prediction for the same configuration
(:func:`predict_measured`). A run the simulator cannot represent — a CPU run, a GPU that is not
in the catalogue, a manifest that records no training configuration — keeps its measured values
and says why it has no prediction. Each row also carries the prediction's 80 % interval, the
measured and predicted power per GPU with the file the measured power came from, and the run
manifest's ``purpose`` (what the run can show: a functional test is not a performance run).
Figure ``sim_vs_measured`` draws this table.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

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

if TYPE_CHECKING:
    from trainscale.ingest.manifest import RunManifest

__all__ = ["INTERVAL_METRICS", "METRICS", "predict_measured"]

#: Metrics compared (columns of the result table).
METRICS: tuple[str, ...] = ("step_time_s", "tokens_per_s_per_gpu")
#: Metrics whose prediction carries an 80 % interval (``<metric>_lo``/``_hi`` of the result).
INTERVAL_METRICS: tuple[str, ...] = ("step_time_s", "tokens_per_s_per_gpu")

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


def _power_log(row: pd.Series, manifest: RunManifest | None) -> str:
    """The file(s) the row's measured power came from: its power logs (nvidia-smi, dcgmi) among
    the files it used (``log_file``), else its step log (Megatron's own ``power per GPU``
    field); '' when the row has no measured power."""
    power = pd.to_numeric(row.get("power_w_per_gpu"), errors="coerce")
    if pd.isna(power):
        return ""
    used = [f for f in str(row.get("log_file") or "").split(";") if f]
    if manifest is None:
        return ";".join(used)
    from trainscale.ingest.manifest import POWER_KINDS

    kinds = {entry.relpath: entry.kind for entry in manifest.logs}
    logs = [f for f in used if kinds.get(f) in POWER_KINDS]
    if logs:
        return ";".join(logs)
    return f"{used[0]} (the step log's power field)" if used else "the step log's power field"


def _measured_part(row: pd.Series, manifest: RunManifest | None) -> dict[str, object]:
    """The row's identity and measured values, with the prediction's columns still empty."""
    out: dict[str, object] = {
        "run_id": str(row.get("run_id") or ""),
        "config_id": str(row.get("config_id") or ""),
        "gpu": str(row.get("gpu") or ""),
        "num_gpus": row.get("num_gpus"),
        "calibration_id": "",
        "simulator_version": "",
        "reason": "",
        "purpose": str((manifest.raw.get("purpose") if manifest else None) or ""),
        "measured_power_w_per_gpu": pd.to_numeric(row.get("power_w_per_gpu"), errors="coerce"),
        "predicted_power_w_per_gpu": np.nan,
        "power_log": _power_log(row, manifest),
        "warnings": _text(row.get("warnings")),
    }
    for metric in METRICS:
        out[f"measured_{metric}"] = pd.to_numeric(row.get(metric), errors="coerce")
        out[f"predicted_{metric}"] = np.nan
    for metric in INTERVAL_METRICS:
        out[f"predicted_{metric}_lo"] = out[f"predicted_{metric}_hi"] = np.nan
    return out


def predict_measured(
    measured: pd.DataFrame,
    calibration: Calibration,
    *,
    catalogue: Catalogue,
    manifests: Mapping[str, RunManifest] | None = None,
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
    manifests : mapping of str to RunManifest, optional
        Run id → its manifest (:func:`trainscale.ingest.runs.load_manifest`): the ``purpose``
        each row gets and which of its files are power logs. Without one a row's purpose is
        ``""`` and its power source is every file it used.

    Returns
    -------
    pandas.DataFrame
        :data:`trainscale.schema.SIM_VS_MEASURED_COLUMNS`, one row per measured row: ``run_id``,
        ``config_id``, ``gpu``, ``num_gpus``, ``calibration_id`` and ``simulator_version`` of the
        prediction (``""`` without one), ``reason`` (why there is no prediction, ``""``
        otherwise), each metric of :data:`METRICS` as ``measured_<metric>`` and
        ``predicted_<metric>`` (NaN where there is no prediction), the prediction's 80 %
        interval as ``predicted_<metric>_lo``/``_hi``, ``purpose``, the power per GPU as
        ``measured_power_w_per_gpu`` (with ``power_log``, its file) and
        ``predicted_power_w_per_gpu``, then ``warnings``: the measured row's own ``warnings``
        (what the ingester warned about its logs, e.g. GPUs missing from the power log; ``""``
        when none), so that a comparison with a warned measurement is never read without its
        warning.
    """
    manifests = manifests or {}
    rows = []
    for _, row in measured.iterrows():
        out = _measured_part(row, manifests.get(str(row.get("run_id") or "")))
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
            first = result.iloc[0]
            for metric in METRICS:
                out[f"predicted_{metric}"] = float(first[metric])
            for metric in INTERVAL_METRICS:
                for end in ("lo", "hi"):
                    out[f"predicted_{metric}_{end}"] = float(first[f"{metric}_{end}"])
            out["predicted_power_w_per_gpu"] = float(first["power_w_per_gpu"])
            out["calibration_id"] = str(first["calibration_id"])
            out["simulator_version"] = str(first["simulator_version"])
        else:
            out["reason"] = _reason(rejects)
        rows.append(out)
    return pd.DataFrame(rows, columns=names(SIM_VS_MEASURED_COLUMNS))
