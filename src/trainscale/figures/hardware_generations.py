"""Figure ``hardware_generations``: the same workload on V100, A100, H100, H200 and B200.

Three panels against GPU count for Llama-2 7B with FSDP at the paper setup, each GPU in its
default system: MFU, tokens/s per GPU and the fraction of the step spent in exposed
communication. Newer GPUs compute faster while the network per GPU grows more slowly, so more
of their step is exposed communication and their MFU falls earlier (the paper: 59.67 % on A100
against 40.77 % on H100).

The throughput panel draws each GPU's 80 % prediction interval as a band (the simulated rows'
``tokens_per_s_per_gpu_lo``/``_hi``; wider for a GPU without published throughput rows).

Input: the ``hardware_generations`` study (``results/sim/hardware_generations.parquet``); each
point is the faster of no and full recomputation among those that fit in memory (recomputed
points open).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

import pandas as pd
from matplotlib.figure import Figure
from matplotlib.lines import Line2D

from trainscale.figures._axes import doubling_axis, series_keys
from trainscale.figures._common import (
    add_source_note,
    gpu_colors,
    legend_row,
    plot_band,
    plot_series,
    readable_log,
    sim_source,
    subplot_mosaic,
)
from trainscale.figures._marks import mark_micro_batch_switch
from trainscale.figures._render import styled_render
from trainscale.figures._text import seq_and_batch
from trainscale.names import gpu_label, model_label
from trainscale.report.select import fastest_recompute, gpu_order, paper_micro_batch, require

if TYPE_CHECKING:
    from trainscale.sim.model.shape import ModelShape
    from trainscale.sim.system.hardware import HardwareCatalog

__all__ = ["plot", "render"]

_COLUMNS = (
    "gpu",
    "model",
    "num_gpus",
    "recompute",
    "fits_memory",
    "mfu",
    "tokens_per_s_per_gpu",
    "exposed_comm_frac",
)
_PANELS = (
    ("mfu", "MFU (%)", 100.0, "linear"),
    ("tokens_per_s_per_gpu", "Throughput per GPU (tokens/s)", 1.0, "log"),
    ("exposed_comm_frac", "Exposed comm. (% of step)", 100.0, "linear"),
)


def plot(
    sim: pd.DataFrame, *, hardware: HardwareCatalog, models: Mapping[str, ModelShape]
) -> Figure:
    """Three panels (MFU, tokens/s per GPU, exposed-communication share) against GPU count."""
    require(sim, _COLUMNS, where="hardware_generations")
    data = fastest_recompute(paper_micro_batch(sim), ["gpu", "model"])
    colors = gpu_colors(hardware)
    keys = [key for key, *_ in _PANELS]
    fig, ax = subplot_mosaic(7.2, 3.5, [keys, ["legend"] * 3], height_ratios=[1.0, 0.1])
    counts = sorted(data["num_gpus"].unique()) or [1]
    handles = []
    banded = False
    for gpu in gpu_order(data["gpu"].unique(), hardware):
        rows = data[data["gpu"] == gpu].sort_values("num_gpus")
        banded |= plot_band(ax["tokens_per_s_per_gpu"], rows["num_gpus"], rows,
                            "tokens_per_s_per_gpu", colors[gpu])  # fmt: skip
        for key, _, scale, _ in _PANELS:
            plot_series(ax[key], rows["num_gpus"], rows[key] * scale, rows, colors[gpu], ms=4)
        handles.append(
            Line2D([], [], color=colors[gpu], marker="o", ms=4, label=gpu_label(gpu, hardware))
        )
    handles += series_keys(data, banded=banded)
    for key, label, _, scale in _PANELS:
        ax[key].set_yscale(scale)
        ax[key].set_ylabel(label)
        doubling_axis(ax[key], counts)
    readable_log(ax["tokens_per_s_per_gpu"])
    ax["mfu"].set_ylim(bottom=0)
    ax["exposed_comm_frac"].set_ylim(bottom=0)
    switch = mark_micro_batch_switch(
        ax, data, keys, named="exposed_comm_frac", height=0.6, gap_points=9
    )
    legend_row(
        ax["legend"], handles, [h.get_label() for h in handles], ncols=min(len(handles), 4) or 1
    )
    names = ", ".join(model_label(m, models) for m in sorted(data["model"].unique()))
    return add_source_note(
        fig,
        sim_source(sim) + f" — {names}, FSDP, {seq_and_batch(sim)}, micro-batch 2 "
        "per GPU (1 where the local batch is 1); each GPU in its default system (DGX-1 V100 "
        "at 50 Gb/s per GPU, DGX A100 at 200, DGX H100/H200/B200 at 400).",
        *_switch_note(switch),
    )


def _switch_note(switch: int | None) -> list[str]:
    """What the dotted line means: the drop after it is the batch's, not the hardware's."""
    if switch is None:
        return []
    return [
        f"Dotted line: from {switch:,} GPUs the global batch leaves one sequence per GPU "
        "(micro-batch 1), so each step has half the compute to hide the same gradient "
        "communication behind; the drop there, and the newer GPUs' lines meeting, come from "
        "this batch (the paper setup's), not from the GPUs."
    ]


#: Draw :func:`plot` and save ``stem.{pdf,png,svg}``; ``hardware`` is the GPU catalogue
#: (``data/hardware.yaml``: each GPU's colour, name and the generation order) and ``models`` the
#: model catalogue (``data/models.yaml``: the models' names).
render = styled_render(plot)
