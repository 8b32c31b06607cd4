"""``trainscale ingest RUN_DIR -o OUT.parquet``: a run folder → its measured dataset row(s).

Validates ``RUN_DIR/run.yaml`` (``workflow/schemas/run.schema.yaml``), parses every log it
lists and writes one row per job in the dataset schema; ``--steps`` also writes the per-step
table. Both files appear only when the whole run was read. See
:func:`trainscale.ingest.runs.ingest_run`.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import pandas as pd

from trainscale.commands.output import add_output_option, shipped_inputs
from trainscale.errors import TrainscaleError
from trainscale.io.outputs import check_outputs

__all__ = ["HELP", "LOG_KINDS", "NAME", "add_arguments", "run"]

NAME = "ingest"
HELP = "ingest a run folder (run.yaml + logs) into measured dataset rows (Parquet)"

#: Every ``kind`` a run manifest's log may have (``workflow/schemas/run.schema.yaml``) → what
#: it is, in one line; ``trainscale ingest --help`` prints them (a test checks they match the
#: schema). The formats, with examples, the fields read and what is refused:
#: ``docs/ingest/formats.md``.
LOG_KINDS: dict[str, str] = {
    "torchtitan": "torchtitan step lines (step, loss, memory, tps, tflops, mfu), one per step",
    "megatron": "Megatron-LM 'iteration N/ M | …' lines, incl. Megatron-DeepSpeed, Primus",
    "megatron_golden": "Megatron-LM CI golden-values JSON (lm loss, iteration-time, max memory)",
    "nvidia_smi": "nvidia-smi --query-gpu=… --format=csv power log, a row per GPU per poll",
    "dcgmi": "dcgmi dmon text (POWER per GPU; needs start_time, interval_s in run.yaml)",
    "nccl_tests": "nccl-tests output (all_reduce_perf …): parsed and checked, gives no row",
    "kineto_trace": "PyTorch profiler (Kineto) trace .json/.json.gz, one per rank: exposed comm",
}

_EPILOG = (
    "log kinds (the `kind` of each entry under `logs:` in RUN_DIR/run.yaml):\n"
    + "\n".join(f"  {kind:<16} {text}" for kind, text in LOG_KINDS.items())
    + "\n\nformats, fields read, units and what is refused: docs/ingest/formats.md;"
    "\nthe run.yaml keys: docs/ingest/run-manifest.md; the checks: docs/ingest/checks.md"
)

#: (column, title, format) of the printed summary.
_SUMMARY = (
    ("config_id", "configuration", "{}"),
    ("n_steps", "steady steps", "{:.0f}"),
    ("step_time_s", "step time (s)", "{:.4g}"),
    ("step_time_s_iqr", "IQR (s)", "{:.2g}"),
    ("tokens_per_s", "tokens/s", "{:,.0f}"),
    ("tokens_per_s_per_gpu", "tokens/s/GPU", "{:,.0f}"),
    ("mfu", "MFU", "{:.2%}"),
    ("mem_gib_per_gpu", "memory (GiB)", "{:.3g}"),
    ("power_w_per_gpu", "power/GPU (W)", "{:.1f}"),
    ("exposed_comm_s", "exposed comm (s)", "{:.4g}"),
    ("line_range", "lines", "{}"),
)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Add the command's arguments to ``parser``, and the log kinds to its help."""
    parser.formatter_class = argparse.RawDescriptionHelpFormatter
    parser.epilog = _EPILOG
    parser.add_argument(
        "run_dir", type=Path, metavar="RUN_DIR", help="run folder holding run.yaml and its logs"
    )
    add_output_option(parser, "write the dataset row(s) here", metavar="OUT.parquet")
    parser.add_argument(
        "--steps", type=Path, metavar="STEPS.parquet", help="also write the per-step table"
    )
    parser.add_argument(
        "--strict",
        action="store_true",
        help="make warnings errors: garbled or truncated step lines and the plausibility "
        "warnings of docs/ingest/checks.md (GPUs missing from the power log, low MFU)",
    )


def _cell(value: object, fmt: str) -> str:
    """``value`` formatted, or a dash when it is missing."""
    return "—" if pd.isna(value) else fmt.format(value)


def run(args: argparse.Namespace) -> int:
    """Ingest, print a summary per job, write the Parquet file(s). Returns the exit status."""
    from trainscale.ingest.runs import ingest_run, write_ingested
    from trainscale.sim.model.shape import load_models
    from trainscale.sim.system.hardware import load_hardware

    if args.steps is not None and args.output is None:
        raise TrainscaleError("--steps needs -o/--output")
    check_outputs(
        {"-o": args.output, "--steps": args.steps},
        [args.run_dir, *shipped_inputs()],
        suffixes={"-o": (".parquet",), "--steps": (".parquet",)},
    )
    catalogue = {"hardware": load_hardware(), "models": load_models()}  # the shipped ones
    if args.output is not None:
        results = write_ingested(
            args.run_dir, args.output, args.steps, strict=args.strict, **catalogue
        )
    else:
        results, _ = ingest_run(args.run_dir, strict=args.strict, **catalogue)
    for _, row in results.iterrows():
        print(f"{row['run_id']}:")
        for column, title, fmt in _SUMMARY:
            print(f"  {title:>17}: {_cell(row[column], fmt)}")
    if args.output is not None:
        print(f"wrote {args.output}" + (f" and {args.steps}" if args.steps else ""))
    return 0
