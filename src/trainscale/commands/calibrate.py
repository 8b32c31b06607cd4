"""``trainscale calibrate``: refit the simulator's parameters to the published measurements.

Writes the file given with ``-o`` with each value, its bounds, prior and meaning, the rows it
was fitted on, the rows that could not be represented and why, the residual error and the content
hash ``calibration_id``. See :mod:`trainscale.calibrate.fit` for the method. ``-o`` is required:
``-o data/calibration.yaml`` replaces the shipped calibration, which every simulated row and the
workflow use, so that is never done by a command given without an option (a new user's
``trainscale calibrate`` once overwrote it; user trial item 6). The refit is deterministic, so
``-o data/calibration.yaml`` on unchanged data rewrites the same file byte for byte.

``--measurements PATH [PATH ...] -o mine.yaml`` calibrates on a user's own cluster instead: it
refits what the rows identify (:mod:`trainscale.calibrate.user`) on the measured tokens/s per GPU
of every PATH: CSV or Parquet tables (configuration columns plus
``measured_tokens_per_s_per_gpu``), Parquet written by ``trainscale ingest``, run folders
(ingested on the fly with ``trainscale ingest``'s reader) and folders of these
(:mod:`trainscale.calibrate.measurements`, which also lists the checks). It prints a small table:
the tokens/s-per-GPU error of the shipped calibration and of each candidate refit on the measured
rows, and each candidate's leave-largest-scale-out error (fitted without the largest GPU count,
predicting it); where rows carry measured power, the power refit's error beside it
(:func:`power_error_table`, :mod:`trainscale.calibrate.user_power`); warnings (agreeing
duplicate configurations, a refitted parameter left on its bound) go to stderr and do not change
the exit status.

``--profile NAME=V1,V2,...`` and ``--prior-scan [S1,S2,...]`` write nothing to the calibration:
they print how firmly the published data determine the parameters and the study's claims
(:mod:`trainscale.paper.sensitivity`), optionally also as CSV (``--table``).
"""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from trainscale.commands.output import add_output_option, shipped_inputs

if TYPE_CHECKING:
    import pandas as pd

    from trainscale.calibrate.pilot import PilotReport
    from trainscale.calibrate.user_power import UserPowerFit
    from trainscale.published.measurements import PublishedData
    from trainscale.sim.calibration import Calibration
    from trainscale.sim.catalogue import Catalogue

NAME = "calibrate"
HELP = "fit the simulator's free parameters to data/published/measurements.csv (-o FILE)"

