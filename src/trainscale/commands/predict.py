"""``trainscale predict``: predict a table of configurations, or explain one configuration.

Two forms:

- ``trainscale predict CONFIGS.csv -o OUT.parquet [--skip-invalid]`` — a table in, a table out
  (CSV or Parquet by extension). Without ``--skip-invalid`` any invalid row is an error that lists
  every invalid row, its column and the allowed values; with it, valid rows are predicted and the
  rejected ones are written to ``OUT.rejects.csv`` with their reasons.
- ``--calibration FILE`` predicts with another calibration file (a user calibration written by
  ``trainscale calibrate --measurements``) instead of ``data/calibration.yaml``.
- ``trainscale predict --model llama2-7b --gpu h100-sxm-80gb --num-gpus 2048 --sharding fsdp ...``
  — one configuration, printed as a readable breakdown (time by phase and collective, memory,
  power). A configuration that does not fit in memory prints a warning and exits with status
  :data:`EXIT_DOES_NOT_FIT` (3); one that spends more than :data:`BUBBLE_WARNING_FRAC` of its
  step in the pipeline bubble prints a warning naming a batch that shrinks it (exit 0).
  ``--paper-setup`` fills every option not given with the paper setup of
  :mod:`trainscale.paper.setup`, which the ``claims`` table uses, so that the breakdown
  reproduces the table's numbers.

Input checks made here, before the simulator runs (each a one-line error naming the file and the
row, column or key; docs/bad-input.md lists them all): ``-o`` with an extension other than
``.csv``/``.parquet``, or naming the input file (or its rejects file naming it), is refused
before anything is read; the table's structure (:func:`trainscale.io.tables.read_table`); a
missing required column; a number column holding text that is not a plain number
(:func:`trainscale.sim.inputs.check_table`; text that is a number is converted, so the output's
dtypes are the schema's, never the input's); every number outside its plausible range
(:data:`trainscale.schema.NUMERIC_BOUNDS`, checked by the simulator's validation). A column close
to a configuration column's name (``framwork``) is a warning naming that column; other unknown
columns are carried through untouched. With ``--skip-invalid`` every row with any bad value goes
to the rejects file with its reason, written as the input had it, and the valid rows are
predicted. The output is written to a temporary file in its folder and renamed, so two runs
writing one file never mix and an unwritable ``-o`` is a one-line error; the simulator's own
output checks (:func:`trainscale.sim.simulate.predict`) run before anything is written.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import pandas as pd

from trainscale.commands.output import shipped_inputs
from trainscale.commands.predict_breakdown import (
    BUBBLE_WARNING_FRAC,
    breakdown,
    bubble_warning,
    fit_warning,
)
from trainscale.commands.predict_options import (
    DEFAULTS,
    PredictHelpFormatter,
    add_configuration_options,
    add_table_options,
    single_configuration,
    table_columns_help,
    table_defaults,
)
from trainscale.errors import InputFileError, TrainscaleError
from trainscale.io.tables import check_output, read_table, write_table
from trainscale.schema import REJECT_COLUMNS, names
from trainscale.sim.inputs import (
    check_table,
    missing_configuration_columns,
    unknown_column_warnings,
)

if TYPE_CHECKING:
    from trainscale.sim.calibration import Calibration

NAME = "predict"
HELP = "predict step time, throughput, MFU, communication, memory and power"

__all__ = [
    "BUBBLE_WARNING_FRAC",
    "DEFAULTS",
    "EXIT_DOES_NOT_FIT",
    "HELP",
    "NAME",
    "add_arguments",
    "breakdown",
    "bubble_warning",
    "check_table",
    "fit_warning",
    "missing_configuration_columns",
    "read_table",
    "run",
    "write_table",
]

#: Exit status of a single-configuration prediction that does not fit in GPU memory.
EXIT_DOES_NOT_FIT = 3
_REJECT_NAMES = names(REJECT_COLUMNS)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The description, the table columns (the epilog) and the options
    (:mod:`trainscale.commands.predict_options`)."""
    parser.formatter_class = PredictHelpFormatter
    parser.description = (
        f"{HELP}.\n\nA table in (CONFIGS -o OUT), or one configuration (--model, --gpu, "
        "--num-gpus, ...) printed as a breakdown.\nExit status: 0 done; 2 bad input (one line "
        f"naming file, row, column); {EXIT_DOES_NOT_FIT} the one configuration does not fit in "
        "GPU memory (its numbers are printed but cannot be run).\nOn GPUs without bf16 "
        "(V100) --precision bf16 means fp16 mixed precision."
    )
    parser.epilog = table_columns_help()
    add_table_options(parser)
    add_configuration_options(parser)


