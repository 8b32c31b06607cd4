"""``trainscale calibrate``: refit the simulator's parameters to the published measurements.

Writes the file given with ``-o`` with each value, its bounds, prior and meaning, the rows it
was fitted on, the rows that could not be represented and why, the residual error and the content
hash ``calibration_id``. See :mod:`trainscale.calibrate.fit` for the method. ``-o`` is required:
``-o data/calibration.yaml`` replaces the shipped calibration, which every simulated row and the
workflow use, so that is never done by a command given without an option (a new user's
``trainscale calibrate`` once overwrote it; user trial item 6). The refit is deterministic, so
``-o data/calibration.yaml`` on unchanged data rewrites the same file byte for byte.

``--measurements FILE -o mine.yaml`` calibrates on a user's own cluster instead: it refits only
what a cluster changes (per-framework efficiency offsets of the frameworks present, NIC and NVLink
efficiencies, congestion, straggler variation) on the measured tokens/s per GPU in FILE (CSV or
Parquet: configuration columns plus ``measured_tokens_per_s_per_gpu``), with the shipped
calibration as the prior, and writes a calibration file of the same format
(:mod:`trainscale.calibrate.user`). Run folders are ingested first (``trainscale ingest``);
the table it writes is read as is.

``--profile NAME=V1,V2,...`` and ``--prior-scan [S1,S2,...]`` write nothing to the calibration:
they print how firmly the published data determine the parameters and the study's claims
(:mod:`trainscale.paper.sensitivity`), optionally also as CSV (``--table``).
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from trainscale.published.measurements import PublishedData
    from trainscale.sim.catalogue import Catalogue

NAME = "calibrate"
HELP = "fit the simulator's free parameters to data/published/measurements.csv (-o FILE)"

__all__ = ["HELP", "NAME", "add_arguments", "run"]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "-o",
        "--output",
        type=Path,
        help="calibration file to write (required to refit; -o data/calibration.yaml replaces "
        "the shipped calibration)",
    )
    parser.add_argument(
        "--published", type=Path, help="measurements CSV (default data/published/measurements.csv)"
    )
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument(
        "--measurements",
        type=Path,
        metavar="FILE",
        help="calibrate on your own cluster: a CSV/Parquet table of configurations with "
        "measured_tokens_per_s_per_gpu (needs -o)",
    )
    mode.add_argument(
        "--profile",
        metavar="NAME=V1,V2,...",
        help="pin fitted parameter NAME at each value, refit the others, print error and claims",
    )
    mode.add_argument(
        "--prior-scan",
        metavar="S1,S2,...",
        nargs="?",
        const="default",
        help="refit with every prior's width times each factor (inf: no prior), print "
        "leave-one-source-out error and claims (default factors 0.5,1,2,4,8,inf)",
    )
    parser.add_argument(
        "--table", type=Path, help="with --profile or --prior-scan: also write the table as CSV"
    )


def _numbers(text: str, option: str) -> list[float]:
    from trainscale.errors import TrainscaleError

    try:
        values = [float(item) for item in text.split(",") if item.strip()]
    except ValueError:
        values = []
    if not values:
        raise TrainscaleError(f"{option}: expected comma-separated numbers, got {text!r}")
    return values


def _sensitivity(args: argparse.Namespace, published: PublishedData, catalogue: Catalogue) -> int:
    import pandas as pd

    from trainscale.errors import TrainscaleError
    from trainscale.paper import sensitivity

    if args.profile is not None:
        name, sep, values = args.profile.partition("=")
        if not sep:
            raise TrainscaleError(f"--profile: expected NAME=V1,V2,..., got {args.profile!r}")
        numbers = _numbers(values, "--profile")
        table = sensitivity.profile(name.strip(), numbers, published, catalogue=catalogue)
    else:
        scales = (
            sensitivity.PRIOR_SCALE_GRID
            if args.prior_scan == "default"
            else _numbers(args.prior_scan, "--prior-scan")
        )
        table = sensitivity.prior_width_scan(scales, published, catalogue=catalogue)
    with pd.option_context("display.width", 200, "display.max_columns", None):
        print(table.round(2).to_string(index=False))
    if args.table is not None:
        table.to_csv(args.table, index=False, float_format="%.4f")
        print(f"wrote {args.table}")
    return 0


def _user(args: argparse.Namespace, catalogue: Catalogue) -> int:
    from trainscale.calibrate.user import calibrate_user
    from trainscale.errors import TrainscaleError
    from trainscale.published.measurements import load_published
    from trainscale.sim.calibration import load_calibration

    if args.output is None:
        raise TrainscaleError(
            "--measurements needs -o/--output (the shipped data/calibration.yaml is not "
            "overwritten by a user calibration)"
        )
    if args.published is not None or args.table is not None:
        raise TrainscaleError("--measurements takes neither --published nor --table")
    shipped = load_published(hardware=catalogue.hardware, models=catalogue.models)
    result = calibrate_user(
        args.measurements, args.output, base=load_calibration(), published=shipped,
        catalogue=catalogue,
    )  # fmt: skip
    values = result.calibration.as_dict()
    print(f"calibration_id {result.calibration.calibration_id} -> {args.output}")
    print(f"refitted on {len(result.rows)} rows of {args.measurements}:")
    for name in result.refitted:
        print(f"  {name:<40} {values[name]:.6g}")
    if result.not_refitted:
        print(f"not refitted (no row responds to them): {', '.join(result.not_refitted)}")
    print(f"tokens/s per GPU MAPE on these rows {result.rows['ape_pct'].mean():.2f} %")
    return 0


def run(args: argparse.Namespace) -> int:
    from trainscale.calibrate.fit import calibrate
    from trainscale.published.measurements import load_published
    from trainscale.sim.calibration import PARAMETERS, parameters_at_bounds
    from trainscale.sim.catalogue import load_catalogue

    catalogue = load_catalogue()  # the shipped catalogues, loaded once for the whole command
    if args.measurements is not None:
        return _user(args, catalogue)
    published = load_published(args.published, hardware=catalogue.hardware, models=catalogue.models)
    if args.profile is not None or args.prior_scan is not None:
        return _sensitivity(args, published, catalogue)
    from trainscale.errors import TrainscaleError

    if args.table is not None:
        raise TrainscaleError("--table needs --profile or --prior-scan")
    if args.output is None:
        raise TrainscaleError(
            "a refit needs -o FILE, the calibration file to write; -o data/calibration.yaml "
            "replaces the shipped calibration that every simulated row and the workflow use "
            "(deterministic: the same data give the same file); predict with another file with "
            "trainscale predict --calibration FILE"
        )
    fit = calibrate(args.output, published=published, catalogue=catalogue)
    values = fit.calibration.as_dict()
    on_bound = parameters_at_bounds(fit.calibration)
    print(f"calibration_id {fit.calibration.calibration_id}")
    for spec in PARAMETERS:
        flag = "fitted" if spec.fitted else "fixed "
        bound = ""
        if spec.name in on_bound:
            bound = "  (at its bound)"
        print(f"  {flag} {spec.name:<28} {values[spec.name]:<12.6g} [{spec.lower}, {spec.upper}]"
              f"{bound}")  # fmt: skip
    mape = fit.throughput["ape_pct"].mean()
    print(f"tokens/s per GPU MAPE {mape:.2f} % over {len(fit.throughput)} rows")
    return 0
