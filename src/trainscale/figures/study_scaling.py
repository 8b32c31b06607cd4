"""Figure ``reports/studies/<study>/scaling``: a study's metrics against its x axis (the entry
``scaling`` of :data:`trainscale.figures.per_study.STUDY_FIGURES`).

One panel per metric of the :class:`~trainscale.study.report.ReportSpec` (by default global
tokens/s, tokens/s per GPU, MFU, power per GPU and exposed communication, against the GPU
count), one line and one marker shape per series, one row of panels per facet value. The
per-GPU and global throughput panels draw each series' 80 % prediction interval as a band from
the simulated rows' ``tokens_per_s_per_gpu_lo``/``_hi`` (times each row's GPU count for the
global panel, whatever the x axis): light enough (:data:`BAND_ALPHA`) that overlapping bands
stay apart, each edged by a dashed line in its series' colour, under every line and marker.
Points the study asked for but could not plan (no configuration of the point fits in memory)
are named in the note (:func:`unplanned_points`). Without facets the legend gives each series'
change of tokens/s per GPU per doubling of x, read from the study's fits table. The note under the
panels is built from the study file's own fixed values, the catalogues (GPU, system) and the
rows' provenance (simulated, trainscale version, calibration): nothing in it is a constant.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd
from matplotlib.figure import Figure
from matplotlib.lines import Line2D

from trainscale.figures._common import (
    add_source_note,
    gpu_colors,
    legend_row,
    model_colors,
    plot_series,
    readable_log,
    recompute_handle,
    recompute_label,
    sim_source,
    subplot_mosaic,
)
from trainscale.figures._study_text import setup_note, unplanned_points
from trainscale.report.palette import colorblind
from trainscale.report.style import log2_gpu_axis
from trainscale.schema.choices import DEFAULT_FRAMEWORK
from trainscale.sim.system.hardware import HardwareCatalog
from trainscale.study.report import (
    COLUMN_NAMES,
    METRICS,
    ReportSpec,
    column_value_label,
    format_value,
    plan_switches,
)

if TYPE_CHECKING:
    from trainscale.figures.per_study import StudyData
    from trainscale.sim.model.shape import ModelShape

__all__ = [
    "BAND_ALPHA",
    "SERIES_MARKERS",
    "plot_scaling",
    "plot_study_scaling",
]

_X_LABELS = {
    "num_gpus": "GPUs (count)",
    "seq_len": "Sequence length (tokens)",
    "global_batch": "Global batch (sequences)",
    "micro_batch": "Micro-batch (sequences per GPU)",
    "nic_gbit_per_s_per_gpu": "NIC per GPU (Gb/s)",
    "power_limit_w": "GPU power limit (W)",
}

#: x columns drawn on a linear axis (ticked at the study's values): settings one sweeps in
#: steps, not in doublings.
LINEAR_X = frozenset({"power_limit_w"})

#: Opacity of a series' interval band: where two bands overlap, each is still seen through the
#: other (their dashed edges in the series' colours say where each ends).
BAND_ALPHA = 0.10

#: Marker shape per series, in series order: series whose values coincide (two stacks that
#: happen to predict the same throughput) stay visible as two shapes on one line.
SERIES_MARKERS = ("o", "s", "^", "D", "v", "P", "X", "<", ">", "h")

#: Longest legend line (characters) that still fits in one panel's cell of the grid (at the
#: legend's 6.5 pt): "Llama-2 70B: -1.9 % tokens/s per GPU per doubling" (50) does.
LEGEND_CELL_CHARS = 52


def _colors(
    rows: pd.DataFrame,
    spec: ReportSpec,
    hardware: HardwareCatalog,
    models: Mapping[str, ModelShape],
) -> dict[str, tuple]:
    """Colour per series label: fixed per model or GPU (of the catalogues ``models`` and
    ``hardware``) when that is the only series column."""
    labels = list(dict.fromkeys(rows["series_label"]))
    if spec.series in (("model",), ("gpu",)):
        fixed = model_colors(models) if spec.series == ("model",) else gpu_colors(hardware)
        key = spec.series[0]
        first = rows.drop_duplicates("series_label").set_index("series_label")[key]
        return {label: fixed.get(first[label], (0.3, 0.3, 0.3)) for label in labels}
    palette = colorblind(max(len(labels), 1))
    return {label: tuple(palette[i % len(palette)]) for i, label in enumerate(labels)}


def _slopes(fits: pd.DataFrame | None) -> dict[tuple[str, str], float]:
    """(facet, series) → % change of tokens/s per GPU per doubling, from the fits table."""
    if fits is None or fits.empty:
        return {}
    chosen = fits[
        (fits["metric"] == "tokens_per_s_per_gpu") & (fits["parameter"] == "pct_per_doubling")
    ]
    facet = (
        chosen["facet"].fillna("").astype(str)
        if "facet" in chosen.columns
        else pd.Series("", index=chosen.index)
    )
    return dict(zip(zip(facet, chosen["series"].astype(str), strict=True),
                    chosen["estimate"].astype(float), strict=True))  # fmt: skip


@dataclass(frozen=True, slots=True)
class _Layout:
    """Where the panels and the legend go (:func:`_layout`)."""

    mosaic: list[list[str]]
    """Panel names (``<facet index>:<metric>``, ``legend``, ``.``), row by row."""
    heights: list[float]
    """Height ratio of each mosaic row."""
    legend_in_grid: bool
    """The legend sits in a free panel cell (else in a row of its own below)."""
    per_line: int
    """Legend entries per line when the legend has its own row."""
    size: tuple[float, float]
    """Figure width and height (inches)."""


def _layout(metrics: list[str], facets: list[str], texts: Mapping[str, str]) -> _Layout:
    """Up to three panels a row, one block of rows per facet; the legend in a free cell of the
    last block when its longest line fits there (:data:`LEGEND_CELL_CHARS`), else in a row of
    its own, as tall as its lines need."""
    ncols = min(3, len(metrics))
    per_facet = math.ceil(len(metrics) / ncols)
    # the legend takes a free panel cell only if its lines fit a panel's width; a wider legend
    # would widen that column and squeeze the others, so it gets its own row below
    free_cells = per_facet * ncols - len(metrics)
    longest = max((len(t) for t in texts.values()), default=0)
    fits_cell = longest <= LEGEND_CELL_CHARS * free_cells
    mosaic: list[list[str]] = []
    for f in range(len(facets)):
        names = [f"{f}:{m}" for m in metrics]
        last = f == len(facets) - 1 and fits_cell
        names += ["legend" if last else "."] * (per_facet * ncols - len(names))
        mosaic += [names[r * ncols : (r + 1) * ncols] for r in range(per_facet)]
    legend_in_grid = "legend" in mosaic[-1]
    heights = [1.0] * len(mosaic)
    # a legend row holds as many columns of entries as its longest line allows (at most the
    # entries: the series, the band and the open-marker key), and as many lines as that leaves
    entries = len(texts) + 2
    per_line = max(1, min(entries, (LEGEND_CELL_CHARS * ncols) // (longest + 8), 4))
    legend_lines = math.ceil(entries / per_line)
    legend_height = 0.2 + 0.17 * legend_lines
    if not legend_in_grid:
        mosaic.append(["legend"] * ncols)
        heights.append(legend_height / 2.2)
    width = 7.2 if ncols == 3 else 2.6 * ncols + 0.6
    height = 2.2 * (len(mosaic) - (0 if legend_in_grid else 1)) + (
        0 if legend_in_grid else legend_height
    )
    return _Layout(mosaic, heights, legend_in_grid, per_line, (width, height + 0.6))


def _plot_band(axis, x: np.ndarray, series: pd.DataFrame, band, color, scale) -> bool:
    """One series' 80 % interval from its rows' ``band`` columns (lo, hi), times ``scale``: a
    light band (:data:`BAND_ALPHA`) edged by dashed lines in ``color``, drawn under the lines
    (at one x value, a translucent bar); False when the rows hold no interval."""
    lo, hi = band
    if series[[lo, hi]].isna().all().all():
        return False
    low = pd.to_numeric(series[lo]).to_numpy(dtype=float) * scale
    high = pd.to_numeric(series[hi]).to_numpy(dtype=float) * scale
    if len(np.unique(x)) == 1:
        axis.vlines(x, low, high, color=color, alpha=0.25, lw=7, zorder=1)
        return True
    axis.fill_between(x, low, high, color=color, alpha=BAND_ALPHA, lw=0, zorder=1)
    for edge in (low, high):
        axis.plot(x, edge, color=color, ls=(0, (3, 2)), lw=0.6, alpha=0.8, zorder=1.5)
    return True


def _band_handle():
    """Legend entry of the bands: what a band is and how overlapping ones read."""
    from matplotlib.patches import Patch

    return Patch(
        facecolor=(0.3, 0.3, 0.3, 0.18), edgecolor="0.3", ls=(0, (3, 2)), lw=0.6,
        label="band: 80 % prediction interval of the series in its colour (dashed edges)",
    )  # fmt: skip


def _draw_series(
    ax, rows: pd.DataFrame, spec: ReportSpec, facets: list[str], colors, markers
) -> tuple[bool, list[str]]:
    """Every series of every facet on every metric's panel: its interval band where the metric
    has one, its line, and (first panel) a numbered ring where the winning plan changes. Returns
    (a band was drawn, the key of the numbered changes: ``1 Llama-2 7B at 256 GPUs: fsdp``)."""
    metrics = list(spec.metrics)
    banded = False
    switched: list[str] = []
    switches = plan_switches(rows, spec)
    for f, facet in enumerate(facets):
        in_facet = rows[rows["facet_label"] == facet]
        for label, series in in_facet.groupby("series_label", sort=False):
            x = pd.to_numeric(series[spec.x]).astype(float).to_numpy()
            for metric in metrics:
                axis = ax[f"{f}:{metric}"]
                _ylabel, _log, factor, band = METRICS[metric]
                if band is not None and band[0] in series.columns:
                    # the global throughput's interval is the per-GPU one times each row's GPU
                    # count, whatever the x axis shows (METRICS)
                    scale = (
                        pd.to_numeric(series["num_gpus"]).to_numpy(dtype=float)
                        if metric == "tokens_per_s" else 1.0
                    )  # fmt: skip
                    banded |= _plot_band(axis, x, series, band, colors[label], scale)
                y = pd.to_numeric(series[metric]).astype(float) * factor
                plot_series(axis, x, y, series, colors[label], marker=markers[label])
                if metric == metrics[0]:
                    where = f"{facet}, {label}" if len(facets) > 1 else str(label)
                    for xi, text in _label_switches(
                        axis, x, y, switches[series.index], colors[label], len(switched) + 1
                    ):
                        at = column_value_label(spec.x, xi, spec.names)
                        switched.append(f"{len(switched) + 1} {where} at {at}: {text}")
    return banded, switched


def _format_axes(
    ax, rows: pd.DataFrame, spec: ReportSpec, facets: list[str], pilots: pd.DataFrame | None
) -> None:
    """Labels and scales of every panel: the x axis linear at the study's values
    (:data:`LINEAR_X`) or base-2 log, ranging over the pilots' x values too (their crosses are
    drawn wherever they ran), a log y axis where the metric is drawn on one, else from zero."""
    xs = pd.to_numeric(rows[spec.x]).to_numpy(dtype=float) if len(rows) else np.array([1.0])
    if pilots is not None and len(pilots) and spec.x in pilots.columns:
        xs = np.concatenate([xs, pd.to_numeric(pilots[spec.x]).to_numpy(dtype=float)])
    for f, facet in enumerate(facets):
        for metric in spec.metrics:
            axis = ax[f"{f}:{metric}"]
            ylabel, log, factor, _band = METRICS[metric]
            axis.set_ylabel(ylabel)
            axis.set_xlabel(_X_LABELS.get(spec.x, spec.x))
            if spec.x in LINEAR_X:
                axis.set_xticks(sorted(set(xs)))
                axis.set_xticklabels([format_value(spec.x, v) for v in sorted(set(xs))])
            else:
                log2_gpu_axis(axis, xs)
            axis.tick_params(axis="x", labelrotation=90)
            if facet:
                axis.set_title(facet, fontsize=8)
            values = pd.to_numeric(rows.loc[rows["facet_label"] == facet, metric]) * factor
            if log:
                readable_log(axis)
            elif len(values.dropna()):
                top = float(values.max())
                # a quantity from 0, so a 10 W difference reads at its true size
                axis.set_ylim(0.0, max(top * 1.15, 1.0))


def _legend_handles(
    rows: pd.DataFrame, spec: ReportSpec, colors, markers, texts, *, banded: bool, pilots: int
) -> list[Line2D]:
    """One entry per series, then the band, the pilot crosses and the open-marker key where
    the figure draws them."""
    handles = [
        Line2D([], [], color=color, marker=markers[label], label=texts[label])
        for label, color in colors.items()
    ]
    if banded:
        handles.append(_band_handle())
    if pilots:
        handles.append(
            Line2D([], [], ls="", marker="X", color="black", label="measured pilot runs")
        )
    if "recompute" in rows.columns and (rows["recompute"].astype(str) != "none").any():
        modes = rows["recompute"].astype(str).unique().tolist()
        handles.append(recompute_handle(recompute_label(modes, "recompute" in spec.best_of)))
    return handles


#: Most points without a plan the figure's note names one by one; beyond it the note counts them
#: and ``points.md`` lists them (:func:`trainscale.tables.study_points.render_points`).
MAX_NOTE_POINTS = 3


def _notes(
    rows: pd.DataFrame, note: str, *, pilots: int, switched: list[str], unplanned: list[str]
) -> list[str]:
    """The lines under the panels: source, setup, the points not plotted, the pilots'
    calibration, the switch key."""
    notes = [sim_source(rows) + ".", note]
    if len(unplanned) > MAX_NOTE_POINTS:
        notes.append(
            f"Not plotted: {len(unplanned)} points the study asked for have no plan; each, with "
            "its reason, is in points.md beside this figure."
        )
    elif unplanned:
        notes.append("Not plotted: " + "; ".join(unplanned) + ".")
    if pilots:
        ids = sorted({str(v) for v in rows.get("calibration_id", pd.Series(dtype=str))})
        notes.append(
            f"Calibrated on the study's own {pilots} measured pilot run"
            f"{'s' if pilots > 1 else ''} (crosses; calibration {', '.join(ids)}), not "
            "the shipped calibration; the lines are the simulator's prediction with it."
        )
    if switched:
        notes.append(
            "Numbered rings in the first panel: where the winning plan changes, and what of it "
            "changes: " + "; ".join(switched) + ". Every point's plan is in points.csv beside "
            "this figure."
        )
    return notes


def plot_scaling(
    rows: pd.DataFrame,
    spec: ReportSpec,
    *,
    note: str,
    hardware: HardwareCatalog,
    models: Mapping[str, ModelShape],
    fits: pd.DataFrame | None = None,
    title: str = "",
    pilots: pd.DataFrame | None = None,
    unplanned: list[str] | None = None,
) -> Figure:
    """Draw the panels from the selected rows (:func:`~trainscale.study.report.select_rows`).

    Parameters
    ----------
    rows : pandas.DataFrame
        One row per facet, series and x value, with ``facet_label`` and ``series_label``.
    spec : ReportSpec
        What to show.
    note : str
        The setup note (:func:`setup_note`); the source line is added from the rows.
    hardware : HardwareCatalog
        The GPU catalogue (``data/hardware.yaml``): each GPU's fixed colour.
    models : mapping of str to ModelShape
        The model catalogue (``data/models.yaml``): each model's fixed colour.
    fits : pandas.DataFrame, optional
        The study's fits table (:func:`~trainscale.tables.study_fits.study_fits`), for the legend.
    title : str
        Figure title.
    pilots : pandas.DataFrame, optional
        The measured runs the study was calibrated on (``results/calibration/<study>.pilots
        .parquet``: configuration columns and ``measured_tokens_per_s_per_gpu``), drawn as
        black crosses on the throughput panels at their own x value.
    unplanned : list of str, optional
        The points the study asked for but could not plan (:func:`unplanned_points`), named
        in the note as "Not plotted: ...".
    """
    metrics = list(spec.metrics)
    facets = list(dict.fromkeys(rows["facet_label"])) or [""]
    colors = _colors(rows, spec, hardware, models)
    markers = {label: SERIES_MARKERS[i % len(SERIES_MARKERS)] for i, label in enumerate(colors)}
    texts = _series_texts(colors, _slopes(fits), spec.x, single_facet=len(facets) == 1)
    layout = _layout(metrics, facets, texts)
    fig, ax = subplot_mosaic(*layout.size, layout.mosaic, height_ratios=layout.heights)
    banded, switched = _draw_series(ax, rows, spec, facets, colors, markers)
    _format_axes(ax, rows, spec, facets, pilots)
    drawn_pilots = _draw_pilots(ax, facets, metrics, spec, pilots)
    handles = _legend_handles(
        rows, spec, colors, markers, texts, banded=banded, pilots=drawn_pilots
    )
    ncols_legend = 1 if layout.legend_in_grid else min(layout.per_line, len(handles))
    legend_row(ax["legend"], handles, [h.get_label() for h in handles], ncols=ncols_legend,
               fontsize=6.5)  # fmt: skip
    if title:
        fig.suptitle(title, fontsize=9)
    notes = _notes(rows, note, pilots=drawn_pilots, switched=switched, unplanned=unplanned or [])
    return add_source_note(fig, *notes)


def _draw_pilots(ax, facets, metrics, spec: ReportSpec, pilots: pd.DataFrame | None) -> int:
    """Black crosses for the measured pilot runs on the per-GPU and global throughput panels of
    every facet they belong to (all facets when the pilots lack the facet column); returns how
    many pilot rows were drawn (0: none, or no throughput panel or x column to draw them on)."""
    if pilots is None or pilots.empty or spec.x not in pilots.columns:
        return 0
    measured = pd.to_numeric(pilots["measured_tokens_per_s_per_gpu"])
    x = pd.to_numeric(pilots[spec.x]).to_numpy(dtype=float)
    drawn = 0
    for f, facet in enumerate(facets):
        keep = np.ones(len(pilots), bool)
        if spec.facet and spec.facet in pilots.columns and facet:
            keep = np.array([column_value_label(spec.facet, v, spec.names) == facet
                             for v in pilots[spec.facet]])  # fmt: skip
        for metric, scale in (("tokens_per_s_per_gpu", 1.0), ("tokens_per_s", None)):
            if metric not in metrics or not keep.any():
                continue
            factor = pd.to_numeric(pilots["num_gpus"]).to_numpy(float) if scale is None else 1.0
            values = (measured.to_numpy(float) * factor)[keep]
            ax[f"{f}:{metric}"].scatter(x[keep], values, marker="X", s=28, color="black",
                                        zorder=8)  # fmt: skip
            drawn = max(drawn, int(keep.sum()))
    return drawn


def _label_switches(
    axis, x: np.ndarray, y: pd.Series, changes: pd.Series, color, first: int
) -> list[tuple[float, str]]:
    """Ring and number (from ``first``) each point where the winning plan changes
    (``changes``: the text of :func:`~trainscale.study.report.plan_switches`, empty where it does
    not); the (x, text) of each, in order. Numbers, not the text, go on the panel: a study with
    many changes would cover its small first panel with words (the note carries the text)."""
    drawn: list[tuple[float, str]] = []
    for xi, yi, text in zip(x, y.to_numpy(dtype=float), changes.to_numpy(), strict=True):
        if not text or not np.isfinite(yi):
            continue
        axis.plot([xi], [yi], marker="o", ms=9, mfc="none", mec=color, mew=0.9, zorder=6)
        axis.annotate(
            str(first + len(drawn)), (xi, yi), xytext=(0, -8), textcoords="offset points",
            ha="center", va="top", fontsize=6, color=color, zorder=7,
            bbox={"boxstyle": "round,pad=0.1", "fc": "white", "ec": "none", "alpha": 0.85},
        )  # fmt: skip
        drawn.append((float(xi), str(text)))
    return drawn


def _series_texts(
    colors: Mapping[str, tuple],
    slopes: Mapping[tuple[str, str], float],
    x: str,
    *,
    single_facet: bool,
) -> dict[str, str]:
    """Legend text per series label: the label, and without facets its change of tokens/s per
    GPU per doubling of ``x`` (from the fits table's ``slopes``)."""
    doubled = "" if x == "num_gpus" else f" of the {COLUMN_NAMES.get(x, x)}"
    texts = {}
    for label in colors:
        slope = slopes.get(("", label)) if single_facet else None
        texts[label] = label if slope is None or not np.isfinite(slope) else (
            f"{label}: {slope:+.1f} % tokens/s per GPU per doubling{doubled}"
        )  # fmt: skip
    return texts


def plot_study_scaling(data: StudyData) -> Figure:
    """The per-study figure ``scaling`` (:data:`trainscale.figures.per_study.STUDY_FIGURES`):
    :func:`plot_scaling` of the study's rows, with its setup note, fits, pilots and unplanned
    points, titled ``Study <name>: scaling``."""
    note = setup_note(
        data.study,
        data.spec,
        data.hardware,
        DEFAULT_FRAMEWORK,
        dropped_memory=data.rows.attrs["dropped_memory"],
    )
    unplanned = (
        unplanned_points(data.simulated, data.spec, data.hardware, data.rejects)
        if data.rejects is not None
        else None
    )
    return plot_scaling(
        data.rows,
        data.spec,
        note=note,
        hardware=data.hardware,
        models=data.models,
        fits=data.fits,
        title=f"Study {data.name}: scaling",
        pilots=data.pilots,
        unplanned=unplanned,
    )
