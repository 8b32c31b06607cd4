"""``trainscale validate``: accuracy of the simulator against every published measurement.

Without ``--holdout`` it prints the in-sample error of the shipped calibration (fitted on every
source, so it flatters the model): per published source, how many rows were predicted and the
mean, median and largest absolute percentage error of tokens/s per GPU, then ``all``.

With ``--holdout`` it leads with the error on each source when that source is left out of the
fit (one refit per source, a minute or two; :func:`trainscale.calibrate.fit.held_out_predictions`):
per source, then per framework, then overall, each with the in-sample MAPE beside it.

With ``--holdout`` it then reports the 80 % prediction intervals' coverage of the held-out rows,
measured source-out (:func:`trainscale.sim.intervals.source_out_coverage`), per framework and all.

Then the mixture-of-experts runs (:mod:`trainscale.commands.validate_moe`): in sample, and with
``--holdout`` each MoE source left out of the MoE fit, per source, pooled over
``moe-measurements.csv`` and all, with the MoE intervals' source-out coverage.

With ``--pilots`` it measures the path a user takes with pilot runs instead
(:mod:`trainscale.calibrate.pilot_series`): every published scaling series (same source, stack,
GPU, model, sequence length, precision, recomputation and layout at two or more GPU counts) is
calibrated on its smallest GPU count, with a base fitted without the series' source, and predicts
its larger counts; per series and overall it prints the MAPE of tokens/s per GPU of that
prediction, of the base without calibration and of perfect weak scaling (the pilots' tokens/s per
GPU holds), and the source-out coverage of the 80 % pilot intervals. ``-o`` then writes the
per-row table (:data:`trainscale.calibrate.pilot_series.PILOT_TABLE_COLUMNS`, as
``results/pilots.parquet``).

Without ``--pilots``, both then compare the predicted peak memory per GPU with the published
memory figures (``data/published/memory.csv``, :mod:`trainscale.published.memory`) per source
and table, count the published throughput configurations that fit, that are flagged within the
memory margin (:mod:`trainscale.sim.memory_margin`) and that are rejected, then summarise the
nccl-tests bus-bandwidth rows (all sizes, and the
rows of 16 MiB and more: smaller messages are read from plots to about ±5 GB/s, too coarse to
score) and count every row that could not be predicted, with its reason. ``-o`` writes the
per-row table (CSV or Parquet), with the held-out prediction and error beside each row under
``--holdout``.
"""

from __future__ import annotations

import argparse
import time
from typing import TYPE_CHECKING

import pandas as pd

from trainscale.commands.output import add_output_option, shipped_inputs
from trainscale.io.numbers import option_number

if TYPE_CHECKING:
    from trainscale.published.measurements import PublishedData
    from trainscale.sim.catalogue import Catalogue

NAME = "validate"
HELP = "compare predictions with the published measurements (MAPE per source)"

__all__ = ["HELP", "NAME", "add_arguments", "format_pilots", "format_table", "run"]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_output_option(
        parser,
        "per-row table (.csv/.parquet); with --holdout it adds "
        "held_out_predicted_tokens_per_s_per_gpu, held_out_error_pct, held_out_ape_pct",
    )
    parser.add_argument(
        "--holdout",
        action="store_true",
        help="lead with the out-of-sample error: refit without each source, then predict it "
        "(one fit per source, a minute or two)",
    )
    parser.add_argument(
        "--pilots",
        action="store_true",
        help="measure pilot calibration instead: calibrate every published scaling series on its "
        "smallest GPU count (base fitted without its source), predict its larger counts, compare "
        "with the base and with perfect weak scaling (about half a minute)",
    )
    parser.add_argument(
        "--max-mape",
        type=option_number(minimum=0),
        help="exit with status 1 if the overall MAPE of tokens/s per GPU exceeds this (percent): "
        "the held-out MAPE with --holdout, else the in-sample MAPE",
    )


def _number(value: float, width: int, digits: int) -> str:
    return f"{'–':>{width}}" if pd.isna(value) else f"{value:{width}.{digits}f}"


