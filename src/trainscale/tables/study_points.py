"""Per-study points: every plotted point of a study with the plan that won it.

A study's scaling figure shows, per facet, series and x value, the fastest simulated row that
fits in memory (:func:`trainscale.study.report.select_rows`). This table is those points, one row
each, with what a planner needs to act on them: the winning plan, every plotted metric with its
80 % interval, the memory headroom, and the runner-up plan with its margin.

Columns (:func:`study_points`), in order:

- the facet column (only when the study has a facet) and the series columns, readable;
- ``facet`` (only with a facet), ``series``: the labels the figure prints;
- ``x``: the x value (the column is named by the study's x axis, e.g. ``num_gpus``);
- the winning plan: ``framework``, ``tp``, ``pp``, ``cp``, ``vpp``, ``sharding``,
  ``recompute``, ``micro_batch`` (:data:`PLAN_COLUMNS`; a study with an expert layout,
  :func:`~trainscale.study.report.has_experts`, adds ``ep`` and ``etp`` after ``vpp``, empty in
  the rows of a dense model, :func:`~trainscale.study.report.expert_rows`) and ``plan`` (the
  same as one text, ``ep 8 · etp 1`` included there for a mixture-of-experts model's rows);
- ``plan_changed``: True where the winning plan differs from the previous x value's in the same
  facet and series (False at the first point);
- each metric the figure plots (:data:`trainscale.study.report.METRICS` keys, in the figure's
  order) in its own unit, and for those with an interval ``<metric>_lo`` and ``<metric>_hi``
  (80 %; global tokens/s: the per-GPU interval times the GPU count);
- ``mem_gib_per_gpu``, ``hbm_gib`` (the GPU's capacity, GiB), ``mem_headroom_gib`` (capacity
  minus use) and ``near_memory_limit`` (the plan uses more than
  :data:`~trainscale.sim.memory_margin.NEAR_MEMORY_FRACTION` of the capacity);
- ``runner_up_plan``, ``runner_up_tokens_per_s`` and ``runner_up_margin_pct`` (how much faster
  the winner is, % of the runner-up's global tokens/s): the fastest row of the same point that
  fits in memory with a different plan (preferring, as the winner does, plans predicted within
  the usable memory over those flagged within the memory margin); empty where no other plan
  fits;
- ``source`` ("simulated") and ``calibration_id``;
- with a ``bill:`` block in the study (:func:`bill_columns`): :data:`BILL_POINT_COLUMNS`, node
  and facility power and energy per token, and the time, energy per scope and cost to train its
  ``train_tokens``, each with its 80 % interval.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from trainscale.schema import TRAINING_BILL_COLUMNS, names
from trainscale.sim.energy import PowerTerms, with_node_power
from trainscale.sim.energy.bill import parse_train_tokens, with_training_bill
from trainscale.sim.memory_margin import NEAR_MEMORY_FRACTION
from trainscale.sim.system.hardware import HardwareCatalog
from trainscale.study.report import (
    EXPERT_PLAN_COLUMNS,
    METRICS,
    PLAN_COLUMNS,
    ReportSpec,
    expert_rows,
    format_value,
    over_memory,
    plan_columns,
)

__all__ = [
    "BILL_POINT_COLUMNS",
    "bill_columns",
    "plan_text",
    "render_points",
    "study_points",
]

#: The node-power and training-bill columns a study with a ``bill:`` block adds to its points.
BILL_POINT_COLUMNS = (
    "pue", "node_power_w", "node_power_w_lo", "node_power_w_hi", "facility_power_w_per_node",
    "energy_j_per_token_node", "energy_j_per_token_node_lo", "energy_j_per_token_node_hi",
    "energy_j_per_token_facility", "energy_j_per_token_facility_lo",
    "energy_j_per_token_facility_hi", *names(TRAINING_BILL_COLUMNS),
)  # fmt: skip


_GIB = 2**30


def plan_text(row: Mapping[str, Any], *, experts: bool = False) -> str:
    """One plan as text: ``megatron tp 4 · pp 2 · cp 1 · vpp 1 · zero1 · selective · mb 1``;
    with ``experts``, the expert layout after ``vpp`` (``ep 8 · etp 1``)."""
    parts = [str(row["framework"])] if "framework" in row else []
    keys = ("tp", "pp", "cp", "vpp", *(EXPERT_PLAN_COLUMNS if experts else ()))
    for key in keys:
        if key in row:
            parts.append(f"{key} {format_value(key, row[key])}")
    for key in ("sharding", "recompute"):
        if key in row:
            parts.append(str(row[key]))
    if "micro_batch" in row:
        parts.append(f"mb {format_value('micro_batch', row['micro_batch'])}")
    return " · ".join(parts)


def _plan_key(frame: pd.DataFrame) -> pd.Series:
    columns = [c for c in (*PLAN_COLUMNS, *EXPERT_PLAN_COLUMNS) if c in frame.columns]
    key = pd.Series("", index=frame.index, dtype=object)
    for i, column in enumerate(columns):
        key = key + ("|" if i else "") + frame[column].astype(str)
    return key


def _runner_up(simulated: pd.DataFrame, points: pd.DataFrame, group: Sequence[str]) -> pd.DataFrame:
    """Per point: the fastest fitting row of the same group whose plan is not the winner's."""
    rows = simulated
    if "source" in rows.columns:
        rows = rows[rows["source"] == "sim"]
    if "fits_memory" in rows.columns:
        rows = rows[rows["fits_memory"].fillna(False).astype(bool)]
    rows = rows.assign(_plan=_plan_key(rows), _pos=np.arange(len(rows)))
    winners = points[group].assign(_winner=_plan_key(points))
    candidates = rows.merge(winners, on=list(group), how="inner")
    candidates = candidates[candidates["_plan"] != candidates["_winner"]]
    candidates = candidates.assign(
        _over=over_memory(candidates), _neg=-pd.to_numeric(candidates["tokens_per_s"])
    )
    best = candidates.sort_values([*group, "_over", "_neg", "_pos"], kind="stable")
    best = best.drop_duplicates(group)
    experts = expert_rows(best, simulated)
    best = best.assign(
        runner_up_plan=[
            plan_text(r, experts=e) for r, e in zip(best.to_dict("records"), experts, strict=True)
        ],
        runner_up_tokens_per_s=pd.to_numeric(best["tokens_per_s"]),
    )
    return best[[*group, "runner_up_plan", "runner_up_tokens_per_s"]]


