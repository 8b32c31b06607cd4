"""``trainscale validate``'s mixture-of-experts section: tokens/s per GPU of the published MoE runs
(:attr:`trainscale.published.measurements.PublishedData.moe`), in sample and, with
``--holdout``, each MoE source predicted by an MoE fit that left it out
(:func:`trainscale.calibrate.moe.held_out_moe`, the dense parameters as shipped).

The pooled line of ``moe-measurements.csv`` (its four sources, the Megatron-Bridge rows of
``measurements.csv`` left aside) is the figure ``docs/accuracy.md`` states, and the 80 %
intervals' source-out coverage of the held-out MoE rows follows.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TYPE_CHECKING

import pandas as pd

if TYPE_CHECKING:
    from trainscale.published.measurements import PublishedData
    from trainscale.sim.calibration import Calibration
    from trainscale.sim.catalogue import Catalogue

__all__ = ["MOE_FILE", "moe_accuracy", "print_moe"]

#: The calibration file of published MoE runs whose pooled held-out error is the headline.
MOE_FILE = "moe-measurements.csv"


def moe_accuracy(held: pd.DataFrame, in_sample: pd.DataFrame) -> pd.DataFrame:
    """Per source, held out with the in-sample MAPE beside it
    (:func:`trainscale.published.holdout.accuracy`), then the pooled line of
    :data:`MOE_FILE` and ``all``."""
    from trainscale.published.holdout import accuracy

    table = accuracy(held, in_sample)
    own = held["data_file"] == MOE_FILE
    pooled = accuracy(held[own], in_sample[in_sample["data_file"] == MOE_FILE]).iloc[-1:]
    pooled = pooled.assign(source=f"{MOE_FILE} (pooled)")
    return pd.concat([table.iloc[:-1], pooled, table.iloc[-1:]], ignore_index=True)


def _coverage(held: pd.DataFrame) -> None:
    from trainscale.sim.intervals import source_out_coverage

    rows = source_out_coverage(held)
    print(
        "\nMoE 80 % prediction intervals, source-out (each MoE source against intervals fitted "
        "without it):"
    )
    for name, part in [*rows.groupby("citation", sort=True), ("all", rows)]:
        print(
            f"  {str(name)[:60]:<60}  {len(part):3d} rows  {100 * part['covered'].mean():5.1f} % "
            f"covered  median width {part['width_pct'].median():6.1f} %"
        )


def print_moe(
    published: PublishedData, calibration: Calibration, catalogue: Catalogue, *, holdout: bool,
    format_table: Callable[[pd.DataFrame], str],
) -> float | None:  # fmt: skip
    """Print the MoE section, its tables as ``format_table`` writes them (``trainscale
    validate``'s); return the pooled held-out MAPE of :data:`MOE_FILE` (None without
    ``holdout`` or without MoE rows)."""
    from trainscale.calibrate.moe import held_out_moe, moe_predictions
    from trainscale.published.summary import summarise

    rows = published.moe
    if rows.empty:
        return None
    in_sample, rejects = moe_predictions(rows, calibration, catalogue)
    print(
        f"\nmixture-of-experts runs, tokens/s per GPU ({len(rows)} rows, "
        f"{rows['citation'].nunique()} sources, {len(in_sample)} predicted)"
    )
    for r in rejects.drop_duplicates("row").itertuples():
        print(f"  not predicted: {rows['data_file'].iloc[r.row]} line {rows['csv_row'].iloc[r.row]}"
              f" ({r.column}): {r.reason}")  # fmt: skip
    if not holdout:
        print(f"in sample: the shipped calibration {calibration.calibration_id}")
        print(format_table(summarise(in_sample)))
        return None
    start = time.perf_counter()
    held = held_out_moe(rows, calibration, catalogue=catalogue)
    seconds = time.perf_counter() - start
    print(
        "held out: each MoE source predicted by an MoE fit to the other MoE sources, dense "
        f"parameters as shipped ({rows['citation'].nunique()} fits, {seconds:.0f} s); in sample: "
        f"the shipped calibration {calibration.calibration_id}"
    )
    table = moe_accuracy(held, in_sample)
    print(format_table(table))
    _coverage(held)
    pooled = table.loc[table["source"] == f"{MOE_FILE} (pooled)", "held_out_mape_pct"]
    return float(pooled.iloc[0])