def format_table(summary: pd.DataFrame, *, label: str | None = None) -> str:
    """Aligned text of a summary: :func:`trainscale.published.accuracy.summarise` (``rows``,
    ``mape_pct``, ``median_ape_pct``, ``max_ape_pct``) or
    :func:`trainscale.published.holdout.accuracy`
    (held-out columns, then ``in_sample_mape_pct``). ``label`` names the first column (default:
    the frame's own first column name)."""
    first = summary.columns[0]
    label = label or first
    width = max(len(label), *(len(str(s)) for s in summary[first]))
    held = "held_out_mape_pct" in summary.columns
    if held:
        lines = [f"{label:<{width}}  rows  held-out MAPE %  median %   max %  in-sample MAPE %"]
    else:
        lines = [f"{label:<{width}}  rows   MAPE %  median %   max %"]
    for row in summary.to_dict("records"):
        text = f"{row[first]!s:<{width}}  {int(row['rows']):4d}"
        if held:
            text += (
                f"  {_number(row['held_out_mape_pct'], 15, 2)}"
                f"  {_number(row['held_out_median_ape_pct'], 8, 2)}"
                f"  {_number(row['held_out_max_ape_pct'], 6, 1)}"
                f"  {_number(row['in_sample_mape_pct'], 16, 2)}"
            )
        else:
            text += (
                f"  {_number(row['mape_pct'], 7, 2)}  {_number(row['median_ape_pct'], 8, 2)}"
                f"  {_number(row['max_ape_pct'], 6, 1)}"
            )
        lines.append(text)
    return "\n".join(lines)


def _held_out(
    throughput: pd.DataFrame, calibration_id: str, published: PublishedData, catalogue: Catalogue
) -> tuple[pd.DataFrame, float]:
    """Print the held-out block; return the held-out rows and the overall held-out MAPE."""
    from trainscale.calibrate.fit import held_out_predictions
    from trainscale.published.holdout import accuracy
    from trainscale.published.scale import in_band_order, scale_band

    start = time.perf_counter()
    held = held_out_predictions(published, catalogue=catalogue)
    seconds = time.perf_counter() - start
    sources = accuracy(held, throughput)
    frameworks = accuracy(held, throughput, by="framework")
    bands = in_band_order(
        accuracy(
            held.assign(scale_band=scale_band(held["num_gpus"])),
            throughput.assign(scale_band=scale_band(throughput["num_gpus"])),
            by="scale_band",
        )
    )
    print(
        "tokens/s per GPU, held out: each source predicted by a fit to all the other sources "
        f"({held['citation'].nunique()} fits, {seconds:.0f} s); in sample: the shipped "
        f"calibration {calibration_id}, fitted on every source"
    )
    print(format_table(sources.iloc[:-1]))
    print("\nper framework")
    print(format_table(frameworks.iloc[:-1]))
    print("\nper scale band")
    print(format_table(bands))
    print("\noverall")
    print(format_table(sources.iloc[-1:], label="source"))
    _coverage(held)
    return held, float(sources["held_out_mape_pct"].iloc[-1])


def _coverage(held: pd.DataFrame) -> None:
    """The 80 % intervals' source-out coverage (trainscale.sim.intervals), per framework and all."""
    from trainscale.published.scale import SCALE_BANDS, scale_band
    from trainscale.sim.intervals import source_out_coverage

    rows = source_out_coverage(held)
    print(
        "\n80 % prediction intervals, source-out (each source against intervals computed "
        "without it): rows covered, median width (hi - lo) / predicted"
    )
    band = scale_band(rows["num_gpus"])
    groups = [
        *rows.groupby("framework", sort=True),
        *((label, rows[band == label]) for label in SCALE_BANDS if (band == label).any()),
        ("all", rows),
    ]
    width = max(len(str(name)) for name, _ in groups)
    for name, part in groups:
        print(
            f"  {name!s:<{width}}  {len(part):4d} rows  {100 * part['covered'].mean():5.1f} % "
            f"covered  median width {part['width_pct'].median():6.1f} %"
        )


