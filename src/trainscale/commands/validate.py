"""``trainscale validate``: accuracy of the simulator against every published measurement.

Prints, per published source, how many rows were predicted and the mean and median absolute
percentage error of tokens/s per GPU, then the overall figures; the nccl-tests bus-bandwidth rows
are summarised separately, and every row that could not be predicted is counted with its reason.
``-o`` writes the per-row table (CSV or Parquet).
"""

from __future__ import annotations

import argparse
from pathlib import Path

import pandas as pd

NAME = "validate"
HELP = "compare predictions with the published measurements (MAPE per source)"

__all__ = ["HELP", "NAME", "add_arguments", "run"]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("-o", "--output", type=Path, help="per-row table (.csv/.parquet)")
    parser.add_argument(
        "--holdout",
        action="store_true",
        help="also report out-of-sample error: refit without each source, then predict it",
    )
    parser.add_argument(
        "--max-mape",
        type=float,
        help="exit with status 1 if the overall MAPE of tokens/s per GPU exceeds this (percent)",
    )


def _format(summary: pd.DataFrame) -> str:
    width = max(len(str(s)) for s in summary["source"])
    lines = [f"{'source':<{width}}  rows   MAPE %  median %   max %"]
    for row in summary.itertuples():
        lines.append(
            f"{row.source:<{width}}  {row.rows:4d}  {row.mape_pct:7.2f}  {row.median_ape_pct:8.2f}"
            f"  {row.max_ape_pct:6.1f}"
        )
    return "\n".join(lines)


def run(args: argparse.Namespace) -> int:
    from trainscale.calibration import load_calibration
    from trainscale.commands.predict import write_table
    from trainscale.validation import summarise, validate_published

    calibration = load_calibration()
    tables = validate_published(calibration)
    throughput = summarise(tables["throughput"])
    print(f"tokens/s per GPU, predicted vs published (calibration {calibration.calibration_id})")
    print(_format(throughput))
    if not tables["collectives"].empty:
        print("\nnccl-tests bus bandwidth, predicted vs published")
        print(_format(summarise(tables["collectives"])))
    rejects = tables["rejects"]
    print(f"\n{len(rejects)} published rows could not be predicted:")
    for reason, count in rejects["reason"].value_counts().sort_index().items():
        print(f"  {count:3d}  {reason}")
    if args.holdout:
        from trainscale.calibrate import leave_one_source_out

        print("\nheld out: each source predicted by a fit to all the other sources")
        print(_format(leave_one_source_out()))
    if args.output:
        write_table(tables["throughput"], args.output)
    overall = float(throughput.loc[throughput["source"] == "all", "mape_pct"].iloc[0])
    if args.max_mape is not None and overall > args.max_mape:
        print(f"\noverall MAPE {overall:.2f} % exceeds --max-mape {args.max_mape:.2f} %")
        return 1
    return 0
