"""Per-study fits: every series of a study's selected rows, fitted against its x axis.

One row per series, metric and parameter (long table,
:data:`trainscale.schema.STUDY_FIT_COLUMNS`): the log-log
slopes of tokens/s per GPU and power per GPU (``slope``, dimensionless, and
``pct_per_doubling``, % per doubling of x) with 95 % intervals, and, when x is the GPU count,
the Universal Scalability Law of whole-job tokens/s (``sigma``, ``kappa``, ``n_star`` in GPUs),
all from :func:`trainscale.fits.scaling.fit_scaling_series`, the function the ``scaling_fits``
table uses. A series with too few x values keeps its rows, with NaN and the reason in ``note``.
"""

from __future__ import annotations

import os
from pathlib import Path

import pandas as pd

from trainscale.fits.scaling import fit_scaling_series
from trainscale.schema import STUDY_FIT_COLUMNS, names
from trainscale.study.report import ReportSpec, format_value

__all__ = ["render_fits", "study_fits"]


def study_fits(rows: pd.DataFrame, spec: ReportSpec, *, level: float = 0.95) -> pd.DataFrame:
    """Fit every series of ``rows`` (from :func:`~trainscale.study.report.select_rows`).

    Returns
    -------
    pandas.DataFrame
        The facet column (if any) and series columns as readable text (whole numbers without
        ``.0``), then :data:`trainscale.schema.STUDY_FIT_COLUMNS`: ``facet`` (only with a
        facet) and ``series`` labels (as in the figure's legend), ``source`` ("simulated"),
        ``calibration_id``, ``x`` (the column fitted against), ``metric``, ``fit``
        (``loglog_hc3`` or ``usl``), ``parameter``, ``estimate``, ``ci_low``, ``ci_high``
        (``level``), ``r2`` (log per-GPU scale), ``n`` (points), ``x_min``, ``x_max`` (range of
        x) and ``note``.
    """
    keys = [*([spec.facet] if spec.facet else []), *spec.series]
    out = []
    usl = "tokens_per_s" if spec.x == "num_gpus" else None
    for (facet, label), series in rows.groupby(["facet_label", "series_label"], sort=False):
        first = series.iloc[0]
        head = {k: format_value(k, first[k], spec.names) for k in keys}
        ids = sorted({str(v) for v in series.get("calibration_id", pd.Series(dtype=str))})
        x = pd.to_numeric(series[spec.x])
        extent = {"x_min": float(x.min()), "x_max": float(x.max())}
        for fit in fit_scaling_series(series, x=spec.x, usl=usl, level=level):
            note = fit.pop("note")
            out.append(
                {
                    **head,
                    "facet": facet,
                    "series": label,
                    "source": "simulated",
                    "calibration_id": ", ".join(ids),
                    "x": spec.x,
                    **fit,
                    **extent,
                    "note": note,
                }
            )
    columns = [*keys, *(c for c in names(STUDY_FIT_COLUMNS) if c != "facet" or spec.facet)]
    table = pd.DataFrame(out, columns=columns)
    return table.astype({"n": "int64"})


def render_fits(
    stem: str | os.PathLike[str], rows: pd.DataFrame, spec: ReportSpec, study: str
) -> tuple[Path, ...]:
    """Write ``stem.{csv,md,tex}`` for study ``study`` (see :func:`study_fits`)."""
    from trainscale.report import write_table
    from trainscale.tables.scaling_fits import _compact

    table = study_fits(rows, spec)
    against = "GPU count" if spec.x == "num_gpus" else spec.x.replace("_", "\\_")
    usl = " and the USL of whole-job tokens/s (95\\% CI)" if spec.x == "num_gpus" else ""
    return write_table(
        table,
        stem,
        label=f"tab:study_fits_{study}",
        caption=f"Study {study.replace('_', chr(92) + '_')} (simulated): log-log slope of "
        f"tokens/s and power per GPU against {against} per series (OLS, HC3, 95\\% CI){usl}.",
        float_format={
            "estimate": _compact, "ci_low": _compact, "ci_high": _compact, "r2": ".3f",
            "x_min": "{:,.0f}", "x_max": "{:,.0f}",
        },
    )  # fmt: skip