__all__ = [
    "HELP",
    "NAME",
    "add_arguments",
    "error_table",
    "moved_table",
    "power_error_table",
    "run",
]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_output_option(
        parser,
        "calibration file to write (required to refit; -o data/calibration.yaml replaces the "
        "shipped calibration)",
    )
    parser.add_argument(
        "--published", type=Path, help="measurements CSV (default data/published/measurements.csv)"
    )
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument(
        "--measurements",
        type=Path,
        nargs="+",
        metavar="PATH",
        help="calibrate on your own cluster (needs -o): CSV/Parquet tables of configurations "
        "with measured_tokens_per_s_per_gpu, Parquet written by trainscale ingest, run folders "
        "(run.yaml + logs, ingested on the fly) or folders of these; rows with measured power "
        "(measured_power_w_per_gpu, an ingested power_w_per_gpu, measured_node_power_w or a "
        "node_power_log CSV) also refit the power terms",
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
    from trainscale.io.numbers import number_problem, parse_number

    items = [item.strip() for item in text.split(",") if item.strip()]
    if not items:
        raise TrainscaleError(f"{option}: expected comma-separated numbers, got {text!r}")
    values = []
    for item in items:
        # --prior-scan: inf is a documented factor (no prior); nothing else but plain numbers
        number = math.inf if option == "--prior-scan" and item == "inf" else parse_number(item)
        if number is None:
            raise TrainscaleError(f"{option}: {number_problem(item)}")
        values.append(number)
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
    from trainscale.calibrate.moved import level_changes
    from trainscale.calibrate.stored import read_stored
    from trainscale.calibrate.user import calibrate_user
    from trainscale.errors import TrainscaleError
    from trainscale.ingest.runs import ingest_run
    from trainscale.paths import data_dir
    from trainscale.published.measurements import load_published
    from trainscale.sim.calibration import load_calibration

    if args.output is None:
        raise TrainscaleError(
            "--measurements needs -o/--output (the shipped data/calibration.yaml is not "
            "overwritten by a user calibration)"
        )
    if args.published is not None or args.table is not None:
        raise TrainscaleError("--measurements takes neither --published nor --table")

    def ingest(run_dir: Path) -> pd.DataFrame:
        return ingest_run(run_dir, hardware=catalogue.hardware, models=catalogue.models)[0]

    from trainscale.ingest.node_power_log import node_power_w
    from trainscale.sim.energy import load_power_terms

    def shipped() -> PublishedData:  # read only where the base has no stored pilot errors
        return load_published(
            hardware=catalogue.hardware, models=catalogue.models,
            frameworks=catalogue.framework_keys,
        )  # fmt: skip

    base_path = data_dir() / "calibration.yaml"
    base = load_calibration(base_path, frameworks=catalogue.framework_keys)
    result = calibrate_user(
        args.measurements, args.output, base=base, published=shipped,
        catalogue=catalogue, stored=read_stored(base_path), ingest=ingest,
        node_power_log=lambda p: node_power_w(p).mean_w, base_terms=load_power_terms(),
    )  # fmt: skip
    for line in result.measurements.warnings if result.measurements else []:
        print(f"trainscale calibrate: warning: {line}", file=sys.stderr)
    for line in result.notes:
        print(f"trainscale calibrate: note: {line}", file=sys.stderr)
    values = result.calibration.as_dict()
    files = result.measurements.files if result.measurements else args.measurements
    print(f"calibration_id {result.calibration.calibration_id} -> {args.output}")
    print(f"refitted on {len(result.rows)} rows of {', '.join(map(str, files))}:")
    for name in result.refitted:
        print(f"  {name:<40} {values[name]:.6g}")
    if result.not_refitted:
        print(f"not refitted (no row responds to them): {', '.join(result.not_refitted)}")
    print(error_table(result.report))
    print(moved_table(level_changes(result.rows, base, result.calibration, catalogue)))
    if reach_line(result.calibration):
        print(reach_line(result.calibration))
    if result.power is not None:
        print(power_error_table(result.power))
    for bound in result.on_bounds:
        print(
            f"trainscale calibrate: warning: refitted parameter {bound} sits on its bound: the "
            "bound, not the measurements, holds it; check the measurements' units and "
            "configuration columns",
            file=sys.stderr,
        )
    return 0


def reach_line(calibration: Calibration) -> str:
    """Up to which GPU counts the refitted level is used (:mod:`trainscale.calibrate.pilot_reach`)
    as one line of text ("" without a pilot block or a finite reach)."""
    pilot = calibration.intervals.pilot if calibration.intervals is not None else None
    if pilot is None or math.isinf(pilot.reach):
        return ""
    top = max(pilot.pilot_gpus) * 2.0**pilot.reach
    return (
        f"reach: the refitted level is used up to {pilot.reach:g} doublings from the measured GPU "
        f"counts ({min(pilot.pilot_gpus)}-{top:,.0f} GPUs), as far as pilot-calibrated "
        "predictions beat the shipped level on the published series (trainscale validate "
        "--pilots); beyond, the shipped level and interval, flagged beyond_pilot_reach"
    )


def moved_table(changes: pd.DataFrame) -> str:
    """What the calibration moved (:func:`trainscale.calibrate.moved.level_changes`), the pairs
    it moves by 0.1 % or more or that a measured row ran, as lines of text."""
    import pandas as pd

    shown = changes[(changes["moved_pct"].abs() >= 0.1) | changes["measured"]]
    lines = [
        "what it moves: tokens/s per GPU of the measured configurations run on each stack and "
        "GPU, median change (measured: a measured row ran that stack on that GPU; a pair no row "
        "ran keeps the shipped level, flagged unmeasured_level in predictions, and moves only "
        "by refitted cluster-wide terms such as the network)"
    ]
    for r in shown.itertuples(index=False):
        where = "measured" if r.measured else "not measured: cluster-wide terms only"
        moved = "—" if pd.isna(r.moved_pct) else f"{r.moved_pct:+.1f} %"
        lines.append(f"  {r.framework:<10} {r.gpu:<16} {moved:>8}  {where}")
    unmoved = len(changes) - len(shown)
    if unmoved:
        lines.append(f"  ({unmoved} other stack and GPU pairs: unchanged)")
    return "\n".join(lines)


def error_table(report: PilotReport) -> str:
    """The report's errors as a small table: tokens/s-per-GPU MAPE on the measured rows of the
    shipped calibration and the chosen refit, and each candidate's leave-largest-scale-out
    MAPE (``-`` where the rows hold one GPU count, or for the shipped calibration, which is not
    fitted)."""

    def pct(value: float) -> str:
        return "-" if value != value else f"{value:.2f} %"  # NaN: not measurable

    scale = (
        f"fit < {report.largest_gpus} GPUs, predict {report.largest_gpus}"
        if report.largest_gpus else "one GPU count: not measurable"
    )  # fmt: skip
    lines = [
        "tokens/s per GPU error (MAPE):",
        f"  {'calibration':<28} {'measured rows':>14}   leave-largest-scale-out ({scale})",
        f"  {'shipped (no refit)':<28} {pct(report.shipped_mape_pct):>14}   -",
    ]
    for rung in report.ladder.itertuples():
        mark = "refit: " + str(rung.rung) + (" (chosen)" if rung.chosen else "")
        here = pct(report.in_sample_mape_pct) if rung.chosen else ""
        lines.append(f"  {mark:<28} {here:>14}   {pct(float(rung.llso_mape_pct))}")
    return "\n".join(lines)


def power_error_table(power: UserPowerFit) -> str:
    """The power refit's errors beside the throughput table: per scope, the measured rows and
    the MAPE of the shipped and of the refitted calibration (``-`` without rows)."""

    def pct(value: float) -> str:
        return "-" if value != value else f"{value:.2f} %"

    lines = [
        "power error (MAPE) on the rows with measured power:",
        f"  {'scope':<12} {'rows':>5} {'shipped':>10} {'refit':>10}",
    ]
    for row in power.errors.itertuples():
        lines.append(f"  {row.scope:<12} {row.rows:>5} {pct(row.shipped_mape_pct):>10} "
                     f"{pct(row.refit_mape_pct):>10}")  # fmt: skip
    terms = power.terms
    lines.append(
        f"  refit: power_compute/memory/comm_frac "
        f"{power.calibration.power_compute_frac:.4g} / {power.calibration.power_memory_frac:.4g}"
        f" / {power.calibration.power_comm_frac:.4g}, host_power_scale {terms.host_power_scale:g}"
    )
    return "\n".join(lines)


def _power_rows(catalogue: Catalogue) -> object:
    """The shipped metered power rows (``data/published/power-measurements.csv``) the power
    stage fits on; None where the data folder has none."""
    from trainscale.paths import data_dir
    from trainscale.published.power_rows import load_power_rows
    from trainscale.published.sources import load_sources

    folder = data_dir() / "published"
    if not (folder / "power-measurements.csv").is_file():
        return None
    sources = load_sources(folder / "sources.yaml", frameworks=catalogue.framework_keys)
    return load_power_rows(folder / "power-measurements.csv", catalogue, sources)


def _check_outputs(args: argparse.Namespace) -> None:
    """Refuse, before anything is read, an output that names an input (or the other output)
    or has a suffix its writer does not write (:func:`trainscale.io.outputs.check_outputs`)."""
    from trainscale.io.outputs import check_outputs

    refit = args.measurements is None and args.profile is None and args.prior_scan is None
    check_outputs(
        {"-o": args.output, "--table": args.table},
        # a refit does not read calibration.yaml: -o data/calibration.yaml replaces it
        [*(args.measurements or []), args.published, *shipped_inputs(calibration=not refit)],
        suffixes={"-o": (".yaml", ".yml"), "--table": (".csv",)},
    )


def run(args: argparse.Namespace) -> int:
    from trainscale.calibrate.shipped import calibrate
    from trainscale.published.measurements import load_published
    from trainscale.sim.calibration import parameters_at_bounds
    from trainscale.sim.catalogue import load_catalogue
    from trainscale.sim.parameters import parameters

    _check_outputs(args)
    catalogue = load_catalogue()  # the shipped catalogues, loaded once for the whole command
    if args.measurements is not None:
        return _user(args, catalogue)
    published = load_published(
        args.published, hardware=catalogue.hardware, models=catalogue.models,
        frameworks=catalogue.framework_keys,
    )  # fmt: skip
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
    fit = calibrate(args.output, published=published, catalogue=catalogue,
                    power_rows=_power_rows(catalogue))  # fmt: skip
    values = fit.calibration.as_dict()
    on_bound = parameters_at_bounds(fit.calibration)
    print(f"calibration_id {fit.calibration.calibration_id}")
    for spec in parameters(fit.calibration.frameworks):
        flag = "fitted" if spec.fitted else "fixed "
        bound = ""
        if spec.name in on_bound:
            bound = "  (at its bound)"
        print(f"  {flag} {spec.name:<28} {values[spec.name]:<12.6g} [{spec.lower}, {spec.upper}]"
              f"{bound}")  # fmt: skip
    mape = fit.throughput["ape_pct"].mean()
    print(f"tokens/s per GPU MAPE {mape:.2f} % over {len(fit.throughput)} rows")
    return 0