def run(args: argparse.Namespace) -> int:
    """Predict the table, or the one configuration; returns the exit status."""
    from trainscale.sim.calibration import load_calibration

    if args.output is not None:
        rejects = _rejects_path(args.output) if args.skip_invalid else None
        check_output(
            args.output, args.configs, rejects, inputs=[args.calibration, *shipped_inputs()]
        )
    if args.calibration is not None and not args.calibration.is_file():
        raise InputFileError(args.calibration, "no such calibration file")
    calibration = load_calibration(args.calibration) if args.calibration else None
    if args.configs is None:
        return _run_single(args, calibration)
    _run_table(args, calibration)
    return 0


def _run_single(args: argparse.Namespace, calibration: Calibration | None) -> int:
    """Print the breakdown of the one configuration (and write it with ``-o``); exit status
    :data:`EXIT_DOES_NOT_FIT` when it does not fit in memory."""
    from trainscale.sim.calibration import load_calibration
    from trainscale.sim.catalogue import load_catalogue
    from trainscale.sim.interval_caution import interval_caution
    from trainscale.sim.simulate import predict

    result = _with_energy(predict(
        check_table(single_configuration(args), "command line"), origin="command line",
        calibration=calibration,
    ), args)  # fmt: skip
    row = result.iloc[0]
    caution = interval_caution(
        (calibration or load_calibration()).intervals, str(row["framework"]), str(row["gpu"])
    )
    gpus = load_catalogue().hardware.gpus
    hbm = gpus[row["gpu"]].hbm_bytes / 2**30 if row["gpu"] in gpus else None
    print(breakdown(row, caution, hbm))
    if args.power_caps is not None:
        _print_caps(args, calibration)
    if args.output:
        write_table(result, args.output)
    bubble = bubble_warning(row)
    if bubble is not None:
        print(f"trainscale predict: {bubble}", file=sys.stderr)
    warning = fit_warning(row)
    if warning is not None:
        print(f"trainscale predict: {warning}", file=sys.stderr)
        return EXIT_DOES_NOT_FIT
    return 0


def _run_table(args: argparse.Namespace, calibration: Calibration | None) -> None:
    """Predict the configuration table into ``-o`` (with ``--skip-invalid``, the rejected rows
    into the rejects file), and print what it holds."""
    from trainscale.sim.calibration import load_calibration
    from trainscale.sim.simulate import predict, predict_with_rejects

    if args.output is None:
        raise TrainscaleError("a configuration table needs -o/--output")
    rejects_path = _rejects_path(args.output)
    given, defaulted = table_defaults(read_table(args.configs).reset_index(drop=True))
    if defaulted:
        values = ", ".join(
            f"{name} {DEFAULTS[name]}" if name in DEFAULTS else f"{name} dp x micro_batch"
            for name in defaulted
        )
        print(
            f"trainscale predict: note: {args.configs} leaves out {', '.join(defaulted)}: the "
            f"one-configuration defaults apply to every row ({values}), written to the output"
        )
    for warning in unknown_column_warnings(given.columns):
        print(f"trainscale predict: warning: {args.configs}: {warning}", file=sys.stderr)
    # Text that is not a number stays text: the simulator's validation names it with every
    # other problem of the table at once (or rejects its row alone, with --skip-invalid).
    table = check_table(given, str(args.configs), keep_text=True)
    if args.skip_invalid:
        result, rejects = predict_with_rejects(
            table, origin=str(args.configs), calibration=calibration
        )
        # The rejected rows as the file had them (text and all), not as converted.
        as_given = given.iloc[rejects["row"].to_numpy(dtype=int)].reset_index(drop=True)
        rejects = as_given.assign(**{name: rejects[name].to_numpy() for name in _REJECT_NAMES})
        write_table(rejects, rejects_path, schema_types=False)
        print(f"{len(result)} predicted, {len(rejects['row'].unique())} rejected -> {rejects_path}")
    else:
        result = predict(table, origin=str(args.configs), calibration=calibration)
        print(f"{len(result)} predicted")
    result = _with_energy(result, args)
    _print_table_notes(result, calibration or load_calibration())
    write_table(result, args.output)


