"""Figure ``sim_vs_measured``: measured runs next to the simulator's prediction for each.

Every measured row of the dataset (``source == "measured"``: one per job of a run under
``data/runs``) is a line of the chart, labelled with its run and configuration id; the filled
marker is the measured value (steady-state median), the open marker the simulator's prediction
for the same configuration. A run the simulator cannot represent — a CPU run, a GPU that is not
in the catalogue, a configuration the validator rejects — is drawn without a prediction, with a
cross, and the reason is listed under the figure. Two panels: step time (s) and tokens/s per
GPU, each where the run has the value. With no measured rows the figure says so.

Input: ``results/sim_vs_measured.parquet`` (:data:`trainscale.schema.SIM_VS_MEASURED_COLUMNS`,
written by :func:`trainscale.ingest.accuracy.predict_measured`).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd
from matplotlib.figure import Figure
from matplotlib.lines import Line2D

from trainscale.figures._common import (
    add_source_note,
    legend_row,
    measured_source,
    readable_log,
    require,
    save_styled,
    sim_source,
    subplot_mosaic,
)
from trainscale.names import gpu_label
from trainscale.schema import SIM_VS_MEASURED_COLUMNS, names

if TYPE_CHECKING:
    from trainscale.sim.system.hardware import HardwareCatalog

__all__ = ["METRICS", "plot", "render"]

#: Metrics compared: column, axis label.
METRICS = (
    ("step_time_s", "Step time (s)"),
    ("tokens_per_s_per_gpu", "Throughput per GPU (tokens/s)"),
)


def _run_name(run_id: str, config_id: str) -> str:
    """``run config`` once: a config id that already starts with the run id stands alone."""
    return config_id if config_id.startswith(run_id) else f"{run_id} {config_id}".strip()


def _tick_label(row, hardware: HardwareCatalog) -> str:
    """The run, and the hardware it ran on when the manifest says (not the raw config id; the
    GPU's name from ``hardware``)."""
    if row.config_id.startswith(row.run_id):
        return row.config_id
    n = pd.to_numeric(row.num_gpus, errors="coerce")
    if not row.gpu or pd.isna(n):
        return row.run_id
    if row.gpu == "cpu":
        return f"{row.run_id}\nCPU, {int(n)} processes"
    return f"{row.run_id}\n{gpu_label(row.gpu, hardware)} × {int(n)}"


def _short(text: str, width: int = 240) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= width else text[: width - 1] + "…"


def plot(table: pd.DataFrame, *, hardware: HardwareCatalog) -> Figure:
    """Dot chart of every measured row against its prediction (see module docstring); ``table``
    is ``results/sim_vs_measured.parquet``, ``hardware`` the GPU catalogue (the GPUs' names)."""
    require(table, names(SIM_VS_MEASURED_COLUMNS), where="sim_vs_measured")
    table = table.fillna({"calibration_id": "", "simulator_version": "", "reason": ""})
    labels = [_tick_label(r, hardware) for r in table.itertuples()]
    height = 1.6 + 0.42 * max(len(table), 2)
    fig, ax = subplot_mosaic(
        7.2,
        height,
        [["step_time_s", "tokens_per_s_per_gpu"], ["legend", "legend"]],
        height_ratios=[1, 0.2],
    )
    y = np.arange(len(table))
    for metric, label in METRICS:
        a = ax[metric]
        measured_values = table[f"measured_{metric}"].to_numpy(float)
        predicted = table[f"predicted_{metric}"].to_numpy(float)
        has = np.isfinite(predicted)
        a.scatter(measured_values[has], y[has], color="black", s=26, zorder=4)
        a.scatter(measured_values[~has], y[~has], color="black", marker="x", s=30, zorder=4)
        a.scatter(
            predicted[has],
            y[has],
            facecolor="white",
            edgecolor="C3",
            marker="D",
            s=26,
            lw=1.1,
            zorder=4,
        )
        for i in np.flatnonzero(has & np.isfinite(measured_values)):
            a.plot([measured_values[i], predicted[i]], [y[i], y[i]], color="C3", lw=0.8, zorder=3)
            if metric == "tokens_per_s_per_gpu" and measured_values[i] > 0:
                a.annotate(
                    f"predicted {predicted[i] / measured_values[i]:.1f}× measured",
                    (np.sqrt(predicted[i] * measured_values[i]), y[i]),
                    xytext=(0, 4), textcoords="offset points", ha="center", va="bottom",
                    fontsize=6, color="C3",
                )  # fmt: skip
        readable_log(a, "x")
        a.set_xlabel(label)
        a.set_yticks(y, labels if metric == "step_time_s" else [""] * len(y))
        a.set_ylim(-0.7, max(len(table), 1) - 0.3)
        a.invert_yaxis()
        a.tick_params(axis="y", labelsize=6.5, length=0)
        if not np.isfinite(np.concatenate([measured_values, predicted])).any():
            a.set_xlim(0.1, 10)
            if len(table):
                a.text(0.5, 0.5, "no values", transform=a.transAxes, ha="center", color="0.4")
    if table.empty:
        for metric, _ in METRICS:
            ax[metric].text(
                0.5,
                0.5,
                "No measured runs in the dataset\n(data/runs/<run>/run.yaml)",
                transform=ax[metric].transAxes,
                ha="center",
                va="center",
                color="0.35",
            )
    handles = [
        Line2D([], [], ls="", marker="o", color="black", label="measured (steady-state median)"),
        Line2D(
            [], [], ls="", marker="D", mfc="white", mec="C3", label="simulated, same configuration"
        ),
        Line2D(
            [],
            [],
            ls="",
            marker="x",
            color="black",
            label="measured, no prediction (e.g. CPU run; reason below)",
        ),
    ]
    legend_row(ax["legend"], handles, [h.get_label() for h in handles], ncols=2, fontsize=6.5)
    predicted_rows = table[table["calibration_id"] != ""]
    notes = [
        measured_source(table["run_id"]),
        sim_source(predicted_rows) if len(predicted_rows) else "Simulated: no predictable run",
    ]
    notes += [
        _short(f"No prediction for {_run_name(r.run_id, r.config_id)}: {r.reason}")
        for r in table[table["reason"] != ""].itertuples()
    ]
    return add_source_note(fig, *notes)


def render(
    stem: str | os.PathLike[str], table: pd.DataFrame, *, hardware: HardwareCatalog
) -> tuple[Path, ...]:
    """Draw :func:`plot` and save ``stem.{pdf,png,svg}``; ``hardware`` is the GPU catalogue
    (``data/hardware.yaml``: the GPUs' names)."""
    return save_styled(lambda: plot(table, hardware=hardware), stem)
