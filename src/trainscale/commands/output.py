"""The ``-o/--output FILE`` option of the commands that write a file (one definition of it), and
the shipped files a command reads, for the check that no output overwrites an input
(:func:`trainscale.io.outputs.check_outputs`)."""

from __future__ import annotations

import argparse
from pathlib import Path

from trainscale.paths import data_dir

__all__ = ["add_output_option", "shipped_inputs"]


def add_output_option(
    parser: argparse.ArgumentParser, text: str, *, metavar: str | None = None
) -> None:
    """Add ``-o/--output`` (a path, default None: nothing written) with the help ``text`` and,
    where given, the value's name in ``--help`` (``OUT.csv``)."""
    parser.add_argument("-o", "--output", type=Path, metavar=metavar, help=text)


def shipped_inputs(*, calibration: bool = True) -> list[Path]:
    """The shipped files a command reads by default: the four catalogues, the published folder
    and, with ``calibration``, ``calibration.yaml`` (left out for ``calibrate -o
    data/calibration.yaml``, which replaces it on purpose and does not read it)."""
    folder = data_dir()
    files = [folder / f"{name}.yaml" for name in ("hardware", "models", "nccl", "frameworks")]
    return [*files, folder / "published", *([folder / "calibration.yaml"] if calibration else [])]
