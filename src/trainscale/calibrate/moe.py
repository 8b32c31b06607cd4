"""The mixture-of-experts stage of ``trainscale calibrate``: the few MoE parameters, fitted on the
published MoE runs with every dense parameter held where the dense stage put it.

Method
------
1. **Rows.** :attr:`trainscale.published.measurements.PublishedData.moe`: the runs of
   ``data/published/moe-measurements.csv`` and the MoE rows of ``measurements.csv`` (the
   Megatron-Bridge performance summary), normalised by :mod:`trainscale.published.moe`. They are
   never among the rows the dense parameters are fitted on, so the dense parameters, and every
   dense prediction, do not move when the MoE rows or the MoE parameters do.
2. **Parameters.** Those of :data:`trainscale.sim.parameters.SHARED_PARAMETERS` marked
   ``fitted`` with ``group`` ``moe`` (:func:`moe_parameters`: grouped-GEMM efficiency,
   all-to-all efficiency, routing imbalance, whatever the simulator's MoE model exposes). Every
   other value is the ``base`` calibration's (the dense stage's result).
3. **Fit.** The dense stage's loss (:mod:`trainscale.calibrate.fit`): bounded least squares on
   ``log(predicted / observed)`` tokens/s per GPU, robust (soft-L1, scale 0.1), **every source
   weighing the same** whatever its row count, and a Gaussian prior on each parameter centred on
   its sourced default (standard deviation its ``prior_sd``, else half its bound range).
4. **Held out** (:func:`held_out_moe`): each MoE source predicted by an MoE fit to the other MoE
   sources (same dense base): the error a user gets on MoE runs of a stack or table the model
   has not seen, and what the MoE rows' 80 % intervals are fitted on
   (:func:`trainscale.sim.intervals.fit_intervals`, its coverage facts those of the MoE rows
   only, so a GPU or framework no MoE row covers is flagged in ``extrapolation``).
5. **Block** (:func:`moe_block`): the ``moe`` block of ``data/calibration.yaml``: method, rows
   fitted on, in-sample and held-out error per source, and the intervals. The values themselves
   are parameters and sit in the file's ``parameters`` block with the others.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np
import pandas as pd
from scipy.optimize import least_squares

from trainscale.calibrate.fit import line_ranges, round_calibration, source_weights
from trainscale.published.summary import summarise
from trainscale.sim.calibration import Calibration
from trainscale.sim.catalogue import Catalogue
from trainscale.sim.configs import build_configs
from trainscale.sim.parameters import SHARED_PARAMETERS, ParameterSpec
from trainscale.sim.simulate import predict_with_rejects
from trainscale.sim.throughput import throughput_per_gpu

__all__ = [
    "MOE_GROUP",
    "MoEFit",
    "calibrate_moe",
    "fit_moe",
    "held_out_moe",
    "moe_block",
    "moe_parameters",
    "moe_predictions",
]

#: The ``group`` of the parameters this stage fits.
MOE_GROUP = "moe"
#: Scale of the robust loss on log errors: the dense stage's (a 10 % error turns it linear).
_F_SCALE = 0.1


def moe_parameters() -> tuple[ParameterSpec, ...]:
    """The fitted parameters of group :data:`MOE_GROUP` (all shared), in
    :data:`SHARED_PARAMETERS` order."""
    return tuple(p for p in SHARED_PARAMETERS if p.fitted and p.group == MOE_GROUP)


@dataclass(frozen=True, slots=True)
class MoEFit:
    """An MoE fit: the calibration (``base`` with the MoE values fitted), the MoE rows with
    prediction and error (``predicted_tokens_per_s_per_gpu``, ``error_pct``, ``ape_pct``), the
    rows the simulator refused (with the reason) and the final least-squares cost."""

    calibration: Calibration
    rows: pd.DataFrame
    rejects: pd.DataFrame
    cost: float


def moe_predictions(
    rows: pd.DataFrame, calibration: Calibration, catalogue: Catalogue
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Predict the MoE rows; return (rows with prediction and error, simulator rejects)."""
    if rows.empty:
        return rows.assign(predicted_tokens_per_s_per_gpu=[], error_pct=[], ape_pct=[]), rows
    results, rejects = predict_with_rejects(
        rows, catalogue=catalogue, calibration=calibration,
        origin="data/published/moe-measurements.csv",
    )  # fmt: skip
    predicted = results["tokens_per_s_per_gpu"].to_numpy(np.float64)
    observed = results["observed_tokens_per_s_per_gpu"].to_numpy(np.float64)
    results["predicted_tokens_per_s_per_gpu"] = predicted
    results["error_pct"] = 100.0 * (predicted - observed) / observed
    results["ape_pct"] = np.abs(results["error_pct"])
    return results, rejects


def _robust(log_error: np.ndarray, weight: np.ndarray) -> np.ndarray:
    """The dense stage's weighted soft-L1 residuals (:mod:`trainscale.calibrate.fit`)."""
    z = (log_error / _F_SCALE) ** 2
    return np.sign(log_error) * _F_SCALE * np.sqrt(2.0 * weight * (np.sqrt(1.0 + z) - 1.0))


