"""Figure ``dense_vs_moe``: dense against mixture-of-experts, what adding GPUs buys.

Per GPU, model (a dense one against mixture-of-experts ones) and GPU count, the fastest plan that
fits in memory (:func:`trainscale.report.select.best_rows`: the highest tokens/s among the
study's plans, expert-parallel degree included), and three panels against the GPU count:
tokens/s per GPU, model FLOPs utilisation, and the share of the step lost to communication that
is not hidden, split into the expert-parallel token all-to-all (dispatch and combine,
``exposed_alltoall_s``) and everything else (``exposed_comm_s`` less it: the data-parallel
gradient reduction and parameter gathers, tensor- and pipeline-parallel traffic). Each
mixture-of-experts point is labelled with its winning expert-parallel degree (``ep``). One row of
the three panels per GPU of the study (H100 and B200 in the shipped one), each column's rows on
one y scale so the GPUs compare.

Input: the ``dense_vs_moe`` study (``results/sim/dense_vs_moe.parquet``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

import pandas as pd
from matplotlib.figure import Figure
from matplotlib.lines import Line2D

from trainscale.figures._axes import doubling_axis
from trainscale.figures._common import add_source_note, legend_row, sim_source, subplot_mosaic
from trainscale.figures._render import styled_render
from trainscale.figures._text import seq_and_batch
from trainscale.names import gpu_label, model_label
from trainscale.report.palette import colorblind
from trainscale.report.select import best_rows, model_order, require

if TYPE_CHECKING:
    from trainscale.sim.model.shape import ModelShape
    from trainscale.sim.system.hardware import HardwareCatalog

__all__ = ["best_points", "plot", "render"]

_COLUMNS = (
    "model", "gpu", "num_gpus", "ep", "tokens_per_s", "tokens_per_s_per_gpu", "mfu",
    "step_time_s", "exposed_comm_s", "exposed_alltoall_s", "fits_memory",
)  # fmt: skip


def best_points(sim: pd.DataFrame) -> pd.DataFrame:
    """The fastest plan that fits per model, GPU and count, with ``alltoall_pct`` (exposed
    all-to-all, % of the step) and ``other_comm_pct`` (the rest of the exposed communication)."""
    require(sim, _COLUMNS, where="dense_vs_moe")
    best = best_rows(sim, ["model", "gpu", "num_gpus"])
    step = best["step_time_s"]
    return best.assign(
        alltoall_pct=100 * best["exposed_alltoall_s"] / step,
        other_comm_pct=100 * (best["exposed_comm_s"] - best["exposed_alltoall_s"]) / step,
    )


def _ep_labels(ax, rows: pd.DataFrame, color) -> None:
    """``epN`` above the first point and every point where the winning ``ep`` changes."""
    previous = None
    for i, r in enumerate(rows.itertuples(index=False)):
        if r.ep > 1 and r.ep != previous:  # the first point's label starts at it, off the axis
            ax.annotate(f"ep{r.ep}", (r.num_gpus, r.tokens_per_s_per_gpu), xytext=(0, 6),
                        textcoords="offset points", ha="left" if i == 0 else "center",
                        fontsize=6, color=color)  # fmt: skip
        previous = r.ep


def _colors(order: list[str]) -> dict[str, tuple]:
    """One colour per model of the figure, in its order (the dense model first): the fixed
    catalogue colours of two models can be too alike to tell apart in one panel."""
    palette = colorblind(max(len(order), 1))
    return {model: tuple(palette[i]) for i, model in enumerate(order)}


def _panels(
    ax: Mapping, best: pd.DataFrame, order: list[str], colors: Mapping,
    models: Mapping[str, ModelShape],
) -> None:  # fmt: skip
    """One GPU's three panels: each model's line (``ax`` keys ``tps``, ``mfu``, ``comm``)."""
    for model in order:
        rows = best[best["model"] == model].sort_values("num_gpus")
        if rows.empty:
            continue
        color = colors[model]
        kw = {"color": color, "marker": "o", "ms": 3.5, "lw": 1.2}
        ax["tps"].plot(rows["num_gpus"], rows["tokens_per_s_per_gpu"], **kw)
        _ep_labels(ax["tps"], rows, color)
        ax["mfu"].plot(rows["num_gpus"], 100 * rows["mfu"], **kw)
        ax["comm"].plot(rows["num_gpus"], rows["other_comm_pct"], ls="--", **kw)
        if models[model].moe is not None:
            ax["comm"].plot(rows["num_gpus"], rows["alltoall_pct"], ls="-", **kw)


def plot(
    sim: pd.DataFrame, *, hardware: HardwareCatalog, models: Mapping[str, ModelShape]
) -> Figure:
    """Three panels against the GPU count (see the module docstring), one row of them per GPU
    of the study (catalogue order), each column's rows on one y scale from 0."""
    best = best_points(sim)
    order = model_order(best["model"].unique(), models)
    order = [m for m in order if models[m].moe is None] + [
        m for m in order if models[m].moe is not None
    ]
    colors = _colors(order)
    gpus = [g for g in hardware.gpus if g in set(best["gpu"].astype(str))]
    keys = ("tps", "mfu", "comm")
    mosaic = [[f"{k}:{g}" for k in keys] for g in gpus] + [["legend"] * 3]
    fig, axes = subplot_mosaic(
        7.2, 0.4 + 3.2 * len(gpus), mosaic, height_ratios=[1] * len(gpus) + [0.12 * len(gpus)]
    )
    counts = sorted(best["num_gpus"].unique()) or [1]
    titles = {"tps": "throughput", "mfu": "utilisation", "comm": "comm. not hidden"}
    labels = {"tps": "Throughput per GPU (tokens/s)", "mfu": "MFU (%)",
              "comm": "Exposed communication (% of step)"}  # fmt: skip
    for row, gpu in enumerate(gpus):
        ax = {k: axes[f"{k}:{gpu}"] for k in keys}
        _panels(ax, best[best["gpu"].astype(str) == gpu], order, colors, models)
        for column, key in enumerate(keys):
            letter = "abcdefghijklmnopqrstuvwxyz"[row * len(keys) + column]
            ax[key].set_title(f"({letter}) {gpu_label(gpu, hardware)}: {titles[key]}", fontsize=7)
            ax[key].set_ylabel(labels[key])
            doubling_axis(ax[key], counts, "GPUs (count)" if row == len(gpus) - 1 else "")
    for key in keys:  # a column's rows on one scale from 0, so the GPUs compare
        top = max(axes[f"{key}:{gpu}"].get_ylim()[1] for gpu in gpus)
        for gpu in gpus:
            axes[f"{key}:{gpu}"].set_ylim(0, top)
    handles = [Line2D([], [], color=colors[m], marker="o", ms=3.5, label=model_label(m, models))
               for m in order]  # fmt: skip
    handles += [
        Line2D([], [], color="0.3", ls="-", label="exposed all-to-all (expert parallel)"),
        Line2D([], [], color="0.3", ls="--", label="other exposed comm. (data parallel, tp, pp)"),
    ]
    legend_row(axes["legend"], handles, [h.get_label() for h in handles], ncols=3)
    names = ", ".join(gpu_label(g, hardware) for g in gpus)
    return add_source_note(
        fig,
        sim_source(sim) + f" — {names}, Megatron-Core, {seq_and_batch(sim)} sequences; per GPU, "
        "model and GPU count the fastest plan that fits (tp, pp, ep, recomputation swept; 'epN': "
        "the winning expert-parallel degree). MFU counts active parameters, attention not "
        "halved for the causal mask.",
    )


#: Draw :func:`plot` and save ``stem.{pdf,png,svg}``; ``hardware`` is the GPU catalogue
#: (``data/hardware.yaml``: the GPU's name) and ``models`` the model catalogue
#: (``data/models.yaml``: the order and which models have experts).
render = styled_render(plot)
