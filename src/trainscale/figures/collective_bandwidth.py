"""Figure ``collective_bandwidth``: NCCL bus bandwidth against message size, per node count.

Curves are the collective cost model's, as ``results/collectives.parquet`` holds them
(:func:`trainscale.sim.collective_curves.collective_curves`), for one GPU in its default system
(DGX H100 by default), with the calibrated link efficiencies and latencies: AllReduce, AllGather
and ReduceScatter, one line per node count. Published nccl-tests measurements (the normalised
published CSV) are overlaid on the panel of their collective, each with the model's prediction
for its own system (GPU, GPUs per node, NIC; ``results/validation.parquet``) as an open marker
(:func:`published_points`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.ticker import FixedLocator, FuncFormatter, NullLocator

from trainscale.errors import TrainscaleError
from trainscale.figures._common import add_source_note, published_source, sim_source, subplot_mosaic
from trainscale.figures._render import styled_render
from trainscale.figures._text import shorten
from trainscale.names import gpu_label
from trainscale.report.select import require

if TYPE_CHECKING:
    from trainscale.published.measurements import PublishedData
    from trainscale.sim.system.hardware import HardwareCatalog

__all__ = [
    "COLLECTIVES", "NODE_COUNTS", "bandwidth_curves", "node_colors", "plot", "published_points",
    "render",
]  # fmt: skip

#: Node counts drawn: one line per factor of four from 2 nodes (published nccl-tests runs span 1 to
#: 1,024 nodes), few enough that each line gets a colour of its own.
NODE_COUNTS: tuple[int, ...] = (1, 2, 8, 32, 128, 512)

#: Sequential colour map of the node counts (dark: few nodes, light: many).
NODE_COLORMAP = "viridis"
#: Node count at the light end of :data:`NODE_COLORMAP`.
MAX_NODES_COLOURED = 1024

#: Collective → panel title.
COLLECTIVES = {"allreduce": "AllReduce", "allgather": "AllGather", "reducescatter": "ReduceScatter"}

_MARKERS = ("o", "s", "D", "^", "v", "P", "X", "<", ">")


def bandwidth_curves(
    curves: pd.DataFrame, gpu: str = "h100-sxm-80gb", *, node_counts: Sequence[int] = NODE_COUNTS
) -> pd.DataFrame:
    """The rows of ``curves`` (``results/collectives.parquet``) drawn: ``gpu``'s total times on
    the message-size sweep at ``node_counts``, for the collectives of :data:`COLLECTIVES`."""
    require(
        curves,
        ["gpu", "collective", "model", "term", "num_nodes", "size_bytes", "busbw_gbytes_per_s"],
        where="collective_bandwidth",
    )
    keep = (
        (curves["gpu"] == gpu)
        & (curves["model"] == "")
        & (curves["term"] == "total")
        & curves["num_nodes"].isin(list(node_counts))
        & curves["collective"].isin(list(COLLECTIVES))
    )
    return curves[keep].reset_index(drop=True)


def published_points(validation: pd.DataFrame, published: PublishedData) -> pd.DataFrame:
    """The published nccl-tests rows (``published.collectives``), each with its prediction
    (``predicted_busbw_gbytes_per_s``) from ``results/validation.parquet``, matched by CSV row."""
    rows = published.collectives.copy()
    if rows.empty:
        return rows
    predicted = validation[
        (validation["status"] == "predicted") & (validation["kind"] == "collective")
    ].set_index("csv_row")["predicted"]
    rows["predicted_busbw_gbytes_per_s"] = rows["csv_row"].map(predicted).astype(float)
    return rows


def _size_label(value: float, _pos: int | None = None) -> str:
    for unit, scale in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if value >= scale:
            return f"{value / scale:g} {unit}"
    return f"{value:g} B"


def _size_axis(ax, limits: tuple[float, float] = (2.0**10, 2.0**34)) -> None:
    ax.set_xscale("log", base=2)
    ax.xaxis.set_major_locator(FixedLocator(2.0 ** np.arange(10, 35, 4)))
    ax.xaxis.set_major_formatter(FuncFormatter(_size_label))
    ax.xaxis.set_minor_locator(NullLocator())
    ax.set_xlim(*limits)


def _view_limits(points: pd.DataFrame) -> tuple[tuple[float, float], tuple[float, float]]:
    """(x, y) limits: message sizes from four octaves below the smallest published message to
    16 GiB, bus bandwidth from the decade below the lowest published or predicted point to
    2,000 GB/s, so the measurements are not squeezed into one corner of a 7-decade axis; the
    whole modelled range (1 KiB, 10⁻³ GB/s) without published points."""
    if points.empty:
        return (2.0**10, 2.0**34), (1e-3, 2e3)
    low_size = float(points["size_bytes"].min())
    values = [points["observed_busbw_gbytes_per_s"]]
    if "predicted_busbw_gbytes_per_s" in points.columns:
        values.append(points["predicted_busbw_gbytes_per_s"])
    observed = pd.concat(values).to_numpy(dtype=float)
    low_bw = float(np.nanmin(observed[observed > 0]))
    x = (max(2.0**10, 2.0 ** (np.floor(np.log2(low_size)) - 4)), 2.0**34)
    y = (min(1e0, 10.0 ** np.floor(np.log10(low_bw / 1.5))), 2e3)
    return x, y


def node_colors(counts) -> dict[int, tuple[float, float, float, float]]:
    """Colour of each node count: one sequential scale over log2(nodes) from 1 to
    :data:`MAX_NODES_COLOURED` nodes (more are drawn as the largest), shared by the model's
    curves and the published points, so a point reads against the curve of its own node count
    and points at node counts without a curve (4, 16, 64 nodes) fall between its neighbours."""
    from matplotlib import colormaps

    scale = colormaps[NODE_COLORMAP]
    top = np.log2(MAX_NODES_COLOURED)
    return {int(n): tuple(scale(0.9 * min(np.log2(max(float(n), 1.0)), top) / top)) for n in counts}


def _point_colors(rows: pd.DataFrame) -> list:
    """Each published point's colour: its node count's (:func:`node_colors`); black where the
    row does not give its GPUs per node."""
    if not {"num_gpus", "gpus_per_node"} <= set(rows.columns):
        return ["black"] * len(rows)
    nodes = pd.to_numeric(rows["num_gpus"]) / pd.to_numeric(rows["gpus_per_node"])
    colours = node_colors(n for n in nodes.round().dropna().unique())
    return [colours[round(n)] if np.isfinite(n) else "black" for n in nodes]


def _draw_published(ax, mine: pd.DataFrame, markers: dict[str, str]) -> None:
    """One collective's published points on ``ax``: each filled in its node count's colour,
    and where it has a prediction, an open vermilion marker joined to it by a line."""
    for citation, rows in mine.groupby("citation") if not mine.empty else []:
        marker = markers[citation]
        if "predicted_busbw_gbytes_per_s" in rows.columns:
            for _, r in rows.iterrows():
                ax.plot(
                    [r["size_bytes"]] * 2,
                    [r["observed_busbw_gbytes_per_s"], r["predicted_busbw_gbytes_per_s"]],
                    color="C3",
                    lw=0.7,
                    zorder=3,
                )
            ax.scatter(
                rows["size_bytes"],
                rows["predicted_busbw_gbytes_per_s"],
                marker=marker,
                facecolor="white",
                edgecolor="C3",
                s=24,
                lw=1.0,
                zorder=4,
            )
        ax.scatter(
            rows["size_bytes"],
            rows["observed_busbw_gbytes_per_s"],
            marker=marker,
            c=_point_colors(rows),
            edgecolors="black",
            linewidths=0.4,
            s=20,
            zorder=5,
        )


def _draw_panels(axes, drawn: pd.DataFrame, points: pd.DataFrame, markers: dict[str, str]) -> None:
    """The model's curves (one per node count) and the published points on the panel of each
    collective of :data:`COLLECTIVES`, with the panels' scales and labels."""
    colors = node_colors(NODE_COUNTS)
    xlim, ylim = _view_limits(points)
    for ax, (key, title) in zip(axes, COLLECTIVES.items(), strict=True):
        for nodes, rows in drawn[drawn["collective"] == key].groupby("num_nodes"):
            ax.plot(rows["size_bytes"], rows["busbw_gbytes_per_s"], color=colors[nodes], lw=1.1)
        mine = points[points["collective"] == key]
        _draw_published(ax, mine, markers)
        ax.set_title(title)
        _size_axis(ax, xlim)
        ax.set_yscale("log")
        ax.set_ylim(*ylim)
        if mine.empty and not points.empty:
            ax.text(
                0.04, 0.96, "no published\nnccl-tests rows", transform=ax.transAxes,
                ha="left", va="top", fontsize=7, color="0.4",
            )  # fmt: skip
        ax.set_xlabel("Message size (bytes)")
        ax.tick_params(axis="x", labelrotation=35)
    axes[0].set_ylabel("Bus bandwidth (GB/s)")


