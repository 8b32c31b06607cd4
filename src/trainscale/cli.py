"""The ``trainscale`` command line.

One module per command under ``trainscale.commands`` (Calculon's command registry): each defines
``NAME``, ``HELP``, ``add_arguments(parser)`` and ``run(args) -> int``. Only
:class:`~trainscale.errors.TrainscaleError` is caught here; it is printed as one clear message
and the exit status is 2. Anything else is a bug and keeps its traceback.
"""

from __future__ import annotations

import argparse
import importlib
import sys
import warnings
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TextIO

from trainscale.errors import TrainscaleError
from trainscale.version import __version__

__all__ = ["COMMANDS", "main"]

#: Command modules, in the order ``--help`` lists them.
COMMANDS: tuple[str, ...] = (
    "predict",
    "plan",
    "validate",
    "calibrate",
    "trace",
    "ingest",
    "bench",
    "catalogue",
)


def _build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="trainscale",
        description="Simulate, ingest and compare the scaling of distributed LLM training.",
    )
    parser.add_argument("--version", action="version", version=f"trainscale {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    seen: set[str] = set()
    for module_name in COMMANDS:
        module = importlib.import_module(f"trainscale.commands.{module_name}")
        if module.NAME in seen:
            raise RuntimeError(f"duplicate command name {module.NAME!r}")
        seen.add(module.NAME)
        command_parser = sub.add_parser(module.NAME, help=module.HELP, description=module.HELP)
        module.add_arguments(command_parser)
        command_parser.set_defaults(_run=module.run)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; return the exit status.

    Output piped into a reader that stops early (``trainscale predict … | head``) ends quietly
    with status 141 (128 + SIGPIPE), as the shell's own tools do, not with a traceback.
    """
    parser = _build_parser()
    args = parser.parse_args(argv)
    previous = warnings.showwarning
    warnings.showwarning = _warning_printer(args.command, previous)
    try:
        return int(args._run(args) or 0)
    except TrainscaleError as error:
        print(f"trainscale {args.command}: error: {error}", file=sys.stderr)
        return 2
    except BrokenPipeError:
        _silence_stdout()
        return 128 + 13
    finally:
        warnings.showwarning = previous


_PACKAGE = str(Path(__file__).resolve().parent)


def _warning_printer(command: str, fallback: Callable[..., None]) -> Callable[..., None]:
    """``warnings.showwarning`` for a command: a warning the package raises about the user's
    input prints as ``trainscale <command>: warning: <message>`` (the message names the file
    and line), not with the Python source line that raised it; any other warning (a library's)
    keeps Python's format, which helps a developer."""

    def show(
        message: Warning | str,
        category: type[Warning],
        filename: str,
        lineno: int,
        file: TextIO | None = None,
        line: str | None = None,
    ) -> None:
        if str(Path(filename).resolve()).startswith(_PACKAGE):
            print(f"trainscale {command}: warning: {message}", file=file or sys.stderr)
        else:
            fallback(message, category, filename, lineno, file, line)

    return show


def _silence_stdout() -> None:
    """After a broken pipe: point stdout at /dev/null so the interpreter's final flush does not
    raise again (https://docs.python.org/3/library/signal.html#note-on-sigpipe)."""
    import os

    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):
        pass


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
