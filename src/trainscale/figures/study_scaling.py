"""Figure ``reports/studies/<study>/scaling``: a study's metrics against its x axis.

One panel per metric of the :class:`~trainscale.study.report.ReportSpec` (by default global
tokens/s, tokens/s per GPU, MFU, power per GPU and exposed communication, against the GPU
count), one line and one marker shape per series, one row of panels per facet value. The
per-GPU and global throughput panels draw each series' 80 % prediction interval as a band from
the simulated rows' ``tokens_per_s_per_gpu_lo``/``_hi`` (times each row's GPU count for the
global panel, whatever the x axis). Without facets the legend gives each series' change of
tokens/s per GPU per doubling of x, read from the study's fits table. The note under the
panels is built from the study file's own fixed values, the catalogues (GPU, system) and the
rows' provenance (simulated, trainscale version, calibration): nothing in it is a constant.
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd
import seaborn as sns
from matplotlib.figure import Figure
from matplotlib.lines import Line2D

from trainscale.figures._common import (
    add_source_note,
    band_handle,
    gpu_colors,
    legend_row,
    model_colors,
    plot_band,
    plot_series,
    readable_log,
    recompute_handle,
    recompute_label,
    save_styled,
    sim_source,
    subplot_mosaic,
)
from trainscale.report.style import PALETTE, log2_gpu_axis
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
    from trainscale.sim.model.shape import ModelShape
    from trainscale.study.sweep import Study

__all__ = ["SERIES_MARKERS", "plot_scaling", "render_scaling", "setup_note"]

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

#: Marker shape per series, in series order: series whose values coincide (two stacks that
#: happen to predict the same throughput) stay visible as two shapes on one line.
SERIES_MARKERS = ("o", "s", "^", "D", "v", "P", "X", "<", ">", "h")

#: Longest legend line (characters) that still fits in one panel's cell of the grid (at the
#: legend's 6.5 pt): "Llama-2 70B: -1.9 % tokens/s per GPU per doubling" (50) does.
LEGEND_CELL_CHARS = 52

# How a fixed column reads in the note: a format with {v} (the readable value).
_FIXED = {
    "model": "{v}",
    "gpu": "{v}",
    "seq_len": "sequence {v} tokens",
    "global_batch": "global batch {v} sequences",
    "micro_batch": "micro-batch {v} per GPU",
    "num_gpus": "{v} GPUs",
    "sharding": "{v} sharding",
    "recompute": "recompute {v}",
    "precision": "{v}",
    "framework": "framework {v}",
    "power_limit_w": "GPU power limit {v} W",
}


def setup_note(
    study: Study,
    spec: ReportSpec,
    hardware: HardwareCatalog,
    framework_default: str,
    *,
    dropped_memory: int = 0,
) -> str:
    """The study's setup in words, from its own file and the catalogues.

    Parameters
    ----------
    study : Study
        The study (its ``fixed``, ``sweep`` and ``derive`` values).
    spec : ReportSpec
        What the figure shows (which swept columns are x, series, facet or collapsed).
    hardware : HardwareCatalog
        GPU and system catalogue (``data/hardware.yaml``), for the system the study runs on.
    framework_default : str
        The framework profile a study without ``framework`` gets (``data/frameworks.yaml``).
    dropped_memory : int
        Simulated rows left out because they do not fit in memory.

    Returns
    -------
    str
        ``Study <name> setup: Llama-2 13B, A100 80GB on dgx-a100 (8 GPUs per node, 200 Gb/s NIC
        per GPU), ...; swept: ...``.
    """
    fixed = dict(study.fixed)
    fixed.update({k: v[0] for k, v in study.sweep.items() if len(v) == 1})
    parts = []
    for key, value in fixed.items():
        if key == "system":
            continue
        shown = format_value(key, value, spec.names)
        parts.append(_FIXED.get(key, f"{key} {{v}}").format(v=shown))
        if key == "gpu":
            parts[-1] += _system_words(hardware, str(value), fixed.get("system"))
    if "framework" not in fixed and "framework" not in study.sweep:
        parts.append(f"framework {framework_default} (default)")
    for key, value in study.derive.items():
        if key == "global_batch_tokens":
            parts.append(f"global batch {value:,} tokens (global_batch = tokens / seq_len)")
        else:
            parts.append(f"global batch {value:,} sequences per data-parallel rank")
    swept = []
    for key, values in study.sweep.items():
        if len(values) < 2:
            continue
        role = (
            "x" if key == spec.x else "facet" if key == spec.facet
            else "fastest kept" if key in spec.best_of else "series"
        )  # fmt: skip
        shown = ", ".join(format_value(key, v, spec.names) for v in values)
        swept.append(f"{key} {shown} ({role})")
    text = f"Study {study.name} setup: " + ", ".join(parts)
    if "gpu" not in fixed:
        text += "; each GPU on its catalogue default system"
    if swept:
        text += "; swept: " + "; ".join(swept)
    if spec.best_of:
        text += (
            ". Each point is the fastest (tokens/s) of "
            + " × ".join(spec.best_of)
            + " that fits in memory (open markers: with recomputation)"
        )
    if dropped_memory:
        text += f"; {dropped_memory:,} simulated configurations that do not fit in memory left out"
    return text + "."


def _system_words(hardware: HardwareCatalog, gpu: str, system: str | None) -> str:
    if gpu not in hardware.gpus:
        return ""
    default = system is None
    key = hardware.default_system.get(gpu) if default else system
    if key not in hardware.systems:
        return f" on {key}" if key else ""
    node = hardware.systems[key]
    nic = node.nic_bytes_per_s_per_gpu * 8 / 1e9
    words = f" on {key} ({node.gpus_per_node} GPUs per node, {nic:g} Gb/s NIC per GPU"
    return words + (", the GPU's default system)" if default else ")")


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
    palette = sns.color_palette(PALETTE, max(len(labels), 1))
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
    """
    metrics = list(spec.metrics)
    facets = list(dict.fromkeys(rows["facet_label"])) or [""]
    colors = _colors(rows, spec, hardware, models)
    markers = {label: SERIES_MARKERS[i % len(SERIES_MARKERS)] for i, label in enumerate(colors)}
    texts = _series_texts(colors, _slopes(fits), spec.x, single_facet=len(facets) == 1)
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
    fig, ax = subplot_mosaic(width, height + 0.6, mosaic, height_ratios=heights)
    xs = pd.to_numeric(rows[spec.x]).to_numpy(dtype=float) if len(rows) else np.array([1.0])
    banded = False
    switched = False
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
                    banded |= plot_band(axis, x, series, band[0].rsplit("_lo", 1)[0],
                                        colors[label], scale=scale)  # fmt: skip
                y = pd.to_numeric(series[metric]).astype(float) * factor
                plot_series(axis, x, y, series, colors[label], marker=markers[label])
                if metric == metrics[0]:
                    switched |= _label_switches(axis, x, y, switches[series.index], colors[label])
    for f, facet in enumerate(facets):
        for metric in metrics:
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
    handles = [
        Line2D([], [], color=color, marker=markers[label], label=texts[label])
        for label, color in colors.items()
    ]
    drawn_pilots = _draw_pilots(ax, facets, metrics, spec, pilots)
    if banded:
        handles.append(band_handle())
    if drawn_pilots:
        handles.append(
            Line2D([], [], ls="", marker="X", color="black", label="measured pilot runs")
        )
    if "recompute" in rows.columns and (rows["recompute"].astype(str) != "none").any():
        modes = rows["recompute"].astype(str).unique().tolist()
        handles.append(recompute_handle(recompute_label(modes, "recompute" in spec.best_of)))
    ncols_legend = 1 if legend_in_grid else min(per_line, len(handles))
    legend_row(ax["legend"], handles, [h.get_label() for h in handles], ncols=ncols_legend,
               fontsize=6.5)  # fmt: skip
    if title:
        fig.suptitle(title, fontsize=9)
    notes = [note]
    if drawn_pilots:
        ids = sorted({str(v) for v in rows.get("calibration_id", pd.Series(dtype=str))})
        notes.append(
            f"Calibrated on the study's own {drawn_pilots} measured pilot run"
            f"{'s' if drawn_pilots > 1 else ''} (crosses; calibration {', '.join(ids)}), not "
            "the shipped calibration; the lines are the simulator's prediction with it."
        )
    if switched:
        notes.append(
            "Labels in the first panel: what of the winning plan changes at that point; every "
            "point's plan is in points.csv beside this figure."
        )
    return add_source_note(fig, sim_source(rows) + ".", *notes)


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


