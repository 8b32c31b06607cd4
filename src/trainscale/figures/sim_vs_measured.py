"""Figure ``sim_vs_measured``: measured runs next to the simulator's prediction for each.

Every measured row of the dataset (``source == "measured"``: one per job of a run under
``data/runs``) is a line of the chart, labelled with its run, its hardware and what the run is
(its manifest's ``purpose``: a functional-test configuration is labelled so, because its step
time is not a performance measurement); the filled marker is the measured value (steady-state
median), the open marker the simulator's prediction for the same configuration with its 80 %
prediction interval as a whisker (``predicted_<metric>_lo``/``_hi``). A run the simulator cannot
represent — a CPU run, a GPU that is not in the catalogue, a configuration the validator
rejects — is drawn without a prediction, with a cross, and the reason is listed under the
figure. Three panels: step time (s), tokens/s per GPU and power per GPU (W, from zero), each
where the run has the value; the note names the file each measured power came from and says
what each run can show (:data:`PURPOSES`). With no measured rows the figure says so.

Input: ``results/sim_vs_measured.parquet`` (:data:`trainscale.schema.SIM_VS_MEASURED_COLUMNS`,
written by :func:`trainscale.ingest.accuracy.predict_measured`).
"""

from __future__ import annotations

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
    sim_source,
    subplot_mosaic,
)
from trainscale.figures._render import styled_render
from trainscale.names import gpu_label
from trainscale.report.select import require
from trainscale.schema import SIM_VS_MEASURED_COLUMNS, names

if TYPE_CHECKING:
    from trainscale.sim.system.hardware import HardwareCatalog

__all__ = ["METRICS", "PURPOSES", "plot", "render"]

#: Metrics compared: column, axis label, drawn on a log axis.
METRICS = (
    ("step_time_s", "Step time (s)", True),
    ("tokens_per_s_per_gpu", "Throughput per GPU (tokens/s)", True),
    ("power_w_per_gpu", "Power per GPU (W)", False),
)

#: A run manifest's ``purpose`` (``workflow/schemas/run.schema.yaml``) → its tick label and
#: what such a run can show against the simulator (the note under the figure).
PURPOSES: dict[str, tuple[str, str]] = {
    "performance": ("performance run", "a performance run: its step time tests the prediction"),
    "functional_test": (
        "functional test, not a benchmark",
        "a functional-test (CI) configuration, not a performance run: its step time includes "
        "overheads a tuned run avoids, so it checks the ingest path and the order of magnitude, "
        "not the simulator's accuracy",
    ),
    "harness_test": (
        "harness test",
        "a test-harness run: it checks the pipeline end to end, not the simulator's accuracy",
    ),
    "profiler_sample": (
        "profiler sample",
        "sample profiler traces: a compute and communication breakdown, no throughput",
    ),
    "": ("purpose unstated", "its manifest does not state its purpose (run.yaml purpose:)"),
}


def _run_name(run_id: str, config_id: str) -> str:
    """``run config`` once: a config id that already starts with the run id stands alone."""
    return config_id if config_id.startswith(run_id) else f"{run_id} {config_id}".strip()


def _purpose(value: object) -> tuple[str, str]:
    """Tick label and sentence of a ``purpose`` value (unknown values are named as given)."""
    key = "" if value is None or pd.isna(value) else str(value)
    return PURPOSES.get(key, (key, f"purpose {key!r}"))


def _tick_label(row, hardware: HardwareCatalog) -> str:
    """The run, the hardware it ran on when the manifest says (not the raw config id), and
    what the run is (its purpose)."""
    kind = _purpose(row.purpose)[0]
    if row.config_id.startswith(row.run_id):
        return f"{row.config_id}\n{kind}"
    n = pd.to_numeric(row.num_gpus, errors="coerce")
    if not row.gpu or pd.isna(n):
        return f"{row.run_id}\n{kind}"
    if row.gpu == "cpu":
        return f"{row.run_id}\nCPU, {int(n)} processes\n{kind}"
    return f"{row.run_id}\n{gpu_label(row.gpu, hardware)} × {int(n)}\n{kind}"


def _short(text: str, width: int = 240) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= width else text[: width - 1] + "…"


def _interval(table: pd.DataFrame, metric: str) -> tuple[np.ndarray, np.ndarray] | None:
    """The prediction's 80 % interval of ``metric`` (NaN where there is none), or None for a
    metric the table holds no interval of (power)."""
    lo, hi = f"predicted_{metric}_lo", f"predicted_{metric}_hi"
    if lo not in table.columns or hi not in table.columns:
        return None
    return table[lo].to_numpy(float), table[hi].to_numpy(float)


def _draw_metric(a, table: pd.DataFrame, metric: str, y: np.ndarray) -> None:
    """One panel: measured (filled; a cross without a prediction), predicted (open diamond)
    with its interval as a whisker, a line between them, and on the throughput panel the
    ratio of the two."""
    measured_values = table[f"measured_{metric}"].to_numpy(float)
    predicted = table[f"predicted_{metric}"].to_numpy(float)
    has = np.isfinite(predicted)
    interval = _interval(table, metric)
    if interval is not None:
        lo, hi = interval
        whisker = has & np.isfinite(lo) & np.isfinite(hi)
        a.errorbar(
            predicted[whisker], y[whisker],
            xerr=[predicted[whisker] - lo[whisker], hi[whisker] - predicted[whisker]],
            fmt="none", ecolor="C3", elinewidth=1.0, capsize=3, capthick=1.0, alpha=0.6,
            zorder=3,
        )  # fmt: skip
    a.scatter(measured_values[has], y[has], color="black", s=26, zorder=5)
    a.scatter(measured_values[~has], y[~has], color="black", marker="x", s=30, zorder=5)
    a.scatter(predicted[has], y[has], facecolor="white", edgecolor="C3", marker="D", s=26,
              lw=1.1, zorder=4)  # fmt: skip
    for i in np.flatnonzero(has & np.isfinite(measured_values)):
        a.plot([measured_values[i], predicted[i]], [y[i], y[i]], color="C3", lw=0.8, zorder=3)
        if metric == "tokens_per_s_per_gpu" and measured_values[i] > 0:
            a.annotate(
                f"predicted {predicted[i] / measured_values[i]:.1f}× measured",
                (np.sqrt(predicted[i] * measured_values[i]), y[i]),
                xytext=(0, 4), textcoords="offset points", ha="center", va="bottom",
                fontsize=6, color="C3",
            )  # fmt: skip


