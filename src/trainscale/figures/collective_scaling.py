"""Figure ``collective_scaling``: time of FSDP's per-layer collectives against GPU count.

FSDP gathers one transformer block's parameters (AllGather) before using them and scatters its
gradients (ReduceScatter) after; DDP would AllReduce the same bytes. For Llama-2 7B and 70B in
bf16 the block is ~405 MB and ~1.7 GB. The times are the collective cost model's (calibrated), as
``results/collectives.parquet`` holds them for each model's per-layer message
(:func:`trainscale.sim.collective_curves.collective_curves`), for H100 in DGX H100 nodes by
default. Two thin reference lines split AllGather into its bandwidth term (the same collective
with zero latency) and the rest, its latency term (NCCL's per-step latencies of the protocol
chosen): the
ring's bandwidth term flattens as GPUs are added while its
latency term grows with the ring length, so beyond the crossing the collective is latency-bound.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from trainscale.errors import TrainscaleError
from trainscale.figures._axes import doubling_axis
from trainscale.figures._common import add_source_note, legend_row, sim_source, subplot_mosaic
from trainscale.figures._render import styled_render
from trainscale.names import gpu_label, model_label
from trainscale.report.select import require

if TYPE_CHECKING:
    from trainscale.sim.model.shape import ModelShape
    from trainscale.sim.system.hardware import HardwareCatalog

__all__ = ["GPU_COUNTS", "collective_times", "plot", "render"]

#: GPU counts drawn (8 to 4,096).
GPU_COUNTS: tuple[int, ...] = tuple(2**k for k in range(3, 13))

#: Collective → (legend label, line style).
_SERIES = {
    "allgather": ("AllGather", "-"),
    "reducescatter": ("ReduceScatter", (0, (4, 2))),
    "allreduce": ("AllReduce", "-"),
}


def collective_times(
    curves: pd.DataFrame,
    models: Sequence[str] = ("llama2-7b", "llama2-70b"),
    *,
    gpu: str = "h100-sxm-80gb",
    gpu_counts: Sequence[int] = GPU_COUNTS,
) -> pd.DataFrame:
    """Per-layer collective times, from ``curves`` (``results/collectives.parquet``).

    Returns
    -------
    pandas.DataFrame
        Columns ``model``, ``size_bytes``, ``num_gpus``, ``series`` (``allgather``,
        ``reducescatter``, ``allreduce``, ``allgather_bandwidth_term`` (AllGather with zero
        latency), ``allgather_latency_term`` (AllGather minus its bandwidth term)) and
        ``time_s``; per model, the series in that order, each by GPU count.
    """
    require(
        curves,
        ["gpu", "collective", "model", "term", "num_gpus", "size_bytes", "time_s"],
        where="collective_scaling",
    )
    mine = curves[(curves["gpu"] == gpu) & curves["num_gpus"].isin(list(gpu_counts))]
    rows = []
    for model in models:
        layer = mine[mine["model"] == model]
        if layer.empty:
            raise TrainscaleError(
                f"collective_scaling: no per-layer rows of model {model!r} on GPU {gpu!r}"
            )

        def times(collective: str, term: str, layer=layer) -> pd.Series:
            rows = layer[(layer["collective"] == collective) & (layer["term"] == term)]
            return rows.set_index("num_gpus")["time_s"].sort_index()

        series = {key: times(key, "total") for key in _SERIES}
        bandwidth = times("allgather", "bandwidth")
        series["allgather_latency_term"] = series["allgather"] - bandwidth
        series["allgather_bandwidth_term"] = bandwidth
        for key, values in series.items():
            rows.append(
                pd.DataFrame(
                    {
                        "model": model,
                        "size_bytes": float(layer["size_bytes"].iloc[0]),
                        "num_gpus": values.index.astype(int),
                        "series": key,
                        "time_s": values.to_numpy(),
                    }
                )
            )
    return pd.concat(rows, ignore_index=True)


def _drawn_series(times: pd.DataFrame) -> list[tuple[str, str, object]]:
    """(series, legend label, line style) of the collectives drawn. In the ring model AllGather
    and ReduceScatter of the same bytes take the same time; where they do, one line stands for
    both (two coinciding lines cannot be told apart)."""
    gather = times[times["series"] == "allgather"]["time_s"].to_numpy()
    scatter = times[times["series"] == "reducescatter"]["time_s"].to_numpy()
    if np.allclose(gather, scatter, rtol=1e-9, atol=0.0):
        return [
            ("allgather", "AllGather = ReduceScatter (equal in the model)", "-"),
            ("allreduce", "AllReduce", "-"),
        ]
    return [(key, label, style) for key, (label, style) in _SERIES.items()]


def _crossing(rows: pd.DataFrame) -> float | None:
    """First GPU count at which AllGather's latency term exceeds its bandwidth term."""
    lat = rows[rows["series"] == "allgather_latency_term"].set_index("num_gpus")["time_s"]
    bw = rows[rows["series"] == "allgather_bandwidth_term"].set_index("num_gpus")["time_s"]
    above = lat.index[(lat >= bw).to_numpy()]
    return float(above.min()) if len(above) else None


