"""Table ``pilots``: pilot runs predict the big run, on the published scaling series.

Prints ``results/pilots.parquet`` (rule ``published_pilots``,
:func:`trainscale.calibrate.pilot_series.pilot_table`): every published scaling series calibrated
on its smallest GPU count, with a base fitted without its source, predicting its larger counts.
Per source then ``all``: the MAPE of tokens/s per GPU of the pilot-calibrated prediction, of the
base without calibration and of perfect weak scaling, and the share of the larger-scale rows
inside the 80 % pilot interval fitted without the row's source. :func:`summary` is also what
``trainscale validate --pilots`` prints. Nothing is fitted here.
"""

from __future__ import annotations

import os
from pathlib import Path

import pandas as pd

from trainscale.report.select import require
from trainscale.schema import PILOTS_TABLE_COLUMNS, names

__all__ = [
    "SUMMARY_COLUMNS",
    "render",
    "summary",
]

#: The columns of :func:`summary` after the group column.
SUMMARY_COLUMNS = (
    "rows", "pilot_gpus", "max_gpus", "pilot_mape_pct", "base_mape_pct",
    "weak_scaling_mape_pct", "covered_pct",
)  # fmt: skip
_NEEDED = (
    "num_gpus", "pilot_gpus", "pilot_ape_pct", "base_ape_pct", "weak_scaling_ape_pct", "covered",
)  # fmt: skip


def summary(rows: pd.DataFrame, by: str = "series") -> pd.DataFrame:
    """Per ``by`` (``series`` or ``citation``), sorted, then ``all``: first column ``by``, then
    ``rows`` (larger-scale rows predicted), ``pilot_gpus`` (smallest), ``max_gpus``, the MAPE (%
    of tokens/s per GPU) of the pilot-calibrated prediction (``pilot_mape_pct``), of the base
    without calibration (``base_mape_pct``) and of perfect weak scaling
    (``weak_scaling_mape_pct``), and the share of rows inside the 80 % pilot interval
    (``covered_pct``). ``rows``: ``results/pilots.parquet``."""
    require(rows, [by, *_NEEDED], where="pilots")

    def one(part: pd.DataFrame) -> dict[str, float]:
        return {
            "rows": len(part), "pilot_gpus": int(part["pilot_gpus"].min()),
            "max_gpus": int(part["num_gpus"].max()), "pilot_mape_pct": part["pilot_ape_pct"].mean(),
            "base_mape_pct": part["base_ape_pct"].mean(),
            "weak_scaling_mape_pct": part["weak_scaling_ape_pct"].mean(),
            "covered_pct": 100.0 * part["covered"].astype(bool).mean(),
        }  # fmt: skip

    groups = [{by: name, **one(part)} for name, part in rows.groupby(by, sort=True)]
    table = pd.DataFrame([*groups, {by: "all", **one(rows)}])
    return table.astype({"rows": "int64", "pilot_gpus": "int64", "max_gpus": "int64"})


def render(stem: str | os.PathLike[str], pilots: pd.DataFrame) -> tuple[Path, ...]:
    """Write the per-source summary of ``pilots`` (``results/pilots.parquet``) as
    ``stem.{csv,md,tex}``."""
    from trainscale.report import write_table

    table = summary(pilots, by="citation").rename(columns={"citation": "source"})
    table = table[names(PILOTS_TABLE_COLUMNS)]
    reference = ", ".join(sorted({str(c) for c in pilots["calibration_id"]}))
    return write_table(
        table,
        stem,
        label="tab:pilots",
        caption="Pilot runs predict the big run: each published scaling series calibrated on its "
        "smallest GPU count (base fitted without its source), predicting its larger counts; MAPE "
        "of tokens/s per GPU against the base without calibration and perfect weak scaling, and "
        "the rows inside the 80 \\% pilot interval fitted without their source (power and "
        f"intervals of trainscale calibration {reference}).",
        decimals=2,
    )
