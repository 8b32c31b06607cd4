"""Figure ``best_plan``: MFU of the fastest plan that fits, per model and GPU count (heatmap).

Rows are models, columns GPU counts; each cell is coloured by the MFU of the plan with the
highest tokens/s among those that fit in memory (:func:`trainscale.report.best_plans.best_plans`)
and annotated with that plan: ``tp×pp``, data-parallel sharding, and ``+R`` when it recomputes
activations. Empty cells: no plan of the sweep fits.

Input: the ``best_plan`` study (``results/sim/best_plan.parquet``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from trainscale.figures._common import add_source_note, sim_source, subplot_mosaic
from trainscale.figures._render import styled_render
from trainscale.figures._text import seq_and_batch
from trainscale.names import gpu_label, model_label
from trainscale.report.best_plans import NO_DATA_PARALLEL, best_plans
from trainscale.report.select import model_order

if TYPE_CHECKING:
    from trainscale.sim.model.shape import ModelShape
    from trainscale.sim.system.hardware import HardwareCatalog

__all__ = ["cell_label", "mfu_range", "plot", "render"]


def cell_label(row: pd.Series) -> str:
    """``tp2×pp1\\nfsdp`` (``+R`` appended when the plan recomputes activations; ``dp 1`` for a
    plan with one data-parallel replica, which shards and replicates nothing)."""
    extra = "+R" if row["recompute"] != "none" else ""
    sharding = "dp 1" if row["sharding"] == NO_DATA_PARALLEL else row["sharding"]
    return f"tp{row['tp']}×pp{row['pp']}\n{sharding}{extra}"


def mfu_range(values: np.ndarray) -> tuple[float, float]:
    """Colour-bar range: the data's MFU range widened to whole multiples of 5 %, so the colours
    spread over the values shown rather than over 0–60 %."""
    finite = values[np.isfinite(values)]
    if finite.size == 0:
        return 0.0, 60.0
    low = 5.0 * np.floor(finite.min() / 5.0)
    high = 5.0 * np.ceil(finite.max() / 5.0)
    return float(low), float(high if high > low else low + 5.0)


def plot(
    sim: pd.DataFrame, *, hardware: HardwareCatalog, models: Mapping[str, ModelShape]
) -> Figure:
    """The heatmap (see module docstring)."""
    best = best_plans(sim, models=models)
    order = model_order(best["model"].unique(), models)
    counts = sorted(best["num_gpus"].unique())
    mfu = np.full((len(order), len(counts)), np.nan)
    fig, ax = subplot_mosaic(
        7.2, 1.0 + 0.62 * max(len(order), 1), [["map", "bar"]], width_ratios=[1.0, 0.03]
    )
    a = ax["map"]
    for _, row in best.iterrows():
        i, j = order.index(row["model"]), counts.index(row["num_gpus"])
        mfu[i, j] = row["mfu_pct"]
    cmap = plt.get_cmap("viridis").with_extremes(bad="0.92")
    low, high = mfu_range(mfu)
    image = a.imshow(np.ma.masked_invalid(mfu), cmap=cmap, aspect="auto", vmin=low, vmax=high)
    for _, row in best.iterrows():
        i, j = order.index(row["model"]), counts.index(row["num_gpus"])
        dark = row["mfu_pct"] < low + 0.6 * (high - low)
        a.text(
            j,
            i,
            f"{row['mfu_pct']:.0f} %\n" + cell_label(row),
            ha="center",
            va="center",
            fontsize=6,
            color="white" if dark else "black",
            linespacing=1.1,
        )
    for i, j in zip(*np.nonzero(np.isnan(mfu)), strict=True):
        a.text(j, i, "no plan\nfits", ha="center", va="center", fontsize=6, color="0.4")
    a.set_xticks(range(len(counts)), [str(n) for n in counts])
    a.set_yticks(range(len(order)), [model_label(m, models) for m in order])
    a.set_xlabel("GPUs (count)")
    a.set_ylabel("Model")
    a.grid(False)
    a.tick_params(length=0)
    for spine in a.spines.values():
        spine.set_visible(False)
    bar = fig.colorbar(image, cax=ax["bar"])
    bar.set_label("MFU of the best plan (%)")
    gpus = ", ".join(gpu_label(g, hardware) for g in sorted(best["gpu"].unique())) or "H100"
    return add_source_note(
        fig,
        sim_source(sim) + f" — {gpus}; best = highest tokens/s among plans that fit in memory "
        "(tp 1–8, pp 1–8, tp·pp ≤ 16; ddp, zero1, fsdp, hsdp; micro-batch 1, 2 or largest that "
        "fits; +R = full recomputation; dp 1 = one data-parallel replica); "
        f"{seq_and_batch(sim)} sequences. Table best_plans lists the same plans; the claims "
        "table's model-parallel claim compares FSDP plans only, so its best plan can differ.",
    )


#: Draw :func:`plot` and save ``stem.{pdf,png,svg}``; ``hardware`` is the GPU catalogue
#: (``data/hardware.yaml``: the GPUs' names) and ``models`` the model catalogue
#: (``data/models.yaml``: the order of the models, by size, and their names).
render = styled_render(plot)
