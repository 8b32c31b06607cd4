"""Per-study outputs: a scaling figure and a fits table for any study in the config.

- :func:`report_spec` decides what a study's outputs show (x axis, series, facet, collapsed
  keys, metrics) from its ``report:`` block, or from what it sweeps when the block is absent;
- :func:`select_rows` picks the simulated rows the figure and the fits use (one row per facet,
  series and x value);
- :func:`study_fits` fits every series (:func:`trainscale.fits.scaling.fit_scaling_series`) and
  :func:`render_fits` writes ``fits.{csv,md,tex}``;
- :func:`render_scaling` draws ``scaling.{pdf,png,svg}`` from the selected rows and the fits
  table, with a note built from the study's own fixed values, its source and calibration.
"""

from __future__ import annotations

from trainscale.study_report.figure import plot_scaling, render_scaling, setup_note
from trainscale.study_report.fits import STUDY_FIT_COLUMNS, render_fits, study_fits
from trainscale.study_report.spec import (
    CHOICE_KEYS,
    DEFAULT_METRICS,
    MAX_SERIES,
    METRICS,
    PLAN_KEYS,
    ReportSpec,
    report_spec,
    select_rows,
    series_label,
)

__all__ = [
    "CHOICE_KEYS",
    "DEFAULT_METRICS",
    "MAX_SERIES",
    "METRICS",
    "PLAN_KEYS",
    "STUDY_FIT_COLUMNS",
    "ReportSpec",
    "plot_scaling",
    "render_fits",
    "render_scaling",
    "report_spec",
    "select_rows",
    "series_label",
    "setup_note",
    "study_fits",
]
