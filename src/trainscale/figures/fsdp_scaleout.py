"""Figure ``fsdp_scaleout``: the paper's scale-out of Llama-2 7B and 70B with FSDP on H100.

Six panels against GPU count at a fixed global batch: global tokens/s, tokens/s per GPU, MFU,
power per GPU, communication busy time per step by collective, and exposed communication as a
share of the step. The paper's headline numbers between 128 and 2,048 GPUs (per-GPU throughput
−37.22 %, power per GPU −5.87 %, both for Llama-2 7B) are drawn as stars where the paper puts the
2,048-GPU value, next to the simulated drop.

The per-GPU throughput panel draws each model's 80 % prediction interval as a band
(``tokens_per_s_per_gpu_lo``/``_hi`` of the simulated rows; :mod:`trainscale.sim.intervals`).

Input: the ``fsdp_scaleout`` study (``results/sim/fsdp_scaleout.parquet``), one row per model,
recompute mode and GPU count; each point is the faster of no and full recomputation among those that
fit in memory (recomputed points open; :func:`~trainscale.report.select.fastest_recompute`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd
from matplotlib.figure import Figure
from matplotlib.lines import Line2D

from trainscale.figures._axes import doubling_axis, series_keys
from trainscale.figures._common import (
    add_source_note,
    legend_row,
    model_colors,
    plot_band,
    plot_series,
    readable_log,
    sim_source,
    subplot_mosaic,
)
from trainscale.figures._marks import mark_micro_batch_switch
from trainscale.figures._render import styled_render
from trainscale.figures._text import seq_and_batch
from trainscale.names import model_label
from trainscale.paper.doubling import steepest_doubling
from trainscale.paper.values import (
    PAPER_CLAIM_FROM,
    PAPER_CLAIM_TO,
    PAPER_POWER_DROP_PCT,
    PAPER_THROUGHPUT_DROP_PCT,
)
from trainscale.report.select import fastest_recompute, model_order, paper_micro_batch, require

if TYPE_CHECKING:
    from trainscale.sim.model.shape import ModelShape

__all__ = [
    "drop_pct",
    "plot",
    "render",
]

#: The paper's drops from 128 to 2,048 GPUs (Fernandez et al. 2024), percent.
CLAIM_FROM, CLAIM_TO = PAPER_CLAIM_FROM, PAPER_CLAIM_TO
CLAIM_MODEL = "llama2-7b"

_COLLECTIVES = (
    ("allgather_s", "AllGather", "-"),
    ("reducescatter_s", "ReduceScatter", "--"),
    ("allreduce_s", "AllReduce", "-."),
    ("p2p_s", "send/recv", ":"),
)
_COLUMNS = (
    "model",
    "num_gpus",
    "recompute",
    "fits_memory",
    "tokens_per_s",
    "tokens_per_s_per_gpu",
    "mfu",
    "power_w_per_gpu",
    "comm_s",
    "exposed_comm_s",
    "exposed_comm_frac",
    "allgather_s",
    "reducescatter_s",
    "allreduce_s",
    "p2p_s",
)


def drop_pct(series: pd.DataFrame, column: str, n_from: int = CLAIM_FROM, n_to: int = CLAIM_TO):
    """Percent drop of ``column`` from ``n_from`` to ``n_to`` GPUs; None if either is missing."""
    by_n = series.set_index("num_gpus")[column]
    if n_from not in by_n.index or n_to not in by_n.index:
        return None
    return float(100.0 * (1.0 - by_n[n_to] / by_n[n_from]))


def _significant_collectives(data: pd.DataFrame, share: float = 0.01) -> list[str]:
    """Collective columns that carry at least ``share`` of the busy communication somewhere."""
    comm = data["comm_s"].where(data["comm_s"] > 0)
    return [c for c, _, _ in _COLLECTIVES if ((data[c] / comm) >= share).any()]


def _mark_claim(
    ax, series: pd.DataFrame, column: str, study_pct: float, what: str, box_xy=(0.03, 0.04)
) -> None:
    """Star at the paper's 2,048-GPU value (from the simulated 128-GPU value) and the drops."""
    sim = drop_pct(series, column)
    if sim is None:
        return
    start = float(series.set_index("num_gpus").loc[CLAIM_FROM, column])
    end = float(series.set_index("num_gpus").loc[CLAIM_TO, column])
    target = start * (1.0 - study_pct / 100.0)
    ax.plot([CLAIM_TO], [target], marker="*", ms=10, color="black", ls="", zorder=5)
    ax.annotate(
        "",
        xy=(CLAIM_TO, end),
        xytext=(CLAIM_FROM, start),
        arrowprops={"arrowstyle": "->", "color": "0.3", "lw": 0.8},
    )
    window = series[series["num_gpus"].between(CLAIM_FROM, CLAIM_TO)]
    steep = steepest_doubling(window, column)
    where = f"\nsteepest doubling:\n{steep.text}" if steep is not None else ""
    ax.annotate(
        f"{what} {CLAIM_FROM}→{CLAIM_TO}:\nsimulated −{sim:.2f} %\npaper −{study_pct:.2f} % (★)"
        + where,
        xy=box_xy,
        xycoords="axes fraction",
        ha="left",
        va="bottom",
        fontsize=6.5,
        bbox={"boxstyle": "round,pad=0.25", "fc": "white", "ec": "0.7", "lw": 0.5},
    )


