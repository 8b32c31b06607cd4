"""The error of predictions, summarised per source (or per framework) and overall.

Kept apart from :mod:`trainscale.published.accuracy`, which predicts, so that the figures and
tables can summarise the prediction tables they read without importing the simulator.
"""

from __future__ import annotations

import pandas as pd

__all__ = ["summarise"]


def summarise(rows: pd.DataFrame, by: str = "citation") -> pd.DataFrame:
    """Per source (or per value of ``by``, e.g. ``framework``): rows, MAPE, median and maximum
    absolute percentage error, then overall (``all``). The first column is named ``source`` when
    grouping by citation, else ``by``."""
    label = "source" if by == "citation" else by
    grouped = rows.groupby(by, sort=True)["ape_pct"]
    table = pd.DataFrame(
        {
            "rows": grouped.size(),
            "mape_pct": grouped.mean(),
            "median_ape_pct": grouped.median(),
            "max_ape_pct": grouped.max(),
        }
    ).reset_index(names=label)
    overall = pd.DataFrame(
        [{
            label: "all",
            "rows": len(rows),
            "mape_pct": rows["ape_pct"].mean(),
            "median_ape_pct": rows["ape_pct"].median(),
            "max_ape_pct": rows["ape_pct"].max(),
        }]
    )  # fmt: skip
    return pd.concat([table, overall], ignore_index=True)
