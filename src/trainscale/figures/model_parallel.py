"""Figure ``model_parallel``: throughput against model-parallel degree at 512 and 2,048 GPUs.

For Llama-2 7B and 70B on H100, every plan with tensor-parallel degree ``tp`` and pipeline
degree ``pp`` (FSDP across the data-parallel replicas) is reduced to its best recompute mode
that fits memory; the panels then show, against ``tp·pp``, the best TP-only plan (``pp = 1``),
the best PP-only plan (``tp = 1``; micro-batches of 1 or 2 keep its bubble small) and the best
mixed plan (both > 1, labelled ``tp×pp``), with
pure FSDP (``tp·pp = 1``) as the dashed reference. The paper found degrees 2 to 4 best at scale.

Input: the ``model_parallel`` study (``results/sim/model_parallel.parquet``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

import pandas as pd
from matplotlib.figure import Figure
from matplotlib.lines import Line2D

from trainscale.figures._common import add_source_note, legend_row, sim_source, subplot_mosaic
from trainscale.figures._render import styled_render
from trainscale.figures._text import seq_and_batch
from trainscale.names import model_label
from trainscale.report.select import best_rows, model_order, require
from trainscale.report.style import log2_gpu_axis

if TYPE_CHECKING:
    from trainscale.sim.model.shape import ModelShape

__all__ = ["KINDS", "plan_kind", "plot", "render"]

#: Plan kinds, in legend order: (key, label, colour, marker).
KINDS = (
    ("tp", "TP only (pp = 1)", "C0", "o"),
    ("pp", "PP only (tp = 1)", "C1", "s"),
    ("mixed", "TP × PP (both > 1)", "C2", "^"),
)
_COLUMNS = ("model", "num_gpus", "tp", "pp", "recompute", "fits_memory", "tokens_per_s")


def plan_kind(tp: pd.Series, pp: pd.Series) -> pd.Series:
    """``fsdp`` (tp = pp = 1), ``tp``, ``pp`` or ``mixed`` per row."""
    kind = pd.Series("mixed", index=tp.index, dtype=object)
    kind[(tp > 1) & (pp == 1)] = "tp"
    kind[(tp == 1) & (pp > 1)] = "pp"
    kind[(tp == 1) & (pp == 1)] = "fsdp"
    return kind


def _with_gaps(series: pd.DataFrame, degrees: list[int]) -> tuple[list[float], list[float]]:
    """The series' (degree, million tokens/s) points with NaN at every degree of the grid
    between its first and last point that it lacks (no plan of that kind fits there), so the
    line breaks instead of running straight across the missing point."""
    values = dict(zip(series["degree"], series["tokens_per_s"] / 1e6, strict=True))
    if not values:
        return [], []
    span = [d for d in degrees if min(values) <= d <= max(values)]
    return span, [values.get(d, float("nan")) for d in span]


def _label_mixed(
    a, row: pd.Series, degrees: list[int], others: list[tuple[float, float]], top: float, color
) -> None:
    """Label a mixed plan ``tp×pp`` beside its marker (left of it at the last degree), on a
    white ground: above the marker, or below it where a TP-only or PP-only marker at the same
    degree sits within 8 % of the axis height above."""
    y = row["tokens_per_s"] / 1e6
    crowded = any(d == row["degree"] and 0 <= v - y < 0.08 * 1.12 * top for d, v in others)
    last = row["degree"] == degrees[-1]
    a.annotate(
        f"{row['tp']}×{row['pp']}",
        (row["degree"], y),
        xytext=(-6 if last else 6, -3 if crowded else 2),
        textcoords="offset points",
        ha="right" if last else "left",
        va="top" if crowded else "bottom",
        fontsize=6,
        color=color,
        bbox={"boxstyle": "round,pad=0.1", "fc": "white", "ec": "none", "alpha": 0.85},
        zorder=6,
    )


def plot(sim: pd.DataFrame, *, models: Mapping[str, ModelShape]) -> Figure:
    """One panel per model (rows) and GPU count (columns); see the module docstring."""
    require(sim, _COLUMNS, where="model_parallel")
    plans = best_rows(sim, ["model", "num_gpus", "tp", "pp"]).copy()
    plans["degree"] = plans["tp"] * plans["pp"]
    plans["kind"] = plan_kind(plans["tp"], plans["pp"])
    order = model_order(plans["model"].unique(), models)
    counts = sorted(plans["num_gpus"].unique())
    names = [[f"{m}|{n}" for n in counts] for m in order]
    fig, ax = subplot_mosaic(
        7.0,
        2.6 * max(len(order), 1) + 0.5,
        [*names, ["legend"] * max(len(counts), 1)],
        height_ratios=[1.0] * len(order) + [0.12],
    )
    degrees = sorted(plans["degree"].unique()) or [1]
    for model in order:
        for n in counts:
            a = ax[f"{model}|{n}"]
            rows = plans[(plans["model"] == model) & (plans["num_gpus"] == n)]
            base = rows[rows["kind"] == "fsdp"]
            if not base.empty:
                a.axhline(base["tokens_per_s"].iloc[0] / 1e6, color="0.4", ls="--", lw=0.9)
            top_value = rows["tokens_per_s"].max() / 1e6 if not rows.empty else 1.0
            others: list[tuple[float, float]] = []
            for kind, _, color, marker in KINDS:
                best = best_rows(rows[rows["kind"].isin([kind, "fsdp"])], ["degree"])
                if kind != "mixed" or len(best) > 0:
                    series = best if kind != "mixed" else best[best["kind"] == "mixed"]
                    x, y = _with_gaps(series, degrees)
                    a.plot(x, y, marker=marker, color=color, ms=5)
                    if kind != "mixed":
                        others += list(
                            zip(series["degree"], series["tokens_per_s"] / 1e6, strict=True)
                        )
                if kind == "mixed":
                    for _, r in best[best["kind"] == "mixed"].iterrows():
                        _label_mixed(a, r, degrees, others, top_value, color)
            title = f"{model_label(model, models)}, {n:,} H100 GPUs"
            if not rows.empty:
                top = rows.loc[rows["tokens_per_s"].idxmax()]
                a.plot(
                    top["degree"],
                    top["tokens_per_s"] / 1e6,
                    marker="*",
                    ms=12,
                    color="black",
                    ls="",
                    zorder=5,
                )
                title += f": best tp{top['tp']}×pp{top['pp']}"
            a.set_title(title, fontsize=9)
            # a rate: from 0, so the gaps read at their true size; room above the star
            a.set_ylim(0, 1.12 * top_value)
            log2_gpu_axis(a, degrees)
            a.set_xlabel("Model-parallel degree tp·pp (GPUs per replica)")
            a.set_ylabel("Throughput (million tokens/s)")
    handles = [Line2D([], [], color=c, marker=m, label=label) for _, label, c, m in KINDS]
    handles += [
        Line2D([], [], color="0.4", ls="--", label="pure FSDP (tp·pp = 1)"),
        Line2D([], [], color="black", marker="*", ms=10, ls="", label="best plan"),
    ]
    legend_row(ax["legend"], handles, [h.get_label() for h in handles], ncols=5, fontsize=6.5)
    return add_source_note(
        fig,
        sim_source(sim) + f" — FSDP across replicas, {seq_and_batch(sim)}; each plan at its "
        "fastest micro-batch (1, 2 or the largest that fits) and recompute mode (none or "
        "full); plans that do not fit in memory are left out (a gap in a line). Labels tp×pp "
        "name the mixed plans. The claims table instead holds every plan at the paper's "
        "micro-batch (2 per GPU, or the local batch if smaller).",
    )


#: Draw :func:`plot` and save ``stem.{pdf,png,svg}``; ``models`` is the model catalogue
#: (``data/models.yaml``: the order of the models, by size).
render = styled_render(plot)
