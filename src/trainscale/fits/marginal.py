"""Marginal returns of adding GPUs: throughput bought per added GPU and per added kilowatt.

Two views of the same question. From the data: between consecutive GPU counts of a series,
``ΔX / ΔN`` (tokens/s per added GPU) and ``ΔX / ΔP`` (tokens/s per added kW of total GPU power,
``P = power_w_per_gpu × num_gpus``). From a USL fit (:mod:`trainscale.fits.usl_fit`): the same
secants between the same counts, and the derivative ``dX/dN`` on any grid, each with a 95%
delta-method band.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from trainscale.errors import TrainscaleError
from trainscale.fits._series import (
    as_columns,
    delta_method_se,
    describe,
    iter_series,
    require_columns,
    t_quantile,
)
from trainscale.fits.usl_fit import UslFit, fit_usl
from trainscale.fits.usl_law import grad_log_x, usl_denominator
from trainscale.schema import MARGINAL_COLUMNS, USL_MARGINAL_COLUMNS, names

__all__ = ["marginal_returns", "usl_marginal"]


def marginal_returns(
    df: pd.DataFrame,
    *,
    by: str | Sequence[str] = (),
    n: str = "num_gpus",
    x: str = "tokens_per_s",
    power: str | None = "power_w_per_gpu",
    usl: bool = False,
    level: float = 0.95,
) -> pd.DataFrame:
    """Throughput added per added GPU and per added kW between consecutive GPU counts.

    Parameters
    ----------
    df : pandas.DataFrame
        Long table, one row per configuration (and replicate).
    by : str or sequence of str, default ()
        Columns that define a series (e.g. ``["model", "gpu", "plan", "source"]``).
    n : str, default "num_gpus"
        GPU-count column (GPUs in the job).
    x : str, default "tokens_per_s"
        Whole-job throughput column (tokens/s).
    power : str or None, default "power_w_per_gpu"
        Average power per GPU (W); total job GPU power is ``power × n``. ``None``: the per-kW
        columns are NaN.
    usl : bool, default False
        Also fit the USL to each series (:func:`~trainscale.fits.usl_fit.fit_usl` on all its rows)
        and give the secants it implies between the same counts, with a delta-method band.
    level : float, default 0.95
        Band level of the USL columns.

    Returns
    -------
    pandas.DataFrame
        One row per pair of consecutive distinct GPU counts in each series, sorted by ``by``
        and ``n_from``; the ``by`` columns then (see :data:`trainscale.schema.MARGINAL_COLUMNS`):

        - ``n_from``, ``n_to`` (int, GPUs);
        - ``tokens_per_s_from``, ``tokens_per_s_to`` (tokens/s): mean over replicates;
        - ``power_kw_from``, ``power_kw_to`` (kW): total GPU power, mean over replicates;
        - ``added_tokens_per_s_per_gpu`` (tokens/s per GPU): ``ΔX / ΔN``;
        - ``added_tokens_per_s_per_kw`` (tokens/s per kW): ``ΔX / ΔP``; NaN (and noted) when
          total power did not rise;
        - ``usl_added_tokens_per_s_per_gpu`` with ``_ci_low``/``_ci_high``: the USL fit's
          ``(X̂(n_to) - X̂(n_from)) / ΔN`` and band; NaN unless ``usl=True``;
        - ``usl_added_tokens_per_s_per_kw`` with ``_ci_low``/``_ci_high``: the same divided by
          the measured ``ΔP`` (treated as exact);
        - ``note`` (str): replicates averaged, rows dropped, why a value is NaN.

    Raises
    ------
    TrainscaleError
        A column is missing, or a count, throughput or power is non-positive or infinite.
    """
    by_cols = as_columns(by)
    require_columns(df, [*by_cols, n, x, *as_columns(power)], where="marginal_returns")
    rows: list[dict[str, object]] = []
    for key, series in iter_series(df, by_cols):
        rows.extend({**key, **row} for row in _series_rows(series, key, n, x, power, usl, level))
    out = pd.DataFrame(rows, columns=[*by_cols, *names(MARGINAL_COLUMNS)])
    return out.astype({"n_from": "int64", "n_to": "int64", "note": "str"})


def _series_rows(
    series: pd.DataFrame,
    key: dict[str, object],
    n: str,
    x: str,
    power: str | None,
    usl: bool,
    level: float,
) -> list[dict[str, object]]:
    nan = float("nan")
    cols = [n, x] if power is None else [n, x, power]
    values = series[cols].apply(pd.to_numeric, errors="coerce").astype(float)
    missing = values.isna().any(axis=1)
    values = values[~missing]
    bad = ~np.isfinite(values.to_numpy()) | (values.to_numpy() <= 0)
    if bad.any():
        column = cols[int(np.argwhere(bad)[0, 1])]
        raise TrainscaleError(
            f"marginal_returns: series ({describe(key)}): column '{column}' must be positive "
            "and finite"
        )
    notes = [f"{int(missing.sum())} row(s) with missing values dropped"] if missing.any() else []
    if power is None:
        values = values.assign(_power_kw=nan)
    else:
        values = values.assign(_power_kw=values[power] * values[n] / 1000.0)
    per_n = values.groupby(n, sort=True).agg(x=(x, "mean"), kw=("_power_kw", "mean"), k=(x, "size"))
    if (per_n["k"] > 1).any():
        notes.append("replicates at the same GPU count averaged")
    fit = None
    if usl:
        fit = fit_usl(values[n].to_numpy(), values[x].to_numpy(), level=level)
        if fit.note:
            notes.append(f"USL: {fit.note}")
    counts = per_n.index.to_numpy(dtype=float)
    rows = []
    for i in range(len(counts) - 1):
        a, b = per_n.iloc[i], per_n.iloc[i + 1]
        d_n = counts[i + 1] - counts[i]
        d_x = b["x"] - a["x"]
        d_kw = b["kw"] - a["kw"]
        row_notes = list(notes)
        per_kw = nan
        if np.isfinite(d_kw):
            if d_kw > 0:
                per_kw = d_x / d_kw
            else:
                row_notes.append("total power did not rise: no per-kW value")
        secant = _usl_secant(fit, counts[i], counts[i + 1], level)
        scale_kw = 1.0 / d_kw if np.isfinite(d_kw) and d_kw > 0 else nan
        rows.append(
            {
                "n_from": int(counts[i]),
                "n_to": int(counts[i + 1]),
                "tokens_per_s_from": float(a["x"]),
                "tokens_per_s_to": float(b["x"]),
                "power_kw_from": float(a["kw"]),
                "power_kw_to": float(b["kw"]),
                "added_tokens_per_s_per_gpu": d_x / d_n,
                "added_tokens_per_s_per_kw": per_kw,
                "usl_added_tokens_per_s_per_gpu": secant[0],
                "usl_added_tokens_per_s_per_gpu_ci_low": secant[1],
                "usl_added_tokens_per_s_per_gpu_ci_high": secant[2],
                "usl_added_tokens_per_s_per_kw": secant[0] * d_n * scale_kw,
                "usl_added_tokens_per_s_per_kw_ci_low": secant[1] * d_n * scale_kw,
                "usl_added_tokens_per_s_per_kw_ci_high": secant[2] * d_n * scale_kw,
                "note": "; ".join(row_notes),
            }
        )
    return rows


def _usl_secant(
    fit: UslFit | None, n_from: float, n_to: float, level: float
) -> tuple[float, float, float]:
    """``(X̂(n_to) - X̂(n_from)) / (n_to - n_from)`` and its delta-method band (tokens/s/GPU)."""
    nan = float("nan")
    if fit is None or not np.isfinite(fit.x1):
        return nan, nan, nan
    ends = np.array([n_from, n_to])
    x_hat = fit.predict(ends)
    grad_x = x_hat[:, None] * grad_log_x(ends, fit.theta)  # d X / d theta at both ends
    grad = (grad_x[1] - grad_x[0]) / (n_to - n_from)
    value = float((x_hat[1] - x_hat[0]) / (n_to - n_from))
    half = t_quantile(level, fit.dof) * float(np.sqrt(max(grad @ fit.cov @ grad, 0.0)))
    return value, value - half, value + half


def _grad_dx_dn(n: np.ndarray, theta: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``dX/dN`` at ``n`` (shape (k,)) and its gradient in ``(ln x1, sigma, kappa)`` (k, 3).

    ``dX/dN = x1 (1 - sigma - kappa N²) / D²`` with ``D = 1 + sigma (N-1) + kappa N (N-1)``.
    """
    x1, sigma, kappa = np.exp(theta[0]), theta[1], theta[2]
    d = usl_denominator(n, sigma, kappa)
    top = 1.0 - sigma - kappa * n**2
    value = x1 * top / d**2
    d_sigma = x1 * (-d - 2.0 * top * (n - 1.0)) / d**3
    d_kappa = x1 * (-(n**2) * d - 2.0 * top * n * (n - 1.0)) / d**3
    return value, np.column_stack([value, d_sigma, d_kappa])


