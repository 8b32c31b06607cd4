"""Figure ``context_length``: throughput and MFU against sequence length at fixed tokens per batch.

Llama-2 7B and 70B with FSDP on 128 H100 GPUs; every sequence length keeps the batch at the same
number of tokens (the ``context_length`` study derives ``global_batch = 8,388,608 / seq_len``),
so only the shape of the work changes: longer sequences spend more FLOPs in attention per token
(MFU counts them, ``12·layers·hidden·seq_len`` per token) and need more activation memory.

The throughput panel draws each line's 80 % prediction interval as a band (the simulated rows'
``tokens_per_s_per_gpu_lo``/``_hi``).

Input: the ``context_length`` study (``results/sim/context_length.parquet``).
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
    legend_row,
    model_colors,
    plot_band,
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

__all__ = ["missing_lengths", "plot", "render"]

_COLUMNS = (
    "model",
    "seq_len",
    "num_gpus",
    "global_batch",
    "recompute",
    "fits_memory",
    "tokens_per_s_per_gpu",
    "mfu",
    "micro_batch",
    "dp",
)


def plot(sim: pd.DataFrame, *, models: Mapping[str, ModelShape]) -> Figure:
    """Two panels (tokens/s per GPU, MFU) against sequence length, one line per model and GPU
    count."""
    require(sim, _COLUMNS, where="context_length")
    data = fastest_recompute(
        paper_micro_batch(sim).rename(columns={"num_gpus": "_n", "seq_len": "num_gpus"}),
        ["model", "_n"],
    )
    data = data.rename(columns={"num_gpus": "seq_len", "_n": "num_gpus"})
    colors = model_colors(models)
    fig, ax = subplot_mosaic(7.0, 3.3, [["tput", "mfu"], ["legend"] * 2], height_ratios=[1, 0.1])
    handles = []
    banded = False
    styles = ["-", "--", ":", "-."]
    counts = sorted(data["num_gpus"].unique())
    for model in model_order(data["model"].unique(), models):
        for i, n in enumerate(counts):
            rows = data[(data["model"] == model) & (data["num_gpus"] == n)].sort_values("seq_len")
            if rows.empty:
                continue
            kw = {"ls": styles[i % len(styles)]}
            banded |= plot_band(
                ax["tput"], rows["seq_len"], rows, "tokens_per_s_per_gpu", colors[model]
            )
            plot_series(
                ax["tput"], rows["seq_len"], rows["tokens_per_s_per_gpu"], rows, colors[model], **kw
            )
            plot_series(ax["mfu"], rows["seq_len"], 100 * rows["mfu"], rows, colors[model], **kw)
            label = model_label(model, models) + (f", {n:,} GPUs" if len(counts) > 1 else "")
            handles.append(Line2D([], [], color=colors[model], marker="o", label=label, **kw))
    handles += series_keys(data, banded=banded)
    lengths = sorted(data["seq_len"].unique()) or [1]
    readable_log(ax["tput"])
    ax["tput"].set_ylabel("Throughput per GPU (tokens/s)")
    ax["mfu"].set_ylabel("MFU (%)")
    ax["mfu"].set_ylim(0, max(60.0, 100 * float(data["mfu"].max()) * 1.1) if len(data) else 60)
    for key in ("tput", "mfu"):
        doubling_axis(ax[key], lengths, "Sequence length (tokens)")
    legend_row(ax["legend"], handles, [h.get_label() for h in handles], ncols=len(handles) or 1)
    gpus = ", ".join(f"{n:,}" for n in counts)
    tokens = (data["global_batch"] * data["seq_len"]).unique()
    batch = f"{int(tokens[0]):,} tokens per batch" if len(tokens) == 1 else "fixed tokens per batch"
    return add_source_note(
        fig,
        sim_source(sim) + f" — H100 (DGX H100), {gpus} GPUs, FSDP, {batch}, micro-batch 2 per GPU.",
        *missing_lengths(sim, data, lengths, models),
    )


def missing_lengths(
    sim: pd.DataFrame, data: pd.DataFrame, lengths: list, models: Mapping[str, ModelShape]
) -> list[str]:
    """Notes naming the sequence lengths a line lacks and why: nothing fits in memory there (the
    study keeps only configurations that fit), or only a micro-batch other than the paper
    setup's fits (the figure keeps the setup's micro-batch, 2 per GPU); models named by their
    label in ``models``."""
    notes = []
    for (model, n), rows in data.groupby(["model", "num_gpus"], sort=True):
        for length in sorted(set(lengths) - set(rows["seq_len"])):
            there = sim[
                (sim["model"] == model) & (sim["num_gpus"] == n) & (sim["seq_len"] == length)
            ]
            there = there[within_usable_memory(there)]
            where = f"{model_label(model, models)} ({int(n):,} GPUs) at {int(length):,} tokens"
            if there.empty:
                notes.append(f"{where}: nothing fits in memory, even with full recomputation")
            else:
                fits = ", ".join(
                    f"micro-batch {int(r.micro_batch)} with {r.recompute} recomputation"
                    for r in there.sort_values(["micro_batch", "recompute"]).itertuples()
                )
                notes.append(f"{where}: only {fits} fits, not the paper setup's micro-batch of 2")
    return ["No point for " + "; ".join(notes) + "."] if notes else []


#: Draw :func:`plot` and save ``stem.{pdf,png,svg}``; ``models`` is the model catalogue
#: (``data/models.yaml``: each model's colour and the order by size).
render = styled_render(plot)