def _legends(
    legend_ax, gpu: str, per_node: int, markers: dict[str, str], hardware: HardwareCatalog
) -> None:
    """The node counts' legend (left) and, with published points, their citations' (right);
    the GPU's name from ``hardware``."""
    colors = node_colors(NODE_COUNTS)
    legend_ax.set_axis_off()
    handles = [
        Line2D(
            [], [], color=colors[n], label=f"{n} node{'s' if n > 1 else ''} ({n * per_node} GPUs)"
        )
        for n in NODE_COUNTS
    ]
    first = legend_ax.legend(
        handles=handles,
        ncols=2,
        loc="upper left",
        fontsize=6.5,
        borderaxespad=0,
        title=f"Collective model: {gpu_label(gpu, hardware)}, default system,\n"
        "fabric congestion included, by node count",
    )
    if not markers:
        return
    point_handles = [
        Line2D([], [], ls="", marker=m, color="0.5", mec="black", label=shorten(c, 60))
        for c, m in markers.items()
    ]
    point_handles.append(
        Line2D(
            [],
            [],
            ls="",
            marker="o",
            mfc="white",
            mec="C3",
            label="open: model for that point's own system (GPU, nodes, NIC)",
        )
    )
    legend_ax.add_artist(first)
    legend_ax.legend(
        handles=point_handles,
        ncols=1,
        loc="upper right",
        fontsize=6.5,
        borderaxespad=0,
        title="Published nccl-tests (filled, coloured by node count)",
    )


