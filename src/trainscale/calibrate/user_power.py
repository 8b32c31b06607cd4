"""Power from a user's own logs: ``calibrate --measurements`` refits the power terms when the
measured rows carry measured power.

Measured power a row may carry (any, all or none):

- ``measured_power_w_per_gpu``: GPU-board power per GPU, W (``nvidia-smi``/DCGM); in Parquet
  written by ``trainscale ingest`` the measured row's ``power_w_per_gpu`` is this;
- ``measured_node_power_w``: node power, W per node (its GPUs plus host, at the wall: a PDU or
  BMC), given as a number or read from a node-power log named in ``node_power_log``
  (:mod:`trainscale.ingest.node_power_log`).

What is refitted, each only where rows carry it, by least squares on ``log(predicted/measured)``
with the residual scale of the shipped power stage and a Gaussian prior at the base value:

1. **GPU board**: one factor ``s`` on the power above idle of every phase, i.e. the three phase
   fractions ``power_compute_frac``, ``power_memory_frac`` and ``power_comm_frac`` of the base
   calibration times ``s`` (prior 1, sd :data:`GPU_SCALE_PRIOR_SD`; each fraction kept within its
   bounds). These are parameters of the user's calibration file, so its ``calibration_id``
   names them;
2. **node**: ``host_power_scale`` of the ``power`` block (prior: the base value), with the GPU
   board as refitted.

The report gives the error of the shipped and of the refitted calibration on the same rows.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np
import pandas as pd
from scipy.optimize import minimize_scalar

from trainscale.calibrate.power import RESIDUAL_SCALE
from trainscale.errors import InputFileError
from trainscale.sim.calibration import Calibration
from trainscale.sim.catalogue import Catalogue
from trainscale.sim.energy.node import with_node_power
from trainscale.sim.energy.terms import (
    HOST_POWER_SCALE_BOUNDS,
    HOST_POWER_SCALE_PRIOR_SD,
    PowerTerms,
)
from trainscale.sim.parameters import parameter_spec
from trainscale.sim.simulate import predict

__all__ = [
    "GPU_POWER",
    "GPU_SCALE_PRIOR_SD",
    "NODE_POWER",
    "UserPowerFit",
    "has_measured_power",
    "measured_power",
    "refit_user_power",
    "user_power_block",
]

GPU_POWER = "measured_power_w_per_gpu"
NODE_POWER = "measured_node_power_w"
#: Prior standard deviation of the GPU-board factor: the phase fractions are estimates within
#: about ±25 % (reference notes section 5.3).
GPU_SCALE_PRIOR_SD = 0.25
_FRACTIONS = ("power_compute_frac", "power_memory_frac", "power_comm_frac")


@dataclass(frozen=True)
class UserPowerFit:
    """The refitted calibration and power terms, and per scope (``gpu``, ``node``) the rows
    measured, the shipped and the refitted MAPE (NaN where no row carries that power)."""

    calibration: Calibration
    terms: PowerTerms
    errors: pd.DataFrame
    """``scope``, ``rows``, ``shipped_mape_pct``, ``refit_mape_pct``."""


def measured_power(
    table: pd.DataFrame, read_log: Callable[[Path], float] | None = None
) -> pd.DataFrame:
    """``table`` with its measured power under :data:`GPU_POWER` and :data:`NODE_POWER`: an
    ingested table's (every row ``source`` measured) ``power_w_per_gpu`` is the GPU's, and a
    ``node_power_log`` column's logs, read by ``read_log`` (path -> mean W per node: the CLI
    passes :func:`trainscale.ingest.node_power_log.node_power_w`; None: the column is an error),
    fill :data:`NODE_POWER` where it is empty."""
    out = table
    ingested = "source" in out.columns and out["source"].astype(str).eq("measured").all()
    if GPU_POWER not in out.columns and ingested and "power_w_per_gpu" in out.columns:
        out = out.assign(**{GPU_POWER: pd.to_numeric(out["power_w_per_gpu"], errors="coerce")})
    if "node_power_log" in out.columns:
        logs = out["node_power_log"].fillna("").astype(str)
        if read_log is None and (logs != "").any():
            raise InputFileError("node_power_log", "no node-power log reader given")
        read = [read_log(Path(p)) if p and read_log else np.nan for p in logs]
        given = pd.to_numeric(out.get(NODE_POWER, np.nan), errors="coerce")
        out = out.assign(**{NODE_POWER: np.where(np.isfinite(given), given, read)})
    return out


def has_measured_power(table: pd.DataFrame) -> bool:
    """Whether any row of ``table`` (after :func:`measured_power`) carries measured power."""
    return any(
        name in table.columns and pd.to_numeric(table[name], errors="coerce").notna().any()
        for name in (GPU_POWER, NODE_POWER)
    )


def user_power_block(fit: UserPowerFit, files: str) -> dict[str, object]:
    """The ``power`` block of a user calibration file."""
    return {
        "power_id": fit.terms.power_id,
        "method": "user refit (trainscale.calibrate.user_power): GPU-board phase fractions "
        "times one factor on measured GPU power, host_power_scale on measured node power, "
        "least squares on log errors with priors at the base values",
        "data": files,
        "terms": fit.terms.as_dict(),
        "errors_mape_pct": {
            str(r.scope): {"rows": int(r.rows),
                           "shipped": None if r.shipped_mape_pct != r.shipped_mape_pct
                           else round(float(r.shipped_mape_pct), 2),
                           "refit": None if r.refit_mape_pct != r.refit_mape_pct
                           else round(float(r.refit_mape_pct), 2)}
            for r in fit.errors.itertuples()
        },
    }  # fmt: skip


def _scaled(calibration: Calibration, factor: float) -> Calibration:
    values = {}
    for name in _FRACTIONS:
        spec = parameter_spec(name)
        value = float(np.clip(calibration.value(name) * factor, spec.lower, spec.upper))
        values[name] = float(f"{value:.6g}")  # as the calibration file keeps it
    return replace(calibration, **values)


def _predicted(table: pd.DataFrame, cal: Calibration, catalogue: Catalogue,
               terms: PowerTerms) -> pd.DataFrame:  # fmt: skip
    configs = table.drop(columns=[c for c in (GPU_POWER, NODE_POWER) if c in table.columns])
    result = predict(configs, catalogue=catalogue, calibration=cal, origin="measurements")
    return with_node_power(result, catalogue.hardware, terms)


def _one_d(cost, bounds: tuple[float, float]) -> float:
    return float(minimize_scalar(cost, bounds=bounds, method="bounded",
                                 options={"xatol": 1e-7}).x)  # fmt: skip


def _mape(predicted: np.ndarray, measured: np.ndarray) -> float:
    keep = np.isfinite(measured)
    if not keep.any():
        return float("nan")
    return float(100.0 * np.mean(np.abs(predicted[keep] / measured[keep] - 1.0)))


def refit_user_power(
    table: pd.DataFrame,
    calibration: Calibration,
    terms: PowerTerms,
    *,
    catalogue: Catalogue,
    shipped: tuple[Calibration, PowerTerms] | None = None,
) -> UserPowerFit:
    """Refit the power terms on the measured power of ``table`` (module docstring), starting
    from ``calibration`` (the throughput refit) and ``terms``; ``shipped`` (default: the same
    two) is what the report's "shipped" error is computed with."""
    gpu = pd.to_numeric(table.get(GPU_POWER, np.nan), errors="coerce")
    node = pd.to_numeric(table.get(NODE_POWER, np.nan), errors="coerce")
    gpu = np.broadcast_to(np.asarray(gpu, np.float64), (len(table),))
    node = np.broadcast_to(np.asarray(node, np.float64), (len(table),))
    base = _predicted(table, calibration, catalogue, terms)
    idle = np.array([catalogue.hardware.gpus[str(g)].idle_w for g in base["gpu"]])
    active = base["power_w_per_gpu"].to_numpy(np.float64) - idle
    fitted = calibration
    if np.isfinite(gpu).any():
        rows = np.isfinite(gpu)

        def gpu_cost(s: float) -> float:
            r = np.log((idle[rows] + s * active[rows]) / gpu[rows]) / RESIDUAL_SCALE
            return float(np.sum(r**2) + ((s - 1.0) / GPU_SCALE_PRIOR_SD) ** 2)

        fitted = _scaled(calibration, _one_d(gpu_cost, (0.25, 4.0)))
    after = _predicted(table, fitted, catalogue, terms)
    new_terms = terms
    if np.isfinite(node).any():
        rows = np.isfinite(node)
        host = after["host_power_w"].to_numpy(np.float64)[rows] / terms.host_power_scale
        gpus = (after["node_power_w"].to_numpy(np.float64)[rows]
                - terms.host_power_scale * host)  # fmt: skip

        def node_cost(s: float) -> float:
            r = np.log((gpus + s * host) / node[rows]) / RESIDUAL_SCALE
            prior = (s - terms.host_power_scale) / HOST_POWER_SCALE_PRIOR_SD
            return float(np.sum(r**2) + prior**2)

        scale = round(_one_d(node_cost, HOST_POWER_SCALE_BOUNDS), 4)
        new_terms = replace(terms, host_power_scale=scale)
        after = _predicted(table, fitted, catalogue, new_terms)
    shipped_cal, shipped_terms = shipped or (calibration, terms)
    before = _predicted(table, shipped_cal, catalogue, shipped_terms)
    errors = pd.DataFrame([
        {"scope": scope, "rows": int(np.isfinite(measured).sum()),
         "shipped_mape_pct": _mape(before[column].to_numpy(np.float64), measured),
         "refit_mape_pct": _mape(after[column].to_numpy(np.float64), measured)}
        for scope, column, measured in (("GPU board", "power_w_per_gpu", gpu),
                                        ("node", "node_power_w", node))
    ])  # fmt: skip
    return UserPowerFit(fitted, new_terms, errors)