def _label_switches(axis, x: np.ndarray, y: pd.Series, changes: pd.Series, color) -> bool:
    """Ring and label each point where the winning plan changes (``changes``: the text of
    :func:`~trainscale.study.report.plan_switches`, empty where it does not); True if any."""
    drawn = False
    for xi, yi, text in zip(x, y.to_numpy(dtype=float), changes.to_numpy(), strict=True):
        if not text or not np.isfinite(yi):
            continue
        axis.plot([xi], [yi], marker="o", ms=9, mfc="none", mec=color, mew=0.9, zorder=6)
        axis.annotate(
            text, (xi, yi), xytext=(0, -9), textcoords="offset points", ha="center", va="top",
            fontsize=5.5, color=color, zorder=7,
            bbox={"boxstyle": "round,pad=0.1", "fc": "white", "ec": "none", "alpha": 0.85},
        )  # fmt: skip
        drawn = True
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


def render_scaling(
    stem: str | os.PathLike[str],
    rows: pd.DataFrame,
    spec: ReportSpec,
    *,
    note: str,
    hardware: HardwareCatalog,
    models: Mapping[str, ModelShape],
    fits: pd.DataFrame | None = None,
    title: str = "",
    pilots: pd.DataFrame | None = None,
) -> tuple[Path, ...]:
    """Draw :func:`plot_scaling` and save ``stem.{pdf,png,svg}`` byte-reproducibly."""
    return save_styled(
        lambda: plot_scaling(
            rows,
            spec,
            note=note,
            hardware=hardware,
            models=models,
            fits=fits,
            title=title,
            pilots=pilots,
        ),
        stem,
    )