def _print_caps(args: argparse.Namespace, calibration: Calibration | None) -> None:
    """The one configuration at each ``--power-caps`` cap, lowest node and facility J/token
    marked (:mod:`trainscale.sim.energy.caps`)."""
    from trainscale.commands.predict_energy import cap_lines
    from trainscale.sim.calibration import load_calibration
    from trainscale.sim.catalogue import load_catalogue
    from trainscale.sim.energy import load_power_terms
    from trainscale.sim.energy.caps import cap_sweep, lowest_energy_caps

    caps = None
    if args.power_caps != "default":
        try:
            caps = [float(text) for text in args.power_caps.split(",")]
        except ValueError:
            raise TrainscaleError(
                f"--power-caps {args.power_caps!r}: expected watts separated by commas, e.g. "
                "300,400,500"
            ) from None
    config = check_table(single_configuration(args), "command line").drop(
        columns=["power_limit_w"], errors="ignore"
    )
    if args.pue is not None:
        config = config.assign(pue=args.pue)
    terms = load_power_terms(args.calibration) if args.calibration else load_power_terms()
    sweep = cap_sweep(config, caps, catalogue=load_catalogue(),
                      calibration=calibration or load_calibration(), terms=terms)  # fmt: skip
    lowest = {s: lowest_energy_caps(sweep, s).iloc[0] for s in ("node", "facility")}
    print("\n".join(cap_lines(sweep, lowest)))


def _with_energy(result: pd.DataFrame, args: argparse.Namespace) -> pd.DataFrame:
    """``result`` with node and facility power and energy (:mod:`trainscale.sim.energy`), under
    the power block of the calibration file in use; with ``--train-tokens``, the time, energy
    and cost to train them (``--pue`` fills the rows without a ``pue``)."""
    from trainscale.sim.catalogue import load_catalogue
    from trainscale.sim.energy import load_power_terms, with_node_power
    from trainscale.sim.energy.bill import parse_train_tokens, with_training_bill

    if args.pue is not None:
        given = result["pue"] if "pue" in result.columns else pd.Series(float("nan"), result.index)
        result = result.assign(pue=pd.to_numeric(given, errors="coerce").fillna(args.pue))
    terms = load_power_terms(args.calibration) if args.calibration else load_power_terms()
    result = with_node_power(result, load_catalogue().hardware, terms)
    if args.train_tokens is not None:
        result = with_training_bill(
            result, parse_train_tokens(args.train_tokens), args.usd_per_gpu_hour
        )
    elif args.usd_per_gpu_hour is not None:
        raise TrainscaleError("--usd-per-gpu-hour needs --train-tokens (the tokens to price)")
    return result


def _rejects_path(output: Path) -> Path:
    """Where ``--skip-invalid`` writes the rejected rows: ``<output stem>.rejects.csv``."""
    return output.with_name(output.stem + ".rejects.csv")


def _print_table_notes(result: pd.DataFrame, calibration: Calibration) -> None:
    """The notes on a predicted table: interval cautions, and how many rows do not fit in
    memory, spend much of the step in the bubble, or have MFU or HFU above 100 %."""
    from trainscale.sim.interval_caution import interval_cautions

    for framework, gpu, n, text in interval_cautions(calibration.intervals, result):
        print(f"trainscale predict: note: {n} row(s) of {framework} on {gpu}: {text}")
    unfit = int((~result["fits_memory"].astype(bool)).sum()) if len(result) else 0
    if unfit:
        verb = "does" if unfit == 1 else "do"
        print(f"{unfit} of them {verb} not fit in GPU memory (fits_memory = false)")
    if not len(result):
        return
    bubbly = int((result["bubble_s"] > BUBBLE_WARNING_FRAC * result["step_time_s"]).sum())
    if bubbly:
        verb = "spends" if bubbly == 1 else "spend"
        print(
            f"{bubbly} of them {verb} more than {100 * BUBBLE_WARNING_FRAC:.0f} % of the step "
            "in the pipeline bubble (bubble_s): too few micro-batches per step for "
            + ("its pp" if bubbly == 1 else "their pp")
        )
    above = int(((result["mfu"] > 1) | (result["hfu"] > 1)).sum())
    if above:
        print(
            f"{above} of them {'has' if above == 1 else 'have'} MFU or HFU above 100 %: "
            "the FLOP convention counts attention without the causal mask (flagged mfu:/hfu: "
            "in the extrapolation column; docs/bad-input.md)"
        )