def _draw_models(
    ax, data: pd.DataFrame, models: Mapping[str, ModelShape], used: list[str]
) -> tuple[list, bool]:
    """Every model's lines on the six panels (the ``used`` collectives on the communication
    panel) and the paper's claims on Llama-2 7B's; returns (one legend entry per model, a band
    was drawn)."""
    colors = model_colors(models)
    handles = []
    banded = False
    for model in model_order(data["model"].unique(), models):
        rows = data[data["model"] == model].sort_values("num_gpus")
        color = colors[model]
        label = model_label(model, models)
        n = rows["num_gpus"]
        plot_series(ax["global"], n, rows["tokens_per_s"], rows, color)
        banded |= plot_band(ax["per_gpu"], n, rows, "tokens_per_s_per_gpu", color)
        plot_series(ax["per_gpu"], n, rows["tokens_per_s_per_gpu"], rows, color)
        plot_series(ax["mfu"], n, 100 * rows["mfu"], rows, color)
        plot_series(ax["power"], n, rows["power_w_per_gpu"], rows, color)
        for column, _, style in _COLLECTIVES:
            if column in used:
                ax["comm"].plot(n, rows[column], ls=style, color=color)
        plot_series(ax["exposed"], n, 100 * rows["exposed_comm_frac"], rows, color)
        handles.append(Line2D([], [], color=color, marker="o", label=label))
        if model == CLAIM_MODEL:
            _mark_claim(
                ax["per_gpu"],
                rows,
                "tokens_per_s_per_gpu",
                PAPER_THROUGHPUT_DROP_PCT,
                "tokens/s per GPU",
                (0.03, 0.3),
            )
            _mark_claim(ax["power"], rows, "power_w_per_gpu", PAPER_POWER_DROP_PCT, "power/GPU")
    return handles, banded


#: Panel → (y label, y scale).
_PANELS = {
    "global": ("Global throughput (tokens/s)", "log"),
    "per_gpu": ("Throughput per GPU (tokens/s)", "log"),
    "mfu": ("MFU (%)", "linear"),
    "power": ("Power per GPU (W)", "linear"),
    "comm": ("Communication per step, busy (s)", "log"),
    "exposed": ("Exposed communication (% of step)", "linear"),
}


def _format_panels(ax, data: pd.DataFrame) -> None:
    """Labels, scales and limits of the six panels: GPU counts on base-2 x axes, the
    throughput and communication panels readable log, MFU, power and exposed share from 0."""
    counts = sorted(data["num_gpus"].unique()) or [CLAIM_FROM]
    for key, (ylabel, scale) in _PANELS.items():
        ax[key].set_yscale(scale)
        ax[key].set_ylabel(ylabel)
        doubling_axis(ax[key], counts)
    for key in ("global", "per_gpu", "comm"):
        readable_log(ax[key])
    ax["exposed"].set_ylim(0, max(10.0, float(np.nanmax(100 * data["exposed_comm_frac"])) * 1.15)
                           if len(data) else 10)  # fmt: skip
    ax["mfu"].set_ylim(0, max(60.0, float(np.nanmax(100 * data["mfu"])) * 1.1) if len(data) else 60)
    power = data["power_w_per_gpu"]
    if len(power):  # from 0, so that a 6 % drop looks like 6 %
        ax["power"].set_ylim(0, float(power.max()) * 1.1)


def plot(sim: pd.DataFrame, *, models: Mapping[str, ModelShape]) -> Figure:
    """Draw the six panels from the ``fsdp_scaleout`` study rows (see module docstring)."""
    require(sim, _COLUMNS, where="fsdp_scaleout")
    data = fastest_recompute(paper_micro_batch(sim), ["model"])
    panels = [["global", "per_gpu", "mfu"], ["power", "comm", "exposed"], ["legend"] * 3]
    fig, ax = subplot_mosaic(7.2, 5.6, panels, height_ratios=[1.0, 1.0, 0.13])
    used = _significant_collectives(data)
    handles, banded = _draw_models(ax, data, models, used)
    handles += [
        Line2D([], [], color="0.3", ls=style, label=f"{name} (busy)")
        for column, name, style in _COLLECTIVES
        if column in used
    ]
    handles.append(Line2D([], [], color="black", marker="*", ms=9, ls="", label="paper's drop"))
    handles += series_keys(data, banded=banded, band_first=True)
    _format_panels(ax, data)
    mark_micro_batch_switch(
        ax, data, ("global", "per_gpu", "mfu", "power", "comm", "exposed"), named="mfu"
    )
    legend_row(ax["legend"], handles, [h.get_label() for h in handles], ncols=3)
    setup = (
        "H100 on the paper's cluster (fernandez-h100: 8 x 400 Gb/s per node, inferred), "
        f"PyTorch FSDP, {seq_and_batch(sim)} sequences, "
        "micro-batch 2 per GPU (1 where the local batch is 1)"
    )
    note = (
        " The per-GPU decline's shape is a prediction resting on the global batch of 2,048 "
        "sequences, which the paper did not publish (table claims: range_over, note)."
    )
    return add_source_note(fig, sim_source(sim) + f" — paper setup: {setup}." + note)


#: Draw :func:`plot` and save ``stem.{pdf,png,svg}``; ``models`` is the model catalogue
#: (``data/models.yaml``: each model's colour and the order by size).
render = styled_render(plot)
