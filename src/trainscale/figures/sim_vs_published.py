"""Figure ``sim_vs_published``: the held-out error of tokens/s per GPU against every published run.

Each published throughput row the simulator can represent is predicted by a fit that left its
whole source out (``results/holdout.parquet``;
:func:`trainscale.calibrate.fit.held_out_predictions`)
— the error a user gets on a run the model has never seen. The figure plots that error,
``100 * (predicted - published) / published``, against the GPU count (left) and the published
tokens/s per GPU (right), on a linear axis with ±10 % and ±20 % bands, so errors of 10–40 % are
plain to see (a log–log parity plot over five decades hides them). One colour and marker per
source; the legend gives each source's rows and held-out MAPE; errors above the axis are drawn
at its top edge and counted. The in-sample MAPE (the shipped calibration, fitted on every source,
``results/validation.parquet``) is stated in the note under the figure.
"""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.ticker import FixedLocator, FuncFormatter, NullLocator

from trainscale.figures._common import add_source_note, legend_row
from trainscale.figures._render import styled_render
from trainscale.figures._text import shorten
from trainscale.published.holdout import accuracy, in_sample_throughput
from trainscale.published.summary import summarise
from trainscale.report.select import require

__all__ = ["plot", "plot_errors", "render", "source_styles", "throughput_rows"]

_COLUMNS = ("citation", "num_gpus", "observed_tokens_per_s_per_gpu", "error_pct")
_MARKERS = ("o", "s", "D", "^", "v", "P", "X", "<", ">", "h")
_X = {
    "num_gpus": "GPUs in the job (count)",
    "observed_tokens_per_s_per_gpu": "Published throughput per GPU (tokens/s)",
}
_LABEL_CHARS = 44
_Y_LABEL = "Held-out error of tokens/s per GPU (%):\npredicted / published − 1"
_Y_TICKS = (-80, -60, -40, -20, -10, 0, 10, 20, 40, 60, 80, 100, 150, 200, 300)

#: The in-sample rows of ``results/validation.parquet`` (kept under its former name).
throughput_rows = in_sample_throughput


def source_styles(citations) -> dict[str, tuple[tuple[float, ...], str]]:
    """Colour and marker per source (sorted by name): ``tab10`` up to ten sources, else
    ``tab20``, with the markers cycling, so no two of up to twenty sources look alike."""
    names = sorted({str(c) for c in citations})
    cmap = plt.get_cmap("tab10" if len(names) <= 10 else "tab20")
    return {
        name: (tuple(cmap(i % cmap.N)), _MARKERS[i % len(_MARKERS)]) for i, name in enumerate(names)
    }


def _short(citation: str) -> str:
    return shorten(citation, _LABEL_CHARS)


def _percent(value: float, _pos: object = None) -> str:
    return "0" if value == 0 else f"{value:+.0f} %"


def plot_errors(
    holdout: pd.DataFrame,
    *,
    x: str = "num_gpus",
    ax: Axes | None = None,
    clip_pct: float = 100.0,
) -> Axes:
    """Held-out percent error of each row against ``x``, on ``ax``; returns the Axes.

    Parameters
    ----------
    holdout : pandas.DataFrame
        ``results/holdout.parquet`` (``citation``, ``num_gpus``,
        ``observed_tokens_per_s_per_gpu``, ``error_pct``: % error of the held-out prediction).
    x : {"num_gpus", "observed_tokens_per_s_per_gpu"}
        The x axis (log scale).
    ax : matplotlib.axes.Axes, optional
    clip_pct : float, default 100
        Top of the y axis (%); larger errors are drawn on the top edge (open markers) and
        counted in the panel.

    Each series is labelled ``<citation> (<rows>): <held-out MAPE> %``; sources are offset
    slightly along x (a few percent) so that runs at the same GPU count stay visible.
    """
    require(holdout, _COLUMNS, where="sim_vs_published")
    if x not in _X:
        raise ValueError(f"x must be one of {sorted(_X)}, got {x!r}")
    ax = plt.gca() if ax is None else ax
    rows = holdout.dropna(subset=[x, "error_pct"]).astype({x: float, "error_pct": float})
    low = min(-50.0, 10 * np.floor((rows["error_pct"].min() - 5) / 10)) if len(rows) else -50.0
    low = max(low, -100.0)
    for band, shade in ((20, "0.93"), (10, "0.85")):
        ax.axhspan(-band, band, color=shade, lw=0, zorder=0)
    ax.axhline(0, color="0.3", lw=0.8, zorder=1)
    _draw_sources(ax, rows, x, clip_pct)
    above = rows[rows["error_pct"] > clip_pct]
    if len(above):
        _corner_note(
            ax,
            f"{len(above)} above +{clip_pct:.0f} % (open markers), max "
            f"+{above['error_pct'].max():.0f} %",
            (0.99, 0.97),
            ha="right",
            va="top",
            fontsize=6.5,
        )
    _format_error_axes(ax, rows, x, (low, clip_pct))
    return ax


