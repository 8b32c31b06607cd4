"""Figure ``energy_bill``: tokens per joule and cost per million tokens against GPU count, node
scope, for the paper setup, with the metered runs overlaid.

Left: node energy efficiency (tokens per joule of node energy: GPUs plus host, AC) of Llama-2 7B
with FSDP on H100 at the paper setup, with its 80 % interval (from the power calibration's
held-out node-energy error). Right: what a million tokens cost at the table's GPU-hour price,
with the throughput interval. Overlaid, filled: the metered MLPerf runs of
``data/published/power-measurements.csv`` at their own GPU counts (other models and plans: a level
to compare with, not a point of the curve); open: the simulator's prediction of the same runs.

Input: ``results/paper/energy.parquet`` (:mod:`trainscale.paper.energy`).
"""

from __future__ import annotations

import pandas as pd
from matplotlib.figure import Figure
from matplotlib.lines import Line2D

from trainscale.figures._axes import doubling_axis
from trainscale.figures._common import add_source_note, legend_row, readable_log, subplot_mosaic
from trainscale.figures._render import styled_render
from trainscale.report.select import require
from trainscale.schema import ENERGY_BILL_COLUMNS, names

__all__ = ["plot", "render"]

_SIM_COLOR = "#0173b2"
_METERED = ("#de8f05", "#029e73", "#d55e00", "#cc78bc")


def _panel(ax, sim: pd.DataFrame, measured: pd.DataFrame, value: str, predicted: str) -> None:
    """The simulated line with its band, the metered points and their predictions."""
    ax.fill_between(sim["num_gpus"], sim[f"{value}_lo"], sim[f"{value}_hi"], color=_SIM_COLOR,
                    alpha=0.18, lw=0)  # fmt: skip
    ax.plot(sim["num_gpus"], sim[value], color=_SIM_COLOR, marker="o", ms=3.5, lw=1.4)
    for i, row in enumerate(measured.itertuples()):
        color = _METERED[i % len(_METERED)]
        ax.plot(row.num_gpus, getattr(row, value), ls="none", marker="s", ms=6, color=color)
        ax.plot(row.num_gpus, getattr(row, predicted), ls="none", marker="o", ms=10, mfc="none",
                mec=color, mew=1.2)  # fmt: skip
    readable_log(ax)


def plot(energy: pd.DataFrame) -> Figure:
    """Two panels against GPU count: tokens per joule (node) and USD per million tokens."""
    require(energy, names(ENERGY_BILL_COLUMNS), where="energy_bill")
    sim = energy[energy["source"].eq("sim")].sort_values("num_gpus")
    measured = energy[energy["source"].eq("measured")].reset_index(drop=True)
    sim = sim.assign(
        tokens_per_joule_node_lo=1.0 / sim["energy_j_per_token_node_hi"],
        tokens_per_joule_node_hi=1.0 / sim["energy_j_per_token_node_lo"],
    )
    measured = measured.assign(
        predicted_tokens_per_joule_node=1.0 / measured["predicted_energy_j_per_token_node"]
    )
    fig, ax = subplot_mosaic(7.0, 3.9, [["tpj", "usd"], ["legend"] * 2], height_ratios=[1, 0.22])
    _panel(ax["tpj"], sim, measured, "tokens_per_joule_node", "predicted_tokens_per_joule_node")
    _panel(ax["usd"], sim, measured, "usd_per_million_tokens", "predicted_usd_per_million_tokens")
    price = float(energy["usd_per_gpu_hour"].iloc[0]) if len(energy) else float("nan")
    ax["tpj"].set_ylabel("Tokens per joule, node (tokens/J)")
    ax["usd"].set_ylabel("Cost per million tokens (USD)")
    counts = sorted({*sim["num_gpus"], *measured["num_gpus"]}) or [1]
    for key in ("tpj", "usd"):
        doubling_axis(ax[key], counts)
    handles = [
        Line2D(
            [],
            [],
            color=_SIM_COLOR,
            marker="o",
            ms=3.5,
            label="Llama-2 7B, FSDP, H100, paper setup (simulated, 80 % band)",
        )
    ]
    for i, row in enumerate(measured.itertuples()):
        color = _METERED[i % len(_METERED)]
        handles.append(Line2D([], [], ls="none", marker="s", color=color,
                              label=f"metered: {row.workload}"))  # fmt: skip
    handles.append(Line2D([], [], ls="none", marker="o", ms=8, mfc="none", mec="0.3",
                          label="open: simulated prediction of the metered run"))  # fmt: skip
    legend_row(ax["legend"], handles, [h.get_label() for h in handles], ncols=1)
    ids = ", ".join(sorted(set(energy["calibration_id"])))
    powers = ", ".join(sorted(set(energy["power_id"])))
    return add_source_note(
        fig,
        f"Simulated: trainscale, calibration {ids}, power terms {powers}. Node scope: the GPUs "
        "plus the host (CPUs, DRAM, NICs, NVSwitch, fans, PSU losses), AC, no switches, no PUE. "
        f"Cost counts GPU-hours only, at {price:g} USD per GPU-hour.",
        "Metered: MLPerf Training v4.0 (SMC) and v4.1 (Dell) power submissions, node power "
        "logs and throughput of the same runs (data/published/power-measurements.csv); "
        "whole-run throughput, evaluations included.",
    )


#: Draw :func:`plot` and save ``stem.{pdf,png,svg}``.
render = styled_render(plot)
