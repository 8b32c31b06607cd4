"""The power stage of ``trainscale calibrate``: node-power terms fitted on metered runs.

It runs after the throughput fit and changes nothing that fit wrote: the GPU-board phase model
(:mod:`trainscale.sim.system.power`) and every throughput parameter are taken as calibrated, and
the stage writes the ``power`` block of the calibration file (:mod:`trainscale.sim.energy.terms`):

1. predict every fitted row of ``data/published/power-measurements.csv``
   (:mod:`trainscale.published.power_rows`; node power and node energy per token, AC) with the
   calibrated simulator, node power split into its GPU part and its host part
   (:func:`trainscale.sim.energy.node.with_node_power`, host part linear in
   ``host_power_scale``);
2. fit ``host_power_scale`` by least squares on ``log(predicted/measured)`` node power, every
   source weighted the same whatever its row count, residuals in units of
   :data:`RESIDUAL_SCALE` (the throughput fit's soft-L1 scale), with a Gaussian prior (1, sd
   :data:`~trainscale.sim.energy.terms.HOST_POWER_SCALE_PRIOR_SD`) within the bounds;
3. leave each source out in turn, refit on the others (the prior alone where none is left) and
   predict it: the per-source held-out errors of node power and of energy per token, and their
   root mean square over sources (each source once) as the interval spreads.

Energy per token is validated but not fitted: it carries the throughput miss as well.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy.optimize import minimize_scalar

from trainscale.published.power_rows import PowerRows
from trainscale.sim.calibration import Calibration
from trainscale.sim.catalogue import Catalogue
from trainscale.sim.energy.node import with_node_power
from trainscale.sim.energy.run import MLPERF_EVALUATIONS, forward_share, run_tokens_per_s
from trainscale.sim.energy.terms import (
    HOST_POWER_SCALE_BOUNDS,
    HOST_POWER_SCALE_PRIOR_SD,
    PowerTerms,
)
from trainscale.sim.simulate import predict

__all__ = ["RESIDUAL_SCALE", "PowerFit", "calibrate_power", "power_predictions", "run_throughput"]

#: Scale of a log residual in the fit (the throughput fit's soft-L1 scale): a 10 % miss weighs
#: as much as the prior one standard deviation away.
RESIDUAL_SCALE = 0.1
_CONFIG_DROP = (
    "citation", "csv_row", "metric", "observed", "measured_tokens_per_s_per_gpu", "workload",
    "benchmark", "run_samples",
)  # fmt: skip


@dataclass(frozen=True)
class PowerFit:
    """The fitted :class:`PowerTerms`, the rows predicted with them (in sample), the held-out
    rows (each predicted by a fit without its source) and the rows not represented."""

    terms: PowerTerms
    in_sample: pd.DataFrame
    held_out: pd.DataFrame
    rejects: pd.DataFrame


def run_throughput(rows: pd.DataFrame, result: pd.DataFrame) -> np.ndarray:
    """Predicted tokens/s of each row's whole timed run (:mod:`trainscale.sim.energy.run`):
    its training steps plus the evaluations its benchmark's rules put in the window
    (:data:`~trainscale.sim.energy.run.MLPERF_EVALUATIONS`), for the rows naming such a
    benchmark and the samples a run trained; the steady-state ``tokens_per_s`` elsewhere."""
    out = result["tokens_per_s"].to_numpy(np.float64).copy()
    lora = rows.get("finetune", pd.Series(None, index=rows.index)).eq("lora").to_numpy()
    full = result["recompute"].eq("full").to_numpy()
    none = pd.Series(np.nan, index=rows.index)
    pairs = zip(rows.get("benchmark", none), rows.get("run_samples", none), strict=True)
    for i, (bench, samples) in enumerate(pairs):
        rule = MLPERF_EVALUATIONS.get(str(bench))
        if rule is None or not np.isfinite(samples):
            continue
        out[i] = run_tokens_per_s(
            step_time_s=result["step_time_s"].iloc[i], global_batch=result["global_batch"].iloc[i],
            seq_len=result["seq_len"].iloc[i], run_samples=samples, rule=rule,
            share=forward_share(lora[i], full[i]),
        )  # fmt: skip
    return out


def power_predictions(
    rows: pd.DataFrame, calibration: Calibration, catalogue: Catalogue, terms: PowerTerms
) -> pd.DataFrame:
    """``rows`` (:class:`PowerRows` rows) with the prediction of each: ``predicted``,
    ``host_part`` (the share linear in ``host_power_scale``, already scaled), ``error_pct``
    (``100·(predicted/observed − 1)``), ``log_error``, ``run_tokens_per_s_per_gpu`` (the whole
    timed run's, :func:`run_throughput`) and the simulator's columns. Node power is the training
    step's; energy per token is node power over the whole run's throughput, as metered."""
    configs = rows.drop(columns=[c for c in _CONFIG_DROP if c in rows.columns])
    result = with_node_power(
        predict(configs, catalogue=catalogue, calibration=calibration, origin="power rows"),
        catalogue.hardware, terms,
    )  # fmt: skip
    node = rows["metric"].eq("node_power_w_avg").to_numpy()
    nodes = np.ceil(result["num_gpus"] / result["gpus_per_node"]).to_numpy(np.float64)
    run = run_throughput(rows.reset_index(drop=True), result)
    per_token = nodes / run
    result = result.assign(run_tokens_per_s_per_gpu=run / result["num_gpus"].to_numpy(np.float64))
    energy = result["node_power_w"].to_numpy(np.float64) * per_token
    predicted = np.where(node, result["node_power_w"], energy)
    host = np.where(node, 1.0, per_token) * result["host_power_w"].to_numpy(np.float64)
    out = pd.concat([rows[[c for c in _CONFIG_DROP if c in rows.columns]].reset_index(drop=True),
                     result.drop(columns=[c for c in _CONFIG_DROP if c in result.columns])],
                    axis=1)  # fmt: skip
    return out.assign(
        predicted=predicted,
        host_part=host,
        log_error=np.log(predicted / out["observed"].to_numpy(np.float64)),
        error_pct=100.0 * (predicted / out["observed"].to_numpy(np.float64) - 1.0),
    )


def _with_scale(predicted: pd.DataFrame, base: float, scale: float) -> np.ndarray:
    """Predictions at ``host_power_scale`` ``scale`` from ones made at ``base``."""
    host = predicted["host_part"].to_numpy(np.float64)
    return predicted["predicted"].to_numpy(np.float64) + host * (scale / base - 1.0)


def _fit_scale(predicted: pd.DataFrame, base: float) -> float:
    """``host_power_scale`` fitted on the node-power rows of ``predicted`` (made at ``base``):
    source-balanced least squares on log errors plus the prior (the prior alone without rows)."""
    rows = predicted[predicted["metric"].eq("node_power_w_avg")]
    weights = 1.0 / rows.groupby("citation")["citation"].transform("size").to_numpy(np.float64)
    observed = rows["observed"].to_numpy(np.float64)

    def cost(scale: float) -> float:
        residual = np.log(_with_scale(rows, base, scale) / observed) / RESIDUAL_SCALE
        return float(np.sum(weights * residual**2) + ((scale - 1.0) / HOST_POWER_SCALE_PRIOR_SD)
                     ** 2)  # fmt: skip

    if rows.empty:
        return 1.0
    found = minimize_scalar(cost, bounds=HOST_POWER_SCALE_BOUNDS, method="bounded",
                            options={"xatol": 1e-9})  # fmt: skip
    return float(found.x)


def _rms_by_source(frame: pd.DataFrame, metric: str) -> float | None:
    """Root mean square of the log errors of ``metric``, each source's mean square once."""
    rows = frame[frame["metric"].eq(metric)]
    if rows.empty:
        return None
    return float(np.sqrt(rows.groupby("citation")["log_error"].apply(lambda e: (e**2).mean())
                         .mean()))  # fmt: skip


def calibrate_power(rows: PowerRows, calibration: Calibration, catalogue: Catalogue) -> PowerFit:
    """Fit the node-power terms on ``rows`` under the (throughput-)calibrated ``calibration``
    (module docstring); deterministic."""
    base = PowerTerms()
    predicted = power_predictions(rows.rows, calibration, catalogue, base)
    held_out = []
    for source in sorted(predicted["citation"].unique()):
        mine = predicted["citation"].eq(source)
        scale = _fit_scale(predicted[~mine], base.host_power_scale)
        value = _with_scale(predicted[mine], base.host_power_scale, scale)
        observed = predicted.loc[mine, "observed"].to_numpy(np.float64)
        held_out.append(predicted[mine].assign(
            predicted=value, host_power_scale=scale, log_error=np.log(value / observed),
            error_pct=100.0 * (value / observed - 1.0),
        ))  # fmt: skip
    held = pd.concat(held_out, ignore_index=True)
    scale = round(_fit_scale(predicted, base.host_power_scale), 4)
    node_sigma, energy_sigma = (_rms_by_source(held, m) for m in
                                ("node_power_w_avg", "energy_j_per_token"))  # fmt: skip
    terms = PowerTerms(
        host_power_scale=scale,
        node_power_log_sigma=None if node_sigma is None else round(node_sigma, 4),
        energy_log_sigma=None if energy_sigma is None else round(energy_sigma, 4),
    )
    in_sample = power_predictions(rows.rows, calibration, catalogue, terms)
    return PowerFit(terms, in_sample, held, rows.rejects)


def _errors(frame: pd.DataFrame) -> dict[str, dict[str, float]]:
    """Source -> metric -> signed error, percent (2 decimals)."""
    return {
        str(source): {str(r.metric): round(float(r.error_pct), 2) for r in group.itertuples()}
        for source, group in frame.groupby("citation", sort=True)
    }


def power_block(fit: PowerFit, data: str) -> dict[str, object]:
    """The ``power`` block of the calibration file for ``fit`` (fitted on ``data``)."""
    lines = {metric: ", ".join(str(int(r)) for r in sorted(group["csv_row"]))
             for metric, group in fit.in_sample.groupby("metric")}  # fmt: skip
    return {
        "power_id": fit.terms.power_id,
        "method": "separate stage after the throughput fit (which it leaves unchanged): "
        "host_power_scale fitted by least squares on log(predicted/measured) node power (AC), "
        f"every source weighted the same, residual scale {RESIDUAL_SCALE}, Gaussian prior 1 (sd "
        f"{HOST_POWER_SCALE_PRIOR_SD}) within {list(HOST_POWER_SCALE_BOUNDS)}; the interval "
        "spreads are the root mean square over sources of the log error of node power and of "
        "node energy per token, each source predicted by a fit without it",
        "data": data,
        "fitted_on_csv_lines": lines.get("node_power_w_avg", ""),
        "validated_on_csv_lines": lines.get("energy_j_per_token", ""),
        "terms": fit.terms.as_dict(),
        "held_out_error_pct": _errors(fit.held_out),
        "in_sample_error_pct": _errors(fit.in_sample),
        "not_represented": [
            {"csv_row": int(r.csv_row), "reason": str(r.reason)} for r in fit.rejects.itertuples()
        ],
    }