def _draw_sources(ax: Axes, rows: pd.DataFrame, x: str, clip_pct: float) -> None:
    """One marker series per source, labelled with its rows and held-out MAPE, offset slightly
    along a GPU-count x axis; errors above ``clip_pct`` (%) as open markers on the top edge."""
    styles = source_styles(rows["citation"])
    summary = summarise(rows.assign(ape_pct=rows["error_pct"].abs())).set_index("source")
    count = max(len(styles), 1)
    for i, (citation, (color, marker)) in enumerate(styles.items()):
        mine = rows[rows["citation"] == citation]
        shift = 2.0 ** (0.06 * (i - (count - 1) / 2)) if x == "num_gpus" else 1.0
        error = mine["error_pct"].to_numpy()
        inside = error <= clip_pct
        s = summary.loc[citation]
        ax.scatter(
            mine[x].to_numpy()[inside] * shift,
            error[inside],
            s=16,
            marker=marker,
            color=color,
            edgecolors="white",
            linewidths=0.3,
            alpha=0.85,
            zorder=3,
            label=f"{_short(citation)} ({int(s['rows'])}): {s['mape_pct']:.1f} %",
        )
        if (~inside).any():
            ax.scatter(
                mine[x].to_numpy()[~inside] * shift,
                np.full((~inside).sum(), clip_pct),
                s=22,
                marker=marker,
                facecolors="white",
                edgecolors=color,
                linewidths=0.9,
                zorder=4,
                clip_on=False,
            )


def _corner_note(ax: Axes, text: str, xy: tuple[float, float], **kw: object) -> None:
    """``text`` at ``xy`` in axes fraction (``kw``: alignment and font size)."""
    ax.annotate(text, xy, xycoords="axes fraction", **kw)


def _format_error_axes(ax: Axes, rows: pd.DataFrame, x: str, ylim: tuple[float, float]) -> None:
    """The y axis over ``ylim`` (%) ticked in percent, the x axis log (base 2 GPU counts,
    labelled in full, or base 10 throughputs)."""
    low, high = ylim
    ax.set_ylim(low, high)
    ax.set_xscale("log", base=2 if x == "num_gpus" else 10)
    if x == "num_gpus" and len(rows):
        top = int(np.ceil(np.log2(rows[x].max())))
        ticks = [2.0**k for k in range(0, top + 1, 2 if top <= 10 else 3)]
        ax.xaxis.set_major_locator(FixedLocator(ticks))
        ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _p: f"{v:,.0f}"))
        ax.xaxis.set_minor_locator(NullLocator())
    ticks = [t for t in _Y_TICKS if low <= t <= high]
    ax.yaxis.set_major_locator(FixedLocator(ticks))
    ax.yaxis.set_major_formatter(FuncFormatter(_percent))
    ax.set_xlabel(_X[x])


def plot(holdout: pd.DataFrame, validation: pd.DataFrame) -> Figure:
    """Held-out errors against GPU count and published throughput, one legend, source note.

    Parameters
    ----------
    holdout : pandas.DataFrame
        ``results/holdout.parquet`` (:data:`trainscale.published.holdout.HOLDOUT_COLUMNS`).
    validation : pandas.DataFrame
        ``results/validation.parquet``: the shipped calibration's (in-sample) predictions, for
        the in-sample MAPE in the note.
    """
    require(holdout, _COLUMNS, where="sim_vs_published")
    fig = plt.figure(figsize=(7.0, 5.0), layout="constrained")
    ax = fig.subplot_mosaic(
        [["gpus", "tokens"], ["legend", "legend"]], height_ratios=[1.0, 0.24], sharey=True
    )
    plot_errors(holdout, x="num_gpus", ax=ax["gpus"])
    plot_errors(holdout, x="observed_tokens_per_s_per_gpu", ax=ax["tokens"])
    ax["gpus"].set_ylabel(_Y_LABEL)
    ax["tokens"].tick_params(labelleft=False)
    handles, labels = ax["gpus"].get_legend_handles_labels()
    legend_row(
        ax["legend"],
        handles,
        labels,
        ncols=2,
        loc="upper center",
        fontsize=6.5,
        markerscale=1.2,
        title="Source (rows): held-out MAPE",
        title_fontsize=7,
        columnspacing=1.2,
        handletextpad=0.3,
    )
    fig.suptitle("Held out: each source predicted by a fit without it", fontsize=10)
    held = accuracy(holdout, validation) if len(holdout) else None
    if held is not None:
        total = held.iloc[-1]
        _corner_note(
            ax["gpus"],
            f"All {int(total['rows'])} rows: MAPE {total['held_out_mape_pct']:.1f} %, "
            f"median {total['held_out_median_ape_pct']:.1f} %",
            (0.02, 0.03),
            ha="left",
            va="bottom",
            fontsize=7,
        )
    in_sample = in_sample_throughput(validation)
    ids = ", ".join(sorted(holdout.get("calibration_id", pd.Series(dtype=str)).dropna().unique()))
    versions = holdout.get("simulator_version", pd.Series(dtype=str)).dropna().unique()
    fitted = (
        f"In sample: the shipped calibration{f' {ids}' if ids else ''}, fitted on every source, "
        f"MAPE {in_sample['ape_pct'].mean():.1f} % over {len(in_sample)} rows."
        if len(in_sample)
        else "In sample: no rows."
    )
    sources = holdout["citation"].nunique()
    return add_source_note(
        fig,
        f"Simulated: trainscale {', '.join(sorted(versions)) or 'unknown'}; held out: one refit "
        "per source on all the other sources, then that source predicted. " + fitted,
        "Grey bands: ±10 % and ±20 %. Left: sources offset slightly along x. "
        + (
            f"Published: {sources} sources named in the legend (data/published/measurements.csv)."
            if sources
            else "Published: no rows."
        ),
    )


#: Draw :func:`plot` and save ``stem.{pdf,png,svg}``.
render = styled_render(plot)