def _collectives(collectives: pd.DataFrame) -> None:
    from trainscale.published.holdout import PROBLEM_REPORT_SOURCES, collective_accuracy

    table = collective_accuracy(collectives)
    if table.empty:
        return
    print(
        "\nnccl-tests bus bandwidth, predicted vs published (in sample: every fit uses these rows)"
    )
    print(format_table(table[table["sizes"] == "all"].drop(columns="sizes")))
    large = table[table["sizes"] == ">= 16 MiB"].drop(columns="sizes")
    scored = int(large["rows"].iloc[-1]) if len(large) else 0
    print(
        f"\nmessages of 16 MiB and more: {scored} of {len(collectives)} rows (below 16 MiB the "
        "published values are read from plots to about ±5 GB/s, too coarse to score)"
    )
    if len(large):
        print(format_table(large))
    healthy = table[table["sizes"] == ">= 16 MiB, no problem reports"].drop(columns="sizes")
    if len(healthy):
        print(
            f"\nthe same without the problem reports ({', '.join(PROBLEM_REPORT_SOURCES)}: "
            "bandwidth below what the reporter expected, posted to ask what is wrong; the data "
            "README: 'real-world spread, not attainable peaks')"
        )
        print(format_table(healthy.tail(1)))


def _memory(throughput: pd.DataFrame) -> None:
    from trainscale.published.memory import load_memory_figures, memory_accuracy, memory_summary
    from trainscale.sim.memory_margin import MEMORY_REJECT_FRACTION

    accuracy = memory_accuracy(throughput, load_memory_figures())
    summary = memory_summary(accuracy)
    left_out = accuracy.attrs["left_out"]
    print(
        "\npeak memory per GPU, predicted vs published (data/published/memory.csv"
        + (f"; {left_out} figures whose rows were not predicted left out" if left_out else "")
        + "):"
    )
    print(f"  {'source':<48} {'table':<28} {'rows':>4} {'MAPE %':>7} {'min %':>7} {'max %':>7}")
    for r in summary.itertuples(index=False):
        print(
            f"  {r.source[:48]:<48} {r.table_or_figure[:28]:<28} {r.rows:>4d} "
            f"{r.mape_pct:>7.1f} {r.min_error_pct:>+7.1f} {r.max_error_pct:>+7.1f}"
        )
    fits = throughput["fits_memory"].astype(bool)
    flagged = throughput["extrapolation"].fillna("").str.contains("memory:")
    print(
        f"published throughput configurations: {int((fits & ~flagged).sum())} fit, "
        f"{int((fits & flagged).sum())} flagged within the memory margin (rejected beyond "
        f"{MEMORY_REJECT_FRACTION:g} x HBM), {int((~fits).sum())} rejected"
    )


def format_pilots(table: pd.DataFrame) -> str:
    """Aligned text of :func:`trainscale.calibrate.pilot_series.summary`."""
    first = table.columns[0]
    width = max(len(first), *(len(str(s)) for s in table[first]))
    lines = [
        f"{first:<{width}}  rows  pilot GPUs  max GPUs  pilot-calibrated %  base %  "
        "weak scaling %  covered %"
    ]
    for row in table.to_dict("records"):
        lines.append(
            f"{row[first]!s:<{width}}  {int(row['rows']):4d}  {int(row['pilot_gpus']):10d}"
            f"  {int(row['max_gpus']):8d}  {_number(row['pilot_mape_pct'], 18, 2)}"
            f"  {_number(row['base_mape_pct'], 6, 2)}"
            f"  {_number(row['weak_scaling_mape_pct'], 14, 2)}"
            f"  {_number(row['covered_pct'], 9, 1)}"
        )
    return "\n".join(lines)