def fit_moe(
    rows: pd.DataFrame, base: Calibration, *, catalogue: Catalogue, max_nfev: int = 200
) -> MoEFit:
    """Fit the MoE parameters (:func:`moe_parameters`) on ``rows`` (MoE throughput rows with
    ``observed_tokens_per_s_per_gpu`` and ``citation``), every other value held at ``base``'s;
    the start and the priors are the parameters' defaults. Without MoE parameters or rows the
    calibration is ``base``."""
    free = moe_parameters()
    start = replace(base, **{p.name: p.default for p in free})
    if not free or rows.empty:
        predicted, rejects = moe_predictions(rows, start, catalogue)
        return MoEFit(start, predicted, rejects, 0.0)
    configs, valid, _ = build_configs(
        rows, hardware=catalogue.hardware, models=catalogue.models,
        frameworks=catalogue.frameworks, skip_invalid=True,
    )  # fmt: skip
    kept = rows.reset_index(drop=True).iloc[np.asarray(valid)]
    observed = kept["observed_tokens_per_s_per_gpu"].to_numpy(np.float64)
    weights = source_weights(kept["citation"].reset_index(drop=True))
    prior = np.array([p.default for p in free])
    lower = np.array([p.lower for p in free])
    upper = np.array([p.upper for p in free])
    prior_sd = np.array(
        [p.prior_sd if p.prior_sd is not None else 0.5 * (p.upper - p.lower) for p in free]
    )

    def calibration(x: np.ndarray) -> Calibration:
        return replace(base, **{p.name: float(v) for p, v in zip(free, x, strict=True)})

    def residuals(x: np.ndarray) -> np.ndarray:
        predicted = throughput_per_gpu(configs, calibration(x), catalogue)
        log_error = np.log(predicted / observed)
        return np.concatenate([_robust(log_error, weights), (x - prior) / prior_sd])

    result = least_squares(
        residuals, np.clip(prior, lower, upper), bounds=(lower, upper),
        x_scale=upper - lower, diff_step=1e-3, max_nfev=max_nfev,
    )  # fmt: skip
    fitted = round_calibration(calibration(result.x))
    fitted = replace(fitted, intervals=base.intervals, moe_intervals=base.moe_intervals)
    predicted, rejects = moe_predictions(rows, fitted, catalogue)
    return MoEFit(fitted, predicted, rejects, float(result.cost))


def held_out_moe(rows: pd.DataFrame, base: Calibration, *, catalogue: Catalogue) -> pd.DataFrame:
    """Every MoE row predicted by an MoE fit that left its whole source out (one fit per source,
    on the other sources, over the same dense ``base``): the rows of :func:`moe_predictions`."""
    held = []
    for source in sorted(rows["citation"].unique()):
        out = rows["citation"] == source
        fit = fit_moe(rows[~out].reset_index(drop=True), base, catalogue=catalogue)
        predicted, _ = moe_predictions(rows[out].reset_index(drop=True), fit.calibration,
                                       catalogue)  # fmt: skip
        held.append(predicted)
    return pd.concat(held, ignore_index=True)


def _per_source(rows: pd.DataFrame) -> dict[str, float]:
    table = summarise(rows)
    return {str(s): round(float(m), 2) for s, m in zip(table["source"], table["mape_pct"],
                                                        strict=True)}  # fmt: skip


def moe_block(fit: MoEFit, held_out: pd.DataFrame) -> dict:
    """The ``moe`` block of the calibration file (see the module docstring)."""
    lines = {
        str(name): line_ranges(part["csv_row"])
        for name, part in fit.rows.groupby("data_file", sort=True)
    }
    return {
        "method": "the MoE parameters (group moe) fitted on the published MoE rows with every "
        "dense parameter held at the dense stage's value: bounded robust least squares (soft-L1, "
        "scale 0.1) on log(predicted/observed) tokens/s per GPU, every source weighted the same, "
        "Gaussian prior on each parameter (its default; sd its prior_sd or half its bound range); "
        "intervals: split conformal on the leave-one-MoE-source-out residuals",
        "command": "trainscale calibrate -o data/calibration.yaml",
        "data": ["data/published/moe-measurements.csv", "data/published/measurements.csv"],
        "parameters": [p.name for p in moe_parameters()],
        "fitted_on_csv_lines": lines,
        "in_sample_mape_pct": _per_source(fit.rows) if len(fit.rows) else {},
        "held_out_mape_pct": _per_source(held_out) if len(held_out) else {},
        "not_predicted": _not_predicted(fit.rejects),
    }


def _not_predicted(rejects: pd.DataFrame) -> list[dict]:
    """The MoE rows the simulator refused: file, CSV line and reason (one entry per row)."""
    if "reason" not in rejects:
        return []
    return [
        {"data_file": str(r.data_file), "csv_row": int(r.csv_row), "reason": str(r.reason)}
        for r in rejects.drop_duplicates("row").itertuples()
    ]


def calibrate_moe(
    rows: pd.DataFrame, base: Calibration, *, catalogue: Catalogue
) -> tuple[Calibration, dict]:
    """The MoE stage: ``base`` with the MoE parameters fitted on ``rows``, the MoE intervals
    fitted on the held-out MoE rows, and the file's ``moe`` block (with the intervals in it,
    under ``intervals``, where there are held-out rows)."""
    from trainscale.sim.intervals import fit_intervals

    fit = fit_moe(rows, base, catalogue=catalogue)
    if not moe_parameters() or fit.rows.empty:
        return fit.calibration, moe_block(fit, fit.rows.iloc[0:0])
    held = held_out_moe(rows, base, catalogue=catalogue)
    block = moe_block(fit, held)
    intervals = fit_intervals(held, framework_keys=catalogue.framework_keys)
    block["intervals"] = intervals.as_dict()
    return replace(fit.calibration, moe_intervals=intervals), block