def usl_marginal(
    fit: UslFit,
    n_grid: np.ndarray | Sequence[float],
    *,
    watts_per_added_gpu: float | np.ndarray | Sequence[float] | None = None,
    level: float | None = None,
) -> pd.DataFrame:
    """Marginal throughput ``dX/dN`` implied by a USL fit, with a delta-method band.

    Parameters
    ----------
    fit : UslFit
        A fit of whole-job throughput (tokens/s) against GPU count.
    n_grid : array_like, shape (k,)
        GPU counts to evaluate (≥ 1).
    watts_per_added_gpu : float or array_like of shape (k,), optional
        ``dP/dN``: total GPU power added by one more GPU (W). The per-GPU power of the series is
        the usual stand-in (exact when power per GPU does not change with N). ``None``: the
        per-kW columns are NaN.
    level : float, optional
        Band level; default the fit's ``level``.

    Returns
    -------
    pandas.DataFrame
        ``k`` rows (see :data:`trainscale.schema.USL_MARGINAL_COLUMNS`): ``n`` (GPUs);
        ``marginal_tokens_per_s_per_gpu`` with ``_ci_low``/``_ci_high`` (tokens/s per added
        GPU; zero at ``N*``, negative beyond); ``marginal_tokens_per_s_per_kw`` with
        ``_ci_low``/``_ci_high`` (tokens/s per added kW = per-GPU values ÷ ``dP/dN`` in kW).
    """
    grid = np.asarray(n_grid, dtype=float).ravel()
    level = fit.level if level is None else level
    value, grad = _grad_dx_dn(grid, fit.theta)
    se = delta_method_se(grad, fit.cov)
    half = t_quantile(level, fit.dof) * se
    if watts_per_added_gpu is None:
        per_kw = np.full_like(grid, np.nan)
    else:
        kw = np.broadcast_to(np.asarray(watts_per_added_gpu, dtype=float), grid.shape) / 1000.0
        if not np.all(np.isfinite(kw) & (kw > 0)):
            raise TrainscaleError("usl_marginal: watts_per_added_gpu must be positive and finite")
        per_kw = 1.0 / kw
    return pd.DataFrame(
        {
            "n": grid,
            "marginal_tokens_per_s_per_gpu": value,
            "marginal_tokens_per_s_per_gpu_ci_low": value - half,
            "marginal_tokens_per_s_per_gpu_ci_high": value + half,
            "marginal_tokens_per_s_per_kw": value * per_kw,
            "marginal_tokens_per_s_per_kw_ci_low": (value - half) * per_kw,
            "marginal_tokens_per_s_per_kw_ci_high": (value + half) * per_kw,
        },
        columns=names(USL_MARGINAL_COLUMNS),
    )
