"""Figure ``compute_per_gpu``: FLOPs per GPU per step against data- and model-parallel degree.

At a fixed global batch every GPU added divides the same work further: model FLOPs per GPU per
step fall as ``1 / (dp · tp · pp)``, whatever the plan. For Llama-2 7B and 70B on H100 the lines
give, for each model-parallel degree ``tp·pp``, the model FLOPs one GPU executes per optimizer
step against the data-parallel degree ``dp``; the right axis converts them to seconds at the
H100's dense bf16 peak, the floor under the step time that a fixed per-step communication cost
is compared with.

Input: the ``compute_per_gpu`` study (``results/sim/compute_per_gpu.parquet``). FLOPs per GPU
per step are ``mfu × peak FLOP/s × step_time_s`` (the simulator's MFU convention, model FLOPs
only: no recomputation).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd
from matplotlib.figure import Figure
from matplotlib.lines import Line2D

from trainscale.figures._axes import doubling_axis
from trainscale.figures._common import add_source_note, legend_row, sim_source, subplot_mosaic
from trainscale.figures._render import styled_render
from trainscale.figures._text import seq_and_batch
from trainscale.names import gpu_label, model_label
from trainscale.report.palette import colormap_palette
from trainscale.report.select import model_order, require

if TYPE_CHECKING:
    from trainscale.sim.model.shape import ModelShape
    from trainscale.sim.system.hardware import HardwareCatalog

__all__ = ["flops_per_gpu_step", "plot", "render"]

_COLUMNS = ("model", "gpu", "num_gpus", "tp", "pp", "dp", "mfu", "step_time_s", "precision")


def flops_per_gpu_step(sim: pd.DataFrame, hardware: HardwareCatalog) -> pd.Series:
    """Model FLOPs one GPU executes per optimizer step: ``mfu × peak × step_time_s``, with each
    GPU's peak (fp8 where the row runs in fp8 and the GPU has one, else bf16) from ``hardware``
    (the GPU catalogue)."""
    gpus = hardware.gpus
    peak = [
        gpus[g].fp8_flops_per_s
        if p == "fp8" and gpus[g].fp8_flops_per_s
        else gpus[g].bf16_flops_per_s
        for g, p in zip(sim["gpu"], sim["precision"], strict=True)
    ]
    return sim["mfu"] * np.asarray(peak, dtype=float) * sim["step_time_s"]


def plot(
    sim: pd.DataFrame, *, hardware: HardwareCatalog, models: Mapping[str, ModelShape]
) -> Figure:
    """One panel per model: PFLOP per GPU per step against dp, one line per tp·pp."""
    require(sim, _COLUMNS, where="compute_per_gpu")
    data = sim.assign(mp=sim["tp"] * sim["pp"], flops=flops_per_gpu_step(sim, hardware))
    data = data.sort_values(["model", "mp", "dp", "pp"]).drop_duplicates(["model", "mp", "dp"])
    order = model_order(data["model"].unique(), models)
    degrees = sorted(data["mp"].unique())
    colors = dict(zip(degrees, colormap_palette("viridis", len(degrees) + 1), strict=False))
    keys = order or ["empty"]
    fig, ax = subplot_mosaic(7.0, 3.7, [keys, ["legend"] * len(keys)], height_ratios=[1, 0.1])
    gpus = sorted(data["gpu"].unique())
    peak = hardware.gpus[gpus[0]].bf16_flops_per_s if len(gpus) == 1 else None
    for model in order:
        a = ax[model]
        rows = data[data["model"] == model]
        for mp in degrees:
            r = rows[rows["mp"] == mp].sort_values("dp")
            a.plot(r["dp"], r["flops"] / 1e15, marker="o", ms=3.5, color=colors[mp])
        a.set_yscale("log")
        doubling_axis(a, sorted(rows["dp"].unique()) or [1], "Data-parallel degree dp (replicas)")
        # one label per axis side, on the outer panels: a twin axis's label beside the next
        # panel's own label read as one label repeated
        if model == order[0]:
            a.set_ylabel("FLOPs per GPU per step (PFLOP)")
        a.set_title(model_label(model, models))
        if peak:
            right = a.secondary_yaxis(
                "right", functions=(lambda t, p=peak: t * 1e15 / p, lambda s, p=peak: s * p / 1e15)
            )
            if model == order[-1]:
                right.set_ylabel(f"Time at {gpu_label(gpus[0], hardware)} peak (s)")
    handles = [
        Line2D([], [], color=colors[mp], marker="o", ms=3.5, label=f"tp·pp = {mp}")
        for mp in degrees
    ]
    legend_row(
        ax["legend"],
        handles,
        [h.get_label() for h in handles],
        ncols=len(handles) or 1,
        title="Model-parallel degree (GPUs per replica; GPUs = dp · tp·pp)",
    )
    return add_source_note(
        fig,
        sim_source(sim) + " — model FLOPs (6N + attention, no recomputation) per GPU per step; "
        f"H100 (DGX H100), FSDP across replicas, {seq_and_batch(sim)} sequences. "
        "Every line falls with slope −1 by construction (a fixed batch's work split over "
        "dp·tp·pp GPUs); what the figure gives is the level: the compute, and its time at peak "
        "(right axis), that one GPU has per step to hide a per-step communication cost behind.",
    )


#: Draw :func:`plot` and save ``stem.{pdf,png,svg}``; ``hardware`` is the GPU catalogue
#: (``data/hardware.yaml``: the peaks) and ``models`` the model catalogue (``data/models.yaml``: the
#: order of the models, by size).
render = styled_render(plot)