def _metric_columns(rows: pd.DataFrame, metrics: Sequence[str]) -> dict[str, pd.Series]:
    out: dict[str, pd.Series] = {}
    gpus = pd.to_numeric(rows["num_gpus"])
    for metric in metrics:
        _, _, factor, interval = METRICS[metric]
        out[metric] = pd.to_numeric(rows[metric]) * factor
        if interval is None:
            continue
        low, high = (pd.to_numeric(rows[c]) * factor for c in interval)
        if metric == "tokens_per_s":
            low, high = low * gpus, high * gpus
        out[f"{metric}_lo"], out[f"{metric}_hi"] = low, high
    return out


def study_points(
    selected: pd.DataFrame,
    simulated: pd.DataFrame,
    spec: ReportSpec,
    hbm_bytes: Mapping[str, float],
) -> pd.DataFrame:
    """The points table of one study (columns in the module docstring).

    Parameters
    ----------
    selected : pandas.DataFrame
        The plotted rows, from :func:`~trainscale.study.report.select_rows` (sorted by facet,
        series and x; with ``facet_label`` and ``series_label``).
    simulated : pandas.DataFrame
        All of the study's simulated rows (the dataset schema), where the runner-up is found.
    spec : ReportSpec
        What the study's outputs show.
    hbm_bytes : mapping
        GPU catalogue key → HBM capacity, bytes.
    """
    keys = [*([spec.facet] if spec.facet else []), *spec.series]
    group = [k for k in [*keys, spec.x] if k in selected.columns]
    rows = selected.reset_index(drop=True)
    table = pd.DataFrame({k: [format_value(k, v, spec.names) for v in rows[k]] for k in keys})
    if spec.facet:
        table["facet"] = rows["facet_label"]
    table["series"] = rows["series_label"]
    table[spec.x] = rows[spec.x]
    experts = expert_rows(rows, simulated)
    for column in plan_columns(simulated):
        if column in rows.columns:
            table[column] = rows[column]
            if column in EXPERT_PLAN_COLUMNS:  # a dense model's row: no expert layout
                table[column] = table[column].where(experts.to_numpy(), pd.NA)
    table["plan"] = [plan_text(r, experts=e)
                     for r, e in zip(rows.to_dict("records"), experts, strict=True)]  # fmt: skip
    previous = table.groupby([*(["facet"] if spec.facet else []), "series"], sort=False)["plan"]
    table["plan_changed"] = (table["plan"] != previous.shift()) & previous.shift().notna()
    for name, values in _metric_columns(rows, spec.metrics).items():
        table[name] = values
    capacity = rows["gpu"].map(lambda gpu: hbm_bytes[str(gpu)] / _GIB)
    table["mem_gib_per_gpu"] = pd.to_numeric(rows["mem_gib_per_gpu"])
    table["hbm_gib"] = capacity
    table["mem_headroom_gib"] = capacity - table["mem_gib_per_gpu"]
    table["near_memory_limit"] = table["mem_gib_per_gpu"] > NEAR_MEMORY_FRACTION * capacity
    runner = _runner_up(simulated, rows, group)
    merged = rows[group].merge(runner, on=group, how="left")
    table["runner_up_plan"] = merged["runner_up_plan"].fillna("")
    table["runner_up_tokens_per_s"] = merged["runner_up_tokens_per_s"]
    winner = pd.to_numeric(rows["tokens_per_s"])
    table["runner_up_margin_pct"] = (winner / merged["runner_up_tokens_per_s"] - 1.0) * 100.0
    table["source"] = "simulated"
    table["calibration_id"] = rows.get("calibration_id", "")
    return table