def plot(
    curves: pd.DataFrame,
    shown: Sequence[str] = ("llama2-7b", "llama2-70b"),
    *,
    hardware: HardwareCatalog,
    models: Mapping[str, ModelShape],
    gpu: str = "h100-sxm-80gb",
) -> Figure:
    """One panel per model of ``shown``: per-layer collective time (ms) against GPU count (log2),
    from ``curves`` (``results/collectives.parquet``); the GPU's and models' names from
    ``hardware`` and ``models`` (``data/hardware.yaml``, ``data/models.yaml``)."""
    times = collective_times(curves, shown, gpu=gpu)
    keys = [f"panel{i}" for i in range(len(shown))]
    fig, mosaic = subplot_mosaic(
        7.0, 3.6, [keys, ["legend"] * len(keys)], height_ratios=[5.0, 0.55]
    )
    for key, model in zip(keys, shown, strict=True):
        ax = mosaic[key]
        rows = times[times["model"] == model]
        for i, (key, label, style) in enumerate(_drawn_series(times)):
            r = rows[rows["series"] == key]
            ax.plot(
                r["num_gpus"],
                r["time_s"] * 1e3,
                ls=style,
                marker="o",
                color=f"C{i}",
                label=label,
                zorder=3,
            )
        for key, label, style in (
            ("allgather_latency_term", "AllGather latency term", ":"),
            ("allgather_bandwidth_term", "AllGather bandwidth term (0 latency)", "--"),
        ):
            r = rows[rows["series"] == key]
            ax.plot(r["num_gpus"], r["time_s"] * 1e3, ls=style, color="0.45", lw=1.0, label=label)
        cross = _crossing(rows)
        if cross is not None:
            ax.axvline(cross, color="0.6", lw=0.8, zorder=1)
            ax.annotate(
                f"latency-bound\nfrom {cross:.0f} GPUs",
                (cross, 0.03),
                xycoords=("data", "axes fraction"),
                xytext=(-4, 0),
                textcoords="offset points",
                ha="right",
                va="bottom",
                fontsize=7,
                color="0.3",
            )
        size_mb = rows["size_bytes"].iloc[0] / 1e6
        ax.set_title(f"{model_label(model, models)}: {size_mb:,.0f} MB per layer (bf16)")
        ax.set_yscale("log")
        doubling_axis(ax, rows["num_gpus"].unique(), rotation=45)
        ax.set_ylabel("Time per layer (ms)")
    legend_row(mosaic["legend"], *mosaic[keys[0]].get_legend_handles_labels(), ncols=3)
    return add_source_note(
        fig,
        sim_source(curves[curves["gpu"] == gpu])
        + f" (collective cost model; {gpu_label(gpu, hardware)} in its default system, "
        "8 GPUs per node)",
    )


#: Draw :func:`plot` and save ``stem.{pdf,png,svg}``; ``hardware`` and ``models`` are the catalogues
#: the GPU's and models' names come from.
render = styled_render(plot)
