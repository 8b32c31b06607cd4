"""``trainscale trace``: computation/communication overlap of PyTorch profiler traces.

Loads the given Kineto traces together as the ranks of one job (aligned, last profiler step
dropped unless ``--include-last-step``), and prints per rank the compute, communication, overlap
(µs and % of communication, as HolisticTraceAnalysis reports it), exposed communication and idle
time; ``-o`` writes the same table as CSV. See :mod:`trainscale.ingest.hta`.

A trace without GPU kernels (a CPU-only trace, or one holding only CPU ops and ``cuda_runtime``
launches) is an error, exit status 2: one line naming the file and the event categories it holds
(:func:`trainscale.ingest.kineto.no_gpu_kernels`), and no table -- its zeros would be numbers
computed from nothing. Nothing is written with ``-o`` then.
"""

from __future__ import annotations

import argparse
import math
from pathlib import Path

import pandas as pd

from trainscale.commands.output import add_output_option
from trainscale.errors import InputFileError
from trainscale.ingest.hta import overlap_summary
from trainscale.ingest.kineto import load_traces, no_gpu_kernels
from trainscale.io.atomic import atomic_path
from trainscale.io.outputs import check_outputs
from trainscale.schema import TRACE_COLUMNS, names

__all__ = ["HELP", "NAME", "add_arguments", "run", "trace_table"]

NAME = "trace"
HELP = (
    "Per-rank compute, communication, overlap, exposed communication and idle time of "
    "PyTorch profiler traces (HTA's algorithm)."
)

#: Printed title of each output column (:data:`trainscale.schema.TRACE_COLUMNS`, the CSV's).
_TITLES: dict[str, str] = {
    "rank": "rank",
    "comp_us": "compute (us)",
    "comm_us": "comm (us)",
    "overlap_us": "overlap (us)",
    "comp_comm_overlap_pctg": "overlap (% of comm)",
    "exposed_comm_us": "exposed comm (us)",
    "idle_us": "idle (us)",
    "idle_pct": "idle (%)",
    "kernel_span_us": "kernel span (us)",
    "path": "trace",
}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Add the command's arguments to ``parser``."""
    parser.add_argument(
        "traces",
        nargs="+",
        metavar="TRACE",
        help="Kineto trace files (.json or .json.gz), one per rank of one job",
    )
    add_output_option(parser, "also write the table as CSV", metavar="OUT.csv")
    parser.add_argument(
        "--include-last-step",
        action="store_true",
        help="keep the last ProfilerStep (HTA drops it by default)",
    )


def trace_table(paths: list[str | Path], *, include_last_step: bool = False) -> pd.DataFrame:
    """The command's table: one row per rank, columns :data:`trainscale.schema.TRACE_COLUMNS`
    (the CSV output's).

    Parameters
    ----------
    paths
        One trace file per rank.
    include_last_step
        Keep the last profiler step.

    Returns
    -------
    pandas.DataFrame
        ``rank``, ``comp_us``, ``comm_us``, ``overlap_us``, ``comp_comm_overlap_pctg`` (% of
        communication hidden under compute, 2 decimals), ``exposed_comm_us``, ``idle_us``,
        ``idle_pct``, ``kernel_span_us`` (all µs unless %), ``path``.

    Raises
    ------
    InputFileError
        A trace cannot be read, or holds no GPU kernel (the message names the file and what it
        holds instead, :func:`~trainscale.ingest.kineto.no_gpu_kernels`).
    """
    traces = load_traces(paths, include_last_profiler_step=include_last_step)
    empty = no_gpu_kernels(traces)
    if empty:
        (path, reason), others = empty[0], [p for p, _ in empty[1:]]
        also = f" (so do {len(others)} more of the {len(traces)} traces: {', '.join(others)})"
        raise InputFileError(path, reason + (also if others else ""))
    return overlap_summary(traces)[names(TRACE_COLUMNS)]


def _cell(value: object, column: str) -> str:
    if column in {"rank", "path"}:
        return str(value)
    number = float(value)  # type: ignore[arg-type]
    if math.isnan(number):
        return "n/a"
    return f"{number:.2f}" if column.endswith(("pctg", "pct")) else f"{number:,.0f}"


def format_table(table: pd.DataFrame) -> str:
    """Aligned text: numbers right-aligned, µs with thousands separators, % with 2 decimals."""
    columns = names(TRACE_COLUMNS)
    titles = [_TITLES[c] for c in columns]
    cells = [[_cell(row[c], c) for c in columns] for _, row in table.iterrows()]
    widths = [max(len(t), *(len(r[i]) for r in cells)) for i, t in enumerate(titles)]
    last = len(titles) - 1

    def line(values: list[str]) -> str:
        parts = [
            v.ljust(w) if i == last else v.rjust(w)
            for i, (v, w) in enumerate(zip(values, widths, strict=True))
        ]
        return "  ".join(parts).rstrip()

    return "\n".join([line(titles), *(line(r) for r in cells)])


def run(args: argparse.Namespace) -> int:
    """Print the per-rank table; write it as CSV with ``-o``. Returns the exit status."""
    check_outputs({"-o": args.output}, args.traces, suffixes={"-o": (".csv",)})
    table = trace_table(args.traces, include_last_step=args.include_last_step)
    print(format_table(table))
    if args.output is not None:
        try:
            with atomic_path(args.output) as temp:
                table.to_csv(temp, index=False, float_format="%.2f")
        except OSError as error:
            raise InputFileError(
                args.output, f"cannot write the CSV: {error.strerror or error}"
            ) from None
    return 0
