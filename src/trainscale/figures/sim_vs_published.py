"""Figure ``sim_vs_published``: predicted against published tokens/s per GPU (parity plot).

Every published throughput row the simulator can represent (the ``throughput`` table of
:func:`trainscale.validation.validate_published`, written by the workflow to
``results/validation.parquet``) is a point: published value on x, the calibrated simulator's
prediction for the same configuration on y, log-log, one colour per source. The legend gives each
source's row count and mean absolute percentage error (MAPE), whatever it is; the grey lines are
parity and ±20 %.
"""

from __future__ import annotations

import os
import textwrap
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import seaborn as sns
from matplotlib.axes import Axes
from matplotlib.figure import Figure

from trainscale.figures._common import (
    add_source_note,
    legend_row,
    log10_decade_limits,
    require,
    save_styled,
    sim_source,
    subplot_mosaic,
)
from trainscale.validation import summarise

__all__ = ["plot", "plot_parity", "render", "throughput_rows"]

_COLUMNS = ("citation", "observed_tokens_per_s_per_gpu", "predicted_tokens_per_s_per_gpu")
_MARKERS = ("o", "s", "D", "^", "v", "P", "X", "<", ">", "h")


def throughput_rows(validation: pd.DataFrame) -> pd.DataFrame:
    """The predicted throughput rows of ``validation`` with ``observed_tokens_per_s_per_gpu``
    and ``predicted_tokens_per_s_per_gpu``.

    Accepts ``results/validation.parquet`` (``status``, ``kind``, ``observed``, ``predicted``;
    :data:`trainscale.dataset.VALIDATION_COLUMNS`) or the ``throughput`` table of
    :func:`trainscale.validation.validate_published`.
    """
    if "observed_tokens_per_s_per_gpu" in validation.columns:
        return validation
    require(
        validation,
        ["citation", "kind", "status", "observed", "predicted"],
        where="sim_vs_published",
    )
    rows = validation[(validation["kind"] == "throughput") & (validation["status"] == "predicted")]
    return rows.rename(
        columns={
            "observed": "observed_tokens_per_s_per_gpu",
            "predicted": "predicted_tokens_per_s_per_gpu",
        }
    )


def _with_errors(validation: pd.DataFrame) -> pd.DataFrame:
    rows = validation.dropna(subset=list(_COLUMNS[1:])).copy()
    observed = rows["observed_tokens_per_s_per_gpu"]
    rows["ape_pct"] = (100 * (rows["predicted_tokens_per_s_per_gpu"] - observed) / observed).abs()
    return rows


def plot_parity(
    validation: pd.DataFrame, *, ax: Axes | None = None, band_pct: float = 20.0
) -> Axes:
    """Parity plot on ``ax`` (default the current Axes); returns the Axes.

    Parameters
    ----------
    validation : pandas.DataFrame
        One row per published row with ``citation``, ``observed_tokens_per_s_per_gpu`` and
        ``predicted_tokens_per_s_per_gpu`` (tokens/s per GPU), or ``results/validation.parquet``
        (:func:`throughput_rows`). Rows missing either value are left out.
    ax : matplotlib.axes.Axes, optional
    band_pct : float, default 20
        Half-width of the dashed band around parity, percent.
    """
    validation = throughput_rows(validation)
    require(validation, _COLUMNS, where="sim_vs_published")
    ax = plt.gca() if ax is None else ax
    rows = _with_errors(validation)
    summary = summarise(rows).set_index("source") if len(rows) else pd.DataFrame()
    citations = sorted(rows["citation"].unique())
    palette = sns.color_palette("colorblind", max(len(citations), 1))
    for i, citation in enumerate(citations):
        mine = rows[rows["citation"] == citation]
        s = summary.loc[citation]
        ax.scatter(
            mine["observed_tokens_per_s_per_gpu"],
            mine["predicted_tokens_per_s_per_gpu"],
            s=14,
            marker=_MARKERS[i % len(_MARKERS)],
            color=palette[i % len(palette)],
            edgecolors="white",
            linewidths=0.3,
            alpha=0.85,
            zorder=3,
            label=f"{citation}\nn = {int(s['rows'])}, MAPE {s['mape_pct']:.1f} %",
        )
    values = np.concatenate([rows[c].to_numpy(float) for c in _COLUMNS[1:]]) if len(rows) else []
    low, high = log10_decade_limits(np.asarray(values))
    line = np.array([low, high])
    ax.plot(line, line, color="0.3", lw=0.9, zorder=2)
    for factor in (1 + band_pct / 100, 1 - band_pct / 100):
        ax.plot(line, line * factor, color="0.6", lw=0.8, ls="--", zorder=2)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlim(low, high)
    ax.set_ylim(low, high)
    ax.set_aspect("equal")
    ax.set_xlabel("Published throughput per GPU (tokens/s)")
    ax.set_ylabel("Simulated throughput per GPU (tokens/s)")
    if len(rows):
        total = summary.loc["all"]
        ax.annotate(
            f"All {int(total['rows'])} rows:\nMAPE {total['mape_pct']:.1f} %,\n"
            f"median APE {total['median_ape_pct']:.1f} %",
            (0.03, 0.97),
            xycoords="axes fraction",
            ha="left",
            va="top",
            fontsize=8,
        )
    return ax


def plot(validation: pd.DataFrame) -> Figure:
    """The parity plot with its legend (one entry per source) and source note."""
    validation = throughput_rows(validation)
    fig, ax = subplot_mosaic(7.0, 4.2, [["parity", "legend"]], width_ratios=[1.0, 0.9])
    plot_parity(validation, ax=ax["parity"])
    handles, labels = ax["parity"].get_legend_handles_labels()
    labels = [
        "\n".join(textwrap.fill(part, 50, subsequent_indent="  ") for part in label.split("\n"))
        for label in labels
    ]
    legend_row(
        ax["legend"],
        handles,
        labels,
        ncols=1,
        loc="center left",
        fontsize=6.5,
        markerscale=1.4,
        title="Source: rows, MAPE of tokens/s per GPU",
    )
    sources = validation["citation"].nunique() if len(validation) else 0
    return add_source_note(
        fig,
        sim_source(validation) + "; grey lines: parity and ±20 %.",
        f"Published: {sources} sources named in the legend (data/published/measurements.csv)."
        if sources
        else "Published: no rows",
    )


def render(stem: str | os.PathLike[str], validation: pd.DataFrame) -> tuple[Path, ...]:
    """Draw :func:`plot` and save ``stem.{pdf,png,svg}``."""
    return save_styled(lambda: plot(validation), stem)
