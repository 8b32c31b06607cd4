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

from trainscale.fits.knee import KNEE_FRACTION, KNEE_MARGINAL, knee_of_series
from trainscale.fits.scaling import fit_scaling_series
from trainscale.schema import STUDY_FIT_COLUMNS, names
from trainscale.study.report import ReportSpec, format_value, has_experts
from trainscale.tables.study_points import plan_text

__all__ = ["knee_rows", "render_fits", "study_fits"]


def knee_rows(series: pd.DataFrame) -> list[dict[str, object]]:
    """The knee of one series (:func:`trainscale.fits.knee.knee_of_series`) as two fit rows of
    tokens/s per GPU, ``fit`` = ``knee``: ``knee_gpus`` (the GPU count; NaN when the series has
    none) and ``per_gpu_drop_pct`` (% below the best before it), the note naming the criterion,
    the plan and batch at the knee and its cause."""
    found = knee_of_series(series)
    base = {
        "metric": "tokens_per_s_per_gpu", "fit": "knee", "ci_low": float("nan"),
        "ci_high": float("nan"), "r2": float("nan"), "n": int(series["num_gpus"].nunique()),
    }  # fmt: skip
    if pd.isna(found["knee_x"]):
        note = (
            f"no knee: tokens/s per GPU stays within {100 * KNEE_FRACTION:.0f} % of its best and "
            f"every step adds at least {100 * KNEE_MARGINAL:.0f} % of a GPU's worth per added GPU"
        )
        return [{**base, "parameter": "knee_gpus", "estimate": float("nan"), "note": note}]
    at = series[pd.to_numeric(series["num_gpus"]) == found["knee_x"]].iloc[0]
    why = (
        f"tokens/s per GPU {found['per_gpu_drop_pct']:.1f} % below its best at "
        f"{found['best_x']:,.0f} GPUs" if found["knee_criterion"] == "per_gpu"
        else f"the step to it adds {found['marginal_pct']:.0f} % of a GPU's worth per added GPU"
    )  # fmt: skip
    plan = plan_text(at.to_dict(), experts=has_experts(series))
    note = (
        f"{why}; plan {plan}, global batch {int(at['global_batch']):,} "
        f"sequences, {found['knee_local_batch']:g} per data-parallel rank (best: "
        f"{found['best_local_batch']:g}); exposed communication "
        f"{found['best_exposed_comm_pct']:.1f} -> {found['knee_exposed_comm_pct']:.1f} % and "
        f"bubble {found['best_bubble_pct']:.1f} -> {found['knee_bubble_pct']:.1f} % of the step: "
        f"cause {found['knee_cause']}"
    )
    return [
        {**base, "parameter": "knee_gpus", "estimate": float(found["knee_x"]), "note": note},
        {**base, "parameter": "per_gpu_drop_pct",
         "estimate": float(found["per_gpu_drop_pct"]), "note": ""},
    ]  # fmt: skip


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
        fits = fit_scaling_series(series, x=spec.x, usl=usl, level=level)
        if spec.x == "num_gpus":
            fits += knee_rows(series)
        for fit in fits:
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