def bill_columns(
    selected: pd.DataFrame, bill: Mapping[str, Any], hardware: HardwareCatalog, terms: PowerTerms
) -> pd.DataFrame:
    """:data:`BILL_POINT_COLUMNS` of the plotted rows ``selected`` (in their order) for a study's
    ``bill:`` block (``train_tokens``, optional ``usd_per_gpu_hour`` and ``pue``), under the
    hardware catalogue and the power terms of the calibration the study was simulated with."""
    rows = selected.reset_index(drop=True)
    if "pue" in bill:
        rows = rows.assign(pue=float(bill["pue"]))
    price = bill.get("usd_per_gpu_hour")
    with_power = with_node_power(rows, hardware, terms)
    billed = with_training_bill(
        with_power,
        parse_train_tokens(str(bill["train_tokens"])),
        None if price is None else float(price),
    )
    return billed[list(BILL_POINT_COLUMNS)]


def render_points(
    stem: str | os.PathLike[str],
    selected: pd.DataFrame,
    simulated: pd.DataFrame,
    spec: ReportSpec,
    hbm_bytes: Mapping[str, float],
    bill: pd.DataFrame | None = None,
    not_plotted: Sequence[str] = (),
) -> tuple[Path, Path, Path]:
    """Write ``stem.csv`` (full precision), ``stem.md`` and ``stem.tex`` of
    :func:`study_points`, with the columns of :func:`bill_columns` (``bill``) appended;
    ``stem.md`` ends with a "Not plotted" list of ``not_plotted`` (the points the study asked for
    that have no plan, with the reason, :func:`trainscale.figures.study_scaling.unplanned_points`)
    where there are any."""
    from trainscale.io.atomic import write_text_atomic
    from trainscale.report import write_table

    table = study_points(selected, simulated, spec, hbm_bytes)
    if bill is not None:
        table = pd.concat([table, bill.reset_index(drop=True)], axis=1)
    written = write_table(
        table,
        stem,
        label="tab:study_points",
        caption="Plotted points with the winning plan (simulated).",
        float_format={
            "runner_up_margin_pct": ".1f", "mem_gib_per_gpu": ".1f", "hbm_gib": ".1f",
            "mem_headroom_gib": ".1f",
        },
    )  # fmt: skip
    if not_plotted:
        md = written[1]
        lines = "\n".join(f"- {text}" for text in not_plotted)
        write_text_atomic(
            md,
            md.read_text()
            + "\n\n**Not plotted** (points the study asked for that no configuration of theirs "
            f"could plan):\n\n{lines}\n",
        )
    return written