def format_reach(evidence: pd.DataFrame) -> str:
    """Aligned text of :func:`trainscale.calibrate.pilot_reach.reach_evidence`."""
    lines = [
        "doublings  rows  sources  pilot-calibrated %  shipped level %  weak scaling %  "
        "pilot helps  shipped width covers %  capped"
    ]
    for r in evidence.itertuples(index=False):
        span = f"{r.log2_distance_from:g}-{r.log2_distance_to:g}".replace("inf", "")
        lines.append(
            f"{span:<9}  {r.rows:4d}  {r.sources:7d}  {_number(r.pilot_mape_pct, 18, 2)}"
            f"  {_number(r.base_mape_pct, 15, 2)}  {_number(r.weak_scaling_mape_pct, 14, 2)}"
            f"  {'yes' if r.pilot_helps else 'no':>11}"
            f"  {_number(r.shipped_width_covered_pct, 22, 1)}"
            f"  {'yes' if r.capped_at_shipped else 'no':>6}"
        )
    return "\n".join(lines)


def _reach_tables(
    errors: pd.DataFrame,
    published: PublishedData,
    catalogue: Catalogue,
    *,
    bases: dict,
    calibrated: dict,
) -> None:
    """The evidence for where a pilot calibration helps (:mod:`trainscale.calibrate.pilot_reach`,
    :mod:`trainscale.calibrate.pilot_transfer`)."""
    from trainscale.calibrate.pilot_reach import reach, reach_evidence
    from trainscale.calibrate.pilot_transfer import transfer_errors, transfer_evidence

    evidence = reach_evidence(errors)
    print(
        "\nwhere the pilots' level helps, by distance (doublings from the pilot GPU count; every "
        "source weighing the same): MAPE % of the pilot-calibrated prediction and of the shipped "
        "level; shipped width covers: rows inside the shipped interval's width placed around the "
        "pilot-calibrated prediction (capped: the pilot interval is never wider than the shipped "
        "one there)"
    )
    print(format_reach(evidence))
    print(
        f"reach: {reach(evidence):g} doublings; beyond it a prediction keeps the shipped level "
        "and interval, flagged beyond_pilot_reach"
    )
    transfers = transfer_evidence(
        transfer_errors(published, errors, calibrated=calibrated, bases=bases, catalogue=catalogue)
    )
    print(
        "\nwhat differs: each series' pilot level carried to the other rows of its source and "
        "stack (at the pilots' GPU count or more), MAPE %, every source weighing the same"
    )
    for r in transfers.itertuples(index=False):
        verdict = "carried" if r.carried else "shipped level kept"
        print(
            f"  {r.relation:<15} {r.rows:5d} rows {r.sources:2d} sources  pilot level "
            f"{_number(r.pilot_mape_pct, 6, 2)}  shipped level {_number(r.base_mape_pct, 6, 2)}"
            f"  -> {verdict}"
        )


def _pilots(args: argparse.Namespace, published: PublishedData, catalogue: Catalogue) -> int:
    """``--pilots``: print the pilot validation; -o writes its rows; --max-mape gates its MAPE."""
    from trainscale import __version__
    from trainscale.calibrate.pilot_series import pilot_errors, pilot_table
    from trainscale.io.tables import write_table
    from trainscale.published.scale import in_band_order, scale_band
    from trainscale.sim.calibration import load_calibration
    from trainscale.tables.pilots import summary

    start = time.perf_counter()
    calibration = load_calibration()
    bases: dict = {}
    calibrated: dict = {}
    errors = pilot_errors(
        published, catalogue=catalogue, shipped=calibration, bases=bases, calibrated=calibrated
    )
    errors = pilot_table(
        errors, calibration_id=calibration.calibration_id, simulator_version=__version__
    )
    table = summary(errors)
    seconds = time.perf_counter() - start
    overall = table.iloc[-1]
    print(
        f"pilot calibration on {len(table) - 1} published scaling series "
        f"({errors['citation'].nunique()} sources, {seconds:.0f} s): each calibrated on its "
        "smallest GPU count with a base fitted without its source, predicting its larger counts; "
        "MAPE % of tokens/s per GPU of the pilot-calibrated prediction, of the base without "
        "calibration and of perfect weak scaling; covered: larger-scale rows inside the 80 % "
        "pilot interval, fitted without the row's source"
    )
    print(format_pilots(table.iloc[:-1]))
    print("\nper source")
    print(format_pilots(summary(errors, by="citation").iloc[:-1]))
    banded = errors.assign(scale_band=scale_band(errors["num_gpus"]))
    print("\nper scale band (of the predicted row)")
    print(format_pilots(in_band_order(summary(banded, by="scale_band"))))
    print("\nper framework")
    print(format_pilots(summary(errors, by="framework").iloc[:-1]))
    print("\noverall")
    print(format_pilots(table.iloc[-1:]))
    _reach_tables(errors, published, catalogue, bases=bases, calibrated=calibrated)
    beats = overall["pilot_mape_pct"] < min(
        overall["base_mape_pct"], overall["weak_scaling_mape_pct"]
    )
    print(
        f"\npilot-calibrated {overall['pilot_mape_pct']:.2f} % vs base "
        f"{overall['base_mape_pct']:.2f} % and weak scaling "
        f"{overall['weak_scaling_mape_pct']:.2f} %: "
        f"{'beats' if beats else 'does not beat'} both; 80 % intervals cover "
        f"{overall['covered_pct']:.1f} % of {int(overall['rows'])} larger-scale rows"
    )
    if args.output:
        write_table(errors, args.output)
    if args.max_mape is not None and overall["pilot_mape_pct"] > args.max_mape:
        print(
            f"\noverall pilot-calibrated MAPE {overall['pilot_mape_pct']:.2f} % exceeds "
            f"--max-mape {args.max_mape:.2f} %"
        )
        return 1
    return 0


