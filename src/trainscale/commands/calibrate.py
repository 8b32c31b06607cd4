"""``trainscale calibrate``: refit the simulator's parameters to the published measurements.

Writes ``data/calibration.yaml`` (or ``-o``) with each value, its bounds, prior and meaning, the
rows it was fitted on, the rows that could not be represented and why, the residual error and
the content hash ``calibration_id``. See :mod:`trainscale.calibrate` for the method.
"""

from __future__ import annotations

import argparse
from pathlib import Path

NAME = "calibrate"
HELP = "fit the simulator's free parameters to data/published/measurements.csv"

__all__ = ["HELP", "NAME", "add_arguments", "run"]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "-o", "--output", type=Path, help="where to write (default data/calibration.yaml)"
    )
    parser.add_argument(
        "--published", type=Path, help="measurements CSV (default data/published/measurements.csv)"
    )


def run(args: argparse.Namespace) -> int:
    from trainscale.calibrate import calibrate
    from trainscale.calibration import PARAMETERS
    from trainscale.published import load_published

    published = load_published(args.published) if args.published else None
    fit = calibrate(args.output, published=published)
    values = fit.calibration.as_dict()
    print(f"calibration_id {fit.calibration.calibration_id}")
    for spec in PARAMETERS:
        flag = "fitted" if spec.fitted else "fixed "
        bound = ""
        if spec.fitted and values[spec.name] in (spec.lower, spec.upper):
            bound = "  (at its bound)"
        print(f"  {flag} {spec.name:<28} {values[spec.name]:<12.6g} [{spec.lower}, {spec.upper}]"
              f"{bound}")  # fmt: skip
    mape = fit.throughput["ape_pct"].mean()
    print(f"tokens/s per GPU MAPE {mape:.2f} % over {len(fit.throughput)} rows")
    return 0