def _finish_panel(a, table: pd.DataFrame, metric: str, label: str, log: bool) -> None:
    """Scale, labels and the "no values" / "no measured power" notices of one panel."""
    values = np.concatenate(
        [table[f"measured_{metric}"].to_numpy(float), table[f"predicted_{metric}"].to_numpy(float)]
    )
    if log:
        readable_log(a, "x")
    elif np.isfinite(values).any():
        a.set_xlim(0.0, float(np.nanmax(values)) * 1.15)  # a quantity from 0
    a.set_xlabel(label)
    a.set_ylim(-0.7, max(len(table), 1) - 0.3)
    a.invert_yaxis()
    a.tick_params(axis="y", labelsize=6, length=0)
    if not np.isfinite(values).any():
        a.set_xlim(0.1, 10) if log else a.set_xlim(0, 1)
        if len(table):
            a.text(0.5, 0.5, "no values", transform=a.transAxes, ha="center", color="0.4")
    elif metric == "power_w_per_gpu" and not np.isfinite(table[f"measured_{metric}"]).any():
        a.text(
            0.5, 0.02, "no run has measured power\n(no power log)", transform=a.transAxes,
            ha="center", va="bottom", fontsize=6, color="0.4",
        )  # fmt: skip


def _legend_handles() -> list:
    return [
        Line2D([], [], ls="", marker="o", color="black", label="measured (steady-state median)"),
        Line2D(
            [], [], ls="", marker="D", mfc="white", mec="C3", label="simulated, same configuration"
        ),
        Line2D(
            [],
            [],
            ls="-",
            marker="|",
            color="C3",
            alpha=0.6,
            ms=6,
            label="simulated 80 % prediction interval",
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


def _notes(table: pd.DataFrame) -> list[str]:
    """Sources (measured runs, simulator, measured power's files), what each run can show,
    and why a row has no prediction."""
    predicted_rows = table[table["calibration_id"] != ""]
    notes = [
        measured_source(table["run_id"]),
        sim_source(predicted_rows) if len(predicted_rows) else "Simulated: no predictable run",
    ]
    powered = table[np.isfinite(table["measured_power_w_per_gpu"].to_numpy(float))]
    notes.append(
        "Measured power: "
        + "; ".join(
            f"{_run_name(r.run_id, r.config_id)} from {r.power_log}" for r in powered.itertuples()
        )
        if len(powered)
        else "Measured power: no run has a power log (nvidia-smi, dcgmi) or a step log with power"
    )
    if len(table):
        notes.append(
            "What each run can show: "
            + "; ".join(
                f"{run}: {_purpose(purpose)[1]}"
                for run, purpose in table.drop_duplicates("run_id")[
                    ["run_id", "purpose"]
                ].itertuples(index=False)
            )
            + "."
        )
    notes += [
        _short(f"No prediction for {_run_name(r.run_id, r.config_id)}: {r.reason}")
        for r in table[table["reason"] != ""].itertuples()
    ]
    return notes


def plot(table: pd.DataFrame, *, hardware: HardwareCatalog) -> Figure:
    """Dot chart of every measured row against its prediction (see module docstring); ``table``
    is ``results/sim_vs_measured.parquet``, ``hardware`` the GPU catalogue (the GPUs' names)."""
    require(table, names(SIM_VS_MEASURED_COLUMNS), where="sim_vs_measured")
    table = table.fillna(
        {"calibration_id": "", "simulator_version": "", "reason": "", "purpose": "",
         "power_log": ""}
    )  # fmt: skip
    labels = [_tick_label(r, hardware) for r in table.itertuples()]
    height = 1.8 + 0.55 * max(len(table), 2)
    panels = [metric for metric, _, _ in METRICS]
    fig, ax = subplot_mosaic(7.2, height, [panels, ["legend"] * 3], height_ratios=[1, 0.22])
    y = np.arange(len(table))
    for metric, label, log in METRICS:
        _draw_metric(ax[metric], table, metric, y)
        _finish_panel(ax[metric], table, metric, label, log)
        ax[metric].set_yticks(y, labels if metric == panels[0] else [""] * len(y))
    if table.empty:
        for metric in panels:
            ax[metric].text(
                0.5,
                0.5,
                "No measured runs in the dataset\n(data/runs/<run>/run.yaml)",
                transform=ax[metric].transAxes,
                ha="center",
                va="center",
                color="0.35",
            )
    handles = _legend_handles()
    legend_row(ax["legend"], handles, [h.get_label() for h in handles], ncols=2, fontsize=6.5)
    return add_source_note(fig, *_notes(table))


#: Draw :func:`plot` and save ``stem.{pdf,png,svg}``.
render = styled_render(plot)
