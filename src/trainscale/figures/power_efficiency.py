"""Figure ``power_efficiency``: tokens per joule against GPU count for 1B to 70B models.

Left: GPU energy efficiency (tokens per joule of GPU energy, ``1 / energy_j_per_token``) of
Llama-2 1B, 7B, 13B and 70B with FSDP on H100 at the paper setup. Right: the same relative to
each model's best, which shows where each model starts to waste energy as GPUs are added — and
so whether a cluster spends its energy better on one large job or on several smaller ones.

Input: the ``power_efficiency`` study (``results/sim/power_efficiency.parquet``).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import TYPE_CHECKING

import pandas as pd
from matplotlib.figure import Figure
from matplotlib.lines import Line2D

from trainscale.figures._axes import doubling_axis, series_keys
from trainscale.figures._common import (
    add_source_note,
    legend_row,
    model_colors,
    plot_series,
    readable_log,
    sim_source,
    subplot_mosaic,
)
from trainscale.figures._render import styled_render
from trainscale.names import model_label
from trainscale.report.select import fastest_recompute, model_order, paper_micro_batch, require
from trainscale.study.report import within_usable_memory

if TYPE_CHECKING:
    from trainscale.sim.model.shape import ModelShape

__all__ = ["plot", "recompute_notes", "render"]

_COLUMNS = ("model", "num_gpus", "recompute", "fits_memory", "energy_j_per_token")


def _label(model: str, models: Mapping[str, ModelShape]) -> str:
    """Legend name (the ``label`` in ``models``); the study's "Llama-2 1B" says whose shape it
    is (data/models.yaml)."""
    label = model_label(model, models)
    return f"{label} (TinyLlama-1.1B shape)" if model == "llama2-1b" else label


def _next_125(value: float) -> float:
    """The smallest of 1, 2, 5 times a power of ten that is at least ``value`` (> 0)."""
    decade = 10.0 ** math.floor(math.log10(value))
    return next(k * decade for k in (1, 2, 5, 10) if k * decade >= value)


def _previous_125(value: float) -> float:
    """The largest of 1, 2, 5 times a power of ten that is at most ``value`` (> 0)."""
    decade = 10.0 ** math.floor(math.log10(value))
    return next(k * decade for k in (5, 2, 1) if k * decade <= value)


def plot(sim: pd.DataFrame, *, models: Mapping[str, ModelShape]) -> Figure:
    """Two panels: tokens/J and tokens/J relative to the model's best, against GPU count."""
    require(sim, _COLUMNS, where="power_efficiency")
    data = fastest_recompute(paper_micro_batch(sim), ["model"])
    data = data.assign(tokens_per_j=1.0 / data["energy_j_per_token"])
    colors = model_colors(models)
    fig, ax = subplot_mosaic(7.0, 3.6, [["abs", "rel"], ["legend"] * 2], height_ratios=[1, 0.14])
    handles = []
    for model in model_order(data["model"].unique(), models):
        rows = data[data["model"] == model].sort_values("num_gpus")
        best = rows["tokens_per_j"].max()
        plot_series(ax["abs"], rows["num_gpus"], rows["tokens_per_j"], rows, colors[model])
        plot_series(
            ax["rel"], rows["num_gpus"], 100 * rows["tokens_per_j"] / best, rows, colors[model]
        )
        handles.append(Line2D([], [], color=colors[model], marker="o", label=_label(model, models)))
    handles += series_keys(data, banded=False)
    counts = sorted(data["num_gpus"].unique()) or [1]
    readable_log(ax["abs"])
    if len(data):
        # out to the next labelled ticks (1, 2 or 5 per decade): every line between two labels
        values = data["tokens_per_j"]
        ax["abs"].set_ylim(
            _previous_125(float(values.min()) / 1.05), _next_125(1.05 * float(values.max()))
        )
    ax["abs"].set_ylabel("Tokens per joule (tokens/J)")
    ax["rel"].set_ylabel("Tokens/J (% of the model's best)")
    ax["rel"].axhline(100, color="0.6", lw=0.8)
    for key in ("abs", "rel"):
        doubling_axis(ax[key], counts)
    legend_row(ax["legend"], handles, [h.get_label() for h in handles], ncols=3)
    return add_source_note(
        fig,
        sim_source(sim) + " — GPU energy only (no CPU, network or cooling); H100 (DGX H100), "
        "FSDP, seq 4,096, global batch 2,048, micro-batch 2 per GPU (1 where the local batch "
        "is 1).",
        *recompute_notes(sim, data, models),
    )


def recompute_notes(
    sim: pd.DataFrame, data: pd.DataFrame, models: Mapping[str, ModelShape]
) -> list[str]:
    """Why a model's line jumps where it switches to full recomputation: the points (open)
    where the plan without recomputation does not fit in memory, which then pays an extra
    forward pass per step."""
    forced = []
    for model in model_order(data["model"].unique(), models):
        rows = data[(data["model"] == model) & (data["recompute"] != "none")]
        if rows.empty or (data[data["model"] == model]["recompute"] != "none").all():
            continue
        setup = paper_micro_batch(sim)
        plain = setup[(setup["model"] == model) & (setup["recompute"] == "none")]
        counts = [
            int(n)
            for n in rows["num_gpus"]
            if not plain[(plain["num_gpus"] == n) & within_usable_memory(plain)].size
        ]
        if counts:
            where = ", ".join(f"{n:,}" for n in sorted(counts))
            forced.append(f"{model_label(model, models)} on {where} GPUs")
    if not forced:
        return []
    return [
        "Open points recompute activations (one extra forward pass per step, so fewer "
        "tokens/J). At the paper's micro-batch, "
        + "; ".join(forced)
        + (" fit" if len(forced) > 1 else " fits")
        + " in memory only with recomputation, hence the step in "
        + ("those lines." if len(forced) > 1 else "that line.")
    ]


#: Draw :func:`plot` and save ``stem.{pdf,png,svg}``; ``models`` is the model catalogue
#: (``data/models.yaml``: each model's colour and the order by size).
render = styled_render(plot)
