"""Per-series scaling fits: the rows of one series in, the long fit rows out.

:func:`fit_scaling_series` is the one place where a scale-out series (rows that differ only in
their ``x`` value, usually the GPU count) is fitted: the log-log slopes of per-GPU metrics
(:func:`trainscale.fits.fit_loglog`) and the Universal Scalability Law of whole-job throughput
(:func:`trainscale.fits.fit_usl_table`). The ``scaling_fits`` table and the per-study fits
(:mod:`trainscale.tables.study_fits`) both call it, each adding its own series columns.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import pandas as pd

from trainscale.fits.cliff import find_cliff, loglog_per_gpu, usl_per_gpu
from trainscale.fits.loglog import fit_loglog
from trainscale.fits.usl_table import fit_usl_table

__all__ = ["LOGLOG_METRICS", "USL_METRIC", "fit_scaling_series"]

#: Per-GPU metrics whose log-log slope is fitted: tokens/s per GPU (tokens/s) and power per
#: GPU (W).
LOGLOG_METRICS: tuple[str, ...] = ("tokens_per_s_per_gpu", "power_w_per_gpu")

#: Whole-job throughput the USL is fitted to (tokens/s).
USL_METRIC = "tokens_per_s"

_LOGLOG_PARAMETERS = (("slope", "slope"), ("pct_per_doubling", "pct_change_per_doubling"))
_USL_PARAMETERS = ("sigma", "kappa", "n_star")


def fit_scaling_series(
    series: pd.DataFrame,
    *,
    x: str = "num_gpus",
    loglog: Sequence[str] = LOGLOG_METRICS,
    usl: str | None = USL_METRIC,
    min_points: int = 1,
    level: float = 0.95,
) -> list[dict[str, Any]]:
    """Fit one series and return its fit rows (keys :data:`trainscale.schema.FIT_COLUMNS`).

    Parameters
    ----------
    series : pandas.DataFrame
        The rows of one series, one per ``x`` value (replicates allowed).
    x : str, default "num_gpus"
        Scaling variable (GPUs in the job, count; or another positive column).
    loglog : sequence of str
        Metrics fitted as ``log2(metric) ~ log2(x)`` with HC3 errors; a metric absent from the
        table, or with fewer than ``min_points`` non-missing values, is skipped. Two rows per
        metric: ``slope`` (elasticity, dimensionless) and ``pct_per_doubling`` (% change when
        ``x`` doubles).
    usl : str or None, default "tokens_per_s"
        Whole-job throughput column fitted with the USL against ``x`` (meaningful when ``x`` is
        the GPU count): three rows, ``sigma`` and ``kappa`` (dimensionless) and ``n_star``
        (GPUs at peak throughput; ``inf`` when there is no peak). None: no USL rows.
    min_points : int, default 1
        Fewest non-missing values a log-log metric needs to be fitted.
    level : float, default 0.95
        Confidence level of ``ci_low`` and ``ci_high``.

    Returns
    -------
    list of dict
        ``metric``, ``fit`` (``loglog_hc3`` or ``usl``), ``parameter``, ``estimate``,
        ``ci_low``, ``ci_high`` (at ``level``), ``r2`` (of the log per-GPU metric; for the USL
        of ``ln(tokens/s / x)``, :attr:`trainscale.fits.usl_fit.UslFit.r2`), ``n`` (points) and
        ``note`` (why a value is missing, what was dropped, and for ``n_star`` what an
        infinite value or interval end means).
    """
    out: list[dict[str, Any]] = []
    metrics = [m for m in loglog if m in series.columns and series[m].notna().sum() >= min_points]
    cliffs = _cliff_notes(series, x, usl)
    for fit in fit_loglog(series, y=metrics, x=x, level=level).itertuples() if metrics else []:
        cliff = cliffs.get("loglog", "") if fit.metric == _PER_GPU else ""
        for parameter, column in _LOGLOG_PARAMETERS:
            out.append(
                {
                    "metric": fit.metric,
                    "fit": "loglog_hc3",
                    "parameter": parameter,
                    "estimate": getattr(fit, column),
                    "ci_low": getattr(fit, f"{column}_ci_low"),
                    "ci_high": getattr(fit, f"{column}_ci_high"),
                    "r2": fit.r2,
                    "n": fit.n,
                    "note": "; ".join(text for text in (fit.note, cliff) if text),
                }
            )
    if usl is not None and usl in series.columns:
        row = fit_usl_table(series, n=x, x=usl, level=level).iloc[0]
        for parameter in _USL_PARAMETERS:
            extra = _n_star_note(row) if parameter == "n_star" else ""
            out.append(
                {
                    "metric": usl,
                    "fit": "usl",
                    "parameter": parameter,
                    "estimate": row[parameter],
                    "ci_low": row[f"{parameter}_ci_low"],
                    "ci_high": row[f"{parameter}_ci_high"],
                    "r2": row["r2"],
                    "n": row["n"],
                    "note": "; ".join(
                        text for text in (row["note"], extra, cliffs.get("usl", "")) if text
                    ),
                }
            )
    return out


_PER_GPU = "tokens_per_s_per_gpu"


def _cliff_notes(series: pd.DataFrame, x: str, usl: str | None) -> dict[str, str]:
    """``{"loglog": note, "usl": note}`` for the fits of tokens/s per GPU and of whole-job
    tokens/s whose residuals show a cliff (:func:`trainscale.fits.cliff.find_cliff`); empty
    notes where they do not, or where the series has fewer than three counts."""
    if _PER_GPU not in series.columns or x not in series.columns:
        return {}
    means = series.groupby(x)[_PER_GPU].mean().dropna()
    means = means[means > 0]
    n = means.index.to_numpy(dtype=float)
    per_gpu = means.to_numpy(dtype=float)
    if len(n) < 3:
        return {}
    notes = {}
    cliff = find_cliff(n, per_gpu, loglog_per_gpu(n, per_gpu))
    if cliff is not None:
        notes["loglog"] = cliff.describe("log-log fit")
    if usl is not None:
        cliff = find_cliff(n, per_gpu, usl_per_gpu(n, per_gpu * n))
        if cliff is not None:
            notes["usl"] = cliff.describe("USL fit")
    return notes


def _n_star_note(row: pd.Series) -> str:
    """What an infinite ``n_star`` or interval end means, in words."""
    estimate, low, high = row["n_star"], row["n_star_ci_low"], row["n_star_ci_high"]
    if estimate == math.inf:
        return "no peak: throughput still rises at the largest count (kappa 0 fits best)" + (
            f"; a peak at {low:.4g} GPUs or more is not excluded" if math.isfinite(low) else ""
        )
    if high == math.inf:
        return "no upper end: the data do not exclude no peak (kappa's interval reaches 0)"
    return ""
