"""The ``-o/--output FILE`` option of the commands that write a file (one definition of it)."""

from __future__ import annotations

import argparse
from pathlib import Path

__all__ = ["add_output_option"]


def add_output_option(
    parser: argparse.ArgumentParser, text: str, *, metavar: str | None = None
) -> None:
    """Add ``-o/--output`` (a path, default None: nothing written) with the help ``text`` and,
    where given, the value's name in ``--help`` (``OUT.csv``)."""
    parser.add_argument("-o", "--output", type=Path, metavar=metavar, help=text)
