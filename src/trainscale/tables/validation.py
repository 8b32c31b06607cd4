"""Table ``validation``: the simulator's error against every published source.

Per published source and quantity — tokens/s per GPU for training runs, bus bandwidth for
nccl-tests — the rows predicted, the rows the simulator cannot represent (rejected, with their
reasons in ``results/validation.parquet``), and the mean, median and largest absolute percentage
error, then an ``all`` row per quantity (:func:`trainscale.validation.summarise`).
"""

from __future__ import annotations

import os
from pathlib import Path

import pandas as pd

from trainscale.figures._common import require
from trainscale.validation import summarise

__all__ = ["VALIDATION_TABLE_COLUMNS", "render", "validation_table"]

#: Columns of :func:`validation_table`, in order.
VALIDATION_TABLE_COLUMNS: tuple[str, ...] = (
    "quantity",
    "source",
    "rows",
    "rejected",
    "mape_pct",
    "median_ape_pct",
    "max_ape_pct",
)
_QUANTITIES = {"throughput": "tokens/s per GPU", "collective": "nccl-tests bus bandwidth (GB/s)"}


def validation_table(validation: pd.DataFrame) -> pd.DataFrame:
    """Error per source and quantity.

    Parameters
    ----------
    validation : pandas.DataFrame
        ``results/validation.parquet`` (columns ``status``, ``kind``, ``citation``,
        ``ape_pct``), or the ``throughput`` table of
        :func:`trainscale.validation.validate_published` (``citation``, ``ape_pct``: all rows
        are throughput rows, none rejected).

    Returns
    -------
    pandas.DataFrame
        :data:`VALIDATION_TABLE_COLUMNS`: ``quantity``; ``source`` (citation, or ``all``);
        ``rows`` predicted; ``rejected``: rows of that source the simulator cannot represent
        (counted in the tokens/s block, where sources with only rejected rows are listed too,
        with no errors; the ``all`` row counts every rejected row); ``mape_pct``,
        ``median_ape_pct``, ``max_ape_pct`` (%).
    """
    require(validation, ["citation", "ape_pct"], where="validation_table")
    frame = validation
    if "status" not in frame.columns:
        frame = frame.assign(status="predicted")
    if "kind" not in frame.columns:
        frame = frame.assign(kind="throughput")
    rejected = frame[frame["status"] == "rejected"].groupby("citation").size()
    parts = []
    for kind, label in _QUANTITIES.items():
        rows = frame[(frame["status"] == "predicted") & (frame["kind"] == kind)]
        if rows.empty:
            continue
        summary = summarise(rows.dropna(subset=["ape_pct"]))
        if kind == "throughput":
            only_rejected = sorted(set(rejected.index) - set(summary["source"]))
            extra = pd.DataFrame({"source": only_rejected, "rows": 0})
            summary = pd.concat([summary.iloc[:-1], extra, summary.iloc[-1:]], ignore_index=True)
            summary["rejected"] = summary["source"].map(rejected).fillna(0).astype("int64")
            summary.loc[summary["source"] == "all", "rejected"] = int(rejected.sum())
        else:
            summary["rejected"] = 0
        parts.append(summary.assign(quantity=label))
    if not parts:
        return pd.DataFrame(columns=list(VALIDATION_TABLE_COLUMNS))
    table = pd.concat(parts, ignore_index=True)[list(VALIDATION_TABLE_COLUMNS)]
    return table.astype({"rows": "int64", "rejected": "int64"})


def render(stem: str | os.PathLike[str], validation: pd.DataFrame) -> tuple[Path, ...]:
    """Write ``stem.{csv,md,tex}``."""
    from trainscale.report import write_table

    table = validation_table(validation)
    calibration = ", ".join(sorted(validation.get("calibration_id", pd.Series()).dropna().unique()))
    return write_table(
        table,
        stem,
        label="tab:validation",
        caption="Simulated against published measurements (data/published/measurements.csv): "
        "absolute percentage error per source"
        + (f", calibration {calibration}." if calibration else "."),
        float_format={"mape_pct": ".1f", "median_ape_pct": ".1f", "max_ape_pct": ".1f"},
    )