def run(args: argparse.Namespace) -> int:
    from trainscale.io.tables import check_output, write_table
    from trainscale.published.accuracy import validate_published
    from trainscale.published.measurements import load_published
    from trainscale.published.summary import summarise
    from trainscale.sim.calibration import load_calibration
    from trainscale.sim.catalogue import load_catalogue

    if args.output is not None:
        check_output(args.output, inputs=shipped_inputs())
    catalogue = load_catalogue()  # the shipped catalogues, calibration and measurements
    calibration = load_calibration(frameworks=catalogue.framework_keys)
    published = load_published(
        hardware=catalogue.hardware, models=catalogue.models,
        frameworks=catalogue.framework_keys,
    )  # fmt: skip
    if args.pilots:
        if args.holdout:
            from trainscale.errors import TrainscaleError

            raise TrainscaleError("--pilots and --holdout are separate reports: give one")
        return _pilots(args, published, catalogue)
    tables = validate_published(calibration, published, catalogue=catalogue)
    throughput = tables["throughput"]
    in_sample = summarise(throughput)
    overall = float(in_sample.loc[in_sample["source"] == "all", "mape_pct"].iloc[0])
    held = None
    if args.holdout:
        from trainscale.commands.validate_power import print_power_holdout

        held, overall = _held_out(throughput, calibration.calibration_id, published, catalogue)
        print_power_holdout(calibration, catalogue)
    else:
        print(
            "tokens/s per GPU, predicted vs published, in sample: the shipped calibration "
            f"{calibration.calibration_id} was fitted on these sources (--holdout for the error "
            "on a source left out of the fit)"
        )
        print(format_table(in_sample))
    from trainscale.commands.validate_moe import print_moe

    print_moe(published, calibration, catalogue, holdout=args.holdout, format_table=format_table)
    _memory(throughput)
    _collectives(tables["collectives"])
    rejects = tables["rejects"]
    print(f"\n{len(rejects)} published rows could not be predicted:")
    from trainscale.tables.validation import readable_reason

    reasons = rejects["reason"].map(readable_reason).value_counts().sort_index()
    for reason, count in reasons.items():
        print(f"  {count:3d}  {reason}")
    if args.output:
        rows = throughput
        if held is not None:
            from trainscale.published.holdout import with_held_out

            rows = with_held_out(throughput, held)
        write_table(rows, args.output)
    if args.max_mape is not None and overall > args.max_mape:
        kind = "held-out" if args.holdout else "in-sample"
        print(f"\noverall {kind} MAPE {overall:.2f} % exceeds --max-mape {args.max_mape:.2f} %")
        return 1
    return 0