def plot(
    curves: pd.DataFrame,
    validation: pd.DataFrame | None = None,
    published: PublishedData | None = None,
    *,
    hardware: HardwareCatalog,
    gpu: str = "h100-sxm-80gb",
) -> Figure:
    """Three panels (AllReduce, AllGather, ReduceScatter): bus bandwidth (GB/s) against message
    size, one line per node count, published points overlaid.

    Parameters
    ----------
    curves : pandas.DataFrame
        ``results/collectives.parquet`` (:data:`trainscale.schema.COLLECTIVE_CURVE_COLUMNS`).
    validation, published : optional
        ``results/validation.parquet`` and the normalised published CSV: the published nccl-tests
        rows and their predictions (:func:`published_points`). Rows of other collectives
        (sendrecv) are not drawn. Either ``None``: curves only.
    hardware : HardwareCatalog
        The GPU catalogue (``data/hardware.yaml``): the GPU's name.
    gpu : str, default "h100-sxm-80gb"
        GPU (in its default system) of the curves.
    """
    collectives = (
        published_points(validation, published)
        if validation is not None and published is not None
        else None
    )
    drawn = bandwidth_curves(curves, gpu)
    if drawn.empty:
        raise TrainscaleError(f"collective_bandwidth: no curves of GPU {gpu!r} in the table")
    per_node = int(drawn["gpus_per_node"].iloc[0])
    points = collectives if collectives is not None else pd.DataFrame(columns=["collective"])
    others = sorted(set(points["collective"]) - set(COLLECTIVES))
    points = points[points["collective"].isin(list(COLLECTIVES))]
    fig, mosaic = subplot_mosaic(
        7.2,
        5.1,
        [["allreduce", "allgather", "reducescatter"], ["legend"] * 3],
        height_ratios=[3.0, 1.3],
    )
    axes = [mosaic[key] for key in COLLECTIVES]
    for ax in axes[1:]:
        ax.sharey(axes[0])
        ax.tick_params(labelleft=False)
    citations = sorted(points["citation"].unique()) if not points.empty else []
    markers = {c: _MARKERS[i % len(_MARKERS)] for i, c in enumerate(citations)}
    _draw_panels(axes, drawn, points, markers)
    _legends(mosaic["legend"], gpu, per_node, markers, hardware)
    notes = [
        sim_source(drawn) + " (collective cost model)",
        published_source(citations)
        if citations
        else "Published: no nccl-tests rows for these collectives",
    ]
    if others:
        notes.append(f"Not shown: published {', '.join(others)} rows (other collective).")
    return add_source_note(fig, *notes)


#: Draw :func:`plot` and save ``stem.{pdf,png,svg}``; ``hardware`` is the GPU catalogue
#: (``data/hardware.yaml``: the GPU's name).
render = styled_render(plot)
